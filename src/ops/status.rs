//! A run's pods, listed once (in pages, each folded into the run's tracker), and the
//! latest events of those still pending.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Cluster;
use crate::cluster::events::{self, PodEvent};
use crate::labels::run_selector;
use crate::output;
use crate::verdict::{Phase, PodView, Tracker};

/// The run's pods, listed once; an error when there are none.
pub(crate) async fn snapshot(cluster: &Cluster, tag: &str, all_workers: bool) -> Result<Tracker> {
    let mut tracker = Tracker::new(tag, all_workers);
    cluster
        .list_pages::<Pod>(&run_selector(tag), false, |pods, first| {
            if first {
                // A list that starts over (an expired continue token) starts afresh.
                tracker = Tracker::new(tag, all_workers);
            }
            for pod in &pods {
                tracker.update(PodView::from_pod(pod));
            }
        })
        .await
        .map_err(|e| cluster.explain("listing pods", &e))?;
    if tracker.is_empty() {
        bail!(
            "no pods labelled {} in namespace '{}' (the runs there: tf-spawner list -n {})",
            crate::labels::whole_run_selector(tag),
            cluster.namespace(),
            cluster.namespace()
        );
    }
    Ok(tracker)
}

/// The newest events of each pending pod of the run (one paged list of the namespace's
/// Events), by pod name. Events are a help, not the answer: when they cannot be read
/// (RBAC may allow pods and not events) a note says so and the status goes on.
pub(crate) async fn pending_events(
    cluster: &Cluster,
    tracker: &Tracker,
) -> BTreeMap<String, Vec<PodEvent>> {
    let pending: BTreeMap<String, Option<i64>> = tracker
        .live()
        .filter(|v| v.phase == Phase::Pending)
        .map(|v| (v.name.clone(), v.created))
        .collect();
    match events::of_pods(cluster, &pending).await {
        Ok(found) => found,
        Err(e) => {
            let why = cluster.explain("listing events", &e);
            output::note(&format!("the pending pods' events are not shown: {why}"));
            BTreeMap::new()
        }
    }
}
