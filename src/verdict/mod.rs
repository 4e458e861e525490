//! From pods to a verdict, without I/O: what each task is doing, why a pod is not
//! starting, and whether the run as a whole is Pending, Running, Succeeded or Failed.
//!
//! The rule (TFJob's): the run succeeds when the chief, or worker 0 when there is no
//! chief, exits 0 (with `--all-workers`, every worker must have exited 0 too); it fails
//! as soon as any task fails: its pod is Failed, its TF container exited non-zero under
//! `restartPolicy: Never`, its pod was deleted before the end, or it cannot start for a
//! reason that will not fix itself (an image that cannot be pulled, a bad config).
//! Parameter servers never exit on their own: they do not count for success.
//!
//! The rooms: `pod.rs` (one pod as the verdict sees it, read from the API in
//! `pod/read.rs`), `tracker.rs` (the run's pods as seen so far), `failure.rs` (why a task
//! failed, and how it is said), `rule.rs` (the rule above: the [`Verdict`]), `summary.rs`
//! (counts per role), `start.rs` (what holds a run's start up), `peer.rs` (a failure a
//! peer caused), `retryable.rs` (which failures a restart retries).

pub(crate) mod timing;

mod failure;
mod peer;
mod pod;
pub mod retryable;
mod rule;
pub mod start;
mod summary;
mod tracker;

pub use failure::{CANNOT_START_TEXT, DEFAULT_PULL_GRACE, Failure, FailureKind, STOPPED_TEXT};
pub use pod::{
    DEADLINE_EXCEEDED, Exit, NODE_LOST, Phase, PodSetup, PodView, Reason, SCHEDULING_GATED, State,
    one_line,
};
pub use rule::Verdict;
pub use summary::{RoleCounts, RoleSummary};
pub use tracker::Tracker;

#[cfg(test)]
pub(crate) mod tests;
