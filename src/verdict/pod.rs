//! One pod as the verdict sees it: its task, phase, exit and the reason it is not
//! starting, read from what the API server stores.

use std::fmt;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::labels::{
    ATTEMPT_LABEL, CLUSTER_ANNOTATION, INDEX_LABEL, KUEUE_QUEUE_LABEL, PULL_GRACE_ANNOTATION,
    RESTARTED_FOR_ANNOTATION, ROLE_LABEL, RUN_STARTED_ANNOTATION, STOPPED_AFTER_TASK_ANNOTATION,
    STOPPED_ANNOTATION, VOLCANO_QUEUE_ANNOTATION,
};
use crate::roles::{Role, RoleSizes, Task};

/// The pod reason of a pod stopped by the kubelet at its `activeDeadlineSeconds`.
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";

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
    /// The run's attempt the pod belongs to ([`ATTEMPT_LABEL`]; 0 without one).
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
    /// (see [`node_lost_since`]); `Some(when)`, seconds since the epoch (0 if unsaid).
    pub node_lost: Option<i64>,
    /// Stopped for a container beside the task, whose own end stands
    /// ([`STOPPED_AFTER_TASK_ANNOTATION`]).
    pub stopped_after_task: bool,
    /// On a pod of a restarted attempt: the failure the restart was for
    /// ([`RESTARTED_FOR_ANNOTATION`]).
    pub restarted_for: Option<String>,
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
    /// its last one): the run report (`timing.rs`).
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// When the pod was taken away: its `DisruptionTarget` condition's time, else when
    /// its deletion was asked (`deletionTimestamp` less the grace period). The
    /// kubelet's order of failures (`Tracker::decisive`).
    pub removed_at: Option<i64>,
    /// When tf-spawner stopped the pod after the run's verdict ([`STOPPED_ANNOTATION`]):
    /// it ends by its deadline, [`State::Stopped`].
    pub stopped_at: Option<i64>,
    /// On a pod of a restarted attempt: when the run's first attempt started
    /// ([`RUN_STARTED_ANNOTATION`]).
    pub run_started: Option<i64>,
}

impl PodTimes {
    /// `pod`'s times; `tf`, the status of its TF container.
    fn of(pod: &Pod, tf: Option<&ContainerStatus>) -> PodTimes {
        let meta = &pod.metadata;
        let (started_at, finished_at) = container_times(tf);
        PodTimes {
            created: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
            held_from: start_time(pod.status.as_ref()),
            started_at,
            finished_at,
            removed_at: removed_at(pod),
            stopped_at: time_annotation(meta, STOPPED_ANNOTATION),
            run_started: run_started(meta),
        }
    }
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
    /// yet: [`PULL_GRACE_ANNOTATION`] (`--pull-grace`); `None`: the built-in one.
    pub pull_grace: Option<i64>,
}

impl PodSetup {
    /// `pod`'s setup; `tf`, its TF container.
    fn of(pod: &Pod, tf: Option<&Container>) -> PodSetup {
        let meta = &pod.metadata;
        let spec = pod.spec.as_ref();
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        PodSetup {
            restart_never: spec.and_then(|s| s.restart_policy.as_deref()) == Some("Never"),
            cluster: cluster_of_pod(meta, tf),
            container: tf.map(|c| c.name.clone()),
            gpus: containers.iter().map(gpus_of).sum(),
            lost_after: spec.and_then(lost_after),
            pull_grace: annotation(meta, PULL_GRACE_ANNOTATION).and_then(|s| s.parse().ok()),
        }
    }
}

