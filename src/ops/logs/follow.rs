//! `logs -f` of one attempt: a follower per pod (`pod_stream.rs`), at most
//! `--max-log-requests` at once, started from the run's watch as pods appear, their
//! lines printed as they arrive, until the run is over; then the last lines drained.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::cluster::Cluster;
use crate::cluster::pod_logs::LogOptions;
use crate::output::{self, Styled};
use crate::roles::Role;
use crate::verdict::{FailureKind, PodView, Tracker, Verdict};

use super::lines::{Prefixes, note};
use super::pick::{Pick, by_priority};
use super::pod_stream::follow_pod;

/// How long, once the run is over, streams of ended pods may take to deliver their
/// last lines (the server closes them when the container ends; this is a safety net).
const DRAIN: Duration = Duration::from_secs(10);

/// One pod's follower.
struct Follower {
    handle: JoinHandle<()>,
    /// The pod's latest view; `None` once it was deleted.
    state: watch::Sender<Option<PodView>>,
}

/// Whether the run is over for `logs -f` (see the module docs).
fn over(tracker: &Tracker) -> bool {
    match tracker.verdict() {
        Verdict::Failed(f)
            if matches!(
                f.kind,
                FailureKind::CannotStart(_) | FailureKind::Gone | FailureKind::Removed(_)
            ) =>
        {
            true
        }
        Verdict::Succeeded | Verdict::Failed(_) => tracker.live().all(|v| {
            v.state().finished()
                || matches!(v.task.map(|t| t.role), Some(Role::Ps | Role::Evaluator))
        }),
        _ => false,
    }
}

pub(super) async fn follow(
    cluster: &Cluster,
    tag: &str,
    options: &LogOptions,
    pick: &Pick,
    mut tracker: Tracker,
    prefixes: &mut Prefixes,
) -> Result<Option<Verdict>> {
    let (tx, mut rx) = mpsc::channel::<Styled>(1024);
    let mut followers = Followers {
        cluster,
        options,
        pick,
        tag,
        tx,
        prefixes,
        by_pod: BTreeMap::new(),
        left_out: 0,
    };

    if !until_over(&mut followers, &mut tracker, &mut rx).await? {
        return Ok(None);
    }

    // The run is over: pods that will not end are cut off; the others deliver their
    // last lines, a pod being deleted too (its SIGTERM handler's lines are its last).
    for (name, f) in &followers.by_pod {
        let ended = tracker
            .get(name)
            .is_none_or(|v| v.state().finished() || v.terminating);
        if !ended {
            f.handle.abort();
        }
    }
    // The followers' states stay open meanwhile: a closed one would end their waits.
    let Followers { tx, by_pod, .. } = followers;
    drop(tx);
    let result = drain(rx).await;
    drop(by_pod);
    // A closed pipe while draining ends `logs` too.
    Ok(result?.then(|| tracker.verdict()))
}

/// Until the run is over: starts a follower per new pod, tells each its pod's state,
/// prints what they send, and says why the run waits meanwhile (on stderr:
/// [`Notes`](crate::ops::holdups::Notes)). `Ok(false)`: the pipe was closed.
async fn until_over(
    followers: &mut Followers<'_>,
    tracker: &mut Tracker,
    rx: &mut mpsc::Receiver<Styled>,
) -> Result<bool> {
    let mut notes = crate::ops::holdups::Notes::new(followers.cluster, followers.pick.heartbeat);
    let (pending_tx, mut pending) = watch::channel(Vec::new());
    let (cluster, tag) = (followers.cluster, followers.tag);
    let watched = crate::ops::follow_run(cluster, tag, tracker, |t| {
        followers.sync(t);
        pending_tx.send_replace(crate::ops::holdups::unstarted(t));
        over(t).then_some(())
    });
    let mut watched = std::pin::pin!(watched);
    loop {
        tokio::select! {
            result = &mut watched => {
                result?;
                return Ok(true);
            }
            Some(text) = rx.recv() => {
                notes.printed();
                if !write_batch(text, rx)? {
                    return Ok(false);
                }
            }
            Ok(()) = pending.changed() => {
                notes.seen(pending.borrow_and_update().clone());
                notes.wake().await;
            }
            () = crate::ops::holdups::until(notes.next()) => notes.wake().await,
        }
    }
}

