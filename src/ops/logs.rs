//! `tf-spawner logs -t TAG [-f]`: the logs of every pod of a run as one stream, each
//! line prefixed by its task (`worker-1 | …`), coloured per task on a terminal.
//!
//! Whether a pod has a log to read is decided from the pod's own status (phase and
//! container statuses), never from the log request's answer: for a pod no node has
//! taken yet, a real API server answers 204 with no body, which looks like an empty log.
//!
//! Without `-f`, each pod's log is printed whole, in task order (chief, ps, workers,
//! evaluator); a pod whose container has not started yet is skipped with a note on
//! stderr. With `-f`, one stream per pod is followed (lines of one pod stay in order,
//! pods interleave as lines arrive); a pod still waiting to start is opened, from its
//! first line, once its status says it has started; pods that appear later are picked
//! up from the run's watch, and the command ends when the run is over: its verdict is
//! final and every chief and worker pod has ended (parameter servers and evaluators,
//! which do not exit on their own, are cut off then). Ctrl-C ends it with exit 0; so
//! does a closed pipe (`| head`).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use futures::{AsyncBufReadExt, StreamExt, stream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use k8s_openapi::jiff::Timestamp;

use crate::cluster::Cluster;
use crate::cluster::attempt_logs::{self, Got};
use crate::cluster::pod_logs::{self, LogOptions};
use crate::errors::UsageError;
use crate::output::{self, Styled};
use crate::roles::{Role, Task};
use crate::signals;
use crate::verdict::retryable::RestartOn;
use crate::verdict::{FailureKind, PodView, Tracker, Verdict};

/// Log downloads in flight at once without `-f`.
const FETCH_IN_FLIGHT: usize = 8;
/// How long, once the run is over, streams of ended pods may take to deliver their
/// last lines (the server closes them when the container ends; this is a safety net).
const DRAIN: Duration = Duration::from_secs(10);
/// A pod that is not ready for its log is retried at least this often while following.
const RETRY: Duration = Duration::from_secs(2);

/// Prints the logs of run `tag` (followed with `options.follow`, until the run is over
/// or a signal).
pub(crate) async fn print(
    cluster: &Cluster,
    tag: &str,
    options: &LogOptions,
    pick: &Pick,
) -> Result<()> {
    let tracker = super::status::snapshot(cluster, tag, false).await?;
    pick.check(&tracker, tag)?;
    let mut prefixes = Prefixes::new(&tracker, output::fancy_stdout());
    if let Some(n) = pick.attempt.filter(|n| *n != tracker.attempt()) {
        return attempt(
            cluster,
            tag,
            n,
            tracker.attempt(),
            options,
            pick,
            &mut prefixes,
        )
        .await;
    }
    if options.follow {
        tokio::select! {
            result = across_restarts(cluster, tag, options, pick, tracker, &mut prefixes) => result,
            _ = signals::stop_requested() => Ok(()),
        }
    } else {
        once(cluster, options, pick, &tracker, &mut prefixes).await
    }
}

/// Which pods' logs: `--task` (all when empty) and, with `-f`, how many at once.
#[derive(Debug, Clone)]
pub struct Pick {
    pub tasks: Vec<Task>,
    pub max_streams: usize,
    /// `--attempt N`: an attempt's log (`None`: the current attempt's).
    pub attempt: Option<u32>,
    /// `--heartbeat` (`ops/waiting.rs`'s [`Notes`](super::waiting::Notes)).
    pub heartbeat: Option<Duration>,
}

impl Pick {
    /// A `--task` the run does not have is "nothing matched": exit 1 naming its tasks,
    /// never an empty log and exit 0.
    fn check(&self, tracker: &Tracker, tag: &str) -> Result<()> {
        let known = tracker.tasks();
        let missing: Vec<String> = (self.tasks.iter())
            .filter(|t| !known.contains(t))
            .map(|t| t.id())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = known.iter().map(|t| t.id()).collect();
        anyhow::bail!(
            "run '{tag}' has no task {} (its tasks: {})",
            missing.join(", "),
            ids.join(", ")
        )
    }

    fn wants(&self, pod: &PodView) -> bool {
        self.tasks.is_empty() || pod.task.is_some_and(|t| self.tasks.contains(&t))
    }
}