impl PodView {
    pub fn from_pod(pod: &Pod) -> PodView {
        let meta = &pod.metadata;
        let spec = pod.spec.as_ref();
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        let tf = crate::labels::tf_container(containers);
        let setup = PodSetup::of(pod, tf);
        let container = setup.container.as_ref();
        let status = pod.status.as_ref();
        let statuses: &[ContainerStatus] = status
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or_default();
        let tf_status = statuses
            .iter()
            .find(|s| Some(&s.name) == container)
            .or_else(|| statuses.first());
        let phase = Phase::parse(status.and_then(|s| s.phase.as_deref()));
        let (terminated, last_exit) = exits(tf_status);
        PodView {
            name: meta.name.clone().unwrap_or_default(),
            task: task_of(pod),
            attempt: attempt_of(meta),
            phase,
            ready: (
                statuses.iter().filter(|s| s.ready).count() as u32,
                containers.len() as u32,
            ),
            restarts: statuses.iter().map(|s| s.restart_count.max(0) as u32).sum(),
            node: spec.and_then(|s| s.node_name.clone()),
            terminated,
            last_exit,
            pod_reason: status.and_then(|s| reason(s.reason.as_ref(), s.message.as_ref())),
            removal: removal(pod),
            waiting: waiting(status, tf_status),
            started: match tf_status {
                Some(s) => ran(s),
                None => phase == Phase::Running,
            },
            queued: phase == Phase::Pending && spec.is_some_and(|s| held(s, meta)),
            queue: queue_of(meta),
            terminating: meta.deletion_timestamp.is_some(),
            node_lost: node_lost_since(status).filter(|_| phase == Phase::Running),
            restarted_for: annotation(meta, RESTARTED_FOR_ANNOTATION).cloned(),
            stopped_after_task: annotation(meta, STOPPED_AFTER_TASK_ANNOTATION).is_some(),
            sidecar_running: !matches!(phase, Phase::Succeeded | Phase::Failed)
                && sidecar_running(statuses, container),
            times: PodTimes::of(pod, tf_status),
            setup,
        }
    }

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

/// When the kubelet took the pod (`status.startTime`), seconds since the epoch.
fn start_time(status: Option<&PodStatus>) -> Option<i64> {
    status?.start_time.as_ref().map(|t| t.0.as_second())
}

/// The GPUs container `c` asks for: its limit (else request) of each extended resource
/// named `…/gpu` or `…/mig-…` (`--gpu-resource`'s kinds).
fn gpus_of(c: &Container) -> u32 {
    let Some(r) = &c.resources else { return 0 };
    let is_gpu = |name: &str| {
        name.split_once('/')
            .is_some_and(|(_, n)| n == "gpu" || n.starts_with("mig-"))
    };
    let mut names: std::collections::BTreeSet<&String> = std::collections::BTreeSet::new();
    names.extend(r.limits.iter().flat_map(|m| m.keys()));
    names.extend(r.requests.iter().flat_map(|m| m.keys()));
    names
        .into_iter()
        .filter(|n| is_gpu(n))
        .filter_map(|n| {
            let q = r.limits.as_ref().and_then(|m| m.get(n));
            let q = q.or_else(|| r.requests.as_ref().and_then(|m| m.get(n)))?;
            q.0.parse::<u32>().ok()
        })
        .sum()
}

/// The pod's annotation `key` as a time (RFC 3339), in seconds since the epoch.
fn time_annotation(meta: &ObjectMeta, key: &str) -> Option<i64> {
    let text = annotation(meta, key)?;
    Some(
        text.parse::<k8s_openapi::jiff::Timestamp>()
            .ok()?
            .as_second(),
    )
}

/// The run's first start a re-created pod carries ([`RUN_STARTED_ANNOTATION`]): the
/// run started before the pod was made, so a later time is not tf-spawner's and is
/// ignored.
fn run_started(meta: &ObjectMeta) -> Option<i64> {
    let at = time_annotation(meta, RUN_STARTED_ANNOTATION)?;
    let made = meta.creation_timestamp.as_ref().map(|c| c.0.as_second());
    made.is_none_or(|m| at <= m).then_some(at)
}

/// The pod's annotation `key`.
fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a String> {
    meta.annotations.as_ref()?.get(key)
}

/// The TF container's current terminated state, and that else its last one (after a
/// restart).
fn exits(tf_status: Option<&ContainerStatus>) -> (Option<Exit>, Option<Exit>) {
    let terminated_in =
        |state: Option<&ContainerState>| state.and_then(|s| s.terminated.as_ref()).map(exit_of);
    let terminated = terminated_in(tf_status.and_then(|s| s.state.as_ref()));
    let last_exit = terminated
        .clone()
        .or_else(|| terminated_in(tf_status.and_then(|s| s.last_state.as_ref())));
    (terminated, last_exit)
}

/// A container other than `tf` has not ended (see [`PodView::sidecar_running`]).
fn sidecar_running(statuses: &[ContainerStatus], tf: Option<&String>) -> bool {
    statuses
        .iter()
        .any(|s| Some(&s.name) != tf && s.state.as_ref().is_none_or(|st| st.terminated.is_none()))
}

/// A pod not yet on a node held back by a queue (see [`PodView::queued`]): scheduling
/// gates, or a gang's PodGroup.
fn held(spec: &PodSpec, meta: &ObjectMeta) -> bool {
    spec.node_name.is_none()
        && (spec
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
            || in_gang(meta))
}

/// The queue the pod names: its Kueue LocalQueue, else its Volcano queue.
fn queue_of(meta: &ObjectMeta) -> Option<String> {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(KUEUE_QUEUE_LABEL))
        .or_else(|| annotation(meta, VOLCANO_QUEUE_ANNOTATION))
        .cloned()
}

