//! One pod as the verdict sees it ([`PodView`]): its task, phase, exit, the reason it is
//! not starting, its times and setup, and what its task is doing ([`State`]). How it is
//! read from what the API server stores: `pod/read.rs`.

use std::fmt;

use serde::Serialize;

use crate::roles::{RoleSizes, Task};

mod read;

/// The pod reason of a pod stopped by the kubelet at its `activeDeadlineSeconds`.
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// The `PodScheduled` reason of a pod held by scheduling gates.
pub const SCHEDULING_GATED: &str = "SchedulingGated";

/// A pod's phase as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
pub enum Phase {
    /// Also a pod without a phase yet.
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Phase {
    fn parse(s: Option<&str>) -> Phase {
        match s {
            Some("Pending") | None => Phase::Pending,
            Some("Running") => Phase::Running,
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            Some(_) => Phase::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }
}

/// A terminated container: its exit code, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// Why a pod is not (yet) running: a waiting reason or the scheduler's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub reason: String,
    pub message: Option<String>,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(m) if !m.is_empty() => write!(f, "{}: {}", self.reason, one_line(m)),
            _ => f.write_str(&self.reason),
        }
    }
}

/// What tf-spawner needs to know about one pod: which task and attempt it is, its state
/// (the fields here), its [`PodTimes`] and its [`PodSetup`] (what it was made with).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodView {
    pub name: String,
    /// From the replica labels; `None` for a pod labelled with the tag by someone else.
    pub task: Option<Task>,
    /// The run's attempt the pod belongs to
    /// ([`ATTEMPT_LABEL`](crate::labels::ATTEMPT_LABEL); 0 without one).
    pub attempt: u32,
    pub phase: Phase,
    /// Ready containers, containers.
    pub ready: (u32, u32),
    pub restarts: u32,
    pub node: Option<String>,
    /// The TF container's current terminated state.
    pub terminated: Option<Exit>,
    /// The TF container's terminated state, else its last one (after a restart).
    pub last_exit: Option<Exit>,
    /// Pod-level reason and message (`Evicted`, …).
    pub pod_reason: Option<Reason>,
    /// Why the pod is being taken away, if it is: the `DisruptionTarget` condition
    /// (1.26+: preemption, eviction, taint manager, pod GC), else the pod reason
    /// `Evicted` or `Preempting`, else `Deleted` for a deletion timestamp.
    pub removal: Option<Reason>,
    /// Why the pod is not running: Unschedulable, or a container's waiting reason.
    pub waiting: Option<Reason>,
    /// That container has started: it runs or has ended, now or before a restart.
    /// Without a status for it, a Running pod counts as started.
    pub started: bool,
    /// Held back by a queue, not stuck: a pending pod not yet on a node that has
    /// scheduling gates (Kueue's admission gate until the run's group is admitted) or
    /// belongs to a gang's PodGroup (Volcano, coscheduling: placed all together or not
    /// at all).
    pub queued: bool,
    /// The queue the pod waits in: its Kueue LocalQueue, else its Volcano queue.
    pub queue: Option<String>,
    /// Being deleted (`deletionTimestamp` set): kubectl's `Terminating`.
    pub terminating: bool,
    /// Its node stopped reporting: the node-lifecycle controller marked the pod not ready
    /// (see [`node_lost_since`](read::node_lost_since)); `Some(when)`, seconds since the
    /// epoch (0 if unsaid).
    pub node_lost: Option<i64>,
    /// Stopped for a container beside the task, whose own end stands
    /// ([`STOPPED_AFTER_TASK_ANNOTATION`](crate::labels::STOPPED_AFTER_TASK_ANNOTATION)).
    pub stopped_after_task: bool,
    /// On a pod of a restarted attempt: the failure the restart was for
    /// ([`RESTARTED_FOR_ANNOTATION`](crate::labels::RESTARTED_FOR_ANNOTATION)).
    pub restarted_for: Option<String>,
    /// Who restarted it ([`RESTARTED_BY_ANNOTATION`](crate::labels::RESTARTED_BY_ANNOTATION)).
    pub restarted_by: Option<String>,
    /// A container beside the TF one (a sidecar) has not ended, in a pod not yet
    /// `Succeeded` or `Failed`: the pod still runs, whatever the task's state.
    pub sidecar_running: bool,
    pub times: PodTimes,
    pub setup: PodSetup,
}

/// When things happened to a pod, each in seconds since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodTimes {
    /// Its creation.
    pub created: Option<i64>,
    /// When the kubelet took the pod (`status.startTime`): from then on it holds its
    /// node's resources (what a run cost, `metrics/cost.rs`).
    pub held_from: Option<i64>,
    /// When the TF container started and ended, from its state (its current run, else
    /// its last one): the run report (`verdict/timing.rs`).
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// When the pod was taken away: its `DisruptionTarget` condition's time, else when
    /// its deletion was asked (`deletionTimestamp` less the grace period). The
    /// kubelet's order of failures (`Tracker::decisive`).
    pub removed_at: Option<i64>,
    /// When tf-spawner stopped the pod after the run's verdict
    /// ([`STOPPED_ANNOTATION`](crate::labels::STOPPED_ANNOTATION)):
    /// it ends by its deadline, [`State::Stopped`].
    pub stopped_at: Option<i64>,
    /// On a pod of a restarted attempt: when the run's first attempt started
    /// ([`RUN_STARTED_ANNOTATION`](crate::labels::RUN_STARTED_ANNOTATION)).
    pub run_started: Option<i64>,
}