/// The pods to follow first: the task that decides the run, then pods that failed,
/// then the others in task order.
fn by_priority(t: &Tracker, pick: &Pick) -> Vec<PodView> {
    let deciding = Task::deciding(t.tasks().iter().any(|t| t.role == Role::Chief));
    let mut pods: Vec<PodView> = t
        .in_task_order()
        .into_iter()
        .filter(|p| pick.wants(p))
        .cloned()
        .collect();
    pods.sort_by_key(|p| match p.state() {
        _ if p.task == Some(deciding) => 0,
        crate::verdict::State::Failed => 1,
        _ => 2,
    });
    pods
}

/// Task prefixes: padded to the longest task id known at the start, coloured per task.
pub struct Prefixes {
    width: usize,
    colour: bool,
    index: BTreeMap<String, usize>,
}

impl Prefixes {
    pub fn new(tracker: &Tracker, colour: bool) -> Prefixes {
        let mut labels: Vec<(Option<crate::roles::Task>, String)> = tracker
            .tasks()
            .into_iter()
            .map(|t| (Some(t), t.id()))
            .chain(tracker.live().map(|v| (v.task, v.label())))
            .collect();
        labels.sort();
        labels.dedup();
        let width = labels.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        let mut index = BTreeMap::new();
        for (_, label) in labels {
            let next = index.len();
            index.entry(label).or_insert(next);
        }
        Prefixes {
            width,
            colour,
            index,
        }
    }

    pub fn prefix(&mut self, label: &str) -> Styled {
        let next = self.index.len();
        let n = *self.index.entry(label.to_string()).or_insert(next);
        output::prefix(label, self.width, self.colour.then_some(n))
    }
}

/// Prefixes every line of `text`; a last line without a newline gets one.
/// `text`'s lines, each after `prefix`; unless `raw` (`logs --raw`), each made safe for
/// the terminal ([`output::terminal_text`]): a pod's log may carry escape sequences.
fn prefixed(prefix: &Styled, text: &str, raw: bool) -> Styled {
    let mut out = Styled::new();
    // The kubelet's notice for a container it no longer has is no log line.
    for line in text.lines().filter(|l| !pod_logs::kubelet_notice(l)) {
        out.push(prefix);
        out.push(&shown(line, raw));
        out.push_plain("\n");
    }
    out
}

/// A log line as shown: as it is with `--raw`, else made safe for the terminal.
fn shown(line: &str, raw: bool) -> Styled {
    if raw {
        Styled::unaltered(line)
    } else {
        Styled::plain(line)
    }
}

fn note(text: &str) {
    output::note(text);
}

/// Why a pod that has not started (see [`PodView::started`]) has no log.
pub fn no_log(pod: &PodView) -> String {
    let why = pod
        .waiting
        .as_ref()
        .or(pod.pod_reason.as_ref())
        .map(|r| format!(" ({})", r.reason))
        .unwrap_or_default();
    if pod.state().finished() {
        format!("pod {} ended without starting{why}; no log", pod.name)
    } else {
        format!("pod {} has not started yet{why}; no log", pod.name)
    }
}

fn sorted(tracker: &Tracker) -> Vec<PodView> {
    tracker.in_task_order().into_iter().cloned().collect()
}

/// Every pod's log, whole, in task order.
async fn once(
    cluster: &Cluster,
    options: &LogOptions,
    pick: &Pick,
    tracker: &Tracker,
    prefixes: &mut Prefixes,
) -> Result<()> {
    let (pods, waiting): (Vec<PodView>, Vec<PodView>) = sorted(tracker)
        .into_iter()
        .filter(|p| pick.wants(p))
        .partition(|p| p.started);
    for pod in &waiting {
        note(&no_log(pod));
    }
    let mut fetched = stream::iter(pods)
        .map(|pod| async move {
            let params = options.params(pod.setup.container.as_deref());
            let result = pod_logs::fetch(cluster, &pod.name, &params).await;
            (pod, result)
        })
        .buffered(FETCH_IN_FLIGHT);
    while let Some((pod, result)) = fetched.next().await {
        match result {
            Ok(text) => {
                let prefix = prefixes.prefix(&pod.label());
                if !output::print_styled(&prefixed(&prefix, &text, options.raw))? {
                    return Ok(());
                }
            }
            // Its status said it had started, but the server says it has not (a status
            // not yet up to date): the same note.
            Err(e) if pod_logs::not_started(&e) => note(&no_log(&PodView {
                started: false,
                ..pod
            })),
            Err(e) => {
                return Err(cluster.explain(&format!("reading the log of pod {}", pod.name), &e));
            }
        }
    }
    Ok(())
}

