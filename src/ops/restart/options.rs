//! What a restart may do: `--restarts`, `--restart-on`, `--restart-backoff` and
//! `--node-grace` ([`Restarts`]), and their defaults and bounds.

use std::time::Duration;

use crate::verdict::retryable::RestartOn;

/// The first backoff's default; each attempt doubles it, up to [`MAX_BACKOFF`].
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(10);
/// The longest backoff between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// `--node-grace`'s default: the node-lifecycle controller's `--node-monitor-grace-period`
/// (50 s on v1.36, 40 s on v1.20) and its monitor period (5 s), with a margin.
pub const DEFAULT_NODE_GRACE: Duration = Duration::from_secs(60);

/// `--restarts`, `--restart-on`, `--restart-backoff`.
#[derive(Debug, Clone)]
pub struct Restarts {
    /// At most this many restarts in the run's life; 0: none (no request is made for them).
    pub max: u32,
    pub on: RestartOn,
    /// The first backoff.
    pub backoff: Duration,
    /// `--node-grace`: how long the cluster takes to name a node lost (see
    /// `ops/wait/mod.rs::settle`).
    pub node_grace: Duration,
}

impl Default for Restarts {
    fn default() -> Restarts {
        Restarts {
            max: 0,
            on: RestartOn::default(),
            backoff: DEFAULT_BACKOFF,
            node_grace: DEFAULT_NODE_GRACE,
        }
    }
}
