//! The pods of one run as seen so far ([`Tracker`]): fed by lists and watch events, a
//! failed task's last log lines, and the clock; read back pod by pod and task by task.
//! What the pods add up to: `rule.rs` (the verdict) and `summary.rs` (counts per role).

use std::collections::{BTreeMap, BTreeSet};

use super::failure::{FATAL_WAITING, PULL_ERROR};
use super::peer::{self, PeerAbort};
use super::pod::{PodView, State};
use crate::roles::{RoleSizes, Task};

#[derive(Debug, Clone)]
pub(super) enum Entry {
    Live(PodView),
    /// Seen, then deleted.
    Gone(PodView),
}

impl Entry {
    pub(super) fn view(&self) -> &PodView {
        match self {
            Entry::Live(v) | Entry::Gone(v) => v,
        }
    }
}

/// The pods of one run as seen so far, fed by a list and then watch events.
#[derive(Debug, Clone)]
pub struct Tracker {
    pub(super) tag: String,
    pub(super) all_workers: bool,
    pub(super) pods: BTreeMap<String, Entry>,
    /// The run's tasks per role as its pods describe it (the largest seen).
    sizes: RoleSizes,
    /// The names seen since a list began (see [`Tracker::begin_list`]).
    listing: Option<BTreeSet<String>>,
    /// How many updates showed `ErrImagePull`, per pod.
    pub(super) pull_errors: BTreeMap<String, u32>,
    /// The last `ErrImagePull` message, per pod: the kubelet alternates it with
    /// `ImagePullBackOff`, whose message only says "Back-off pulling image".
    pub(super) pull_error_messages: BTreeMap<String, String>,
    /// When each pod was first seen failed, taken away or deleted: the count of events
    /// folded before it. A list is one event (its pods are seen at once), so a snapshot
    /// has no order; a follow has the order things happened in.
    pub(super) first_failed: BTreeMap<String, u64>,
    events: u64,
    /// The failed tasks whose last log lines blame a peer (see [`Tracker::note_log`]).
    pub(super) aborts: BTreeMap<String, PeerAbort>,
    /// The time of the last event folded (seconds since the epoch, [`Tracker::at`]):
    /// a pull error within its pod's grace is not final. `None` (no clock: a test, a
    /// `--local` run): every grace has passed.
    pub(super) now: Option<i64>,
}

impl Tracker {
    pub fn new(tag: &str, all_workers: bool) -> Tracker {
        Tracker {
            tag: tag.to_string(),
            all_workers,
            pods: BTreeMap::new(),
            sizes: RoleSizes::default(),
            listing: None,
            pull_errors: BTreeMap::new(),
            pull_error_messages: BTreeMap::new(),
            first_failed: BTreeMap::new(),
            events: 0,
            aborts: BTreeMap::new(),
            now: None,
        }
    }

    /// The time now (seconds since the epoch), told by whoever folds the events: the
    /// tracker reads no clock of its own.
    pub fn at(&mut self, now: i64) {
        self.now = Some(now);
    }

    /// One more event folded (all of a list's pods count as one).
    fn tick(&mut self) -> u64 {
        if self.listing.is_none() {
            self.events += 1;
        }
        self.events
    }

    /// A pod was added or changed.
    pub fn update(&mut self, view: PodView) {
        if let Some(w) = view.waiting.as_ref().filter(|w| w.reason == PULL_ERROR) {
            *self.pull_errors.entry(view.name.clone()).or_default() += 1;
            if let Some(message) = &w.message {
                self.pull_error_messages
                    .insert(view.name.clone(), message.clone());
            }
        }
        self.sizes.merge(&view.setup.cluster);
        if let Some(listing) = &mut self.listing {
            listing.insert(view.name.clone());
        }
        let now = self.tick();
        let failing = view.state() == State::Failed
            || view.removal.is_some()
            || view.waiting.as_ref().is_some_and(|w| {
                FATAL_WAITING.contains(&w.reason.as_str()) || w.reason == PULL_ERROR
            });
        if failing {
            self.first_failed.entry(view.name.clone()).or_insert(now);
        }
        self.pods.insert(view.name.clone(), Entry::Live(view));
    }

    /// The last log lines (or termination message) of pod `name`, a failed task: when
    /// TensorFlow or JAX says there that it failed because of a peer (`verdict/peer.rs`), its
    /// failure is that peer's doing, and the verdict names the peer's first.
    pub fn note_log(&mut self, name: &str, text: &str) {
        let own = self.pods.get(name).and_then(|e| e.view().task);
        match peer::recognise(text, own) {
            Some(abort) => self.aborts.insert(name.to_string(), abort),
            None => self.aborts.remove(name),
        };
    }

    /// A pod was deleted.
    pub fn remove(&mut self, name: &str) {
        let now = self.tick();
        self.first_failed.entry(name.to_string()).or_insert(now);
        if let Some(entry) = self.pods.remove(name) {
            self.pods
                .insert(name.to_string(), Entry::Gone(entry.view().clone()));
        }
    }

    /// A fresh list begins: its pods come through [`Tracker::update`], page by page,
    /// until [`Tracker::end_list`].
    pub fn begin_list(&mut self) {
        self.listing = Some(BTreeSet::new());
    }

    /// The list is complete: pods missing from it were deleted meanwhile.
    pub fn end_list(&mut self) {
        let Some(listed) = self.listing.take() else {
            return;
        };
        let missing: Vec<String> = self
            .pods
            .iter()
            .filter(|(name, e)| matches!(e, Entry::Live(_)) && !listed.contains(*name))
            .map(|(name, _)| name.clone())
            .collect();
        for name in missing {
            self.remove(&name);
        }
    }

    /// A fresh list in one piece: pods missing from it were deleted meanwhile.
    pub fn replace(&mut self, views: Vec<PodView>) {
        self.begin_list();
        for view in views {
            self.update(view);
        }
        self.end_list();
    }

    /// The pod named `name`, if it is there.
    pub fn get(&self, name: &str) -> Option<&PodView> {
        match self.pods.get(name)? {
            Entry::Live(v) => Some(v),
            Entry::Gone(_) => None,
        }
    }

    /// Pods currently there in task order (chief, ps, workers, evaluator), then any
    /// others by name.
    pub fn in_task_order(&self) -> Vec<&PodView> {
        let mut pods: Vec<&PodView> = self.live().collect();
        pods.sort_by(|a, b| {
            (a.task.is_none(), a.task, &a.name).cmp(&(b.task.is_none(), b.task, &b.name))
        });
        pods
    }

    /// Pods currently there, by name.
    pub fn live(&self) -> impl Iterator<Item = &PodView> {
        self.pods.values().filter_map(|e| match e {
            Entry::Live(v) => Some(v),
            Entry::Gone(_) => None,
        })
    }

    /// The run's tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The run's attempt: the latest of its pods' (0 until a restart, see
    /// `ops/restart/mod.rs`).
    pub fn attempt(&self) -> u32 {
        self.live().map(|p| p.attempt).max().unwrap_or(0)
    }

    /// Every task of the run: the ones seen, and the ones the pods' `TF_CONFIG` names.
    pub fn tasks(&self) -> BTreeSet<Task> {
        let mut tasks: BTreeSet<Task> = self.sizes.tasks().collect();
        tasks.extend(self.pods.values().filter_map(|e| e.view().task));
        tasks
    }
}