/// `logs --attempt N` of an attempt that is not the current one: its kept logs
/// (`cluster/attempt_logs.rs`), in task order, each told once why the attempt ended.
async fn attempt(
    cluster: &Cluster,
    tag: &str,
    n: u32,
    current: u32,
    options: &LogOptions,
    pick: &Pick,
    prefixes: &mut Prefixes,
) -> Result<()> {
    if n > current {
        return Err(UsageError::new(format!(
            "--attempt {n}: run '{tag}' has had no attempt {n}: its current one is {current} (0 is the spawn's)"
        ))
        .into());
    }
    if options.follow {
        return Err(UsageError::new(format!(
            "--attempt {n} with -f: attempt {n} of run '{tag}' has ended (its current one is {current}); drop -f"
        ))
        .into());
    }
    let (mut kept, more) = attempt_logs::list(cluster, tag, Some(n)).await?;
    let label = |pod: &str| {
        pod.strip_prefix(&format!("{tag}-"))
            .unwrap_or(pod)
            .to_string()
    };
    kept.retain(|k| pick.tasks.is_empty() || pick.tasks.iter().any(|t| t.name(tag) == k.pod));
    let Some(first) = kept.first() else {
        anyhow::bail!(
            "run '{tag}': no log of attempt {n} was kept (a restart keeps the logs of the attempt it replaces; one made by an earlier version of tf-spawner, or of a pod that never started or was lost with its node, has none)"
        );
    };
    note(&format!("run {tag}: attempt {n} ended: {}", first.ended));
    if more {
        note(&attempt_logs::too_many(tag));
    }
    kept.sort_by_key(|k| task_order(&label(&k.pod)));
    let mut budget = attempt_logs::Budget::default();
    for k in &kept {
        if !print_kept(
            cluster,
            k,
            options,
            prefixes.prefix(&label(&k.pod)),
            &mut budget,
        )
        .await?
        {
            return Ok(());
        }
    }
    Ok(())
}

/// Prints one kept log (read within `budget`), its cuts said in a line; `false` when
/// nothing more is to be printed (the budget spent, stdout closed).
async fn print_kept(
    cluster: &Cluster,
    k: &attempt_logs::Kept,
    options: &LogOptions,
    prefix: Styled,
    budget: &mut attempt_logs::Budget,
) -> Result<bool> {
    if k.dropped > 0 {
        note(&format!(
            "pod {}: the first {} bytes of attempt {}'s log were dropped to keep it under 1 MiB",
            k.pod, k.dropped, k.attempt
        ));
    }
    let (text, cut) = match attempt_logs::text(cluster, k, budget).await? {
        Got::Text(text, cut) => (text, cut),
        Got::Spent(line) => {
            line.iter().for_each(|l| note(l));
            return Ok(false);
        }
    };
    let shown = match options.tail {
        Some(t) => last_lines(&text, t),
        None => &text,
    };
    if !output::print_styled(&prefixed(&prefix, shown, options.raw))? {
        return Ok(false);
    }
    if let Some(cut) = cut {
        note(&cut);
    }
    Ok(true)
}

/// Task order of a pod's label (`worker-1`): the task, then the label.
fn task_order(label: &str) -> (Option<Task>, String) {
    let task = label.rsplit_once('-').and_then(|(r, i)| {
        Some(Task {
            role: Role::parse(r)?,
            index: i.parse().ok()?,
        })
    });
    (task, label.to_string())
}

