//! A restart's steps, each bounded by the follow's end ([`Bounds`]: its deadline, a
//! signal; [`bounded`]) and said in what state it left the run when stopped
//! ([`Stopped::error`]): the backoff waited out, the deleted pods followed until gone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cluster::Cluster;
use crate::errors::{EXIT_TIMEOUT, ExitError};
use crate::labels::run_selector;
use crate::signals;

use super::state::{Event, Restart};

/// How the follow's end bounds a restart: its deadline (`--timeout`), the one of the wait.
pub(crate) struct Bounds {
    pub tag: String,
    pub deadline: Option<(Instant, Duration)>,
    pub max_in_flight: usize,
}

/// `a, b and 2 more`.
pub(super) fn listed(names: &BTreeSet<String>) -> String {
    const SHOWN: usize = 3;
    let mut out: Vec<&str> = names.iter().take(SHOWN).map(String::as_str).collect();
    let more = names.len().saturating_sub(SHOWN);
    let more_text = format!("{more} more");
    if more > 0 {
        out.push(&more_text);
    }
    out.join(", ")
}

/// What a restart left when it was stopped before it created anything.
pub(super) const NOT_CREATED: &str = "its pods were deleted and none has been created again";
/// What a restart left when it was stopped before it deleted anything (its record may
/// be written: the next `wait --restarts` takes it up).
pub(super) const NOT_DELETED: &str =
    "it had deleted none of its pods yet; they are as the failure left them";

/// Waits out the restart's backoff, bounded like every step.
pub(super) async fn wait_out(bounds: &Bounds, r: &Restart, max: u32) -> Result<Event> {
    match bounded(bounds, async {
        tokio::time::sleep(r.backoff).await;
        Ok(())
    })
    .await
    {
        Ok(()) => Ok(Event::Waited),
        Err(Stop::By(s)) => Err(s.error(bounds, r, NOT_CREATED, max)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// Why a step ended early.
pub(super) enum Stop {
    /// The step's own error.
    Failed(anyhow::Error),
    /// A signal or the wait's deadline.
    By(Stopped),
}

/// A signal (its exit code) or the deadline (exit 4), and what it was.
pub(super) struct Stopped {
    code: u8,
    why: String,
}

impl Stopped {
    /// The error that ends the wait: what stopped it during which restart, and in what
    /// `state` the run was left.
    pub(super) fn error(
        self,
        bounds: &Bounds,
        r: &Restart,
        state: &str,
        max: u32,
    ) -> anyhow::Error {
        let tag = &bounds.tag;
        ExitError::new(
            self.code,
            format!(
                "{} while restarting run '{tag}' (attempt {}): {state} (see: tf-spawner status -t {tag}; take the restart up again: tf-spawner wait -t {tag} --restarts {max}; or delete the run: tf-spawner -d -t {tag})",
                self.why, r.attempt
            ),
        )
        .into()
    }
}

/// Runs one step of a restart, unless a signal or the wait's deadline comes first.
pub(super) async fn bounded<T>(
    bounds: &Bounds,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T, Stop> {
    let deadline = async {
        match bounds.deadline {
            Some((at, d)) => {
                tokio::time::sleep_until(at.into()).await;
                d
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = work => result.map_err(Stop::Failed),
        d = deadline => Err(Stop::By(Stopped {
            code: EXIT_TIMEOUT,
            why: format!("timed out after {}", crate::duration::age(d.as_secs())),
        })),
        code = signals::stop_requested() => Err(Stop::By(Stopped {
            code,
            why: "interrupted".to_string(),
        })),
    }
}

/// Follows the run's pods until none of `names` is left (a deleted pod lingers for its
/// grace period). One list and one watch.
pub(super) async fn gone(cluster: &Cluster, tag: &str, names: &BTreeSet<String>) -> Result<()> {
    let ours = |name: &str| names.contains(name);
    crate::ops::until_gone(cluster, &run_selector(tag), ours, |_| {}).await
}
