//! What the table and `-o json` of `status` both say: a lost node's reason, the cause of
//! the latest restart, a stalled training; and the types of what they read.

use std::collections::BTreeMap;

use crate::cluster::events::PodEvent;
use crate::cluster::record::Record;
use crate::ops::wait::StallBound;
use crate::plan::helper_pod::Found;
use crate::trainlog::Training;
use crate::verdict::{NODE_LOST, PodView, Reason, Tracker};

/// The newest events of the pending pods, by pod name.
pub type Events = BTreeMap<String, Vec<PodEvent>>;

/// What `status` read of a run, as its table (`table::render`) and its `-o json`
/// (`json::to_json`) take it.
#[derive(Clone, Copy)]
pub struct Report<'a> {
    pub tracker: &'a Tracker,
    /// The run's record (its ConfigMap), if it has one.
    pub record: Option<&'a Record>,
    /// The run's helper pods (`cp`, `tensorboard`).
    pub helpers: &'a [Found],
    /// The newest events of the pending pods.
    pub events: &'a Events,
    /// The training's progress.
    pub training: &'a Training,
    /// The stall bound (`stall_after`, else derived).
    pub stall: StallBound,
    /// Now, seconds since the epoch.
    pub now: i64,
    /// `--all-workers`.
    pub all_workers: bool,
}

/// `NodeLost: node N not ready since T (it stopped reporting)` for a pod whose node
/// stopped reporting and that has not ended (as far as the API knows).
pub(super) fn lost(v: &PodView, now: i64) -> Option<Reason> {
    let since = v.node_lost?;
    let when = match since {
        0 => String::new(),
        t => format!(" since {}", crate::duration::clock(t, now)),
    };
    Some(Reason {
        reason: NODE_LOST.into(),
        message: Some(format!(
            "node {} not ready{when} (it stopped reporting)",
            v.node.as_deref().unwrap_or("?")
        )),
    })
}

/// The failure the run's latest restart was for, as its pods say.
pub(super) fn restarted_for(tracker: &Tracker) -> Option<&str> {
    let attempt = tracker.attempt();
    tracker
        .live()
        .filter(|v| attempt > 0 && v.attempt == attempt)
        .find_map(|v| v.restarted_for.as_deref())
}

/// `no progress from worker-0 since 21:03:12 UTC (--stall-after 30m)` when the
/// deciding task, still running, printed a progress line and none for longer than the
/// bound.
pub(super) fn stalled(
    tracker: &Tracker,
    training: &Training,
    stall: StallBound,
    now: i64,
) -> Option<String> {
    let bound = stall.of(training)?;
    let last = training.last_at? / 1000;
    let deciding = crate::ops::training::deciding(tracker)?;
    let running = !deciding.state().finished();
    let quiet = u64::try_from(now.saturating_sub(last)).unwrap_or(0);
    let task = deciding.task.map(|t| t.id());
    (running && !training.finished() && quiet > bound.as_secs())
        .then(|| crate::ops::wait::stalled_text(task.as_deref(), training, stall, now))
}

/// The attempt of a restart recorded and not carried out, if any.
pub(super) fn pending_restart(tracker: &Tracker, record: Option<&Record>) -> Option<u32> {
    record
        .and_then(|r| r.restarting)
        .filter(|n| tracker.live().all(|v| v.attempt < *n))
}

/// What the run held so far (`metrics/cost.rs`): its record's count once final, else
/// its pods' up to `now` after the count its record keeps from a restart.
pub(super) fn cost(
    tracker: &Tracker,
    record: Option<&Record>,
    now: i64,
) -> Option<crate::metrics::cost::Cost> {
    let recorded = record.and_then(|r| r.metrics.as_ref()?.cost);
    crate::metrics::cost::so_far(recorded.as_ref(), tracker.live(), now)
}