/// What a pod was made with: its spec and tf-spawner's marks on it, fixed for its life.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodSetup {
    /// `restartPolicy: Never` (the default of tf-spawner's pods).
    pub restart_never: bool,
    /// The training cluster the pod describes: its tasks per role.
    pub cluster: RoleSizes,
    /// The container whose logs are the task's: `tensorflow`, else the first.
    pub container: Option<String>,
    /// The GPUs its containers ask for (any `…/gpu` or `…/mig-…` extended resource).
    pub gpus: u32,
    /// How long the pod tolerates a node that stopped reporting (its `unreachable`
    /// NoExecute toleration's seconds: `--node-lost-after`).
    pub lost_after: Option<i64>,
    /// How long (seconds, from its creation) a pull error of its image is not final
    /// yet: [`PULL_GRACE_ANNOTATION`](crate::labels::PULL_GRACE_ANNOTATION) (`--pull-grace`);
    /// `None`: the built-in one.
    pub pull_grace: Option<i64>,
}

impl PodView {
    /// `worker-1`, or the pod name for a pod without replica labels.
    pub fn label(&self) -> String {
        self.task.map_or_else(|| self.name.clone(), Task::id)
    }

    /// What the task is doing, from this pod alone.
    pub fn state(&self) -> State {
        let own = self.own_state();
        // Ended after tf-spawner stopped it, whatever its exit (a SIGTERM handler may exit
        // 0); not before, nor when only a sidecar was stopped: then its own end stands.
        let stopped = !self.stopped_after_task
            && self.times.stopped_at.is_some_and(|at| {
                own.finished() && self.times.finished_at.is_none_or(|end| end >= at)
            });
        if stopped { State::Stopped } else { own }
    }

    /// Something of the pod still runs: its task, or a container beside it (a sidecar)
    /// after the task ended. What a stop after the verdict ends.
    pub fn still_running(&self) -> bool {
        !self.state().finished() || self.sidecar_running
    }

    /// Being stopped by tf-spawner: stopped, and not ended yet.
    pub fn stopping(&self) -> bool {
        self.times.stopped_at.is_some() && !self.state().finished()
    }

    fn own_state(&self) -> State {
        match self.phase {
            // The TF container has ended and will not restart: its exit code decides,
            // even if a sidecar keeps the pod Running, or made it Failed (a sidecar
            // stopped after the verdict, by its deadline).
            _ if self.setup.restart_never && self.terminated.is_some() => {
                if self.terminated.as_ref().is_some_and(|t| t.code == 0) {
                    State::Succeeded
                } else {
                    State::Failed
                }
            }
            Phase::Failed => State::Failed,
            Phase::Succeeded => State::Succeeded,
            Phase::Running => State::Running,
            Phase::Pending | Phase::Unknown => State::Pending,
        }
    }

    /// The phase a table shows: the API's, except for a pod whose TF container has ended
    /// for good while the pod is still `Running` (or was made `Failed` by a sidecar's
    /// stop): it is shown `Succeeded` or `Failed` by that exit. A kubelet of 1.27 or later writes the pod's terminal phase only once it
    /// has torn the pod down, seconds after the container ended; v1.20's wrote both at once.
    pub fn shown_phase(&self) -> Phase {
        match (self.phase, self.state()) {
            (Phase::Running | Phase::Pending | Phase::Failed, State::Succeeded) => Phase::Succeeded,
            (Phase::Running | Phase::Pending, State::Failed | State::Stopped) => Phase::Failed,
            (phase, _) => phase,
        }
    }

    /// The pod-level reason that says more than the container's exit: the kubelet's
    /// `DeadlineExceeded` (the pod outlived its `activeDeadlineSeconds`, `--deadline`),
    /// whose containers were killed with a plain `Error`.
    pub fn decisive_reason(&self) -> Option<&Reason> {
        // A stop by tf-spawner ends a pod the same way: that is its own state.
        self.pod_reason
            .as_ref()
            .filter(|r| r.reason == DEADLINE_EXCEEDED && self.times.stopped_at.is_none())
    }

    /// Seconds since the pod was created.
    pub fn age(&self, now: i64) -> Option<u64> {
        self.times.created.map(|c| (now - c).max(0) as u64)
    }
}

/// [`crate::verdict::FailureKind::Removed`]'s reason for a task lost with its node, and
/// the summary's reason for a task on a node that stopped reporting.
pub const NODE_LOST: &str = "NodeLost";

/// [`PodView::removal`]'s reason for a pod with a deletion timestamp and nothing more.
pub const DELETED: &str = "Deleted";

/// What one task is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Pending,
    Running,
    Succeeded,
    Failed,
    /// Ended by tf-spawner after the run's verdict (its deadline lowered): neither the
    /// task's success nor its failure.
    Stopped,
}

impl State {
    pub fn finished(self) -> bool {
        matches!(self, State::Succeeded | State::Failed | State::Stopped)
    }
}

/// Joins a multi-line message into one line, every control character left shown
/// escaped (`output::escape_controls`): the messages it joins (a termination message,
/// an annotation, an event) came from the cluster, and may carry escape sequences.
pub fn one_line(text: &str) -> String {
    crate::output::escape_controls(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}
