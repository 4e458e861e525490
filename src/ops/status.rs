//! A run's pods, listed once (in pages, each folded into the run's tracker).

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Cluster;
use crate::labels::run_selector;
use crate::verdict::{PodView, Tracker};

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