/// `--save-logs`: the kept logs of the attempts restarts replaced, each in
/// `DIR/POD.attempt-N.log`; returns how many were written.
pub(crate) async fn save_kept(
    cluster: &Cluster,
    tag: &str,
    dir: &std::path::Path,
) -> Result<usize> {
    let (kept, more) = attempt_logs::list(cluster, tag, None).await?;
    if more {
        output::warning(&attempt_logs::too_many(tag));
    }
    let mut budget = attempt_logs::Budget::default();
    let mut written = 0;
    for k in &kept {
        let (text, cut) = match attempt_logs::text(cluster, k, &mut budget).await? {
            Got::Text(text, cut) => (text, cut),
            Got::Spent(line) => {
                line.iter().for_each(|l| output::warning(l));
                break;
            }
        };
        let path = dir.join(format!("{}.attempt-{}.log", k.pod, k.attempt));
        std::fs::write(&path, &text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        written += 1;
        if let Some(cut) = cut {
            output::warning(&cut);
        }
    }
    Ok(written)
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: u64) -> &str {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n.saturating_sub(1)) {
        _ if n == 0 => "",
        Some((i, _)) => &text[i + 1..],
        None => text,
    }
}

/// How long `logs -f` looks for a restart once a run is over with a failure the default
/// `--restart-on` retries (a `wait --restarts` records its restart at once).
const RESTART_LINGER: Duration = Duration::from_secs(5);
/// How often it looks, and how often it looks for a restart's pods.
const RESTART_POLL: Duration = Duration::from_secs(1);

/// `logs -f`: follows each attempt to its end, and the next one a restart (`wait
/// --restarts`, in this process or another) begins, saying so.
async fn across_restarts(
    cluster: &Cluster,
    tag: &str,
    options: &LogOptions,
    pick: &Pick,
    mut tracker: Tracker,
    prefixes: &mut Prefixes,
) -> Result<()> {
    loop {
        let attempt = tracker.attempt();
        let Some(verdict) = follow(cluster, tag, options, pick, tracker, prefixes).await? else {
            return Ok(());
        };
        let linger = match &verdict {
            Verdict::Failed(f) if RestartOn::default().retries(&f.kind) => RESTART_LINGER,
            Verdict::Failed(_) => Duration::ZERO,
            _ => return Ok(()),
        };
        let Some(next) = restart_begun(cluster, tag, attempt, linger).await? else {
            return Ok(());
        };
        note(&format!(
            "run {tag}: attempt {next} begins (a restart of wait --restarts)"
        ));
        match attempt_pods(cluster, tag, next).await? {
            Some(t) => tracker = t,
            None => {
                note(&format!(
                    "run {tag}: the restart created no pods of attempt {next} (see: tf-spawner status -t {tag})"
                ));
                return Ok(());
            }
        }
    }
}

/// The attempt after `attempt` that a restart has begun (recorded on the run's
/// ConfigMap, or its pods there), looked for up to `linger` (at least once).
async fn restart_begun(
    cluster: &Cluster,
    tag: &str,
    attempt: u32,
    linger: Duration,
) -> Result<Option<u32>> {
    let until = tokio::time::Instant::now() + linger;
    loop {
        let record = crate::cluster::record::read(cluster, tag).await?;
        if let Some(n) = record.and_then(|r| r.restarting).filter(|n| *n > attempt) {
            return Ok(Some(n));
        }
        let now = super::status::pods(cluster, tag, false).await?.attempt();
        if now > attempt {
            return Ok(Some(now));
        }
        if tokio::time::Instant::now() >= until {
            return Ok(None);
        }
        tokio::time::sleep(RESTART_POLL).await;
    }
}

/// The run's pods once the restart to attempt `n` has created them all (its record
/// is cleared only then); `None` when it is no longer recorded and they are not there
/// (it failed, or was stopped). Not at its first pod: a follow of the attempt's first
/// pods alone would take the tasks not created yet for gone, and end.
async fn attempt_pods(cluster: &Cluster, tag: &str, n: u32) -> Result<Option<Tracker>> {
    loop {
        // The record first: once it no longer says `n`, the pods listed after it are
        // every pod the restart made.
        let record = crate::cluster::record::read(cluster, tag).await?;
        let restarting = record.and_then(|r| r.restarting) == Some(n);
        let tracker = super::status::pods(cluster, tag, false).await?;
        if !restarting {
            return Ok((tracker.attempt() >= n).then_some(tracker));
        }
        tokio::time::sleep(RESTART_POLL).await;
    }
}

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

