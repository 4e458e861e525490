//! `tf-spawner wait -t TAG`: follow a run with progress until its verdict (or until
//! every pod has started, with `--for start`; `spawn --wait` does the same), then
//! optionally save its logs, stop the tasks still running, and delete it. The exit
//! code is the run's outcome.
//!
//! After a verdict (not after a time-out or `--for start`: the run is not over), the
//! run's pods that have not finished are stopped unless `--keep-running` says
//! otherwise (`cluster::stop`): the run is over for the cluster when it is over for the
//! user. Parameter servers serve until stopped, and workers hang in a collective
//! operation after a peer failed; left running they hold their CPUs and GPUs, and a
//! Kueue pod group holds its quota until no pod of it is running.
//!
//! The parts, by concern: `stream.rs` turns the run's watch, the training's progress,
//! the timers and signals into one stream of events ([`fold::Event`]); `fold.rs`
//! folds them by a pure state machine into what to show and when the follow is done
//! (as `cluster/watch/machine.rs` follows the API, after `kube::runtime::watcher`); this file
//! drives a wait through restarts and a verdict that waits on a peer; `report.rs`
//! says the outcome; `after.rs` stops, records, saves logs and cleans up.

mod after;
mod attached;
mod fold;
mod options;
mod recorded;
mod report;
mod stream;

use std::time::Duration;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::follower::{self, Followed, Taken};
use crate::metrics::RunMetrics;
use crate::metrics::notice::Notice;
use crate::ops::notify::Seen;
use crate::output::{self, ReportFormat};
use crate::signals;
use crate::trainlog::Training;
use crate::verdict::{Tracker, Verdict};
use fold::{Done, Outcome};

pub use fold::stalled_text;
pub use options::{
    DEFAULT_STALL_FACTOR, DEFAULT_STALL_FLOOR, OnCancel, OnStall, Stall, StallBound, Wait, WaitFor,
};
use report::humantime_secs;

/// Waits, reports, saves logs and cleans up as `wait` asks; the error carries the exit code.
/// With `--restarts`, a retryable failure's verdict goes to the restart state machine
/// (`ops/restart/mod.rs`) first: a restarted run is followed again, afresh. The notice
/// (`--notify`) and the verdict document (`-o json|yaml`) follow every end, an error
/// before the report (the API server gone past `--give-up-after`) included.
///
/// One follower at a time (`cluster/follower.rs`): a wait for the end takes the run,
/// checks in while it follows and lets go at its end; while another follower holds the
/// run, the wait only shows it (`attached.rs`) until that follower's verdict, or takes
/// it over when that follower lets go or stops checking in.
pub async fn run(cluster: &Cluster, wait: &Wait) -> Result<()> {
    if wait.until == WaitFor::Start {
        // Acts on nothing after the start: nobody's follow to share.
        return owned(cluster, wait).await;
    }
    let (me, run) = (follower::me(), Followed::Run(wait.tag.clone()));
    while let Taken::Held(holder) = follower::take(cluster, &run, &me).await? {
        if let attached::Attached::Ended(result) = attached::follow(cluster, wait, holder).await? {
            return result;
        }
    }
    let mut lease = follower::Lease::hold(cluster, &run, &me);
    let result = tokio::select! {
        result = owned(cluster, wait) => result,
        holder = lease.lost() => Err(anyhow::anyhow!(
            "run '{}' was taken over by {} while this wait did not check in for {}s (a machine asleep, a network cut); this wait acts on nothing more",
            wait.tag, holder.who, follower::HOLD.as_secs()
        )),
    };
    drop(lease);
    let code = match &result {
        Ok(()) => Some(0),
        Err(e) => Some(crate::errors::exit_code(e)),
    };
    follower::release(cluster, &run, &me, code).await;
    result
}

/// [`run`] for the run's one follower.
async fn owned(cluster: &Cluster, wait: &Wait) -> Result<()> {
    let mut last = Last {
        tracker: Tracker::new(&wait.tag, wait.all_workers),
        training: Training::default(),
        metrics: None,
    };
    let result = match follow(cluster, wait, &mut last).await {
        Ok(outcome) => {
            report::report(cluster, wait, last.seen(), outcome).await
        }
        // The follow failed (the API server gone past --give-up-after…): nothing was
        // stopped or deleted, which --cleanup asked for.
        Err(e) if wait.cleanup => Err(e.context(format!(
            "run '{tag}' is left running despite --cleanup (delete it once the API server answers: tf-spawner -d --wait -t {tag} -n {ns})",
            tag = wait.tag,
            ns = cluster.namespace()
        ))),
        Err(e) => Err(e),
    };
    let seen = last.seen();
    super::notify::after_wait(cluster, wait.notify.as_ref(), &wait.tag, seen, &result).await;
    if wait.output != ReportFormat::Table {
        let ending = super::notify::ending(cluster, &wait.tag, seen, &result).await;
        let document = Notice::of_run(ending);
        output::data(&output::document(&document, wait.output)?)?;
    }
    result
}

/// What the last follow saw: its tracker, its training, its metrics (those of the
/// attempts before a restart included).
struct Last {
    tracker: Tracker,
    training: Training,
    metrics: Option<RunMetrics>,
}

impl Last {
    fn seen(&self) -> Seen<'_> {
        Seen {
            tracker: &self.tracker,
            training: &self.training,
            metrics: self.metrics.as_ref(),
        }
    }
}

