//! Counts per role and the first reason each role is stuck ([`RoleSummary`]): what
//! `status` and `wait`'s progress lines show of the run's tasks.

use serde::Serialize;

use super::failure::{Failure, FailureKind, lost_node};
use super::pod::{PodView, Reason, SCHEDULING_GATED, State};
use super::tracker::{Entry, Tracker};
use crate::roles::{Role, Task};

/// Pod counts of one role, and the first reason one of them is stuck.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RoleCounts {
    pub total: u32,
    /// Pending, not queued.
    pub pending: u32,
    /// Pending, held back by a queue (see [`PodView::queued`]).
    pub queued: u32,
    pub running: u32,
    /// Running on a node that stopped reporting (see [`PodView::node_lost`]).
    pub lost: u32,
    pub succeeded: u32,
    pub failed: u32,
    /// Stopped by tf-spawner after the run's verdict (neither succeeded nor failed).
    pub stopped: u32,
}

/// One role's summary: counts and the first stuck task with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSummary {
    pub role: Option<Role>,
    pub counts: RoleCounts,
    pub stuck: Option<(String, Reason)>,
    /// The queue the role's queued pods wait in, when they name one.
    pub queue: Option<String>,
}

impl Tracker {
    /// Counts per role (chief, ps, worker, evaluator; then pods without a role), and
    /// the first reason a pod of that role is not running.
    pub fn summary(&self) -> Vec<RoleSummary> {
        let mut out: Vec<RoleSummary> = Vec::new();
        for (task, name, state, failure) in &self.states() {
            let role = task.map(|t| t.role);
            let at = match out.iter().position(|r| r.role == role) {
                Some(at) => at,
                None => {
                    out.push(RoleSummary::new(role));
                    out.len() - 1
                }
            };
            let label = task.map_or_else(|| name.clone(), Task::id);
            let view = self.pods.get(name).map(Entry::view);
            out[at].add(label, view, *state, failure.as_ref());
        }
        out.sort_by_key(|r| r.role.map_or(usize::MAX, |role| role as usize));
        out
    }
}

impl RoleSummary {
    fn new(role: Option<Role>) -> RoleSummary {
        RoleSummary {
            role,
            counts: RoleCounts::default(),
            stuck: None,
            queue: None,
        }
    }

    /// Counts one task of the role (`label`, its pod's `view`, its state and failure),
    /// and keeps its reason if it is the first, or says more than the one kept.
    fn add(
        &mut self,
        label: String,
        view: Option<&PodView>,
        state: State,
        failure: Option<&Failure>,
    ) {
        // A pod that cannot start fails the run, but it is still pending, not
        // finished: count it where its phase is (its reason says why). A pod tf-spawner
        // stopped after the verdict counts as stopped at once, as `wait` said it, not as
        // running for the seconds it takes to end.
        let counted = match failure {
            _ if view.is_some_and(PodView::stopping) => State::Stopped,
            Some(Failure {
                kind: FailureKind::CannotStart(_),
                ..
            }) => State::Pending,
            _ => state,
        };
        let queued =
            counted == State::Pending && failure.is_none() && view.is_some_and(|v| v.queued);
        if queued && self.queue.is_none() {
            self.queue = view.and_then(|v| v.queue.clone());
        }
        let lost = view.and_then(|v| v.node_lost.map(|since| lost_node(v, since)));
        self.counts.add(counted, queued, lost.is_some());
        // A queued pod is waiting its turn, not stuck: the gate says nothing new.
        let reason = match failure {
            Some(f) => Some(failure_reason(f)),
            None if lost.is_some() => lost,
            None => view
                .and_then(|v| v.waiting.clone())
                .filter(|_| !state.finished())
                .filter(|r| !(queued && r.reason == SCHEDULING_GATED)),
        };
        // The first reason of the role, unless a later one says more than the
        // routine ContainerCreating / PodInitializing.
        if let Some(reason) = reason
            && self
                .stuck
                .as_ref()
                .is_none_or(|(_, r)| routine(r) && !routine(&reason))
        {
            self.stuck = Some((label, reason));
        }
    }
}

impl RoleCounts {
    /// One more task, counted as `state` (queued or on a lost node: apart).
    fn add(&mut self, state: State, queued: bool, lost: bool) {
        self.total += 1;
        let count = match state {
            State::Pending if queued => &mut self.queued,
            State::Pending => &mut self.pending,
            State::Running if lost => &mut self.lost,
            State::Running => &mut self.running,
            State::Succeeded => &mut self.succeeded,
            State::Failed => &mut self.failed,
            State::Stopped => &mut self.stopped,
        };
        *count += 1;
    }
}

/// Reasons every starting pod goes through.
fn routine(r: &Reason) -> bool {
    matches!(r.reason.as_str(), "ContainerCreating" | "PodInitializing")
}

/// A failure as a short reason for a progress line.
fn failure_reason(f: &Failure) -> Reason {
    match &f.kind {
        FailureKind::Exited { code, reason, .. } => Reason {
            reason: reason.clone().unwrap_or_else(|| "Failed".into()),
            message: code.map(|c| format!("exit code {c}")),
        },
        FailureKind::CannotStart(r) => r.clone(),
        FailureKind::Gone => Reason {
            reason: "Deleted".into(),
            message: None,
        },
        FailureKind::Removed(r) => r.clone(),
        FailureKind::Stopped => Reason {
            reason: "Stopped".into(),
            message: None,
        },
    }
}
