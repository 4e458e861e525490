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

mod pod;

pub use pod::{Exit, Phase, PodView, Reason, State};

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
                Ok(())
            }
            FailureKind::CannotStart(reason) => write!(f, "{who} cannot start: {reason}"),
            FailureKind::Gone => write!(f, "{who} was deleted before the run finished"),
        }
    }
}

/// Pod counts of one role, and the first reason one of them is stuck.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RoleCounts {
    pub total: u32,
    /// Pending, not queued.
    pub pending: u32,
    /// Pending, held back by a queue (see [`PodView::queued`]).
    pub queued: u32,
    pub running: u32,
    pub succeeded: u32,
    pub failed: u32,
}

impl RoleCounts {
    pub fn finished(&self) -> u32 {
        self.succeeded + self.failed
    }
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
        }
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
        self.sizes.merge(&view.cluster);
        if let Some(listing) = &mut self.listing {
            listing.insert(view.name.clone());
        }
        self.pods.insert(view.name.clone(), Entry::Live(view));
    }

    /// A pod was deleted.
    pub fn remove(&mut self, name: &str) {
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

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
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
                    let failure = Failure {
                        pod: pod.clone(),
                        task: Some(task),
                        kind: FailureKind::Gone,
                    };
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

    fn entry_state(&self, entry: &Entry) -> (String, State, Option<Failure>) {
        let v = entry.view();
        let failure = |kind| {
            Some(Failure {
                pod: v.name.clone(),
                task: v.task,
                kind,
            })
        };
        let state = v.state();
        match entry {
            // A pod that finished and was then deleted (by --cleanup, say) keeps its
            // outcome; one deleted before the end failed.
            Entry::Gone(_) if !state.finished() => {
                (v.name.clone(), State::Failed, failure(FailureKind::Gone))
            }
            _ if state == State::Failed => {
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
                let kind = FailureKind::Exited {
                    code: exit.map(|e| e.code),
                    reason,
                    message,
                };
                (v.name.clone(), State::Failed, failure(kind))
            }
            _ if state == State::Pending && self.cannot_start(v) => {
                let mut reason = v.waiting.clone().expect("cannot_start implies a reason");
                if reason.reason == BACK_OFF
                    && let Some(pull_error) = self.pull_error_messages.get(&v.name)
                {
                    let back_off = reason.message.take().unwrap_or_default();
                    reason.message = Some(format!("{back_off} (last pull error: {pull_error})"));
                }
                (
                    v.name.clone(),
                    State::Failed,
                    failure(FailureKind::CannotStart(reason)),
                )
            }
            _ => (v.name.clone(), state, None),
        }
    }

    fn cannot_start(&self, v: &PodView) -> bool {
        let Some(w) = &v.waiting else { return false };
        FATAL_WAITING.contains(&w.reason.as_str())
            || (w.reason == PULL_ERROR
                && self.pull_errors.get(&v.name).copied().unwrap_or(0) >= PULL_ERRORS_FATAL)
    }

    /// The run's verdict (see the module docs).
    pub fn verdict(&self) -> Verdict {
        let states = self.states();
        if states.is_empty() {
            return Verdict::Pending;
        }
        if let Some(failure) = states.iter().find_map(|s| s.3.clone()) {
            return Verdict::Failed(failure);
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
        if deciding_done && workers_done {
            return Verdict::Succeeded;
        }
        if states.iter().any(|s| s.2 == State::Pending) {
            Verdict::Pending
        } else {
            Verdict::Running
        }
    }

    /// Every task has started: each pod is Running or finished, none is missing.
    pub fn started(&self) -> bool {
        let states = self.states();
        !states.is_empty() && states.iter().all(|s| s.2 != State::Pending)
    }

    /// Counts per role (chief, ps, worker, evaluator; then pods without a role), and
    /// the first reason a pod of that role is not running.
    pub fn summary(&self) -> Vec<RoleSummary> {
        let states = self.states();
        let mut out: Vec<RoleSummary> = Vec::new();
        for (task, name, state, failure) in &states {
            let role = task.map(|t| t.role);
            let at = match out.iter().position(|r| r.role == role) {
                Some(at) => at,
                None => {
                    out.push(RoleSummary {
                        role,
                        counts: RoleCounts::default(),
                        stuck: None,
                        queue: None,
                    });
                    out.len() - 1
                }
            };
            let summary = &mut out[at];
            summary.counts.total += 1;
            // A pod that cannot start fails the run, but it is still pending, not
            // finished: count it where its phase is (its reason says why).
            let counted = match failure {
                Some(Failure {
                    kind: FailureKind::CannotStart(_),
                    ..
                }) => State::Pending,
                _ => *state,
            };
            let view = self.pods.get(name).map(Entry::view);
            let queued =
                counted == State::Pending && failure.is_none() && view.is_some_and(|v| v.queued);
            if queued && summary.queue.is_none() {
                summary.queue = view.and_then(|v| v.queue.clone());
            }
            match counted {
                State::Pending if queued => summary.counts.queued += 1,
                State::Pending => summary.counts.pending += 1,
                State::Running => summary.counts.running += 1,
                State::Succeeded => summary.counts.succeeded += 1,
                State::Failed => summary.counts.failed += 1,
            }
            let label = task.map_or_else(|| name.clone(), Task::id);
            // A queued pod is waiting its turn, not stuck: the gate says nothing new.
            let reason = match failure {
                Some(f) => Some(failure_reason(f)),
                None => view
                    .and_then(|v| v.waiting.clone())
                    .filter(|_| !state.finished())
                    .filter(|r| !(queued && r.reason == SCHEDULING_GATED)),
            };
            // The first reason of the role, unless a later one says more than the
            // routine ContainerCreating / PodInitializing.
            if let Some(reason) = reason
                && summary
                    .stuck
                    .as_ref()
                    .is_none_or(|(_, r)| routine(r) && !routine(&reason))
            {
                summary.stuck = Some((label, reason));
            }
        }
        out.sort_by_key(|r| r.role.map_or(usize::MAX, |role| role as usize));
        out
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
    }
}

/// Joins a multi-line message into one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A pod of run `t` as the API would return it.
    pub(crate) fn pod(task: &str, phase: &str) -> Value {
        let (role, index) = task.rsplit_once('-').unwrap();
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("t-{task}"),
                "labels": {"training_attempt": "t", "tf-spawner/replica-type": role, "tf-spawner/replica-index": index},
                "creationTimestamp": "2024-01-01T00:00:00Z"
            },
            "spec": {"restartPolicy": "Never", "containers": [{"name": "tensorflow", "image": "tf"}]},
            "status": {"phase": phase}
        })
    }

    fn with_tf_config(mut pod: Value, cluster: Value) -> Value {
        let config = json!({"cluster": cluster, "task": {"type": "worker", "index": 0}});
        pod["spec"]["containers"][0]["env"] =
            json!([{"name": "TF_CONFIG", "value": config.to_string()}]);
        pod
    }

    fn terminated(mut pod: Value, code: i32, reason: &str) -> Value {
        pod["status"]["containerStatuses"] = json!([{
            "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
            "state": {"terminated": {"exitCode": code, "reason": reason, "message": "boom"}}
        }]);
        pod
    }

    fn waiting(mut pod: Value, reason: &str, message: &str) -> Value {
        pod["status"]["containerStatuses"] = json!([{
            "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
            "state": {"waiting": {"reason": reason, "message": message}}
        }]);
        pod
    }

    pub(crate) fn view(value: Value) -> PodView {
        PodView::from_pod(&serde_json::from_value(value).unwrap())
    }

    fn tracker(pods: Vec<Value>, all_workers: bool) -> Tracker {
        let mut t = Tracker::new("t", all_workers);
        t.replace(pods.into_iter().map(view).collect());
        t
    }

    #[test]
    fn reads_a_pod() {
        let mut p = terminated(pod("worker-1", "Failed"), 137, "OOMKilled");
        p["spec"]["nodeName"] = json!("node-a");
        let v = view(p);
        assert_eq!(
            v.task,
            Some(Task {
                role: Role::Worker,
                index: 1
            })
        );
        assert_eq!(v.phase, Phase::Failed);
        assert_eq!(v.node.as_deref(), Some("node-a"));
        assert_eq!(v.terminated.as_ref().unwrap().code, 137);
        assert_eq!(v.ready, (0, 1));
        assert_eq!(v.container.as_deref(), Some("tensorflow"));
        assert_eq!(v.age(1704067200 + 90), Some(90));
        assert_eq!(v.label(), "worker-1");
    }

    #[test]
    fn a_pod_has_started_when_its_container_runs_or_ran() {
        // Not started: pending without statuses, waiting, or failed before starting.
        assert!(!view(pod("worker-0", "Pending")).started);
        assert!(!view(waiting(pod("worker-0", "Pending"), "ContainerCreating", "")).started);
        assert!(!view(pod("worker-0", "Failed")).started);
        // Started: a Running pod without statuses, a running or terminated container, or
        // one waiting to restart after it ran.
        assert!(view(pod("worker-0", "Running")).started);
        assert!(view(terminated(pod("worker-0", "Failed"), 1, "Error")).started);
        let mut running = pod("worker-0", "Running");
        running["status"]["containerStatuses"] = json!([{
            "name": "tensorflow", "ready": true, "restartCount": 0, "image": "tf", "imageID": "",
            "state": {"running": {}}
        }]);
        assert!(view(running).started);
        let mut restarting = waiting(pod("worker-0", "Running"), "CrashLoopBackOff", "");
        restarting["status"]["containerStatuses"][0]["lastState"] =
            json!({"terminated": {"exitCode": 1}});
        assert!(view(restarting).started);
        // The log container decides, not a sidecar that runs.
        let mut sidecar = waiting(pod("worker-0", "Pending"), "ContainerCreating", "");
        sidecar["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "proxy", "image": "p"}));
        sidecar["status"]["containerStatuses"]
            .as_array_mut()
            .unwrap()
            .push(json!({
                "name": "proxy", "ready": true, "restartCount": 0, "image": "p", "imageID": "",
                "state": {"running": {}}
            }));
        assert!(!view(sidecar).started);
    }

    #[test]
    fn worker_zero_decides_without_a_chief() {
        let t = tracker(
            vec![pod("worker-0", "Succeeded"), pod("worker-1", "Running")],
            false,
        );
        assert_eq!(t.verdict(), Verdict::Succeeded);
        let t = tracker(
            vec![pod("worker-0", "Running"), pod("worker-1", "Succeeded")],
            false,
        );
        assert_eq!(t.verdict(), Verdict::Running);
    }

    #[test]
    fn all_workers_must_succeed_with_the_option() {
        let pods = vec![pod("worker-0", "Succeeded"), pod("worker-1", "Running")];
        assert_eq!(tracker(pods.clone(), true).verdict(), Verdict::Running);
        let pods = vec![pod("worker-0", "Succeeded"), pod("worker-1", "Succeeded")];
        assert_eq!(tracker(pods, true).verdict(), Verdict::Succeeded);
    }

    #[test]
    fn the_chief_decides_and_parameter_servers_never_exit() {
        let pods = vec![
            pod("chief-0", "Running"),
            pod("ps-0", "Running"),
            pod("worker-0", "Succeeded"),
        ];
        assert_eq!(tracker(pods, false).verdict(), Verdict::Running);
        let pods = vec![
            pod("chief-0", "Succeeded"),
            pod("ps-0", "Running"),
            pod("worker-0", "Running"),
        ];
        assert_eq!(tracker(pods, false).verdict(), Verdict::Succeeded);
    }

    #[test]
    fn any_failure_fails_the_run_and_names_the_pod() {
        let pods = vec![
            pod("worker-0", "Running"),
            terminated(pod("worker-1", "Failed"), 2, "Error"),
        ];
        let Verdict::Failed(f) = tracker(pods, false).verdict() else {
            panic!()
        };
        assert_eq!(f.pod, "t-worker-1");
        assert_eq!(
            f.to_string(),
            "pod t-worker-1 (worker-1) failed: exit code 2, reason Error: boom"
        );
        // Never restarts: a non-zero exit is a failure even before the phase says so.
        let pods = vec![terminated(pod("worker-0", "Running"), 1, "Error")];
        assert!(matches!(tracker(pods, false).verdict(), Verdict::Failed(_)));
        // An evicted pod has no container exit.
        let mut evicted = pod("worker-0", "Failed");
        evicted["status"]["reason"] = json!("Evicted");
        evicted["status"]["message"] = json!("The node was low on resource: memory.");
        let Verdict::Failed(f) = tracker(vec![evicted], false).verdict() else {
            panic!()
        };
        assert_eq!(
            f.to_string(),
            "pod t-worker-0 (worker-0) failed, reason Evicted: The node was low on resource: memory."
        );
    }

    #[test]
    fn pending_while_any_pod_is_pending() {
        let pods = vec![pod("worker-0", "Running"), pod("worker-1", "Pending")];
        let t = tracker(pods, false);
        assert_eq!(t.verdict(), Verdict::Pending);
        assert!(!t.started());
        let pods = vec![pod("worker-0", "Running"), pod("worker-1", "Running")];
        let t = tracker(pods, false);
        assert_eq!(t.verdict(), Verdict::Running);
        assert!(t.started());
    }

    #[test]
    fn a_deleted_pod_fails_an_unfinished_run() {
        let mut t = tracker(
            vec![pod("worker-0", "Running"), pod("worker-1", "Running")],
            false,
        );
        t.remove("t-worker-1");
        let Verdict::Failed(f) = t.verdict() else {
            panic!()
        };
        assert_eq!(
            f.to_string(),
            "pod t-worker-1 (worker-1) was deleted before the run finished"
        );
        // A re-list that misses a pod means the same.
        let mut t = tracker(vec![pod("worker-0", "Running")], false);
        t.replace(vec![]);
        assert!(matches!(t.verdict(), Verdict::Failed(_)));
        // A finished pod deleted afterwards keeps its outcome.
        let mut t = tracker(vec![pod("worker-0", "Succeeded")], false);
        t.remove("t-worker-0");
        assert_eq!(t.verdict(), Verdict::Succeeded);
    }

    #[test]
    fn tasks_named_in_tf_config_but_missing_count_as_deleted() {
        let cluster = json!({"worker": ["a:1", "b:1"]});
        let t = tracker(
            vec![with_tf_config(pod("worker-1", "Running"), cluster)],
            false,
        );
        let Verdict::Failed(f) = t.verdict() else {
            panic!()
        };
        assert_eq!(f.pod, "t-worker-0");
        assert_eq!(f.kind, FailureKind::Gone);
    }

    #[test]
    fn the_cluster_annotation_names_the_tasks_a_run_must_have() {
        // The layout since TF_CONFIG refers to the run's ConfigMap: the pod's TF_CONFIG
        // holds no addresses, its annotation holds the role counts.
        let mut p = pod("worker-1", "Running");
        p["metadata"]["annotations"] = json!({"tf-spawner/cluster": "chief=1,worker=2"});
        let t = tracker(vec![p], false);
        let Verdict::Failed(f) = t.verdict() else {
            panic!("chief-0 and worker-0 are missing")
        };
        assert_eq!(f.pod, "t-chief-0");
        assert_eq!(f.kind, FailureKind::Gone);
    }

    #[test]
    fn stuck_reasons_and_fail_fast() {
        let mut unschedulable = pod("worker-1", "Pending");
        unschedulable["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        }]);
        let t = tracker(vec![pod("worker-0", "Running"), unschedulable], false);
        assert_eq!(t.verdict(), Verdict::Pending);
        let summary = t.summary();
        assert_eq!(summary.len(), 1);
        let (who, reason) = summary[0].stuck.clone().unwrap();
        assert_eq!(who, "worker-1");
        assert_eq!(
            reason.to_string(),
            "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        );

        for reason in [
            "ContainerCreating",
            "CrashLoopBackOff",
            "CreateContainerError",
        ] {
            let t = tracker(
                vec![waiting(pod("worker-0", "Pending"), reason, "m")],
                false,
            );
            assert_eq!(t.verdict(), Verdict::Pending, "{reason}");
        }
        for reason in [
            "ImagePullBackOff",
            "InvalidImageName",
            "CreateContainerConfigError",
        ] {
            let t = tracker(
                vec![waiting(pod("worker-0", "Pending"), reason, "bad")],
                false,
            );
            let Verdict::Failed(f) = t.verdict() else {
                panic!("{reason}")
            };
            assert_eq!(
                f.to_string(),
                format!("pod t-worker-0 (worker-0) cannot start: {reason}: bad")
            );
        }
        // ErrImagePull: the second sighting is final.
        let pulling = waiting(pod("worker-0", "Pending"), "ErrImagePull", "not found");
        let mut t = tracker(vec![pulling.clone()], false);
        assert_eq!(t.verdict(), Verdict::Pending);
        t.update(view(pulling));
        assert!(matches!(t.verdict(), Verdict::Failed(_)));
    }

    /// What a real kubelet writes for an image that cannot be pulled (seen on the
    /// one-node cluster): ErrImagePull with the registry's error, then ImagePullBackOff
    /// saying only "Back-off pulling image". The verdict keeps the error; the pod counts
    /// as pending (it never ran), not as finished.
    #[test]
    fn a_failed_pull_keeps_its_error_and_counts_as_pending() {
        let image = "tf-spawner.local/nope:1";
        let error = format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image \"{image}\": no such host"
        );
        let mut t = tracker(
            vec![waiting(pod("worker-0", "Pending"), "ErrImagePull", &error)],
            false,
        );
        let back_off = format!("Back-off pulling image \"{image}\"");
        t.update(view(waiting(
            pod("worker-0", "Pending"),
            "ImagePullBackOff",
            &back_off,
        )));
        let Verdict::Failed(f) = t.verdict() else {
            panic!("an image that cannot be pulled fails the run")
        };
        assert_eq!(
            f.to_string(),
            format!(
                "pod t-worker-0 (worker-0) cannot start: ImagePullBackOff: {back_off} (last pull error: {error})"
            )
        );
        let counts = &t.summary()[0].counts;
        assert_eq!(
            (counts.pending, counts.failed, counts.finished()),
            (1, 0, 0)
        );
    }

    #[test]
    fn summary_counts_per_role_in_role_order() {
        let t = tracker(
            vec![
                pod("worker-0", "Running"),
                pod("worker-1", "Pending"),
                pod("worker-2", "Succeeded"),
                pod("chief-0", "Running"),
                pod("ps-0", "Running"),
            ],
            false,
        );
        let s = t.summary();
        let roles: Vec<Option<Role>> = s.iter().map(|r| r.role).collect();
        assert_eq!(
            roles,
            [Some(Role::Chief), Some(Role::Ps), Some(Role::Worker)]
        );
        assert_eq!(
            s[2].counts,
            RoleCounts {
                total: 3,
                pending: 1,
                running: 1,
                succeeded: 1,
                failed: 0,
                queued: 0,
            }
        );
    }

    /// A pod as Kueue's webhook leaves it until the run's group is admitted.
    fn gated(task: &str) -> Value {
        let mut p = pod(task, "Pending");
        p["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("team-gpu");
        p["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
        p["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"
        }]);
        p
    }

    #[test]
    fn gated_pods_are_queued_not_stuck_and_never_fail_fast() {
        let t = tracker(vec![gated("worker-0"), gated("worker-1")], false);
        assert_eq!(t.verdict(), Verdict::Pending);
        assert!(!t.started());
        let s = t.summary();
        assert_eq!(s[0].counts.queued, 2);
        assert_eq!(s[0].counts.pending, 0);
        assert_eq!(s[0].queue.as_deref(), Some("team-gpu"));
        assert_eq!(s[0].stuck, None);
        // Admitted: the gates go, the pods are pending like any other.
        let t = tracker(vec![pod("worker-0", "Pending"), gated("worker-1")], false);
        let s = t.summary();
        assert_eq!((s[0].counts.pending, s[0].counts.queued), (1, 1));
        // A pod of a gang's PodGroup waits for the whole group: queued, with the
        // scheduler's reason kept.
        let mut volcano = pod("worker-0", "Pending");
        volcano["metadata"]["annotations"] = json!({
            "scheduling.k8s.io/group-name": "t", "scheduling.volcano.sh/queue-name": "gpu"
        });
        volcano["spec"]["schedulerName"] = json!("volcano");
        volcano["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "pod group is not ready, 2 Pending, 2 minAvailable"
        }]);
        let mut cosched = pod("worker-1", "Pending");
        cosched["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = json!("t");
        let t = tracker(vec![volcano, cosched], false);
        let s = t.summary();
        assert_eq!((s[0].counts.queued, s[0].counts.pending), (2, 0));
        assert_eq!(s[0].queue.as_deref(), Some("gpu"));
        assert_eq!(s[0].stuck.as_ref().unwrap().1.reason, "Unschedulable");
        assert_eq!(t.verdict(), Verdict::Pending);
        // A bound pod is past its queue, whatever its spec says.
        let mut bound = gated("worker-0");
        bound["spec"]["nodeName"] = json!("n");
        assert!(!view(bound).queued);
    }
}
