//! What one wait is asked to do: its options, from `wait`'s, `spawn --wait`'s and the
//! sweep's flags.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `wait --for`: what to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitFor {
    /// Every pod is running or finished
    Start,
    /// The run has succeeded or failed
    End,
}

/// `--on-stall`: what a stall does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnStall {
    /// Name it (the training line, then the report) and go on waiting
    Warn,
    /// Fail the run: exit 3, the unfinished pods stopped as after any verdict
    Fail,
}

/// `--stall-after` and `--on-stall`: no progress line from the deciding task for
/// `after` (once it has printed one) is a stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub after: Duration,
    pub on: OnStall,
}

/// One wait.
#[derive(Debug, Clone)]
pub struct Wait {
    pub tag: String,
    pub until: WaitFor,
    pub timeout: Option<Duration>,
    /// `--start-timeout`: the run fails unless every task runs (or has finished) this
    /// long after its creation (its earliest pod's `creationTimestamp`).
    pub start_timeout: Option<Duration>,
    /// When the command started: the timeout counts from then, whatever the command
    /// did first (a spawn's creates, a list of many pages).
    pub started: Instant,
    pub all_workers: bool,
    pub save_logs: Option<PathBuf>,
    pub cleanup: bool,
    /// `--keep-running`: leave the unfinished pods after a verdict.
    pub keep_running: bool,
    pub max_in_flight: usize,
    /// `--restarts`, `--restart-on`, `--restart-backoff` (see `ops/restart.rs`).
    pub restarts: crate::ops::restart::Restarts,
    /// `--stall-after` and `--on-stall`, if a bound is set.
    pub stall: Option<Stall>,
    /// A view of several runs (a sweep's) that shows this run: its state and training
    /// go there instead of this wait's own progress lines.
    pub observer: Option<crate::progress::Observer>,
}
