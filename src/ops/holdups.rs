//! Why a follow waits (`wait`, `spawn --wait`, `logs -f`): the tasks that have not
//! started and what holds each back, read as `status` reads them (the pod's own reason,
//! `verdict/start.rs`; for a routine one of a pod a node took, ContainerCreating or no
//! container started yet, the pod's newest Event, `cluster/events.rs`: pulling an image, a ConfigMap or a
//! claim that cannot be mounted). Said when the follow starts waiting and again when
//! the reason changes, never again while it is the same.
//!
//! The Events are read once a task's reason has been routine for [`EVENTS_AFTER`], then
//! at most once per [`EVENTS_EVERY`] while it is (they change without the pod:
//! `Pulling`, then `Pulled`), one list each time; credentials that may not read them stop the reads (said under `-v`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::cluster::events::{self, PodEvent};
use crate::verdict::start::{Holdup, describe_holdups};
use crate::verdict::{Reason, Tracker};

/// The heartbeat's default interval (`heartbeat`): half CircleCI's ten minutes of
/// no output, the shortest such watchdog of the common CI services.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(5 * 60);

/// How often the Events of tasks with a routine reason are read again.
pub(crate) const EVENTS_EVERY: Duration = Duration::from_secs(10);
/// How long a routine reason lasts before the Events are read: a pod whose image is
/// there starts sooner, and costs no list.
pub(crate) const EVENTS_AFTER: Duration = Duration::from_secs(3);

/// One task that has not started: its label, its pod, when the pod was created, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unstarted {
    pub label: String,
    pub pod: String,
    pub created: Option<i64>,
    /// A node took the pod (its kubelet's Events say what it is doing).
    pub placed: bool,
    pub reason: Reason,
}

/// The tasks of the run that have not started (none once every task has).
pub(crate) fn unstarted(tracker: &Tracker) -> Vec<Unstarted> {
    tracker
        .unstarted()
        .into_iter()
        .map(|(label, pod, reason)| Unstarted {
            created: tracker.get(&pod).and_then(|v| v.times.created),
            placed: tracker.get(&pod).is_some_and(|v| v.node.is_some()),
            label,
            pod,
            reason,
        })
        .collect()
}

/// A reason that says only that the pod is on its way, on a node whose kubelet's Events
/// say more (pulling an image, a volume that cannot be mounted). A pod no node took has
/// no such Events: the scheduler's reason is its own.
fn routine(task: &Unstarted) -> bool {
    task.placed
        && matches!(
            task.reason.reason.as_str(),
            "ContainerCreating" | "PodInitializing" | "Pending"
        )
}

/// `worker-0, worker-1: Unschedulable: 0/1 nodes are available: …; chief-0:
/// FailedMount: …`: each task's reason, a routine one replaced by its pod's newest
/// Event; `None` when every task has started.
pub(crate) fn text(
    pending: &[Unstarted],
    events: &BTreeMap<String, Vec<PodEvent>>,
) -> Option<String> {
    if pending.is_empty() {
        return None;
    }
    let mut holdups: Vec<Holdup> = Vec::new();
    for task in pending {
        let newest = events.get(&task.pod).and_then(|e| e.first());
        let reason = match newest {
            Some(e) if routine(task) && !e.reason.is_empty() => Reason {
                reason: e.reason.clone(),
                message: Some(e.message.clone()),
            },
            _ => task.reason.clone(),
        };
        match holdups.iter_mut().find(|h| h.reason == reason) {
            Some(h) => h.tasks.push(task.label.clone()),
            None => holdups.push(Holdup {
                reason,
                tasks: vec![task.label.clone()],
            }),
        }
    }
    Some(describe_holdups(&holdups))
}

/// What a follow has said of why it waits, and the Events it read.
pub(crate) struct Why {
    cluster: Cluster,
    pending: Vec<Unstarted>,
    events: BTreeMap<String, Vec<PodEvent>>,
    /// When the Events were last read; `None`: not yet (or not since the pods changed).
    read_at: Option<Instant>,
    /// When the tasks not started last changed.
    changed_at: Instant,
    /// The Events cannot be read (RBAC): not asked again.
    denied: bool,
    /// Nothing is said (a view of several runs shows the run).
    quiet: bool,
    said: Option<String>,
}

impl Why {
    /// `said`: whether the follow says why it waits (not for a view of several runs).
    pub(crate) fn new(cluster: &Cluster, said: bool) -> Why {
        Why {
            cluster: cluster.clone(),
            pending: Vec::new(),
            events: BTreeMap::new(),
            read_at: None,
            changed_at: Instant::now(),
            denied: !said,
            quiet: !said,
            said: None,
        }
    }

    /// The run's tasks not started now ([`unstarted`]).
    pub(crate) fn seen(&mut self, pending: Vec<Unstarted>) {
        if pending != self.pending {
            self.pending = pending;
            self.read_at = None;
            self.changed_at = Instant::now();
        }
    }

