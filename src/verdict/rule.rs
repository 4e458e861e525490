//! The rule (TFJob's, see the module docs): each task's state and failure, the failure
//! that decides, the run's [`Verdict`], and what else the pods say about it (every
//! failure, whether every task started, a peer not ended yet, a success they contradict).

use std::collections::{BTreeMap, BTreeSet};

use super::failure::{
    BACK_OFF, DEFAULT_PULL_GRACE, FATAL_WAITING, Failure, FailureKind, PULL_ERROR,
    PULL_ERRORS_FATAL, exited, gone, is_pull, lost_node, taken_away,
};
use super::peer::PeerAbort;
use super::pod::{self, PodView, Reason, State};
use super::tracker::{Entry, Tracker};
use crate::roles::{Role, Task};

/// The run's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pending,
    Running,
    Succeeded,
    Failed(Failure),
}

impl Verdict {
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Pending => "Pending",
            Verdict::Running => "Running",
            Verdict::Succeeded => "Succeeded",
            Verdict::Failed(_) => "Failed",
        }
    }

    pub fn is_final(&self) -> bool {
        matches!(self, Verdict::Succeeded | Verdict::Failed(_))
    }
}

impl Tracker {
    /// The state of every task (and unlabelled pod), in task order, with its pod name
    /// and the failure if it failed.
    pub(super) fn states(&self) -> Vec<(Option<Task>, String, State, Option<Failure>)> {
        let mut by_task: BTreeMap<Task, &Entry> = BTreeMap::new();
        let mut unlabelled: Vec<&Entry> = Vec::new();
        for entry in self.pods.values() {
            match entry.view().task {
                // A live pod wins over a deleted one of the same task.
                Some(t) => {
                    if !matches!(by_task.get(&t), Some(Entry::Live(_))) {
                        by_task.insert(t, entry);
                    }
                }
                None => unlabelled.push(entry),
            }
        }
        let mut out = Vec::new();
        for task in self.tasks() {
            let row = match by_task.get(&task) {
                Some(entry) => self.entry_state(entry),
                None => {
                    let pod = task.name(&self.tag);
                    let failure = Failure::new(pod.clone(), Some(task), FailureKind::Gone);
                    (pod, State::Failed, Some(failure))
                }
            };
            out.push((Some(task), row.0, row.1, row.2));
        }
        for entry in unlabelled {
            let (pod, state, failure) = self.entry_state(entry);
            out.push((None, pod, state, failure));
        }
        out
    }

    /// An entry's pod name, state and failure: each kind of failure by a function of its
    /// own, checked in this order.
    fn entry_state(&self, entry: &Entry) -> (String, State, Option<Failure>) {
        let v = entry.view();
        let state = v.state();
        let kind = match entry {
            // A pod that finished and was then deleted (by --cleanup, say) keeps its
            // outcome; one deleted before the end failed.
            Entry::Gone(_) if !state.finished() => Some(gone(v)),
            // Taken away: by a disruption whatever its exit (the kill was not the
            // training's), by a plain deletion only if it had not ended.
            _ if state != State::Succeeded && self.removed(v).is_some() => {
                self.removed(v).map(|r| taken_away(v, r))
            }
            _ if state == State::Failed => Some(exited(v)),
            // cannot_start: a waiting reason that will not fix itself.
            _ if state == State::Pending && self.cannot_start(v) => v
                .waiting
                .clone()
                .map(|r| FailureKind::CannotStart(self.with_pull_error(&v.name, r))),
            _ => None,
        };
        match kind {
            Some(kind) => {
                let after_peer = match kind {
                    FailureKind::Exited { .. } => self.aborts.get(&v.name).cloned(),
                    _ => None,
                };
                let failure = Failure {
                    pod: v.name.clone(),
                    task: v.task,
                    kind,
                    after_peer,
                };
                (v.name.clone(), State::Failed, Some(failure))
            }
            None => (v.name.clone(), state, None),
        }
    }