async fn follow(
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
/// [`Notes`](super::waiting::Notes)). `Ok(false)`: the pipe was closed.
async fn until_over(
    followers: &mut Followers<'_>,
    tracker: &mut Tracker,
    rx: &mut mpsc::Receiver<Styled>,
) -> Result<bool> {
    let mut notes = super::waiting::Notes::new(followers.cluster, followers.pick.heartbeat);
    let (pending_tx, mut pending) = watch::channel(Vec::new());
    let (cluster, tag) = (followers.cluster, followers.tag);
    let watched = super::follow_run(cluster, tag, tracker, |t| {
        followers.sync(t);
        pending_tx.send_replace(super::waiting::unstarted(t));
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
            () = super::waiting::until(notes.next()) => notes.wake().await,
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

/// Follows one pod's log until its container ends, the pod goes away, or the task is
/// aborted. Sends prefixed lines.
async fn follow_pod(
    cluster: Cluster,
    pod: PodView,
    options: LogOptions,
    prefix: Styled,
    tx: mpsc::Sender<Styled>,
    mut state: watch::Receiver<Option<PodView>>,
) {
    let mut params = options.params(pod.setup.container.as_deref());
    params.follow = true;
    // Timestamps always, to resume where a broken stream stopped (see `Cursor`).
    params.timestamps = true;
    let mut cursor = Cursor::new(options.timestamps);
    loop {
        if !until_started(&mut state).await {
            return;
        }
        match pod_logs::open(&cluster, &pod.name, &params).await {
            Ok(reader) => {
                let to = (&prefix, &tx);
                if !send_lines(reader, &pod.name, to, &mut cursor, options.raw).await {
                    return;
                }
                // The stream ended: done if the container has; otherwise (a dropped
                // connection, a restarted API server) go on from the last line.
                let current = state.borrow().clone();
                match current {
                    Some(v) if !v.state().finished() => {
                        cursor.resume(&mut params);
                        wait_for_change(&mut state).await;
                        if state.borrow().is_none() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
            Err(e) if pod_logs::not_started(&e) => {
                wait_for_change(&mut state).await;
                if state.borrow().is_none() {
                    return;
                }
            }
            Err(e) if e.code() == Some(404) => return,
            // The API server is away: the run's watch decides how long to wait for it.
            Err(e) if crate::cluster::watch::outage(&e) => {
                wait_for_change(&mut state).await;
                if state.borrow().is_none() {
                    return;
                }
            }
            Err(e) => {
                note(&format!("cannot read the log of pod {}: {e}", pod.name));
                return;
            }
        }
    }
}

/// Where a followed log stands, so that a stream that broke is opened again from where
/// it stopped, with no line lost or printed twice: streams are read with timestamps
/// (removed again unless asked for); the next one asks for `sinceTime`, the last
/// line's second (the API's precision), and skips what it sends again: lines before
/// the last one's timestamp, and as many lines at that timestamp as were printed.
pub(super) struct Cursor {
    show_timestamps: bool,
    /// The last printed line's timestamp and how many printed lines carried it.
    last: Option<(Timestamp, usize)>,
    /// What the current stream sends again, to skip.
    skip: Option<(Timestamp, usize)>,
}

impl Cursor {
    pub(super) fn new(show_timestamps: bool) -> Cursor {
        Cursor {
            show_timestamps,
            last: None,
            skip: None,
        }
    }

    /// The line to print, or `None` for a line printed before.
    fn line<'a>(&mut self, raw: &'a str) -> Option<&'a str> {
        let Some((at, text)) = raw
            .split_once(' ')
            .and_then(|(at, text)| Some((at.parse::<Timestamp>().ok()?, text)))
        else {
            return Some(raw);
        };
        if !self.keep(at) {
            return None;
        }
        Some(if self.show_timestamps { raw } else { text })
    }

    /// Whether a line with timestamp `at` is new (else the resumed stream sent it
    /// before); a new one is counted as printed.
    pub(super) fn keep(&mut self, at: Timestamp) -> bool {
        if let Some((before, n)) = &mut self.skip {
            if at < *before || (at == *before && *n > 0) {
                *n = n.saturating_sub(usize::from(at == *before));
                return false;
            }
            self.skip = None;
        }
        match &mut self.last {
            Some((last, n)) if *last == at => *n += 1,
            _ => self.last = Some((at, 1)),
        }
        true
    }

    /// Makes `params` ask for the log from the last printed line on.
    pub(super) fn resume(&mut self, params: &mut kube::api::LogParams) {
        let Some((last, n)) = self.last else {
            // Nothing printed yet: the same request again.
            return;
        };
        let second = Timestamp::from_second(last.as_second()).unwrap_or(last);
        params.since_time = Some(second);
        params.since_seconds = None;
        params.tail_lines = None;
        self.skip = Some((last, n));
    }
}

/// Waits until the pod's status says its container has started; `false` if the pod is
/// gone or ended without starting.
pub(super) async fn until_started(state: &mut watch::Receiver<Option<PodView>>) -> bool {
    loop {
        let current = state.borrow().clone();
        match current {
            None => return false,
            Some(v) if v.started => return true,
            Some(v) if v.state().finished() => return false,
            Some(_) => wait_for_change(state).await,
        }
    }
}

/// Sends the stream's lines, prefixed, until it ends; `false` once nobody listens.
async fn send_lines(
    mut reader: impl futures::AsyncBufRead + Unpin,
    pod: &str,
    (prefix, tx): (&Styled, &mpsc::Sender<Styled>),
    cursor: &mut Cursor,
    raw: bool,
) -> bool {
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => return true,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let Some(text) = cursor.line(text.trim_end_matches(['\n', '\r'])) else {
                    continue;
                };
                if pod_logs::kubelet_notice(text) {
                    note(&format!("pod {pod}: its container's log is gone ({text})"));
                    continue;
                }
                let mut line = prefix.clone();
                line.push(&shown(text, raw));
                line.push_plain("\n");
                if tx.send(line).await.is_err() {
                    return false;
                }
            }
            Err(e) => {
                tracing::debug!(pod = %pod, error = %e, "log stream broke");
                return true;
            }
        }
    }
}

/// Returns when the pod's state changes, or after [`RETRY`].
pub(super) async fn wait_for_change(state: &mut watch::Receiver<Option<PodView>>) {
    let _ = tokio::time::timeout(RETRY, state.changed()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::tests::{pod, view};

    #[test]
    fn a_resumed_stream_skips_what_was_printed() {
        let mut params = kube::api::LogParams::default();
        let mut c = Cursor::new(false);
        assert_eq!(c.line("2024-01-01T00:00:01.5Z a"), Some("a"));
        assert_eq!(c.line("2024-01-01T00:00:02.25Z b"), Some("b"));
        assert_eq!(c.line("2024-01-01T00:00:02.25Z c"), Some("c"));
        c.resume(&mut params);
        assert_eq!(
            params.since_time,
            Some("2024-01-01T00:00:02Z".parse().unwrap())
        );
        // The server sends again from the second: what was printed is skipped.
        assert_eq!(c.line("2024-01-01T00:00:02.1Z x"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z b"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z c"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z d"), Some("d"));
        assert_eq!(c.line("2024-01-01T00:00:03Z e"), Some("e"));
        // Asked for, the timestamps stay; a line without one passes.
        let mut shown = Cursor::new(true);
        assert_eq!(
            shown.line("2024-01-01T00:00:03Z e"),
            Some("2024-01-01T00:00:03Z e")
        );
        assert_eq!(shown.line("no timestamp"), Some("no timestamp"));
    }

    #[test]
    fn prefixes_are_padded_to_the_longest_task_and_lines_are_prefixed() {
        let mut t = Tracker::new("t", false);
        t.replace(vec![
            view(pod("ps-0", "Running")),
            view(pod("worker-10", "Running")),
        ]);
        let mut p = Prefixes::new(&t, false);
        assert_eq!(p.prefix("ps-0").codes(), "ps-0      | ");
        let ps = Styled::plain("ps-0 | ");
        assert_eq!(prefixed(&ps, "a\nb", false).codes(), "ps-0 | a\nps-0 | b\n");
        assert_eq!(
            prefixed(&ps, "a\x1b]0;title\x07\r\nb", false).codes(),
            "ps-0 | a\\u{1b}]0;title\\u{7}\nps-0 | b\n"
        );
        assert_eq!(prefixed(&ps, "a\x1b[2J", true).codes(), "ps-0 | a\x1b[2J\n");
        let mut c = Prefixes::new(&t, true);
        assert_ne!(c.prefix("ps-0"), c.prefix("worker-10"));
        assert!(c.prefix("ps-0").codes().starts_with("\x1b["));
    }
}