    /// Whether some task has not started.
    pub(crate) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// When the Events are to be read again; `None`: only a change of the pods can
    /// change what is said.
    pub(crate) fn due(&self) -> Option<Instant> {
        if self.denied || !self.pending.iter().any(routine) {
            return None;
        }
        Some(
            self.read_at
                .map_or(self.changed_at + EVENTS_AFTER, |at| at + EVENTS_EVERY),
        )
    }

    /// What to say now, if it is not what was last said: the Events read first when
    /// [`Why::due`]. `Some(None)`: every task has started since the last line.
    pub(crate) async fn news(&mut self) -> Option<Option<String>> {
        if self.quiet {
            return None;
        }
        if self.due().is_some_and(|at| at <= Instant::now()) {
            self.read().await;
        }
        let now = text(&self.pending, &self.events);
        if now == self.said {
            return None;
        }
        self.said.clone_from(&now);
        Some(now)
    }

    /// What was last said (the reason the follow waits, while it does).
    pub(crate) fn said(&self) -> Option<&str> {
        self.said.as_deref()
    }

    async fn read(&mut self) {
        self.read_at = Some(Instant::now());
        let pods: BTreeMap<String, Option<i64>> = self
            .pending
            .iter()
            .filter(|t| routine(t))
            .map(|t| (t.pod.clone(), t.created))
            .collect();
        match events::of_pods(&self.cluster, &pods).await {
            Ok(found) => self.events = found,
            Err(e) => {
                tracing::info!(error = %e, "cannot list events: the pending pods' events are not said");
                self.denied = true;
            }
        }
    }
}

/// Resolves at `at`; never without one.
pub(crate) async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// `logs -f`'s account of why it waits, on stderr (never among the tasks' lines): each
/// new reason a note; in a pipe (stderr not a terminal), while a task has not started,
/// a heartbeat note after `every` without a line.
pub(crate) struct Notes {
    why: Why,
    every: Option<Duration>,
    /// When a line was last printed (a task's, or a note), and the last news.
    printed: Instant,
    news: Instant,
}

impl Notes {
    pub(crate) fn new(cluster: &Cluster, every: Option<Duration>) -> Notes {
        use std::io::IsTerminal;
        let now = Instant::now();
        Notes {
            why: Why::new(cluster, true),
            every: every.filter(|d| !d.is_zero() && !std::io::stderr().is_terminal()),
            printed: now,
            news: now,
        }
    }

    /// The run's tasks not started now.
    pub(crate) fn seen(&mut self, pending: Vec<Unstarted>) {
        self.why.seen(pending);
    }

    /// A task's lines were printed.
    pub(crate) fn printed(&mut self) {
        self.printed = Instant::now();
    }

    /// When to [`Notes::wake`]: the Events due, or the heartbeat.
    pub(crate) fn next(&self) -> Option<Instant> {
        let beat = self.every.filter(|_| self.why.waiting());
        [self.why.due(), beat.map(|d| self.printed + d)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Says a new reason, else the heartbeat when due.
    pub(crate) async fn wake(&mut self) {
        if let Some(news) = self.why.news().await {
            if let Some(why) = news {
                crate::output::note(&format!("not started yet: {why}"));
                self.printed = Instant::now();
                self.news = self.printed;
            }
            return;
        }
        let due = self.every.filter(|_| self.why.waiting());
        if let (Some(every), Some(why)) = (due, self.why.said())
            && self.printed.elapsed() >= every
        {
            let quiet = Duration::from_secs(self.news.elapsed().as_secs());
            crate::output::note(&format!(
                "still not started, nothing new for {}: {why}",
                humantime::format_duration(quiet)
            ));
            self.printed = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(label: &str, reason: &str, message: Option<&str>) -> Unstarted {
        Unstarted {
            label: label.into(),
            pod: format!("t-{label}"),
            created: Some(1),
            placed: true,
            reason: Reason {
                reason: reason.into(),
                message: message.map(Into::into),
            },
        }
    }

    fn event(reason: &str, message: &str) -> PodEvent {
        PodEvent {
            kind: "Warning".into(),
            reason: reason.into(),
            message: message.into(),
            count: 1,
            last_seen: Some(2),
        }
    }

    #[test]
    fn a_routine_reason_is_replaced_by_the_pods_newest_event_and_tasks_group_by_reason() {
        let pending = [
            task("worker-0", "Unschedulable", Some("0/1 nodes are available")),
            task("worker-1", "Unschedulable", Some("0/1 nodes are available")),
            task("worker-2", "ContainerCreating", None),
            task("worker-3", "ContainerCreating", None),
        ];
        let mut events = BTreeMap::new();
        events.insert(
            "t-worker-2".to_string(),
            vec![
                event("FailedMount", "configmap \"c\" not found"),
                event("Scheduled", "assigned"),
            ],
        );
        // An Unschedulable pod keeps the scheduler's own words.
        events.insert(
            "t-worker-0".to_string(),
            vec![event("FailedScheduling", "other words")],
        );
        assert_eq!(
            text(&pending, &events).as_deref(),
            Some(
                "worker-0, worker-1: Unschedulable: 0/1 nodes are available; worker-2: FailedMount: configmap \"c\" not found; worker-3: ContainerCreating"
            )
        );
        assert_eq!(text(&[], &events), None);
    }
}
