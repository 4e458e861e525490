//! The API side of a restart (`wait --restarts`, `ops/restart/mod.rs`): the run's pods read
//! once as templates, the pods of an attempt deleted, and the next attempt's pods made
//! from the templates (created through `apply.rs`'s ledger, so a failed or interrupted
//! restart deletes exactly what it created).
//!
//! Where the specs come from: the pods themselves, read whole from the API server when
//! the follow starts (`wait` is often another process than the spawn, with no plan).
//! What the servers wrote into them is taken out again ([`template`]). A pod already
//! gone when the follow started is re-created from the pods the spawn recorded in the
//! run's ConfigMap (`plan/pods_record.rs`), once they pass `vetting.rs`; a run of an earlier
//! version recorded none: its task cannot be restarted.
//!
//! Here: the templates read ([`templates`]) and an attempt's pods deleted
//! ([`delete_pods`]). The parts: `attempt.rs` a pod as a template and the next
//! attempt's pod made from it (pure); `deadline.rs` the run's deadline and first start
//! the next attempts carry (pure); `book.rs` what the run's ConfigMap holds for a
//! restart (the spawn's pods, a restart under way) and its writes.

use std::collections::BTreeSet;

use anyhow::Result;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;

use super::Cluster;
use crate::labels::{DEADLINE_AT_ANNOTATION, RUN_STARTED_ANNOTATION, run_selector};

mod attempt;
mod book;
mod deadline;

pub use attempt::{Next, attempt_of, next_attempt, template};
pub use book::{
    Book, RESTARTING_ANNOTATION, RestartRecord, Templates, clear, recorded, save, set_cluster,
};
use deadline::with_time;
pub use deadline::{deadline_left, run_times};

/// Why a gone pod cannot be re-created from a run whose spawn recorded no pods.
pub const NOT_RECORDED: &str = "the run's configmap holds no record of its pods (made by an earlier tf-spawner, or too large to record)";

/// The run's templates as a restart reads them when the follow starts.
#[derive(Debug, Clone)]
pub struct Found {
    /// The run's pods on the server, as [`template`]s.
    pub live: Templates,
    /// The pods the spawn recorded, as templates (not vetted yet: `vetting.rs`); else
    /// why there are none, in words.
    pub spawned: Result<Templates, String>,
    /// What was read and not believed (a start in the future…), one line each.
    pub warnings: Vec<String>,
}

/// Reads the run's pods whole, once, as [`template`]s, beside the pods its spawn
/// recorded in `book`, each carrying the run's vetted deadline
/// and first start ([`run_times`]).
pub async fn templates(cluster: &Cluster, tag: &str, book: &Book) -> Result<Found> {
    let pods = cluster
        .list::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("reading the run's pods (for --restarts)", &e))?;
    let (times, warnings) = run_times(&pods, book, crate::duration::timestamp());
    let timed = |p: Pod| {
        let t = with_time(template(p), DEADLINE_AT_ANNOTATION, times.deadline);
        with_time(t, RUN_STARTED_ANNOTATION, times.started)
    };
    let live: Templates = pods
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name.clone()?, timed(p))))
        .collect();
    let spawned = match &book.spawned {
        None => Err(NOT_RECORDED.to_string()),
        Some(Err(why)) => Err(why.clone()),
        Some(Ok(pods)) => Ok(pods
            .iter()
            .map(|(n, p)| (n.clone(), timed(p.clone())))
            .collect()),
    };
    Ok(Found {
        live,
        spawned,
        warnings,
    })
}

/// Deletes the run's pods named in `names` that are there and not being deleted yet,
/// each with its uid as a precondition, `max_in_flight` at a time; those named in
/// `lost` (on a node that stopped reporting) at once (grace period 0), being deleted
/// already or not: their kubelet will never confirm a graceful deletion. The first error
/// (after trying every pod) is the result.
pub async fn delete_pods(
    cluster: &Cluster,
    tag: &str,
    names: &BTreeSet<String>,
    lost: &BTreeSet<String>,
    max_in_flight: usize,
) -> Result<()> {
    let pods = cluster
        .list_metadata::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing the run's pods", &e))?;
    let doomed: Vec<(String, String)> = pods
        .into_iter()
        .filter_map(|m| {
            let name = m.name?;
            (m.deletion_timestamp.is_none() || lost.contains(&name)).then_some((name, m.uid?))
        })
        .filter(|(name, _)| names.contains(name))
        .collect();
    let results: Vec<Result<()>> = stream::iter(doomed)
        .map(|(name, uid)| async move {
            let grace = lost.contains(&name).then_some(0);
            cluster
                .delete_exact_within::<Pod>(&name, &uid, grace)
                .await
                .map_err(|e| cluster.explain(&format!("deleting pod {name}"), &e))
        })
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    results.into_iter().collect()
}

#[cfg(test)]
mod tests;