/// The pod's [`ATTEMPT_LABEL`], 0 without one (the first attempt, or an earlier version).
fn attempt_of(meta: &ObjectMeta) -> u32 {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(ATTEMPT_LABEL))
        .and_then(|a| a.parse().ok())
        .unwrap_or(0)
}

/// The pod belongs to a gang scheduler's PodGroup (of any of `Gang::ALL`).
fn in_gang(meta: &ObjectMeta) -> bool {
    crate::podgroup::Gang::ALL
        .into_iter()
        .any(|gang| gang.about().member.group(meta).is_some())
}

/// The task its replica labels name.
fn task_of(pod: &Pod) -> Option<Task> {
    let labels = pod.metadata.labels.as_ref()?;
    let role = Role::parse(labels.get(ROLE_LABEL)?)?;
    let index = labels.get(INDEX_LABEL)?.parse::<u32>().ok()?;
    Some(Task { role, index })
}

fn exit_of(t: &ContainerStateTerminated) -> Exit {
    Exit {
        code: t.exit_code,
        reason: t.reason.clone().filter(|r| !r.is_empty()),
        message: t.message.clone().filter(|m| !m.is_empty()),
    }
}

/// A reason and its message, when the reason is not empty.
fn reason(reason: Option<&String>, message: Option<&String>) -> Option<Reason> {
    Some(Reason {
        reason: reason.filter(|r| !r.is_empty())?.clone(),
        message: message.filter(|m| !m.is_empty()).cloned(),
    })
}

/// The reasons a pod is taken away (see [`PodView::removal`]).
fn removal(pod: &Pod) -> Option<Reason> {
    let status = pod.status.as_ref();
    let disruption = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_TARGET && c.status == "True")
        .map(|c| Reason {
            reason: c.reason.clone().unwrap_or_else(|| DISRUPTION_TARGET.into()),
            message: c.message.clone().filter(|m| !m.is_empty()),
        });
    let evicted = status
        .and_then(|s| reason(s.reason.as_ref(), s.message.as_ref()))
        .filter(|r| REMOVAL_REASONS.contains(&r.reason.as_str()));
    let deleted = pod.metadata.deletion_timestamp.is_some().then(|| Reason {
        reason: DELETED.into(),
        message: None,
    });
    disruption.or(evicted).or(deleted)
}

/// When the pod was taken away (see [`PodView::removed_at`]).
fn removed_at(pod: &Pod) -> Option<i64> {
    let disruption = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_TARGET && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0.as_second());
    let meta = &pod.metadata;
    let deleted = meta
        .deletion_timestamp
        .as_ref()
        .map(|t| t.0.as_second() - meta.deletion_grace_period_seconds.unwrap_or(0).max(0));
    disruption.or(deleted)
}

/// The taint the node-lifecycle controller puts on a node that stopped reporting.
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The seconds the pod tolerates an unreachable node (see [`PodView::lost_after`]).
fn lost_after(spec: &PodSpec) -> Option<i64> {
    spec.tolerations
        .as_ref()?
        .iter()
        .find(|t| {
            t.key.as_deref() == Some(UNREACHABLE_TAINT) && t.effect.as_deref() == Some("NoExecute")
        })?
        .toleration_seconds
}

/// When the node-lifecycle controller marked the pod not ready because its node stopped
/// reporting: the pod's `Ready` condition False (or Unknown) while `ContainersReady` is still
/// True. The kubelet never writes that pair (its `Ready` is `ContainersReady` and the
/// readiness gates, whose failure says `ReadinessGatesNotReady`); the controller flips
/// `Ready` alone when the node goes `NotReady`/`Unknown` (`MarkPodsNotReady` in
/// kubernetes' pkg/controller/util/node/controller_utils.go), the same on v1.20 and v1.36.
/// The time is that condition's `lastTransitionTime` (0 if it has none).
fn node_lost_since(status: Option<&PodStatus>) -> Option<i64> {
    let conditions = status?.conditions.as_deref()?;
    let find = |kind: &str| conditions.iter().find(|c| c.type_ == kind);
    let ready = find("Ready")?;
    let containers_ready = find("ContainersReady")?;
    (ready.status != "True"
        && containers_ready.status == "True"
        && ready.reason.as_deref() != Some("ReadinessGatesNotReady"))
    .then(|| {
        ready
            .last_transition_time
            .as_ref()
            .map_or(0, |t| t.0.as_second())
    })
}

