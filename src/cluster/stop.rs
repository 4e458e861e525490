//! Stopping what is left of a run once its verdict is in (`ops::wait`, TFJob's
//! `cleanPodPolicy: Running`, without its loss): the run's pods that have not finished —
//! parameter servers, which serve until they are stopped; workers hung in a collective
//! operation after a peer failed; pods still starting — are ended and kept, with their
//! status and log, until the run is deleted.
//!
//! A pod a node has taken gets `spec.activeDeadlineSeconds: 1` and the
//! [`STOPPED_ANNOTATION`] in one merge patch. The API server lets a pod's deadline be set
//! or lowered, never raised nor removed (`ValidatePodUpdate`, pkg/apis/core/validation:
//! "must be less than or equal to previous value"; 1 is never above a valid old one).
//! The deadline counts from the pod's `status.startTime`, so the kubelet finds it past at
//! once and kills the pod as for `--deadline`: SIGTERM, the pod's grace period, then the
//! pod is `Failed` with reason `DeadlineExceeded` — terminal, so it no longer counts
//! against a ResourceQuota nor holds its node's CPUs and GPUs. A pod no node has taken
//! has no start time (the kubelet's deadline handler skips it) and would stay Pending,
//! holding its quota: it never started, has no log, and is deleted (uid as
//! precondition), its task recorded on the run's ConfigMap by the caller.
//!
//! One fresh list, not the follower's view: a pod may have finished since the verdict.

use anyhow::Result;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;

use super::Cluster;
use crate::labels::{STOPPED_AFTER_TASK_ANNOTATION, STOPPED_ANNOTATION, run_selector};

/// What [`stop_unfinished`] did, each list sorted by pod name.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Pods on a node, ended by their deadline and kept.
    pub stopped: Vec<String>,
    /// Pods no node had taken, deleted: (pod name, task id or pod name).
    pub deleted: Vec<(String, String)>,
}

/// Whether a pod has finished: its phase is `Succeeded` or `Failed`, or it will never
/// restart a container and every one of them has ended.
fn finished(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return true;
    }
    // A 1.27+ kubelet keeps a pod Running for seconds after its containers ended (until
    // it has torn the pod down): such a pod has finished. A container still running
    // beside an ended TF container (a sidecar) has not: it is stopped like a task.
    let spec = pod.spec.as_ref();
    let never = spec.and_then(|s| s.restart_policy.as_deref()) == Some("Never");
    let statuses = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let ended = |name: &str| {
        statuses
            .iter()
            .any(|c| c.name == name && c.state.as_ref().is_some_and(|st| st.terminated.is_some()))
    };
    let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    never && !containers.is_empty() && containers.iter().all(|c| ended(&c.name))
}

/// `worker-1`, from the pod's replica labels.
fn task_id(pod: &Pod) -> Option<String> {
    let labels = pod.metadata.labels.as_ref()?;
    let role = labels.get(crate::labels::ROLE_LABEL)?;
    let index = labels.get(crate::labels::INDEX_LABEL)?;
    Some(format!("{role}-{index}"))
}

/// The merge patch that stops a pod on a node (see the module docs); `task_ended`: its
/// TF container had ended already (a sidecar is what is stopped).
pub fn stop_patch(now: &str, task_ended: bool) -> serde_json::Value {
    let mut annotations = serde_json::json!({ STOPPED_ANNOTATION: now });
    if task_ended {
        annotations[STOPPED_AFTER_TASK_ANNOTATION] = "true".into();
    }
    serde_json::json!({
        "metadata": { "annotations": annotations },
        "spec": { "activeDeadlineSeconds": 1 },
    })
}

/// Whether the pod's TF container (`tensorflow`, else the first) has ended.
fn task_ended(pod: &Pod) -> bool {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let Some(tf) = crate::labels::tf_container(containers) else {
        return false;
    };
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref());
    statuses
        .unwrap_or_default()
        .iter()
        .any(|s| s.name == tf.name && s.state.as_ref().is_some_and(|st| st.terminated.is_some()))
}

enum Done {
    Stopped(String),
    Deleted(String, String),
}

