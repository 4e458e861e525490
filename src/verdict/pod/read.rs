//! A pod as the API server stores it, read into a [`PodView`]: its task from the replica
//! labels, its containers' states, why it is not running or being taken away, its times
//! and what it was made with.

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::labels::{
    ATTEMPT_LABEL, CLUSTER_ANNOTATION, INDEX_LABEL, KUEUE_QUEUE_LABEL, PULL_GRACE_ANNOTATION,
    RESTARTED_BY_ANNOTATION, RESTARTED_FOR_ANNOTATION, ROLE_LABEL, RUN_STARTED_ANNOTATION,
    STOPPED_AFTER_TASK_ANNOTATION, STOPPED_ANNOTATION, VOLCANO_QUEUE_ANNOTATION,
};
use crate::roles::{Role, RoleSizes, Task};

use super::{DELETED, Exit, Phase, PodSetup, PodTimes, PodView, Reason};

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
            restarted_by: annotation(meta, RESTARTED_BY_ANNOTATION)
                .filter(|by| by.len() <= 200 && !by.chars().any(char::is_control))
                .cloned(),
            stopped_after_task: annotation(meta, STOPPED_AFTER_TASK_ANNOTATION).is_some(),
            sidecar_running: !matches!(phase, Phase::Succeeded | Phase::Failed)
                && sidecar_running(statuses, container),
            times: PodTimes::of(pod, tf_status),
            setup,
        }
    }
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
    crate::plan::podgroup::Gang::ALL
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

/// The pod condition (1.26+) saying the pod is about to go for a reason outside it.
const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// Pod reasons of a pod taken away by the kubelet or the scheduler.
const REMOVAL_REASONS: &[&str] = &["Evicted", "Preempting"];

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
