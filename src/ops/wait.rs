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

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures::{StreamExt, stream};
use tokio::sync::watch;

use crate::cluster::stop::Stopped;
use crate::cluster::{Cluster, pod_logs};
use crate::errors::{
    EXIT_RUNTIME, EXIT_START_TIMEOUT, EXIT_TIMEOUT, EXIT_TRAINING_FAILED, ExitError,
};
use crate::metrics::RunMetrics;
use crate::output;
use crate::progress::Progress;
use crate::signals;
use crate::trainlog::{Training, show};
use crate::verdict::{Failure, FailureKind, PodView, Tracker, Verdict};

/// Log downloads in flight at once for `--save-logs`.
const SAVE_IN_FLIGHT: usize = 8;

/// `wait --for`: what to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitFor {
    /// Every pod is running or finished
    Start,
    /// The run has succeeded or failed
    End,
}

/// `--on-stall`: what a stall does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnStall {
    /// Name it (the training line, then the report) and go on waiting
    Warn,
    /// Fail the run: exit 3, the unfinished pods stopped as after any verdict
    Fail,
}

/// `--stall-after` and `--on-stall`: no progress line from the deciding task for
/// `after` (once it has printed one) is a stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub after: Duration,
    pub on: OnStall,
}

/// One wait.
#[derive(Debug, Clone)]
pub struct Wait {
    pub tag: String,
    pub until: WaitFor,
    pub timeout: Option<Duration>,
    /// `--start-timeout`: the run fails unless every task runs (or has finished) this
    /// long after its creation (its earliest pod's `creationTimestamp`).
    pub start_timeout: Option<Duration>,
    /// When the command started: the timeout counts from then, whatever the command
    /// did first (a spawn's creates, a list of many pages).
    pub started: Instant,
    pub all_workers: bool,
    pub save_logs: Option<PathBuf>,
    pub cleanup: bool,
    /// `--keep-running`: leave the unfinished pods after a verdict.
    pub keep_running: bool,
    pub max_in_flight: usize,
    /// `--restarts`, `--restart-on`, `--restart-backoff` (see `ops/restart.rs`).
    pub restarts: super::restart::Restarts,
    /// `--stall-after` and `--on-stall`, if a bound is set.
    pub stall: Option<Stall>,
    /// A view of several runs (a sweep's) that shows this run: its state and training
    /// go there instead of this wait's own progress lines.
    pub observer: Option<crate::progress::Observer>,
}

enum Done {
    Empty,
    Started,
    Final(Verdict),
}

enum Outcome {
    Done(Done),
    Timeout(Duration),
    /// `--start-timeout` passed with a task not running yet.
    NotStarted(Duration),
    /// No progress line for `--stall-after`, with `--on-stall fail`.
    Stalled(Duration),
    Signal(u8),
}

/// What the start timer learns from the follow: the run's creation, and whether it has
/// started (then the timer is off for good).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct StartSeen {
    created: Option<i64>,
    started: bool,
}

/// Waits, reports, saves logs and cleans up as `wait` asks; the error carries the exit code.
/// With `--restarts`, a retryable failure's verdict goes to the restart state machine
/// (`ops/restart.rs`) first: a restarted run is followed again, afresh.
pub async fn run(cluster: &Cluster, wait: &Wait) -> Result<()> {
    let mut restarter =
        super::restart::Restarter::begin(cluster, &wait.tag, &wait.restarts).await?;
    let bounds = super::restart::Bounds {
        tag: wait.tag.clone(),
        deadline: wait.timeout.map(|d| (wait.started + d, d)),
        max_in_flight: wait.max_in_flight,
    };
    restarter.resume(cluster, &bounds).await?;
    // The metrics of the attempts before a restart, kept in the run's record.
    let mut earlier = None;
    loop {
        let mut tracker = Tracker::new(&wait.tag, wait.all_workers);
        let (outcome, training) = follow(cluster, wait, &mut tracker).await?;
        let outcome = settle(cluster, wait, &mut tracker, outcome).await?;
        let metrics =
            super::compare::run_metrics(&tracker, &training, earlier.as_ref(), wait.all_workers);
        if let Outcome::Done(Done::Final(verdict)) = &outcome
            && restarter.after(cluster, &bounds, &tracker, verdict).await?
        {
            super::compare::record_restart(cluster, &wait.tag, metrics.as_ref()).await;
            earlier = metrics;
            continue;
        }
        let seen = (&tracker, &training, metrics.as_ref());
        return report(cluster, wait, seen, outcome).await;
    }
}

