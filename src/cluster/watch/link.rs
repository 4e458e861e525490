//! The connection to the API server as the follow has seen it: when it last answered
//! ([`Heard`]), and whether it is down, since when and how long to pause before the
//! next try (the backoff of an outage, bounded by `--give-up-after`).

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use rand::Rng;

use crate::cluster::Cluster;
use crate::cluster::retry::CallError;

/// The first pause of an outage; it doubles up to [`MAX_BACKOFF`] (kube's watcher's).
const FIRST_BACKOFF: Duration = Duration::from_millis(800);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// When the API server last answered the follow (a page, a watch opened, a watch event
/// or bookmark): how old what the follow knows may be (`wait`'s heartbeat says it).
#[derive(Debug, Clone)]
pub struct Heard(std::sync::Arc<std::sync::Mutex<Instant>>);

impl Heard {
    pub(super) fn new() -> Heard {
        Heard(std::sync::Arc::new(std::sync::Mutex::new(Instant::now())))
    }

    pub(super) fn now(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    pub(super) fn ago(&self) -> Duration {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }
}

/// Whether an error means the server is (for now) out of reach, as opposed to an answer.
pub fn outage(err: &CallError) -> bool {
    err.unanswered() || matches!(err.code(), Some(429 | 500 | 502 | 503 | 504))
}

/// A request failed for want of an answer: pause this long, then try it again; `lost`:
/// the outage begins (what failed and why, for [`PodEvent::Lost`](super::PodEvent)).
pub(super) struct Pause {
    pub delay: Duration,
    pub lost: Option<String>,
}

/// Up, or down since when.
pub(super) struct Link {
    /// Since when nothing answers, on the monotonic clock and the wall clock.
    down_since: Option<(Instant, k8s_openapi::jiff::Timestamp)>,
    backoff: Duration,
    pub heard: Heard,
}

impl Link {
    pub(super) fn new(heard: Heard) -> Link {
        Link {
            down_since: None,
            backoff: FIRST_BACKOFF,
            heard,
        }
    }

    /// An answer came: the outage, if there was one, is over (after this long).
    pub(super) fn up(&mut self) -> Option<Duration> {
        self.heard.now();
        self.backoff = FIRST_BACKOFF;
        let (since, _) = self.down_since.take()?;
        Some(since.elapsed())
    }

    /// `doing` failed with `err` (its first attempt `asked` then): the pause before
    /// trying again, or the error that ends the follow (an answer that waiting will not
    /// change, or an outage past the bound).
    pub(super) fn down(
        &mut self,
        cluster: &Cluster,
        doing: &str,
        err: CallError,
        asked: Instant,
    ) -> Result<Pause> {
        if !outage(&err) {
            return Err(cluster.explain(doing, &err));
        }
        let policy = &cluster.policy;
        let first = self.down_since.is_none();
        // Since the first attempt of the request that failed (its retries took time).
        let (since, wall) = *self.down_since.get_or_insert_with(|| {
            let ago =
                k8s_openapi::jiff::SignedDuration::try_from(asked.elapsed()).unwrap_or_default();
            (asked, crate::duration::timestamp() - ago)
        });
        if since.elapsed() >= policy.give_up {
            return Err(anyhow!(
                "{doing}: cannot reach the Kubernetes API server at {} since {} UTC ({} ago; gave up after {}, see --give-up-after): {err}",
                cluster.server,
                wall.strftime("%H:%M:%S"),
                crate::duration::age(since.elapsed().as_secs()),
                crate::duration::age(policy.give_up.as_secs()),
            ));
        }
        let jitter = rand::rng().random_range(0.0..0.25);
        let left = policy.give_up.saturating_sub(since.elapsed());
        let delay = self.backoff.mul_f64(1.0 + jitter).min(left);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Ok(Pause {
            delay,
            lost: first.then(|| format!("{doing}: {err}")),
        })
    }
}