    /// `reason`, and for an `ImagePullBackOff` of pod `name` the last pull error, which
    /// its message does not carry before kubelet 1.26 (later ones say it: then once).
    pub(crate) fn with_pull_error(&self, name: &str, mut reason: Reason) -> Reason {
        if reason.reason == BACK_OFF
            && let Some(pull_error) = self.pull_error_messages.get(name)
            && !reason
                .message
                .as_deref()
                .is_some_and(|m| m.contains(pull_error.as_str()))
        {
            let back_off = reason.message.take().unwrap_or_default();
            reason.message = Some(format!("{back_off} (last pull error: {pull_error})"));
        }
        reason
    }

    /// Why `v` is taken away, when that decides its outcome.
    fn removed<'a>(&self, v: &'a PodView) -> Option<&'a Reason> {
        v.removal
            .as_ref()
            .filter(|r| r.reason != pod::DELETED || !v.state().finished())
    }

    fn cannot_start(&self, v: &PodView) -> bool {
        let Some(w) = &v.waiting else { return false };
        if is_pull(w) && self.pull_in_grace(v) {
            return false;
        }
        FATAL_WAITING.contains(&w.reason.as_str())
            || (w.reason == PULL_ERROR
                && self.pull_errors.get(&v.name).copied().unwrap_or(0) >= PULL_ERRORS_FATAL)
    }

    /// Whether pod `v` is younger than its pull grace (`--pull-grace`, from its
    /// creation), by the clock [`Tracker::at`] was told.
    fn pull_in_grace(&self, v: &PodView) -> bool {
        let (Some(now), Some(created)) = (self.now, v.times.created) else {
            return false;
        };
        let built_in = i64::try_from(DEFAULT_PULL_GRACE.as_secs()).unwrap_or(i64::MAX);
        now.saturating_sub(created) < v.setup.pull_grace.unwrap_or(built_in)
    }

    /// The run's verdict (see the module docs). Once the deciding task has succeeded,
    /// tasks taken away afterwards (the parameter servers a verdict stops, a cleanup)
    /// do not fail the run; of several failures, a plain deletion is named last, since
    /// it is most likely the stop or cleanup that followed the one that decided.
    pub fn verdict(&self) -> Verdict {
        let states = self.states();
        if states.is_empty() {
            return Verdict::Pending;
        }
        let has_chief = states
            .iter()
            .any(|s| s.0.is_some_and(|t| t.role == Role::Chief));
        let deciding = Task::deciding(has_chief);
        let state_of = |task: Task| states.iter().find(|s| s.0 == Some(task)).map(|s| s.2);
        let deciding_done = state_of(deciding) == Some(State::Succeeded);
        let workers_done = !self.all_workers
            || states
                .iter()
                .filter(|s| s.0.is_some_and(|t| t.role == Role::Worker))
                .all(|s| s.2 == State::Succeeded);
        let failures: Vec<&Failure> = states.iter().filter_map(|s| s.3.as_ref()).collect();
        let succeeded = deciding_done && workers_done;
        let only_removals_after_success = succeeded && failures.iter().all(|f| f.kind.is_removal());
        if !only_removals_after_success && let Some(decisive) = self.decisive(&failures) {
            return Verdict::Failed(decisive);
        }
        if succeeded {
            return Verdict::Succeeded;
        }
        if failures.is_empty()
            && let Some(stopped) = states.iter().find(|s| s.2 == State::Stopped)
        {
            return Verdict::Failed(Failure::new(
                stopped.1.clone(),
                stopped.0,
                FailureKind::Stopped,
            ));
        }
        if states.iter().any(|s| s.2 == State::Pending) {
            Verdict::Pending
        } else {
            Verdict::Running
        }
    }

    /// The failure that decides among `failures` (`None`: none). A task that failed
    /// because of a peer (its log says so) comes after every other; then the first
    /// failure seen (a deleted worker before the peer whose collective it broke); among
    /// those seen at once (a snapshot: `status`, a late `wait`), a plain deletion last
    /// (most likely a cleanup that followed), then by the kubelet's own times (the
    /// container's `finishedAt`, the pod's removal). A victim that decides while a peer
    /// sits on a lost node is that peer's loss: the node is the cause.
    fn decisive(&self, failures: &[&Failure]) -> Option<Failure> {
        let decisive = failures.iter().min_by_key(|f| {
            let seen = self.first_failed.get(&f.pod).copied().unwrap_or(u64::MAX);
            let at = self.failed_at(f).unwrap_or(i64::MAX);
            (f.after_peer.is_some(), seen, f.kind.is_plain_deletion(), at)
        })?;
        let lost = decisive
            .after_peer
            .as_ref()
            .and_then(|abort| self.lost_peer(decisive, abort));
        Some(lost.unwrap_or_else(|| (*decisive).clone()))
    }

    /// When failure `f` happened, by the kubelet's clock: its container's end, else the
    /// pod's removal.
    fn failed_at(&self, f: &Failure) -> Option<i64> {
        let v = self.pods.get(&f.pod)?.view();
        match f.kind {
            FailureKind::Exited { .. } => v.times.finished_at.or(v.times.removed_at),
            _ => v.times.removed_at.or(v.times.finished_at),
        }
    }

    /// A peer of `victim`'s on a node that stopped reporting, as a failure: the one its
    /// abort names first, else any.
    fn lost_peer(&self, victim: &Failure, abort: &PeerAbort) -> Option<Failure> {
        let mut lost: Vec<&PodView> = self
            .live()
            .filter(|v| v.node_lost.is_some() && v.name != victim.pod && !v.state().finished())
            .collect();
        lost.sort_by_key(|v| (v.task != abort.peer, v.task));
        let v = lost.first()?;
        let since = v.node_lost.unwrap_or(0);
        Some(Failure::new(
            v.name.clone(),
            v.task,
            FailureKind::Removed(lost_node(v, since)),
        ))
    }

    /// Whether a peer of failure `f`, a task TensorFlow or JAX says failed because of a peer,
    /// has not ended yet: the one its error names, or (when it names none of the run's
    /// tasks) any other. Until it has, the victim's exit says little about the run: the
    /// peer may turn out lost (then a restart is due), or fail on its own.
    pub fn peers_unended(&self, f: &Failure) -> bool {
        let Some(abort) = &f.after_peer else {
            return false;
        };
        let states = self.states();
        let named = abort
            .peer
            .filter(|p| states.iter().any(|s| s.0 == Some(*p)));
        states
            .iter()
            .filter(|s| s.1 != f.pod && named.is_none_or(|p| s.0 == Some(p)))
            .any(|s| !s.2.finished() && s.3.is_none())
    }

    /// How long a task may stay on a lost node before the taint manager evicts it (the
    /// pods' toleration, `--node-lost-after`): the longest of the run's pods, if any says.
    pub fn node_lost_after(&self) -> Option<i64> {
        self.live().filter_map(|v| v.setup.lost_after).max()
    }

    /// The pods say the run has not succeeded, whatever a record says: the deciding
    /// task's pod is there and has not succeeded, or a pod tf-spawner did not stop
    /// failed by itself (not a deletion after the fact). A recorded `Succeeded` (an
    /// annotation anyone who may edit the ConfigMap can write) never hides it.
    pub fn contradicts_success(&self) -> bool {
        let states = self.states();
        let has_chief = states
            .iter()
            .any(|s| s.0.is_some_and(|t| t.role == Role::Chief));
        let deciding = Task::deciding(has_chief);
        let unstopped = |pod: &str| self.get(pod).is_some_and(|v| v.times.stopped_at.is_none());
        let failed_by_itself = states.iter().any(|s| {
            s.3.as_ref()
                .is_some_and(|f| !f.kind.is_after_the_fact() && unstopped(&f.pod))
        });
        failed_by_itself
            || self
                .live()
                .any(|v| v.task == Some(deciding) && v.state() != State::Succeeded)
    }

    /// The pods (live or being deleted) on a node that stopped reporting: they are never
    /// gone on their own (their kubelet cannot confirm the deletion).
    pub fn on_lost_nodes(&self) -> BTreeSet<String> {
        self.pods
            .values()
            .map(Entry::view)
            .filter(|v| v.node_lost.is_some())
            .map(|v| v.name.clone())
            .collect()
    }

    /// Every task's failure, in task order (see [`Tracker::verdict`] for the one that
    /// decides).
    pub fn failures(&self) -> Vec<Failure> {
        self.states().into_iter().filter_map(|s| s.3).collect()
    }

    /// Every task has started: each pod is Running or finished, none is missing.
    pub fn started(&self) -> bool {
        let states = self.states();
        !states.is_empty() && states.iter().all(|s| s.2 != State::Pending)
    }
}