/// Follows the run, through its restarts, to the outcome the report says.
async fn follow(cluster: &Cluster, wait: &Wait, last: &mut Last) -> Result<Outcome> {
    let mut restarter =
        super::restart::Restarter::begin(cluster, &wait.tag, &wait.restarts).await?;
    let bounds = super::restart::Bounds {
        tag: wait.tag.clone(),
        deadline: wait.timeout.map(|d| (wait.started + d, d)),
        max_in_flight: wait.max_in_flight,
    };
    restarter.resume(cluster, &bounds).await?;
    // The metrics of the attempts before a restart, kept in the run's record.
    let mut earlier: Option<RunMetrics> = None;
    loop {
        last.tracker = Tracker::new(&wait.tag, wait.all_workers);
        let (outcome, training) = stream::follow(cluster, wait, &mut last.tracker).await?;
        last.training = training;
        let outcome = settle(cluster, wait, &mut last.tracker, outcome).await?;
        let (tracker, training) = (&last.tracker, &last.training);
        last.metrics =
            super::compare::run_metrics(tracker, training, earlier.as_ref(), wait.all_workers);
        let restarted = match &outcome {
            Outcome::Done(Done::Final(verdict)) => {
                restarter.after(cluster, &bounds, tracker, verdict).await?
            }
            Outcome::Stalled(stalled) if wait.stall.is_some_and(|s| s.on == OnStall::Restart) => {
                restarter
                    .after_stall(cluster, &bounds, tracker, &stalled.cause)
                    .await?
            }
            _ => false,
        };
        if !restarted {
            return Ok(outcome);
        }
        super::compare::record_restart(cluster, &wait.tag, last.metrics.as_mut()).await;
        earlier = last.metrics.clone();
    }
}

/// The toleration of an unreachable node a pod gets without `--node-lost-after` (the
/// DefaultTolerationSeconds admission plugin's 300 s).
const DEFAULT_LOST_AFTER: i64 = 300;
/// Without a restart to decide, how long a victim's verdict waits for the peer it
/// names to end (its own exit reaches the API server seconds after the victim's).
const PEER_REPORT: Duration = Duration::from_secs(15);

/// A failure TensorFlow or JAX blames on a peer (its last log lines say so, read here) does
/// not decide while that peer has not ended: the run is followed on until the peer
/// ends (its own failure decides), its node is named lost (the loss decides: a
/// removal, which `--restarts` retries, at once) or the bound passes (the victim's
/// failure stands, pointing at the peer). The bound: with a restart at stake,
/// `--node-lost-after` (the pods' toleration) and the cluster's `--node-grace`; else
/// [`PEER_REPORT`].
async fn settle(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &mut Tracker,
    outcome: Outcome,
) -> Result<Outcome> {
    let Outcome::Done(Done::Final(Verdict::Failed(_))) = &outcome else {
        return Ok(outcome);
    };
    super::blame::read_failed(cluster, tracker).await;
    let verdict = tracker.verdict();
    let Verdict::Failed(failure) = &verdict else {
        return Ok(Outcome::Done(Done::Final(verdict)));
    };
    let restarts = wait.restarts.max > 0;
    if !tracker.peers_unended(failure) || (restarts && wait.restarts.on.retries(&failure.kind)) {
        return Ok(Outcome::Done(Done::Final(verdict)));
    }
    let bound = if restarts {
        let lost_after = tracker.node_lost_after().unwrap_or(DEFAULT_LOST_AFTER);
        Duration::from_secs(lost_after.max(0) as u64) + wait.restarts.node_grace
    } else {
        PEER_REPORT
    };
    let who = failure.task.map_or_else(|| failure.pod.clone(), |t| t.id());
    let abort = failure.after_peer.as_ref();
    let peer = abort
        .and_then(|a| a.peer)
        .map_or_else(|| "its peers".to_string(), |t| t.id());
    output::print(&format!(
        "run {}: {who} failed because of a peer ({} says so); waiting up to {} for {peer} to end or be named lost\n",
        wait.tag,
        abort.map_or("TensorFlow", |a| a.said_by),
        humantime_secs(bound)
    ))?;
    if let Some(stopped) = hold(cluster, wait, tracker, bound).await? {
        return Ok(stopped);
    }
    super::blame::read_failed(cluster, tracker).await;
    Ok(Outcome::Done(Done::Final(tracker.verdict())))
}

/// Follows the run until its verdict no longer waits on a peer (see [`settle`]) or
/// `bound` passes (`None`: the verdict is the tracker's), or the wait's timeout or a
/// signal ends the wait (that outcome).
async fn hold(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &mut Tracker,
    bound: Duration,
) -> Result<Option<Outcome>> {
    let follow = super::follow_run(cluster, &wait.tag, tracker, |t| match t.verdict() {
        Verdict::Failed(f) if t.peers_unended(&f) => None,
        v if v.is_final() => Some(()),
        _ => None,
    });
    tokio::select! {
        done = follow => done.map(|()| None),
        () = tokio::time::sleep(bound) => Ok(None),
        d = deadline(wait) => Ok(Some(Outcome::Timeout(d))),
        code = signals::stop_requested() => Ok(Some(Outcome::Signal(code))),
    }
}

/// `--timeout`: resolves with it once it has passed since the command started; never
/// without one.
async fn deadline(wait: &Wait) -> Duration {
    match wait.timeout {
        Some(d) => {
            tokio::time::sleep_until((wait.started + d).into()).await;
            d
        }
        None => std::future::pending().await,
    }
}
