//! Library operations: what the commands do, each one call from a command's `exec`.
//! They use the pure parts (`plan`, `verdict`), the API (`cluster`) and local processes
//! (`local`), print through `output`, and never see a flag: their inputs are plain
//! option structs.

pub(crate) mod cp;
pub(crate) mod delete;
pub(crate) mod helper;
pub(crate) mod list;
pub(crate) mod logs;
pub(crate) mod spawn;
pub(crate) mod status;
pub(crate) mod summary;
pub(crate) mod tensorboard;
pub(crate) mod wait;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::watch::{self, PodEvent};
use crate::labels::run_selector;
use crate::verdict::{PodView, Tracker};

/// Follows the pods of run `tag`, folding each event into `tracker`, until `decide`
/// (called after the first list and after every change) returns a value.
pub(crate) async fn follow_run<T>(
    cluster: &Cluster,
    tag: &str,
    tracker: &mut Tracker,
    mut decide: impl FnMut(&Tracker) -> Option<T>,
) -> Result<T> {
    watch::follow(cluster, &run_selector(tag), |event| {
        fold(tracker, event);
        decide(tracker)
    })
    .await
}

/// What one watch event changes in a run's tracker.
fn fold(tracker: &mut Tracker, event: PodEvent) {
    match event {
        PodEvent::Listed(pods) => tracker.replace(pods.iter().map(PodView::from_pod).collect()),
        PodEvent::Changed(pod) => tracker.update(PodView::from_pod(&pod)),
        PodEvent::Deleted(name) => tracker.remove(&name),
    }
}