/// The toleration of an unreachable node a pod gets without `--node-lost-after` (the
/// DefaultTolerationSeconds admission plugin's 300 s).
const DEFAULT_LOST_AFTER: i64 = 300;
/// Without a restart to decide, how long a victim's verdict waits for the peer it
/// names to end (its own exit reaches the API server seconds after the victim's).
const PEER_REPORT: Duration = Duration::from_secs(15);

/// A failure TensorFlow blames on a peer (its last log lines say so, read here) does
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
    let peer = failure
        .after_peer
        .as_ref()
        .and_then(|a| a.peer)
        .map_or_else(|| "its peers".to_string(), |t| t.id());
    output::print(&format!(
        "run {}: {who} failed because of a peer (TensorFlow says so); waiting up to {} for {peer} to end or be named lost\n",
        wait.tag,
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

/// How long, after the verdict, the deciding task's log may take to deliver its last
/// progress lines (the stream ends with the container; this is a bound).
const PROGRESS_DRAIN: Duration = Duration::from_secs(3);

/// Follows the run with progress until it is done, the timeout, or a signal; the
/// training's progress read from the deciding task's log meanwhile (`ops/training.rs`).
async fn follow(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &mut Tracker,
) -> Result<(Outcome, Training)> {
    let progress = RefCell::new(match &wait.observer {
        Some(to) => Progress::Observed {
            tag: wait.tag.clone(),
            to: to.clone(),
        },
        None => Progress::new(),
    });
    let (seen, seen_by_timer) = watch::channel(StartSeen::default());
    let (deciding, deciding_rx) = watch::channel(None::<PodView>);
    let (training_tx, mut training) = watch::channel(Training::default());
    let mut reader = tokio::spawn(super::training::follow(
        cluster.clone(),
        deciding_rx,
        training_tx,
    ));
    let outcome = {
        let follow = super::follow_run(cluster, &wait.tag, tracker, |t| {
            seen_by_the_fold(t, wait, &seen, &deciding);
            progress.borrow_mut().show(t);
            done(t, wait.until)
        });
        let shown = show_training(&mut training, &progress, wait.stall);
        tokio::select! {
            done = follow => done.map(Outcome::Done),
            d = deadline(wait) => Ok(Outcome::Timeout(d)),
            d = start_timer(wait.start_timeout, seen_by_timer) => Ok(Outcome::NotStarted(d)),
            code = signals::stop_requested() => Ok(Outcome::Signal(code)),
            d = shown => Ok(Outcome::Stalled(d)),
        }
    };
    // After a verdict the deciding task's log delivers its last lines, for the report.
    if matches!(outcome, Ok(Outcome::Done(Done::Final(_)))) {
        let _ = tokio::time::timeout(PROGRESS_DRAIN, &mut reader).await;
    }
    reader.abort();
    let last = training.borrow().clone();
    // What arrived after the follow ended is shown too: the line ends as the log did.
    let mut progress = progress.into_inner();
    progress.show_training(&last);
    progress.finish();
    outcome.map(|o| (o, last))
}

/// What the start timer and the progress reader learn from each change of the run:
/// its creation and start (only while a start timeout may still pass), and which pod
/// is the deciding task's.
fn seen_by_the_fold(
    t: &Tracker,
    wait: &Wait,
    seen: &watch::Sender<StartSeen>,
    deciding: &watch::Sender<Option<PodView>>,
) {
    if wait.start_timeout.is_some() && !seen.borrow().started {
        let now = StartSeen {
            created: t.created(),
            started: t.started(),
        };
        seen.send_if_modified(|s| std::mem::replace(s, now) != now);
    }
    let pod = super::training::deciding(t).cloned();
    deciding.send_if_modified(|s| {
        let changed = *s != pod;
        *s = pod;
        changed
    });
}

/// Whether the follow is done: no pods, a final verdict, or (`--for start`) every pod
/// started.
fn done(t: &Tracker, until: WaitFor) -> Option<Done> {
    if t.is_empty() {
        return Some(Done::Empty);
    }
    let verdict = t.verdict();
    if verdict.is_final() {
        Some(Done::Final(verdict))
    } else if until == WaitFor::Start && t.started() {
        Some(Done::Started)
    } else {
        None
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

/// Shows the training's progress as it changes; with a stall bound, names a stall (no
/// new progress line for that long, counted from the last one read, once there was
/// one, while the training is not finished) and, with `--on-stall fail`, resolves with
/// the bound. Never resolves otherwise.
async fn show_training(
    training: &mut watch::Receiver<Training>,
    progress: &RefCell<Progress>,
    stall: Option<Stall>,
) -> Duration {
    let mut last: Option<Instant> = None;
    let mut open = true;
    loop {
        let stall_at = stall.zip(last).map(|(s, at)| (s, at + s.after));
        let timer = async {
            match stall_at {
                Some((_, at)) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = training.changed(), if open => {
                open = changed.is_ok();
                let now = training.borrow_and_update().clone();
                if open && !now.is_empty() {
                    last = Some(Instant::now());
                }
                progress.borrow_mut().show_training(&now);
            }
            () = timer => {
                let Some((s, _)) = stall_at else { continue };
                let now = training.borrow().clone();
                last = None;
                if now.finished() {
                    continue;
                }
                if s.on == OnStall::Fail {
                    return s.after;
                }
                progress.borrow_mut().show_stall(&now, &stalled_text(&now, s.after));
            }
        }
    }
}

/// `no progress since 21:03:12 UTC (for 30m; --stall-after 30m)`.
pub fn stalled_text(training: &Training, after: Duration) -> String {
    let since = training.last_at.map_or_else(
        || "its start".to_string(),
        |ms| crate::duration::clock(ms / 1000),
    );
    format!(
        "no progress since {since} (--stall-after {})",
        humantime::format_duration(after)
    )
}

/// `--start-timeout`: resolves with `limit` once that long has passed since the run's
/// creation (the API server's clock, to the second) without every task started; never
/// without a limit, nor once the run has started.
async fn start_timer(limit: Option<Duration>, mut seen: watch::Receiver<StartSeen>) -> Duration {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    let first = seen.wait_for(|s| s.created.is_some() || s.started).await;
    let Some(created) = first.ok().and_then(|s| s.created.filter(|_| !s.started)) else {
        return std::future::pending().await;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let left = created
        .saturating_add(limit.as_secs().min(i64::MAX as u64) as i64)
        .saturating_sub(now)
        .max(0);
    tokio::time::sleep(Duration::from_secs(left as u64)).await;
    if seen.borrow().started {
        return std::future::pending().await;
    }
    limit
}

/// What the outcome prints, after saving logs and cleaning up as asked.
async fn report(
    cluster: &Cluster,
    wait: &Wait,
    (tracker, training, metrics): (&Tracker, &Training, Option<&RunMetrics>),
    outcome: Outcome,
) -> Result<()> {
    let tag = wait.tag.as_str();
    let ns = cluster.namespace();
    match outcome {
        Outcome::Signal(code) => Err(ExitError::new(
            code,
            format!("interrupted; run '{tag}' was left as it is (see: tf-spawner status -t {tag} -n {ns})"),
        )
        .into()),
        Outcome::Done(Done::Empty) => bail!(
            "no pods labelled {} in namespace '{ns}' (the runs there: tf-spawner list -n {ns})",
            crate::labels::whole_run_selector(tag)
        ),
        Outcome::Done(Done::Started) => {
            let n = tracker.live().count();
            output::print(&format!("run {tag}: all {n} pods started\n"))?;
            Ok(())
        }
        Outcome::Done(Done::Final(Verdict::Succeeded)) => {
            let after = after_the_verdict(cluster, wait, (tracker, metrics), "Succeeded").await;
            output::print(&format!("run {tag}: Succeeded\n"))?;
            time_and_training(tracker, wait.all_workers, training)?;
            after.map_err(|e| anyhow!("run '{tag}' succeeded, but {e}"))
        }
        Outcome::Done(Done::Final(Verdict::Failed(failure))) => {
            show_failed_log(cluster, tracker, &failure).await;
            time_and_training(tracker, false, training)?;
            let after = after_the_verdict(cluster, wait, (tracker, metrics), &format!("Failed: {failure}")).await;
            let message = format!("run '{tag}' failed: {failure}");
            Err(ExitError::new(EXIT_TRAINING_FAILED, also(message, after)).into())
        }
        Outcome::Done(Done::Final(other)) => {
            // `is_final` admits only the two above.
            Err(ExitError::new(EXIT_RUNTIME, format!("unexpected verdict {}", other.name())).into())
        }
        Outcome::NotStarted(d) => not_started(cluster, wait, (tracker, metrics), d).await,
        Outcome::Stalled(d) => {
            let message = format!(
                "run '{tag}' made no progress: {} (--on-stall fail); the last: {}",
                stalled_text(training, d),
                show::live(training)
            );
            let after = after_the_verdict(cluster, wait, (tracker, metrics), &format!("Failed: {message}")).await;
            Err(ExitError::new(EXIT_TRAINING_FAILED, also(message, after)).into())
        }
        Outcome::Timeout(d) => {
            let after = after_the_end(cluster, wait).await;
            Err(ExitError::new(EXIT_TIMEOUT, also(timed_out(wait, tracker, d), after)).into())
        }
    }
}

/// The lines under a final verdict: the run's time (`timing::of_run`) and the
/// training's report, each if there is one.
fn time_and_training(tracker: &Tracker, all_workers: bool, training: &Training) -> Result<()> {
    if let Some(time) = crate::timing::of_run(tracker, all_workers) {
        output::print(&format!("{}\n", time.line()))?;
    }
    if let Some(line) = show::report(training) {
        output::print(&format!("{line}\n"))?;
    }
    Ok(())
}

/// `--start-timeout` passed: a verdict, so the pods that did start are stopped (they
/// hold their GPUs), then `--save-logs` and `--cleanup`; exit 5 naming what holds it up.
async fn not_started(
    cluster: &Cluster,
    wait: &Wait,
    (tracker, metrics): (&Tracker, Option<&RunMetrics>),
    d: Duration,
) -> Result<()> {
    let message = format!(
        "run '{}' did not start within {} of its creation (--start-timeout): {}",
        wait.tag,
        humantime_secs(d),
        crate::verdict::start::describe_holdups(&tracker.holdups())
    );
    let record = format!(
        "Failed: did not start (--start-timeout {})",
        humantime_secs(d)
    );
    let after = after_the_verdict(cluster, wait, (tracker, metrics), &record).await;
    Err(ExitError::new(EXIT_START_TIMEOUT, also(message, after)).into())
}

/// `timed out after 90s waiting for run 'T' to end (verdict so far: Pending; who: why)`.
fn timed_out(wait: &Wait, tracker: &Tracker, d: Duration) -> String {
    let what = match wait.until {
        WaitFor::Start => "start",
        WaitFor::End => "end",
    };
    let mut message = format!(
        "timed out after {} waiting for run '{}' to {what} (verdict so far: {}",
        humantime_secs(d),
        wait.tag,
        tracker.verdict().name()
    );
    let summary = tracker.summary();
    let queued: u32 = summary.iter().map(|r| r.counts.queued).sum();
    if queued > 0 {
        message.push_str(&format!(
            "; {queued} pod{} still queued",
            if queued == 1 { "" } else { "s" }
        ));
        if let Some(queue) = summary.iter().find_map(|r| r.queue.clone()) {
            message.push_str(&format!(" in {queue}"));
        }
    }
    if let Some((who, reason)) = summary.into_iter().find_map(|r| r.stuck) {
        message.push_str(&format!("; {who}: {reason}"));
    }
    message.push(')');
    message
}

/// `message`, and what went wrong after the end if anything did.
fn also(mut message: String, after: Result<()>) -> String {
    if let Err(e) = after {
        message.push_str(&format!("; also, {e}"));
    }
    message
}

fn humantime_secs(d: Duration) -> String {
    crate::duration::age(d.as_secs())
}

/// After a verdict: the pods still unfinished are stopped and kept (unless
/// `--keep-running`, or `--cleanup` without `--save-logs` deletes them all anyway), the
/// verdict is recorded on the run's ConfigMap, then `--save-logs` (once the stopped pods
/// have ended, so their last lines are in), then `--cleanup`. Every problem is reported,
/// none stops the others.
async fn after_the_verdict(
    cluster: &Cluster,
    wait: &Wait,
    (tracker, metrics): (&Tracker, Option<&RunMetrics>),
    verdict: &str,
) -> Result<()> {
    let mut problems: Vec<String> = Vec::new();
    // Pods the follower saw still running at the verdict (a task, or a sidecar beside
    // a finished one); none: no request at all.
    let unfinished = tracker.live().any(PodView::still_running);
    let mut stopped = Stopped::default();
    if unfinished && !wait.keep_running && (!wait.cleanup || wait.save_logs.is_some()) {
        stopped = stop_step(cluster, wait, tracker, &mut problems).await;
    }
    if !wait.cleanup {
        record_step(cluster, wait, (tracker, verdict, metrics), &stopped).await;
    }
    if wait.save_logs.is_some() && !stopped.stopped.is_empty() {
        crate::cluster::stop::until_ended(cluster, &wait.tag, STOP_WAIT).await;
    }
    save_logs_step(cluster, wait, &mut problems).await;
    cleanup_step(cluster, wait, &mut problems).await;
    joined(problems)
}

/// How long `--save-logs` waits for the stopped pods to end (their grace period, 30 s by
/// default, and the kubelet's round).
const STOP_WAIT: Duration = Duration::from_secs(45);

/// The verdict, the tasks deleted unstarted, why the tasks stopped or deleted before
/// they started had not started and the training's metrics, on the run's ConfigMap: its
/// record.
async fn record_step(
    cluster: &Cluster,
    wait: &Wait,
    (tracker, verdict, metrics): (&Tracker, &str, Option<&RunMetrics>),
    stopped: &Stopped,
) {
    let never: Vec<&str> = stopped.deleted.iter().map(|(_, t)| t.as_str()).collect();
    let ended = |pod: &str| {
        stopped.stopped.iter().any(|p| p == pod) || stopped.deleted.iter().any(|(p, _)| p == pod)
    };
    let unstarted: Vec<(String, String)> = tracker
        .unstarted()
        .into_iter()
        .filter(|(_, pod, _)| ended(pod))
        .map(|(task, _, why)| (task, why.to_string()))
        .collect();
    let why = crate::cluster::record::group_not_started(&unstarted);
    let end = crate::cluster::record::Ending {
        verdict,
        never_started: &never,
        not_started: &why,
        metrics,
    };
    if let Err(e) = crate::cluster::record::write(cluster, &wait.tag, end).await {
        output::note(&format!(
            "the verdict is not recorded on the run's ConfigMap: {e:#}"
        ));
    }
}

/// After a time-out (no verdict: nothing is stopped): `--save-logs`, then `--cleanup`.
async fn after_the_end(cluster: &Cluster, wait: &Wait) -> Result<()> {
    let mut problems: Vec<String> = Vec::new();
    save_logs_step(cluster, wait, &mut problems).await;
    cleanup_step(cluster, wait, &mut problems).await;
    joined(problems)
}

fn joined(problems: Vec<String>) -> Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(problems.join("; ")))
    }
}

async fn save_logs_step(cluster: &Cluster, wait: &Wait, problems: &mut Vec<String>) {
    if let Some(dir) = &wait.save_logs {
        // A fresh look: the pods stopped since the verdict have ended.
        let saved = match super::status::snapshot(cluster, &wait.tag, wait.all_workers).await {
            Ok(tracker) => match save_logs(cluster, &tracker, dir).await {
                // And the logs of the attempts restarts replaced (POD.attempt-N.log).
                Ok(n) => super::logs::save_kept(cluster, &wait.tag, dir)
                    .await
                    .map(|kept| n + kept),
                e => e,
            },
            Err(e) => Err(e),
        };
        match saved {
            Ok(saved) => {
                let _ = output::print(&format!("saved {saved} pod logs in {}\n", dir.display()));
            }
            Err(e) => problems.push(format!("saving logs failed: {e:#}")),
        }
    }
}

/// The run's pods that have not finished are stopped (`cluster::stop`).
async fn stop_step(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &Tracker,
    problems: &mut Vec<String>,
) -> Stopped {
    match crate::cluster::stop::stop_unfinished(cluster, &wait.tag, wait.max_in_flight).await {
        Ok(stopped) => {
            // As the follower saw them at the verdict: a pod whose container never ran
            // (a pull that failed, still being created) has no log to keep.
            let unstarted: Vec<String> = tracker
                .unstarted()
                .into_iter()
                .map(|(_, pod, _)| pod)
                .collect();
            let (never, ran): (Vec<String>, Vec<String>) = stopped
                .stopped
                .iter()
                .cloned()
                .partition(|p| unstarted.contains(p));
            if !ran.is_empty() {
                let _ = output::print(&format!(
                    "stopped {} (kept with {} logs until -d; --keep-running leaves them running)\n",
                    counted(
                        &ran,
                        "pod still running after the verdict",
                        "pods still running after the verdict"
                    ),
                    if ran.len() == 1 { "its" } else { "their" },
                ));
            }
            if !never.is_empty() {
                let _ = output::print(&format!(
                    "stopped {} (no log; kept until -d: tf-spawner status -t {} says why)\n",
                    counted(&never, "pod that never started", "pods that never started"),
                    wait.tag,
                ));
            }
            if !stopped.deleted.is_empty() {
                let tasks: Vec<String> = stopped.deleted.iter().map(|(_, t)| t.clone()).collect();
                let _ = output::print(&format!(
                    "deleted {} (no node had taken {}: no log)\n",
                    counted(
                        &tasks,
                        "task that never started",
                        "tasks that never started"
                    ),
                    if tasks.len() == 1 { "it" } else { "them" },
                ));
            }
            stopped
        }
        Err(e) => {
            problems.push(format!("stopping the unfinished pods failed: {e:#}"));
            Stopped::default()
        }
    }
}

/// `2 pods still running after the verdict: a, b` (the first few names).
fn counted(names: &[String], one: &str, many: &str) -> String {
    const SHOWN: usize = 8;
    let mut shown = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        shown.push_str(", …");
    }
    let what = if names.len() == 1 { one } else { many };
    format!("{} {what}: {shown}", names.len())
}

async fn cleanup_step(cluster: &Cluster, wait: &Wait, problems: &mut Vec<String>) {
    if !wait.cleanup {
        return;
    }
    let deleted = super::delete::delete(cluster, &wait.tag, wait.max_in_flight).await;
    let _ = output::print(&format!(
        "deleted {} objects of run {}\n",
        deleted.removed.len(),
        wait.tag
    ));
    for note in &deleted.notes {
        output::note(note);
    }
    if let Some(err) = super::delete::failure(&deleted, &wait.tag, cluster.namespace()) {
        problems.push(format!("the cleanup failed: {err}"));
    }
}

/// Writes every pod's full log to `DIR/POD.log`; returns how many were written.
async fn save_logs(cluster: &Cluster, tracker: &Tracker, dir: &Path) -> Result<usize> {
    let pods: Vec<PodView> = tracker.live().cloned().collect();
    let results: Vec<Result<bool>> = stream::iter(pods)
        .map(|pod| async move {
            // From the pod's status: a log request for a pod no node has taken answers
            // 204 and no body, which would be saved as an empty log.
            if !pod.started {
                output::note(&super::logs::no_log(&pod));
                return Ok(false);
            }
            let params = pod_logs::LogOptions::default().params(pod.container.as_deref());
            match pod_logs::fetch(cluster, &pod.name, &params).await {
                Ok(text) => {
                    let path = dir.join(format!("{}.log", pod.name));
                    std::fs::write(&path, text)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    Ok(true)
                }
                Err(e) if pod_logs::not_started(&e) => {
                    output::note(&super::logs::no_log(&PodView {
                        started: false,
                        ..pod
                    }));
                    Ok(false)
                }
                Err(e) => Err(cluster.explain(&format!("reading the log of pod {}", pod.name), &e)),
            }
        })
        .buffer_unordered(SAVE_IN_FLIGHT)
        .collect()
        .await;
    let mut saved = 0;
    for r in results {
        if r? {
            saved += 1;
        }
    }
    Ok(saved)
}

/// The failed pod's last lines, on stderr before the error line.
async fn show_failed_log(cluster: &Cluster, tracker: &Tracker, failure: &Failure) {
    if !matches!(failure.kind, FailureKind::Exited { .. }) {
        return;
    }
    let Some(pod) = tracker.live().find(|p| p.name == failure.pod) else {
        return;
    };
    let text = super::blame::last_lines(cluster, pod).await;
    if text.trim().is_empty() {
        return;
    }
    // A closed stderr is no reason to fail the wait.
    output::eprint(&super::blame::shown(pod, &text));
}
