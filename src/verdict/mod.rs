//! From pods to a verdict, without I/O: what each task is doing, why a pod is not
//! starting, and whether the run as a whole is Pending, Running, Succeeded or Failed.
//!
//! The rule (TFJob's): the run succeeds when the chief, or worker 0 when there is no
//! chief, exits 0 (with `--all-workers`, every worker must have exited 0 too); it fails
//! as soon as any task fails: its pod is Failed, its TF container exited non-zero under
//! `restartPolicy: Never`, its pod was deleted before the end, or it cannot start for a
//! reason that will not fix itself (an image that cannot be pulled, a bad config).
//! Parameter servers never exit on their own: they do not count for success.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::roles::{Role, RoleSizes, Task};

mod peer;
mod pod;
pub mod retryable;
pub mod start;

pub use peer::PeerAbort;
pub use pod::{
    DEADLINE_EXCEEDED, Exit, NODE_LOST, Phase, PodSetup, PodView, Reason, State, one_line,
};

/// The `PodScheduled` reason of a pod held by scheduling gates.
pub const SCHEDULING_GATED: &str = "SchedulingGated";
/// The kubelet's waiting reason between two failed pulls of an image.
const BACK_OFF: &str = "ImagePullBackOff";
/// Waiting reasons that will not fix themselves: the run fails at once.
const FATAL_WAITING: &[&str] = &[
    BACK_OFF,
    "InvalidImageName",
    "CreateContainerConfigError",
    "ErrImageNeverPull",
];
/// `ErrImagePull` may be a passing registry hiccup: fatal the second time it is seen.
const PULL_ERROR: &str = "ErrImagePull";
const PULL_ERRORS_FATAL: u32 = 2;
/// The built-in `--pull-grace`: how long after its pod's creation a pull error of a
/// task's image (`ErrImagePull`, `ImagePullBackOff`) is not final yet, as a registry's
/// hiccup or a slow mirror heals within minutes, and a wrong `--image` does not.
pub const DEFAULT_PULL_GRACE: std::time::Duration = std::time::Duration::from_secs(300);
/// What a pull error that failed the run adds: the flag to check, and the one to wait
/// longer.
const PULL_HINT: &str =
    " (its image cannot be pulled: check --image; a slow registry: --pull-grace)";

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

/// Why a run failed: which pod, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub pod: String,
    pub task: Option<Task>,
    pub kind: FailureKind,
    /// An exit TensorFlow blames on a peer (its last log lines say so, see
    /// [`Tracker::note_log`]): the task is a victim, the peer is the cause.
    pub after_peer: Option<PeerAbort>,
}

