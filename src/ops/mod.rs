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
pub(crate) mod holdups;
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

use std::collections::BTreeSet;

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
    let mut events = watch::events(cluster, &run_selector(tag));
    loop {
        let (event, more) = events.next_event().await?;
        if fold(tracker, event)
            && !more
            && let Some(done) = decide(tracker)
        {
            return Ok(done);
        }
    }
}

/// Follows the pods matching `selector` until none of those `ours` names is left (a
/// deleted pod lingers for its grace period). `on_count` hears how many are left: after
/// each list, then after every change (or burst of changes). One list and one watch.
pub(crate) async fn until_gone(
    cluster: &Cluster,
    selector: &str,
    ours: impl Fn(&str) -> bool,
    mut on_count: impl FnMut(usize),
) -> Result<()> {
    let mut events = watch::events(cluster, selector);
    let mut left = Left::default();
    loop {
        let (event, more) = events.next_event().await?;
        if left.fold(event, &ours) && !more {
            on_count(left.names.len());
            if left.names.is_empty() {
                return Ok(());
            }
        }
    }
}

/// The pods [`until_gone`] waits for, as far as seen.
#[derive(Default)]
struct Left {
    names: BTreeSet<String>,
    /// A (re)list under way: the pods of its pages so far, what is left at its end.
    listing: Option<BTreeSet<String>>,
}

impl Left {
    /// Folds one event in; whether what is left can be counted now (not amid a list).
    fn fold(&mut self, event: PodEvent, ours: &impl Fn(&str) -> bool) -> bool {
        match event {
            PodEvent::ListBegin => self.listing = Some(BTreeSet::new()),
            PodEvent::Page(pods) => {
                let found = pods.into_iter().filter_map(|p| p.metadata.name);
                let into = self.listing.as_mut().unwrap_or(&mut self.names);
                into.extend(found.filter(|n| ours(n)));
                return false;
            }
            PodEvent::ListEnd => self.names = self.listing.take().unwrap_or_default(),
            PodEvent::Changed(pod) => self.names.extend(pod.metadata.name.filter(|n| ours(n))),
            PodEvent::Deleted(name) => {
                self.names.remove(&name);
            }
            PodEvent::Lost(_) | PodEvent::Back(_) => link_note(&event),
        }
        self.listing.is_none()
    }
}

/// What one watch event changes in a run's tracker; `false` when nothing is to be
/// decided from it (a list not complete yet, a note).
fn fold(tracker: &mut Tracker, event: PodEvent) -> bool {
    tracker.at(crate::duration::now());
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
