//! Library operations: what the commands do, each one call from a command's `exec`.
//! They use the pure parts (`plan`, `verdict`), the API (`cluster`) and local processes
//! (`local`), print through `output`, and never see a flag: their inputs are plain
//! option structs.

pub(crate) mod blame;
pub(crate) mod compare;
pub(crate) mod cp;
pub(crate) mod delete;
pub(crate) mod experiments;
pub(crate) mod helper;
pub(crate) mod list;
pub(crate) mod local_run;
pub(crate) mod logs;
pub(crate) mod notify;
pub(crate) mod restart;
pub(crate) mod spawn;
pub(crate) mod status;
pub(crate) mod summary;
pub(crate) mod supervise;
pub(crate) mod sweep;
pub(crate) mod tensorboard;
pub(crate) mod training;
pub(crate) mod wait;
pub(crate) mod waiting;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::watch::{self, PodEvent};
use crate::labels::run_selector;
use crate::verdict::{PodView, Tracker};

/// Follows the pods of run `tag`, folding each event into `tracker`, until `decide`
/// (called once a list is complete and after every change, or burst of changes)
/// returns a value. A lost API server is a note on stderr, and another when it is back.
pub(crate) async fn follow_run<T>(
    cluster: &Cluster,
    tag: &str,
    tracker: &mut Tracker,
    mut decide: impl FnMut(&Tracker) -> Option<T>,
) -> Result<T> {
    watch::follow(cluster, &run_selector(tag), |event, more| {
        let settled = fold(tracker, event) && !more;
        if settled { decide(tracker) } else { None }
    })
    .await
}

/// What one watch event changes in a run's tracker; `false` when nothing is to be
/// decided from it (a list not complete yet, a note).
fn fold(tracker: &mut Tracker, event: PodEvent) -> bool {
    tracker.at(k8s_openapi::jiff::Timestamp::now().as_second());
    match event {
        PodEvent::ListBegin => {
            tracker.begin_list();
            return false;
        }
        PodEvent::Page(pods) => {
            for pod in &pods {
                tracker.update(PodView::from_pod(pod));
            }
            return false;
        }
        PodEvent::ListEnd => tracker.end_list(),
        PodEvent::Changed(pod) => tracker.update(PodView::from_pod(&pod)),
        PodEvent::Deleted(name) => tracker.remove(&name),
        PodEvent::Lost(_) | PodEvent::Back(_) => {
            link_note(&event);
            return false;
        }
    }
    true
}

/// The note about a lost or found API server, if `event` is one.
pub(crate) fn link_note(event: &PodEvent) {
    match event {
        PodEvent::Lost(why) => crate::output::note(&format!(
            "lost the Kubernetes API server ({why}); reconnecting"
        )),
        PodEvent::Back(after) => crate::output::note(&format!(
            "the Kubernetes API server answers again (after {}); following on",
            crate::duration::age(after.as_secs())
        )),
        _ => {}
    }
}