impl Failure {
    /// A failure of `pod` (`task`) of this kind, blamed on nobody else.
    pub fn new(pod: String, task: Option<Task>, kind: FailureKind) -> Failure {
        Failure {
            pod,
            task,
            kind,
            after_peer: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The pod failed, or its TF container exited non-zero.
    Exited {
        code: Option<i32>,
        reason: Option<String>,
        message: Option<String>,
    },
    /// The pod cannot start (image pull, bad config).
    CannotStart(Reason),
    /// The pod was deleted (or never created) before the run finished.
    Gone,
    /// The pod was taken away before it ended (evicted, preempted, deleted while it
    /// ran): not the training's failure.
    Removed(Reason),
    /// Stopped by tf-spawner after an earlier verdict (`cluster/stop.rs`): named only
    /// when nothing else explains the end (the earlier verdict is on the run's record).
    Stopped,
}

impl FailureKind {
    /// Taken away from outside (deleted, evicted, preempted): not the training's own end.
    fn is_removal(&self) -> bool {
        matches!(self, FailureKind::Gone | FailureKind::Removed(_))
    }

    /// Evidence lost since: a stop after the verdict, or a plain deletion (what a
    /// cleanup, `-d` or tf-spawner's deletion of a pod no node had taken does too). A
    /// verdict recorded when the run ended says more.
    pub fn is_after_the_fact(&self) -> bool {
        matches!(self, FailureKind::Stopped) || self.is_plain_deletion()
    }

    /// A plain deletion: what a stop after the verdict, a cleanup or `-d` does too.
    fn is_plain_deletion(&self) -> bool {
        match self {
            FailureKind::Gone => true,
            FailureKind::Removed(r) => r.reason == pod::DELETED,
            _ => false,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.task {
            Some(t) => format!("pod {} ({})", self.pod, t.id()),
            None => format!("pod {}", self.pod),
        };
        match &self.kind {
            FailureKind::Exited {
                code,
                reason,
                message,
            } => {
                write!(f, "{who} failed")?;
                if let Some(code) = code {
                    write!(f, ": exit code {code}")?;
                }
                if let Some(reason) = reason {
                    write!(f, ", reason {reason}")?;
                }
                if let Some(message) = message {
                    write!(f, ": {}", one_line(message))?;
                }
                if reason.as_deref() == Some(pod::DEADLINE_EXCEEDED) {
                    write!(f, "; the run's --deadline ended it")?;
                }
                if let Some(abort) = &self.after_peer {
                    write!(f, "; {abort}")?;
                }
                Ok(())
            }
            FailureKind::CannotStart(reason) if is_pull(reason) => {
                write!(f, "{who} {CANNOT_START_TEXT}: {reason}{PULL_HINT}")
            }
            FailureKind::CannotStart(reason) => write!(f, "{who} {CANNOT_START_TEXT}: {reason}"),
            FailureKind::Gone => write!(f, "{who} was deleted before the run finished"),
            FailureKind::Stopped => write!(f, "{who} {STOPPED_TEXT}"),
            FailureKind::Removed(r) => {
                let what = match r.reason.as_str() {
                    pod::DELETED => return write!(f, "{who} was deleted while it ran"),
                    NODE_LOST => return write!(f, "{who} was lost with its node: {r}"),
                    "Evicted" | "EvictionByEvictionAPI" | "TerminationByKubelet" => "evicted",
                    "Preempting" | "PreemptionByScheduler" | "PreemptionByKubeScheduler" => {
                        "preempted"
                    }
                    _ => "taken away",
                };
                write!(f, "{who} was {what} before it ended ({r})")
            }
        }
    }
}

/// How a task that cannot start is named (`pod P (worker-0) cannot start: WHY`), which a
/// later `wait` reads back from the run's record (`ops/wait/recorded.rs`).
pub const CANNOT_START_TEXT: &str = "cannot start";

/// How every command names a task tf-spawner stopped after the run's verdict.
pub const STOPPED_TEXT: &str = "was stopped by tf-spawner after the verdict";

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

#[derive(Debug, Clone)]
enum Entry {
    Live(PodView),
    /// Seen, then deleted.
    Gone(PodView),
}

impl Entry {
    fn view(&self) -> &PodView {
        match self {
            Entry::Live(v) | Entry::Gone(v) => v,
        }
    }
}

/// The pods of one run as seen so far, fed by a list and then watch events.
#[derive(Debug, Clone)]
pub struct Tracker {
    tag: String,
    all_workers: bool,
    pods: BTreeMap<String, Entry>,
    /// The run's tasks per role as its pods describe it (the largest seen).
    sizes: RoleSizes,
    /// The names seen since a list began (see [`Tracker::begin_list`]).
    listing: Option<BTreeSet<String>>,
    /// How many updates showed `ErrImagePull`, per pod.
    pull_errors: BTreeMap<String, u32>,
    /// The last `ErrImagePull` message, per pod: the kubelet alternates it with
    /// `ImagePullBackOff`, whose message only says "Back-off pulling image".
    pull_error_messages: BTreeMap<String, String>,
    /// When each pod was first seen failed, taken away or deleted: the count of events
    /// folded before it. A list is one event (its pods are seen at once), so a snapshot
    /// has no order; a follow has the order things happened in.
    first_failed: BTreeMap<String, u64>,
    events: u64,
    /// The failed tasks whose last log lines blame a peer (see [`Tracker::note_log`]).
    aborts: BTreeMap<String, PeerAbort>,
    /// The time of the last event folded (seconds since the epoch, [`Tracker::at`]):
    /// a pull error within its pod's grace is not final. `None` (no clock: a test, a
    /// `--local` run): every grace has passed.
    now: Option<i64>,
}

impl Tracker {
    pub fn new(tag: &str, all_workers: bool) -> Tracker {
        Tracker {
            tag: tag.to_string(),
            all_workers,
            pods: BTreeMap::new(),
            sizes: RoleSizes::default(),
            listing: None,
            pull_errors: BTreeMap::new(),
            pull_error_messages: BTreeMap::new(),
            first_failed: BTreeMap::new(),
            events: 0,
            aborts: BTreeMap::new(),
            now: None,
        }
    }

    /// The time now (seconds since the epoch), told by whoever folds the events: the
    /// tracker reads no clock of its own.
    pub fn at(&mut self, now: i64) {
        self.now = Some(now);
    }

    /// One more event folded (all of a list's pods count as one).
    fn tick(&mut self) -> u64 {
        if self.listing.is_none() {
            self.events += 1;
        }
        self.events
    }

    /// A pod was added or changed.
    pub fn update(&mut self, view: PodView) {
        if let Some(w) = view.waiting.as_ref().filter(|w| w.reason == PULL_ERROR) {
            *self.pull_errors.entry(view.name.clone()).or_default() += 1;
            if let Some(message) = &w.message {
                self.pull_error_messages
                    .insert(view.name.clone(), message.clone());
            }
        }
        self.sizes.merge(&view.setup.cluster);
        if let Some(listing) = &mut self.listing {
            listing.insert(view.name.clone());
        }
        let now = self.tick();
        let failing = view.state() == State::Failed
            || view.removal.is_some()
            || view.waiting.as_ref().is_some_and(|w| {
                FATAL_WAITING.contains(&w.reason.as_str()) || w.reason == PULL_ERROR
            });
        if failing {
            self.first_failed.entry(view.name.clone()).or_insert(now);
        }
        self.pods.insert(view.name.clone(), Entry::Live(view));
    }

    /// The last log lines (or termination message) of pod `name`, a failed task: when
    /// TensorFlow says there that it failed because of a peer (`verdict/peer.rs`), its
    /// failure is that peer's doing, and the verdict names the peer's first.
    pub fn note_log(&mut self, name: &str, text: &str) {
        let own = self.pods.get(name).and_then(|e| e.view().task);
        match peer::recognise(text, own) {
            Some(abort) => self.aborts.insert(name.to_string(), abort),
            None => self.aborts.remove(name),
        };
    }

    /// A pod was deleted.
    pub fn remove(&mut self, name: &str) {
        let now = self.tick();
        self.first_failed.entry(name.to_string()).or_insert(now);
        if let Some(entry) = self.pods.remove(name) {
            self.pods
                .insert(name.to_string(), Entry::Gone(entry.view().clone()));
        }
    }

    /// A fresh list begins: its pods come through [`Tracker::update`], page by page,
    /// until [`Tracker::end_list`].
    pub fn begin_list(&mut self) {
        self.listing = Some(BTreeSet::new());
    }

    /// The list is complete: pods missing from it were deleted meanwhile.
    pub fn end_list(&mut self) {
        let Some(listed) = self.listing.take() else {
            return;
        };
        let missing: Vec<String> = self
            .pods
            .iter()
            .filter(|(name, e)| matches!(e, Entry::Live(_)) && !listed.contains(*name))
            .map(|(name, _)| name.clone())
            .collect();
        for name in missing {
            self.remove(&name);
        }
    }

    /// A fresh list in one piece: pods missing from it were deleted meanwhile.
    pub fn replace(&mut self, views: Vec<PodView>) {
        self.begin_list();
        for view in views {
            self.update(view);
        }
        self.end_list();
    }

    /// The pod named `name`, if it is there.
    pub fn get(&self, name: &str) -> Option<&PodView> {
        match self.pods.get(name)? {
            Entry::Live(v) => Some(v),
            Entry::Gone(_) => None,
        }
    }

    /// Pods currently there in task order (chief, ps, workers, evaluator), then any
    /// others by name.
    pub fn in_task_order(&self) -> Vec<&PodView> {
        let mut pods: Vec<&PodView> = self.live().collect();
        pods.sort_by(|a, b| {
            (a.task.is_none(), a.task, &a.name).cmp(&(b.task.is_none(), b.task, &b.name))
        });
        pods
    }

    /// Pods currently there, by name.
    pub fn live(&self) -> impl Iterator<Item = &PodView> {
        self.pods.values().filter_map(|e| match e {
            Entry::Live(v) => Some(v),
            Entry::Gone(_) => None,
        })
    }

    /// The run's tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The run's attempt: the latest of its pods' (0 until a restart, see
    /// `ops/restart/mod.rs`).
    pub fn attempt(&self) -> u32 {
        self.live().map(|p| p.attempt).max().unwrap_or(0)
    }

    /// Every task of the run: the ones seen, and the ones the pods' `TF_CONFIG` names.
    pub fn tasks(&self) -> BTreeSet<Task> {
        let mut tasks: BTreeSet<Task> = self.sizes.tasks().collect();
        tasks.extend(self.pods.values().filter_map(|e| e.view().task));
        tasks
    }

    /// The state of every task (and unlabelled pod), in task order, with its pod name
    /// and the failure if it failed.
    fn states(&self) -> Vec<(Option<Task>, String, State, Option<Failure>)> {
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

    /// Whether a peer of failure `f`, a task TensorFlow says failed because of a peer,
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

/// A task gone from the API before it finished: lost with its node, taken away for a
/// reason, else deleted.
fn gone(v: &PodView) -> FailureKind {
    match (&v.removal, v.node_lost) {
        (_, Some(since)) => FailureKind::Removed(lost_node(v, since)),
        (Some(r), _) if r.reason != pod::DELETED => FailureKind::Removed(r.clone()),
        _ => FailureKind::Gone,
    }
}

/// A task taken away (`removal`) while it is there. Taken from a node that stopped
/// reporting (the taint manager's eviction at the pod's toleration, or a deletion):
/// lost with its node.
fn taken_away(v: &PodView, removal: &Reason) -> FailureKind {
    match removal.clone() {
        // Deleted before it ever ran: not "while it ran".
        r if r.reason == pod::DELETED && !v.started => FailureKind::Gone,
        r => FailureKind::Removed(match v.node_lost {
            Some(since) => lost_node(v, since),
            None => r,
        }),
    }
}

/// A failed task's exit: its code, and the reason that says most (the pod's decisive
/// one, else the container's, else the pod's).
fn exited(v: &PodView) -> FailureKind {
    let exit = v.terminated.clone().or_else(|| v.last_exit.clone());
    let (reason, message) = match (&exit, &v.pod_reason) {
        (_, Some(r)) if v.decisive_reason().is_some() => {
            (Some(r.reason.clone()), r.message.clone())
        }
        (Some(e), _) if e.reason.is_some() => (e.reason.clone(), e.message.clone()),
        (_, Some(r)) => (Some(r.reason.clone()), r.message.clone()),
        (Some(e), None) => (None, e.message.clone()),
        (None, None) => (None, None),
    };
    FailureKind::Exited {
        code: exit.map(|e| e.code),
        reason,
        message,
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

/// The reason of a task whose node stopped reporting `since` (0: unknown).
fn lost_node(v: &PodView, since: i64) -> Reason {
    let node = v.node.as_deref().unwrap_or("?");
    let when = match since {
        0 => String::new(),
        t => crate::duration::rfc3339(t).map_or_else(String::new, |t| format!(" since {t}")),
    };
    Reason {
        reason: NODE_LOST.into(),
        message: Some(format!(
            "node {node} not ready{when} (it stopped reporting)"
        )),
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

#[cfg(test)]
pub(crate) mod tests;

/// A waiting reason of an image that cannot be pulled (`--pull-grace`).
fn is_pull(reason: &Reason) -> bool {
    reason.reason == PULL_ERROR || reason.reason == BACK_OFF
}