/// [`crate::verdict::FailureKind::Removed`]'s reason for a task lost with its node, and
/// the summary's reason for a task on a node that stopped reporting.
pub const NODE_LOST: &str = "NodeLost";

/// The pod condition (1.26+) saying the pod is about to go for a reason outside it.
const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// Pod reasons of a pod taken away by the kubelet or the scheduler.
const REMOVAL_REASONS: &[&str] = &["Evicted", "Preempting"];
/// [`PodView::removal`]'s reason for a pod with a deletion timestamp and nothing more.
pub const DELETED: &str = "Deleted";

/// Whether the container runs or has ended, now or before a restart.
fn ran(s: &ContainerStatus) -> bool {
    let ran_in = |state: Option<&ContainerState>| {
        state.is_some_and(|st| st.running.is_some() || st.terminated.is_some())
    };
    ran_in(s.state.as_ref()) || ran_in(s.last_state.as_ref())
}

/// Unschedulable, else the TF container's waiting reason, then any other container's,
/// then init containers' (a stuck init container keeps the pod Pending).
fn waiting(status: Option<&PodStatus>, tf_status: Option<&ContainerStatus>) -> Option<Reason> {
    let unschedulable = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| Reason {
            reason: c.reason.clone().unwrap_or_else(|| "Unschedulable".into()),
            message: c.message.clone(),
        });
    let statuses: &[ContainerStatus] = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let init: &[ContainerStatus] = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default();
    unschedulable.or_else(|| {
        tf_status
            .into_iter()
            .chain(statuses.iter())
            .chain(init.iter())
            .filter_map(|s| s.state.as_ref()?.waiting.as_ref())
            .find_map(|w| reason(w.reason.as_ref(), w.message.as_ref()))
    })
}

/// The run's tasks: from the pod's [`CLUSTER_ANNOTATION`]; for pods of earlier versions,
/// from the addresses in their `TF_CONFIG`.
fn cluster_of_pod(meta: &ObjectMeta, tf: Option<&Container>) -> RoleSizes {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .and_then(|sizes| RoleSizes::parse(sizes))
        .unwrap_or_else(|| tf.map(cluster_in).unwrap_or_default())
}

fn cluster_in(container: &Container) -> RoleSizes {
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "TF_CONFIG")
        .and_then(|e| e.value.as_deref())
        .map(cluster_of)
        .unwrap_or_default()
}

/// The tasks per role of a `TF_CONFIG`'s `cluster`.
fn cluster_of(tf_config: &str) -> RoleSizes {
    let mut sizes = RoleSizes::default();
    let Ok(value) = serde_json::from_str::<serde_json::Value>(tf_config) else {
        return sizes;
    };
    let Some(cluster) = value.get("cluster").and_then(|c| c.as_object()) else {
        return sizes;
    };
    for (role, hosts) in cluster {
        if let (Some(role), Some(hosts)) = (Role::parse(role), hosts.as_array()) {
            sizes.set(role, hosts.len() as u32);
        }
    }
    sizes
}

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

/// When a container started and ended (seconds since the epoch): its current state's,
/// else (after a restart) its last one's end.
fn container_times(status: Option<&ContainerStatus>) -> (Option<i64>, Option<i64>) {
    let Some(status) = status else {
        return (None, None);
    };
    let state = status.state.as_ref();
    // A container that never started (StartError) reports the epoch as its start.
    let secs = |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| {
        Some(t.0.as_second()).filter(|s| *s > 0)
    };
    if let Some(running) = state.and_then(|s| s.running.as_ref()) {
        return (running.started_at.as_ref().and_then(secs), None);
    }
    if let Some(ended) = state.and_then(|s| s.terminated.as_ref()) {
        return (
            ended.started_at.as_ref().and_then(secs),
            ended.finished_at.as_ref().and_then(secs),
        );
    }
    (None, None)
}

/// Joins a multi-line message into one line, every control character left shown
/// escaped (`output::escape_controls`): the messages it joins (a termination message,
/// an annotation, an event) came from the cluster, and may carry escape sequences.
pub fn one_line(text: &str) -> String {
    crate::output::escape_controls(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}