/// The followers of a run's pods.
struct Followers<'a> {
    cluster: &'a Cluster,
    options: &'a LogOptions,
    pick: &'a Pick,
    tag: &'a str,
    tx: mpsc::Sender<Styled>,
    prefixes: &'a mut Prefixes,
    by_pod: BTreeMap<String, Follower>,
    /// How many pods were last left out (`--max-log-requests`); a note says so when
    /// it grows.
    left_out: usize,
}

impl Followers<'_> {
    /// Starts a follower per new pod, up to `--max-log-requests` at once in the order
    /// of [`by_priority`], and tells each its pod's state.
    fn sync(&mut self, t: &Tracker) {
        // A follower of a pod that has ended is only delivering its last lines.
        let mut active = self
            .by_pod
            .iter()
            .filter(|(name, f)| {
                !f.handle.is_finished() && t.get(name).is_some_and(|v| !v.state().finished())
            })
            .count();
        let mut left_out: Vec<PodView> = Vec::new();
        for pod in by_priority(t, self.pick) {
            match self.by_pod.get(&pod.name) {
                Some(f) => {
                    f.state.send_if_modified(|s| {
                        let changed = s.as_ref() != Some(&pod);
                        *s = Some(pod.clone());
                        changed
                    });
                }
                // Ended before it was followed: nothing to stream.
                None if pod.state().finished() && !pod.started => {}
                None if active >= self.pick.max_streams => left_out.push(pod),
                None => {
                    active += 1;
                    let (state, state_rx) = watch::channel(Some(pod.clone()));
                    let prefix = self.prefixes.prefix(&pod.label());
                    let handle = tokio::spawn(follow_pod(
                        self.cluster.clone(),
                        pod.clone(),
                        self.options.clone(),
                        prefix,
                        self.tx.clone(),
                        state_rx,
                    ));
                    self.by_pod
                        .insert(pod.name.clone(), Follower { handle, state });
                }
            }
        }
        for (name, f) in &self.by_pod {
            if t.get(name).is_none() {
                let _ = f.state.send(None);
            }
        }
        if left_out.len() > self.left_out {
            note(&left_out_note(self.tag, self.pick.max_streams, &left_out));
        }
        self.left_out = left_out.len();
    }
}

/// `following 50 pods at once (--max-log-requests 50); not following 950: …`.
fn left_out_note(tag: &str, max: usize, pods: &[PodView]) -> String {
    let names: Vec<String> = pods.iter().take(3).map(PodView::label).collect();
    let more = if pods.len() > 3 { ", …" } else { "" };
    let first = names.first().cloned().unwrap_or_default();
    format!(
        "following {max} pods at once (--max-log-requests {max}; the task that decides the run first, then failed pods, then task order); not following {} ({}{more}) until a followed one ends; see one with: tf-spawner logs -t {tag} --task {first}",
        pods.len(),
        names.join(", ")
    )
}

/// Prints what the followers still send, for at most [`DRAIN`].
/// `Ok(false)`: the pipe was closed.
async fn drain(mut rx: mpsc::Receiver<Styled>) -> Result<bool> {
    let drain = tokio::time::sleep(DRAIN);
    tokio::pin!(drain);
    loop {
        tokio::select! {
            text = rx.recv() => match text {
                Some(text) => {
                    if !write_batch(text, &mut rx)? {
                        return Ok(false);
                    }
                }
                None => return Ok(true),
            },
            () = &mut drain => return Ok(true),
        }
    }
}

/// Writes `first` and whatever else is queued, then flushes. `Ok(false)`: pipe closed.
fn write_batch(first: Styled, rx: &mut mpsc::Receiver<Styled>) -> Result<bool> {
    let mut text = first;
    while let Ok(more) = rx.try_recv() {
        text.push(&more);
        if text.len() > 64 * 1024 {
            break;
        }
    }
    Ok(output::print_styled(&text)?)
}
