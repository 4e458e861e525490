//! A run's pods, listed once.

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Cluster;
use crate::labels::run_selector;
use crate::verdict::{PodView, Tracker};

/// The run's pods, listed once; an error when there are none.
pub(crate) async fn snapshot(cluster: &Cluster, tag: &str, all_workers: bool) -> Result<Tracker> {
    let pods = cluster
        .list::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing pods", &e))?;
    if pods.is_empty() {
        bail!(
            "no pods labelled {} in namespace '{}' (the runs there: tf-spawner list -n {})",
            crate::labels::whole_run_selector(tag),
            cluster.namespace(),
            cluster.namespace()
        );
    }
    let mut tracker = Tracker::new(tag, all_workers);
    tracker.replace(pods.iter().map(PodView::from_pod).collect());
    Ok(tracker)
}
