//! Stopping what is left of a run once its verdict is in (`ops::wait`, TFJob's
//! `cleanPodPolicy: Running`): the run's pods that have not finished — parameter
//! servers, which serve until they are stopped; workers hung in a collective operation
//! after a peer failed; pods still queued — are deleted, each with its uid as a
//! precondition; the pods that finished (Succeeded, Failed) stay, with their logs.
//!
//! One fresh list, not the follower's view: a pod may have finished since the verdict.

use anyhow::Result;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;

use super::Cluster;
use crate::labels::run_selector;

/// Whether a pod has finished: its phase is `Succeeded` or `Failed`.
fn finished(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return true;
    }
    // A 1.27+ kubelet keeps a pod Running for seconds after its only container ended
    // (until it has torn the pod down): a TF container that ended, never to restart, has
    // finished, as the verdict counts it.
    let spec = pod.spec.as_ref();
    let never = spec.and_then(|s| s.restart_policy.as_deref()) == Some("Never");
    let tf = spec.and_then(|s| {
        s.containers
            .iter()
            .find(|c| c.name == crate::labels::TF_CONTAINER)
            .or_else(|| s.containers.first())
    });
    let ended = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| Some(&c.name) == tf.map(|t| &t.name)))
        .and_then(|c| c.state.as_ref())
        .is_some_and(|state| state.terminated.is_some());
    never && ended
}

/// Deletes the pods of run `tag` that have not finished and are not being deleted
/// already, `max_in_flight` at a time. Returns their names, in order; the first error
/// (after trying every pod) is the result.
pub async fn stop_unfinished(
    cluster: &Cluster,
    tag: &str,
    max_in_flight: usize,
) -> Result<Vec<String>> {
    let pods = cluster
        .list::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing the run's pods", &e))?;
    let unfinished: Vec<(String, String)> = pods
        .iter()
        .filter(|p| !finished(p) && p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name.clone()?, p.metadata.uid.clone()?)))
        .collect();
    let results: Vec<Result<String>> = stream::iter(unfinished)
        .map(|(name, uid)| async move {
            cluster
                .delete_exact::<Pod>(&name, &uid)
                .await
                .map(|()| name.clone())
                .map_err(|e| cluster.explain(&format!("stopping pod {name}"), &e))
        })
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    let mut stopped = Vec::new();
    let mut first_error = None;
    for r in results {
        match r {
            Ok(name) => stopped.push(name),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    stopped.sort();
    match first_error {
        Some(e) => Err(e),
        None => Ok(stopped),
    }
}
