//! Retrying what is safe to retry, as client-go does: 429 (after the server's
//! Retry-After), 500, 503, 504, timeouts and dropped connections, with bounded
//! exponential backoff and jitter. Other 4xx answers are final.

#![deny(clippy::arithmetic_side_effects)]

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tracing::Instrument;

/// Bounds for one API call.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// Each attempt's time limit.
    pub timeout: Duration,
    /// The first backoff; it doubles up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// How long a follow (`wait`, `logs -f`) keeps trying to reach a lost API server
    /// before it gives up (`--give-up-after`).
    pub give_up: Duration,
    /// How long a watch or a followed log may deliver nothing (no event, no bookmark,
    /// no byte) before it is taken as frozen and opened again (the defaults-file key
    /// `idle_timeout`).
    pub idle: Duration,
}

/// `--give-up-after`'s default.
pub const GIVE_UP: Duration = Duration::from_secs(10 * 60);
/// `idle_timeout`'s default: a watch asks the server to end it sooner (see
/// `cluster/watch/machine.rs`), so only a frozen connection is idle this long.
pub const IDLE: Duration = Duration::from_secs(5 * 60);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            timeout: Duration::from_secs(30),
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            give_up: GIVE_UP,
            idle: IDLE,
        }
    }
}

/// Why an attempt failed.
#[derive(Debug)]
pub enum CallError {
    Api(kube::Error),
    Timeout(Duration),
}

impl CallError {
    pub fn status(&self) -> Option<&kube::core::Status> {
        match self {
            CallError::Api(kube::Error::Api(s)) => Some(s),
            _ => None,
        }
    }

    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// No answer came: the connection failed, dropped, or timed out.
    pub fn unanswered(&self) -> bool {
        match self {
            CallError::Timeout(_) => true,
            CallError::Api(e) => is_transport(e),
        }
    }

    /// Whether the request may have reached the server and been carried out although
    /// no answer says so.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            CallError::Timeout(_) => true,
            CallError::Api(kube::Error::Api(s)) => s.code >= 500,
            CallError::Api(_) => true,
        }
    }

    fn retryable(&self) -> bool {
        match self.code() {
            Some(code) => matches!(code, 429 | 500 | 502 | 503 | 504),
            None => match self {
                CallError::Timeout(_) => true,
                CallError::Api(e) => is_transport(e),
            },
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        let details = self.status()?.details.as_ref()?;
        (details.retry_after_seconds > 0)
            .then(|| Duration::from_secs(u64::from(details.retry_after_seconds)))
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout(d) => write!(f, "no answer within {}s", d.as_secs_f32()),
            CallError::Api(kube::Error::Api(s)) => {
                let reason = if s.reason.is_empty() {
                    "Error"
                } else {
                    &s.reason
                };
                write!(f, "{} ({reason}, {})", s.message.trim_end(), s.code)
            }
            CallError::Api(e) => f.write_str(&transport_text(e)),
        }
    }
}

impl std::error::Error for CallError {}

/// Connection-level failures (refused, reset, TLS), as opposed to an answer.
fn is_transport(e: &kube::Error) -> bool {
    matches!(
        e,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_)
    )
}

fn transport_text(e: &kube::Error) -> String {
    let parts = crate::errors::causes(e);
    // The innermost cause ("Connection refused", "certificate unknown") is what a user
    // can act on; the wrappers ("ServiceError: client error (Connect)") are noise.
    parts.last().cloned().unwrap_or_default()
}

/// Runs `call` until it succeeds, fails for good, or the attempts are used up. Every
/// attempt's error goes to `on_error` first, which may turn it into a success (a create
/// whose earlier attempt did land, for instance).
pub async fn retry<T, F, Fut>(
    policy: &RetryPolicy,
    mut call: F,
    mut on_error: impl AsyncRecover<T>,
) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    let mut backoff = policy.backoff;
    loop {
        // `-v` logs each request inside this span, so its line names the attempt.
        let span = tracing::info_span!("api", attempt);
        let result = match tokio::time::timeout(policy.timeout, call().instrument(span)).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => CallError::Api(e),
            Err(_) => CallError::Timeout(policy.timeout),
        };
        let err = match on_error.recover(result).await {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        if attempt >= policy.attempts || !err.retryable() {
            return Err(err);
        }
        let jitter = rand::rng().random_range(0.0..0.5);
        let wait = err
            .retry_after()
            .unwrap_or_else(|| backoff.mul_f64(1.0 + jitter))
            .min(
                policy
                    .max_backoff
                    .max(err.retry_after().unwrap_or_default()),
            );
        tracing::debug!(attempt, error = %err, ?wait, "retrying");
        tokio::time::sleep(wait).await;
        backoff = backoff.saturating_mul(2).min(policy.max_backoff);
        attempt = attempt.saturating_add(1);
    }
}

/// Turns some errors into successes; see [`retry`].
pub trait AsyncRecover<T> {
    fn recover(&mut self, err: CallError) -> impl Future<Output = Result<T, CallError>>;
}

/// No recovery: every error stands.
pub struct Plain;

impl<T> AsyncRecover<T> for Plain {
    async fn recover(&mut self, err: CallError) -> Result<T, CallError> {
        Err(err)
    }
}