/// Stops the pods of run `tag` that have not finished and are not being deleted
/// already, `max_in_flight` at a time. The first error (after trying every pod) is the
/// result.
pub async fn stop_unfinished(
    cluster: &Cluster,
    tag: &str,
    max_in_flight: usize,
) -> Result<Stopped> {
    let pods = cluster
        .list::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing the run's pods", &e))?;
    let now = crate::duration::timestamp().to_string();
    let now = &now;
    let results: Vec<Result<Option<Done>>> = stream::iter(unfinished(&pods))
        .map(|pod| stop_one(cluster, now, pod))
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    let mut out = Stopped::default();
    let mut first_error = None;
    for r in results {
        match r {
            Ok(Some(Done::Stopped(name))) => out.stopped.push(name),
            Ok(Some(Done::Deleted(name, label))) => out.deleted.push((name, label)),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    out.stopped.sort();
    out.deleted.sort();
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A pod of the run to stop: its name, uid, whether a node took it, its task.
struct Unfinished {
    name: String,
    uid: String,
    on_node: bool,
    label: String,
    task_ended: bool,
}

/// The pods that have not finished and are not being deleted already.
fn unfinished(pods: &[Pod]) -> Vec<Unfinished> {
    pods.iter()
        .filter(|p| !finished(p) && p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            Some(Unfinished {
                name: p.metadata.name.clone()?,
                uid: p.metadata.uid.clone()?,
                on_node: p.spec.as_ref().is_some_and(|s| s.node_name.is_some()),
                label: task_id(p).unwrap_or_else(|| p.metadata.name.clone().unwrap_or_default()),
                task_ended: task_ended(p),
            })
        })
        .collect()
}

/// Stops one pod: a pod on a node gets the stop patch (its log is kept); one no node
/// took is deleted (by uid: not a new pod of the name).
async fn stop_one(cluster: &Cluster, now: &str, pod: Unfinished) -> Result<Option<Done>> {
    let Unfinished {
        name,
        uid,
        on_node,
        label,
        task_ended,
    } = pod;
    let done = if on_node {
        match cluster
            .merge_patch::<Pod>(&name, &stop_patch(now, task_ended))
            .await
        {
            Ok(()) => Ok(Some(Done::Stopped(name.clone()))),
            // Gone meanwhile: nothing left to stop.
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    } else {
        cluster
            .delete_exact::<Pod>(&name, &uid)
            .await
            .map(|()| Some(Done::Deleted(name.clone(), label)))
    };
    done.map_err(|e| cluster.explain(&format!("stopping pod {name}"), &e))
}

/// Waits (one list a second, at most `limit`) until no pod of run `tag` that tf-spawner
/// stopped is still running: their last lines are then in their logs.
///
/// A v1.20 kubelet says a stopped pod `Failed` at once, while its containers still run
/// their SIGTERM handlers, and leaves their state `running` after they end: the API
/// cannot tell when they do. Their logs can: the kubelet ends a followed log when its
/// container ends (it asks the runtime, not the API). Such containers' logs are
/// followed, from their end (no line read twice), until then.
pub async fn until_ended(cluster: &Cluster, tag: &str, limit: std::time::Duration) {
    let give_up = tokio::time::Instant::now() + limit;
    let pods = loop {
        let Ok(pods) = cluster.list::<Pod>(&run_selector(tag)).await else {
            return;
        };
        let stopping = pods.iter().any(|p| stopped(p) && !finished(p));
        if !stopping {
            break pods;
        }
        if tokio::time::Instant::now() >= give_up {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    let follows = said_running(&pods)
        .into_iter()
        .map(|(pod, container)| until_log_ends(cluster, pod, container));
    let _ = tokio::time::timeout_at(give_up, futures::future::join_all(follows)).await;
}

/// Whether tf-spawner stopped the pod (its [`STOPPED_ANNOTATION`]).
fn stopped(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(STOPPED_ANNOTATION))
}

/// The (pod, container)s of the stopped pods whose container the API still says
/// `running` (a v1.20 kubelet's `Failed` pod).
fn said_running(pods: &[Pod]) -> Vec<(&str, &str)> {
    pods.iter()
        .filter(|p| stopped(p))
        .flat_map(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            let statuses = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_deref());
            statuses
                .unwrap_or_default()
                .iter()
                .filter(|c| c.state.as_ref().is_some_and(|st| st.running.is_some()))
                .map(move |c| (name, c.name.as_str()))
        })
        .collect()
}

/// Follows `container`'s log from its end until the kubelet ends it (the container
/// has ended), opening it again after a quiet spell (`idle_timeout`); an error (the
/// pod gone, the log unreadable) ends the wait.
async fn until_log_ends(cluster: &Cluster, pod: &str, container: &str) {
    let params = kube::api::LogParams {
        container: Some(container.to_string()),
        follow: true,
        tail_lines: Some(0),
        ..kube::api::LogParams::default()
    };
    loop {
        let Ok(mut log) = super::pod_logs::open(cluster, pod, &params).await else {
            return;
        };
        match futures::io::copy(&mut log, &mut futures::io::sink()).await {
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, states: &[(&str, serde_json::Value)]) -> Pod {
        let containers: Vec<_> = states.iter().map(|(n, _)| json!({"name": n})).collect();
        let statuses: Vec<_> = states
            .iter()
            .map(|(n, s)| json!({"name": n, "ready": false, "restartCount": 0, "image": "i", "imageID": "", "state": s}))
            .collect();
        serde_json::from_value(json!({
            "spec": {"restartPolicy": "Never", "containers": containers},
            "status": {"phase": phase, "containerStatuses": statuses},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_has_finished_when_every_container_has_ended() {
        let ended = json!({"terminated": {"exitCode": 0}});
        let runs = json!({"running": {}});
        // A 1.27+ kubelet's Running pod whose only container ended.
        assert!(finished(&pod("Running", &[("tensorflow", ended.clone())])));
        assert!(!finished(&pod("Running", &[("tensorflow", runs.clone())])));
        // A sidecar still running beside an ended TF container: stopped like a task.
        let sidecar = [("tensorflow", ended.clone()), ("proxy", runs)];
        assert!(!finished(&pod("Running", &sidecar)));
        let both = [("tensorflow", ended.clone()), ("proxy", ended)];
        assert!(finished(&pod("Running", &both)));
        assert!(finished(&pod("Failed", &sidecar)));
    }
}
