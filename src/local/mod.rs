//! Local runs (`tf-spawner --local`): the tasks of a run as processes on this machine.
//!
//! The plan is the cluster's, with `127.0.0.1` and a free port per task instead of the
//! services: every task gets the same `cluster` in `TF_CONFIG` (the evaluator outside
//! it), `WORKER_NUMBER` (workers), `TOT_WORKERS`, the env file's variables, and
//! `TF_SPAWNER_SCRIPT_DIR`: a private temp dir holding `training-script.py` (and
//! `entrypoint.sh` with `-c`), where the pod sees `/script`.
//!
//! Each task runs in its own process group, so that stopping a task stops whatever it
//! started (an entrypoint's children too). When a task's main process ends, the rest of
//! its group is killed, as a container's would be. When the run has a verdict (or times
//! out, or is interrupted), the tasks still running get SIGTERM, then SIGKILL after
//! [`GRACE`]. A guard kills every group still alive if anything goes wrong on the way.
//!
//! No arithmetic here may panic, whatever the flags (`--timeout`) or the tasks do.

#![deny(clippy::arithmetic_side_effects)]

use std::io;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use rustix::process::{Pid, Signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::errors::UsageError;
use crate::roles::{Role, Task};
use crate::signals;
use crate::trainlog::Training;
use crate::verdict::{Exit, Failure, FailureKind, Phase, PodSetup, PodView, Tracker, Verdict};

mod gpus;
mod reaper;
mod setup;
mod stream;

use stream::{Event, Piece, Printer};

pub(crate) use setup::{LocalPlan, LocalTask, plan};

/// How long tasks get between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long to wait for processes to go after SIGKILL (or for their output to end).
const AFTER_KILL: Duration = Duration::from_secs(5);
/// Lines (each at most `stream::MAX_LINE` bytes) in flight between the tasks and the
/// terminal.
const LINES_IN_FLIGHT: usize = 1024;

/// How a task's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

impl Ended {
    fn from_status(status: ExitStatus) -> Ended {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Code(code),
            (None, Some(sig)) => Ended::Signal(sig),
            (None, None) => Ended::Code(-1),
        }
    }

    /// As a container runtime reports it: the code, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            Ended::Code(c) => c,
            Ended::Signal(s) => s.saturating_add(128),
        }
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Code(c) => write!(f, "exited with code {c}"),
            Ended::Signal(s) => write!(f, "was killed by signal {s}{}", signal_name(*s)),
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    [
        (Signal::INT, " (SIGINT)"),
        (Signal::TERM, " (SIGTERM)"),
        (Signal::KILL, " (SIGKILL)"),
        (Signal::SEGV, " (SIGSEGV)"),
        (Signal::ABORT, " (SIGABRT)"),
        (Signal::BUS, " (SIGBUS)"),
    ]
    .into_iter()
    .find(|(s, _)| s.as_raw() == sig)
    .map_or("", |(_, name)| name)
}

/// The verdict rule of the cluster end-wait, applied to local tasks: each task is seen
/// as a pod that never restarts, running until its process ends.
pub fn verdict(tag: &str, states: &[(Task, Option<Ended>)]) -> Verdict {
    let mut tracker = Tracker::new(tag, false);
    tracker.replace(
        states
            .iter()
            .map(|(task, ended)| view(tag, *task, *ended))
            .collect(),
    );
    tracker.verdict()
}

fn view(tag: &str, task: Task, ended: Option<Ended>) -> PodView {
    let terminated = ended.map(|e| Exit {
        code: e.code(),
        reason: None,
        message: None,
    });
    let phase = match ended {
        None => Phase::Running,
        Some(Ended::Code(0)) => Phase::Succeeded,
        Some(_) => Phase::Failed,
    };
    PodView {
        name: task.name(tag),
        task: Some(task),
        phase,
        ready: (u32::from(ended.is_none()), 1),
        last_exit: terminated.clone(),
        terminated,
        started: true,
        setup: PodSetup {
            restart_never: true,
            ..PodSetup::default()
        },
        ..PodView::default()
    }
}

/// How a local run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The deciding task exited 0; `stopped` were still running and were stopped.
    Succeeded { deciding: Task, stopped: Vec<Task> },
    /// `task` failed (or, for a verdict without a task, `task` is None).
    Failed {
        task: Option<Task>,
        ended: Option<Ended>,
        stopped: Vec<Task>,
    },
    /// `--timeout` passed; `running` were stopped.
    TimedOut { after: Duration, running: Vec<Task> },
    /// SIGINT or SIGTERM: the exit code (130, 143).
    Interrupted(u8),
    /// A sweep's early stopping stopped it (the decision's line): done, not failed.
    StoppedEarly(String),
}

/// Writes what the deciding task printed of the training (`metrics::RunMetrics`, with
/// the verdict) as `metrics.json` in the run's output folder, for `compare --local`; a
/// run interrupted or that printed no metric writes none. A failed write is a note.
pub fn keep_metrics(dir: &std::path::Path, outcome: &Outcome, training: &Training, took: Duration) {
    let verdict = match outcome {
        Outcome::Succeeded { .. } => "Succeeded".to_string(),
        Outcome::Failed { task, ended, .. } => format!(
            "Failed: {} {}",
            task.map_or_else(|| "a task".to_string(), Task::id),
            ended.map_or_else(|| "failed".to_string(), |e| e.to_string())
        ),
        Outcome::TimedOut { after, .. } => format!(
            "Failed: timed out after {}",
            humantime::format_duration(*after)
        ),
        Outcome::StoppedEarly(line) => format!("{}: {line}", crate::metrics::early::STOPPED_EARLY),
        Outcome::Interrupted(_) => return,
    };
    let Some(mut metrics) = crate::metrics::RunMetrics::of(training, Some(took.as_secs()), 0)
    else {
        return;
    };
    metrics.verdict = Some(verdict);
    let path = dir.join(crate::metrics::METRICS_FILE);
    if let Err(e) = std::fs::write(&path, metrics.to_text()) {
        crate::output::note(&format!(
            "the metrics are not kept in {}: {e}",
            path.display()
        ));
    }
}

/// What the runner needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub timeout: Option<Duration>,
    /// The env file (`-e`), named when the environment cannot start a process.
    pub env_file: Option<String>,
    /// Colour the task prefixes.
    pub colour: bool,
    /// A sweep's view of its runs: the deciding task's training goes there (as
    /// `Seen::Training`) at each epoch's end.
    pub observer: Option<(String, crate::progress::Observer)>,
    /// A sweep's decision to stop the run early: its tasks stopped as after a verdict.
    pub early: Option<crate::progress::EarlyStop>,
}

/// Process groups started so far; the ones whose leader has not been reaped are killed
/// when this is dropped (an error, a panic, an early return).
struct Groups(Vec<(i32, Arc<AtomicBool>)>);

impl Groups {
    /// The tasks' main processes.
    fn leaders(&self) -> Vec<i32> {
        self.0.iter().map(|(pid, _)| *pid).collect()
    }

    fn signal(&self, at: usize, sig: Signal) {
        let (pgid, gone) = &self.0[at];
        if !gone.load(Ordering::SeqCst) {
            kill_group(*pgid, sig);
        }
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        for at in 0..self.0.len() {
            self.signal(at, Signal::KILL);
        }
        // What the tasks detached from their groups (see `reaper.rs`).
        reaper::kill_orphans(&self.leaders());
    }
}

/// The instant `d` from now (the constants here never pass the clock's range; if one
/// did, the wait would end at once instead of panicking).
fn in_(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d).unwrap_or(now)
}

fn kill_group(pgid: i32, sig: Signal) {
    if pgid > 1
        && let Some(pid) = Pid::from_raw(pgid)
    {
        // The group may be gone already: nothing to do then.
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// Starts every task, prints their output, and returns when the run has an outcome and
/// every process has been stopped; with the outcome, what the deciding task's lines said
/// of the training (`trainlog`).
pub async fn run(
    plan: &LocalPlan,
    options: &RunOptions,
    stop: &mut (impl Future<Output = u8> + Unpin),
) -> Result<(Outcome, Training)> {
    let (tx, rx) = mpsc::channel::<Event>(LINES_IN_FLIGHT);
    // Orphans of the tasks become ours, to be stopped with the run (see `reaper.rs`).
    reaper::become_subreaper();
    let groups = start(plan, &tx, options.env_file.as_deref())?;
    drop(tx);
    let has_chief = plan.tasks.iter().any(|t| t.task.role == Role::Chief);
    let deciding = Task::deciding(has_chief);
    let mut runner = Runner {
        plan,
        deciding: plan.tasks.iter().position(|t| t.task == deciding),
        training: Training::default(),
        timeout: options.timeout,
        // A timeout beyond the clock's range is no timeout.
        timeout_at: options.timeout.and_then(|t| Instant::now().checked_add(t)),
        printer: Printer::new(plan, options.colour),
        ended: vec![None; plan.tasks.len()],
        streams_open: plan.tasks.len().saturating_mul(2),
        outcome: None,
        stage: Stage::Running,
        groups,
        observer: options.observer.clone(),
        early: options.early.clone(),
    };
    runner.run(rx, stop).await;
    runner.printer.end_live();
    let Runner {
        outcome,
        groups,
        training,
        ..
    } = runner;
    drop(groups);
    Ok((outcome.expect("the loop ends with an outcome"), training))
}

/// Starts one process group per task; their output and exits arrive on `tx`.
fn start(plan: &LocalPlan, tx: &mpsc::Sender<Event>, env_file: Option<&str>) -> Result<Groups> {
    let mut groups = Groups(Vec::new());
    for (at, local) in plan.tasks.iter().enumerate() {
        let mut cmd = tokio::process::Command::new(&plan.program);
        cmd.args(&plan.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = &plan.cwd {
            cmd.current_dir(cwd);
        }
        for (name, value) in crate::roles::TASK_DEFAULTS {
            let set = std::env::var_os(name).is_some() || local.env.iter().any(|(k, _)| k == name);
            if !set {
                cmd.env(name, value);
            }
        }
        cmd.envs(local.env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd
            .spawn()
            .map_err(|e| start_error(plan, local, e, env_file))?;
        let pid = child.id().map_or(0, |p| p as i32);
        let gone = Arc::new(AtomicBool::new(false));
        groups.0.push((pid, gone.clone()));
        if let Some(out) = child.stdout.take() {
            tokio::spawn(stream::read(at, out, tx.clone()));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(stream::read(at, err, tx.clone()));
        }
        let tx = tx.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            gone.store(true, Ordering::SeqCst);
            // Whatever the task started dies with it, as in a container.
            kill_group(pid, Signal::KILL);
            if let Ok(status) = status {
                let _ = tx.send(Event::Exited(at, status)).await;
            }
        });
    }
    Ok(groups)
}

fn start_error(
    plan: &LocalPlan,
    local: &LocalTask,
    e: io::Error,
    env_file: Option<&str>,
) -> anyhow::Error {
    let env_path = env_file.and_then(|file| {
        let path = local.env.iter().find(|(k, _)| k == "PATH")?;
        Some((file, &path.1))
    });
    if e.kind() == io::ErrorKind::NotFound {
        let why = match env_path {
            Some((file, path)) => format!(" in PATH={path:?}, which the env file {file} sets"),
            None if plan.program == "bash" => String::new(),
            None => " (choose the interpreter with --python)".to_string(),
        };
        return UsageError::new(format!("cannot run {}: not found{why}", plan.program)).into();
    }
    let reason = crate::files::io_reason(&e);
    if e.raw_os_error() == Some(7) {
        // E2BIG: the environment (and arguments) passed the kernel's limit.
        let bytes = local.env.iter().fold(0usize, |n, (k, v)| {
            n.saturating_add(k.len())
                .saturating_add(v.len())
                .saturating_add(2)
        });
        let blame = env_file.map_or_else(String::new, |file| {
            let (key, value) = local
                .env
                .iter()
                .max_by_key(|(_, v)| v.len())
                .map_or(("", 0), |(k, v)| (k.as_str(), v.len()));
            format!(" set from the env file {file} (its largest value: {key}, {value} bytes)")
        });
        return UsageError::new(format!(
            "cannot start {} for {}: {reason}: the environment of {bytes} bytes{blame} is more than a process may get; pass large values in a file",
            plan.program,
            local.task.id()
        ))
        .into();
    }
    anyhow::Error::new(e).context(format!("starting {} for {}", plan.program, local.task.id()))
}

/// Where a local run is.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// No outcome yet: until the verdict, `--timeout`, or a signal.
    Running,
    /// The outcome is known; the tasks left got SIGTERM and have until `kill_at`.
    Stopping { kill_at: Instant },
    /// SIGKILL was sent, or every process ended: the output has until `give_up_at`
    /// to drain.
    Draining { give_up_at: Instant },
}

/// The state of a local run while it is followed.
struct Runner<'a> {
    plan: &'a LocalPlan,
    /// The deciding task's place in the plan, and what its lines say of the training.
    deciding: Option<usize>,
    training: Training,
    timeout: Option<Duration>,
    timeout_at: Option<Instant>,
    printer: Printer,
    ended: Vec<Option<Ended>>,
    streams_open: usize,
    outcome: Option<Outcome>,
    stage: Stage,
    groups: Groups,
    observer: Option<(String, crate::progress::Observer)>,
    early: Option<crate::progress::EarlyStop>,
}

impl Runner<'_> {
    /// Handles events until every process has ended and its output is read (or until
    /// patience runs out).
    async fn run(
        &mut self,
        mut rx: mpsc::Receiver<Event>,
        stop: &mut (impl Future<Output = u8> + Unpin),
    ) {
        // After `stop` fired: a second request, which skips what is left of the grace.
        let mut stop_fired = false;
        let mut early = self.early.take();
        let mut again: Pin<Box<dyn Future<Output = u8>>> = Box::pin(std::future::pending());
        while !self.done() {
            let deadline = self.deadline();
            let sleep = async {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = rx.recv() => self.event(event),
                () = sleep => {
                    if self.deadline_passed() {
                        return;
                    }
                }
                code = &mut *stop, if !stop_fired => {
                    stop_fired = true;
                    again = Box::pin(signals::stop_requested());
                    if self.outcome.is_none() {
                        let left = running(self.plan, &self.ended);
                        self.printer.note(&format!("interrupted; stopping {}", ids(&left)));
                        self.decided(Outcome::Interrupted(code));
                    } else {
                        self.kill_now();
                    }
                }
                _ = &mut again => {
                    again = Box::pin(std::future::pending());
                    self.kill_now();
                }
                line = crate::progress::stopped_early(&mut early), if self.outcome.is_none() => {
                    let left = running(self.plan, &self.ended);
                    self.printer.note(&format!("stopped early; stopping {}", ids(&left)));
                    self.decided(Outcome::StoppedEarly(line));
                }
            }
        }
    }

    /// Whether the run is over; moves to draining once every process has ended.
    fn done(&mut self) -> bool {
        if !self.ended.iter().all(Option::is_some) {
            return false;
        }
        if self.outcome.is_none() {
            // Every process ended without a verdict: cannot happen with the rule (the
            // deciding task's end decides), but never hang.
            self.decided(Outcome::Failed {
                task: None,
                ended: None,
                stopped: Vec::new(),
            });
        }
        match self.stage {
            _ if self.streams_open == 0 => true,
            Stage::Draining { give_up_at } => Instant::now() >= give_up_at,
            Stage::Running | Stage::Stopping { .. } => {
                // Output may be held open by a process that left its group: stop it (it
                // is ours once its parent ended), and wait a little.
                reaper::kill_orphans(&self.groups.leaders());
                self.stage = Stage::Draining {
                    give_up_at: in_(AFTER_KILL),
                };
                false
            }
        }
    }

    /// Before the outcome: the timeout; then SIGKILL time; then the end of patience.
    fn deadline(&self) -> Option<Instant> {
        match self.stage {
            Stage::Running => self.timeout_at,
            Stage::Stopping { kill_at } => Some(kill_at),
            Stage::Draining { give_up_at } => Some(give_up_at),
        }
    }

    /// The deadline of the stage passed; `true` when the run is to be left as it is.
    fn deadline_passed(&mut self) -> bool {
        match self.stage {
            Stage::Running => {
                let running = running(self.plan, &self.ended);
                let after = self.timeout.unwrap_or_default();
                self.printer.note(&format!(
                    "timed out after {}; stopping {}",
                    humantime::format_duration(after),
                    ids(&running)
                ));
                self.decided(Outcome::TimedOut { after, running });
                false
            }
            Stage::Stopping { .. } => {
                let left = running(self.plan, &self.ended);
                self.printer.note(&format!(
                    "{} still running {}s after SIGTERM: sending SIGKILL",
                    ids(&left),
                    GRACE.as_secs()
                ));
                self.signal_all(Signal::KILL);
                self.stage = Stage::Draining {
                    give_up_at: in_(AFTER_KILL),
                };
                false
            }
            Stage::Draining { .. } => true,
        }
    }

    fn event(&mut self, event: Option<Event>) {
        match event {
            Some(Event::Output(at, piece)) => {
                if let Piece::Line(line) = &piece
                    && Some(at) == self.deciding
                {
                    let now = k8s_openapi::jiff::Timestamp::now().as_millisecond();
                    let before = self.training.history.points.last().cloned();
                    self.training.read_line(now, line);
                    if self.training.history.points.last() != before.as_ref() {
                        self.observed();
                    }
                }
                self.printer.piece(at, &piece);
            }
            Some(Event::Closed) => self.streams_open = self.streams_open.saturating_sub(1),
            Some(Event::Exited(at, status)) => {
                self.ended[at] = Some(Ended::from_status(status));
                if self.outcome.is_none() {
                    let states: Vec<(Task, Option<Ended>)> = self
                        .plan
                        .tasks
                        .iter()
                        .zip(&self.ended)
                        .map(|(t, e)| (t.task, *e))
                        .collect();
                    if let Some(o) = decide(&self.plan.tag, &states) {
                        self.printer.note(&decision_note(&o));
                        self.decided(o);
                    }
                }
            }
            None => {
                self.streams_open = 0;
                for e in self.ended.iter_mut().filter(|e| e.is_none()) {
                    *e = Some(Ended::Code(-1));
                }
            }
        }
    }

    /// An epoch's end (or its metrics drawn again): the training to the sweep's view.
    fn observed(&self) {
        if let Some((tag, to)) = &self.observer {
            let _ = to.send(crate::progress::Seen::Training {
                tag: tag.clone(),
                training: Box::new(self.training.clone()),
            });
        }
    }

    /// The outcome is known: the tasks still running get SIGTERM and [`GRACE`].
    fn decided(&mut self, outcome: Outcome) {
        self.outcome = Some(outcome);
        for (at, _) in self.ended.iter().enumerate().filter(|(_, e)| e.is_none()) {
            self.groups.signal(at, Signal::TERM);
        }
        if let Stage::Running = self.stage {
            self.stage = Stage::Stopping {
                kill_at: in_(GRACE),
            };
        }
    }

    /// Asked to stop while stopping: no more grace.
    fn kill_now(&mut self) {
        self.signal_all(Signal::KILL);
        if !matches!(self.stage, Stage::Draining { .. }) {
            self.stage = Stage::Draining {
                give_up_at: in_(AFTER_KILL),
            };
        }
    }

    fn signal_all(&self, sig: Signal) {
        for at in 0..self.groups.0.len() {
            self.groups.signal(at, sig);
        }
    }
}

/// The outcome once the verdict is final, with the tasks that are still running.
fn decide(tag: &str, states: &[(Task, Option<Ended>)]) -> Option<Outcome> {
    let still: Vec<Task> = states
        .iter()
        .filter(|(_, e)| e.is_none())
        .map(|(t, _)| *t)
        .collect();
    match verdict(tag, states) {
        Verdict::Succeeded => {
            let deciding = Task::deciding(states.iter().any(|(t, _)| t.role == Role::Chief));
            Some(Outcome::Succeeded {
                deciding,
                stopped: still,
            })
        }
        Verdict::Failed(failure) => Some(failed(&failure, states, still)),
        _ => None,
    }
}

fn failed(failure: &Failure, states: &[(Task, Option<Ended>)], stopped: Vec<Task>) -> Outcome {
    let ended = failure
        .task
        .and_then(|t| states.iter().find(|(s, _)| *s == t))
        .and_then(|(_, e)| *e)
        .or(match &failure.kind {
            FailureKind::Exited { code: Some(c), .. } => Some(Ended::Code(*c)),
            _ => None,
        });
    Outcome::Failed {
        task: failure.task,
        ended,
        stopped,
    }
}

fn decision_note(outcome: &Outcome) -> String {
    let stopping = |tasks: &[Task]| {
        if tasks.is_empty() {
            String::new()
        } else {
            format!("; stopping {}", ids(tasks))
        }
    };
    match outcome {
        Outcome::Succeeded { deciding, stopped } => {
            format!("{} exited 0: Succeeded{}", deciding.id(), stopping(stopped))
        }
        Outcome::Failed {
            task,
            ended,
            stopped,
        } => format!(
            "{} {}: Failed{}",
            task.map_or_else(|| "a task".to_string(), Task::id),
            ended.map_or_else(|| "failed".to_string(), |e| e.to_string()),
            stopping(stopped)
        ),
        Outcome::TimedOut { .. } | Outcome::Interrupted(_) | Outcome::StoppedEarly(_) => {
            String::new()
        }
    }
}

fn running(plan: &LocalPlan, ended: &[Option<Ended>]) -> Vec<Task> {
    plan.tasks
        .iter()
        .zip(ended)
        .filter(|(_, e)| e.is_none())
        .map(|(t, _)| t.task)
        .collect()
}

/// `worker-0, ps-1`, or `no task` for none.
pub fn ids(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        "no task".to_string()
    } else {
        tasks.iter().map(|t| t.id()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::setup::{LocalTask, SCRIPT_DIR_VAR, free_ports, tasks};
    use super::*;
    use crate::plan::{SpawnRequest, Templates};
    use crate::roles::Roles;

    fn request(roles: Roles) -> SpawnRequest {
        SpawnRequest {
            tag: "t".into(),
            namespace: "ns".into(),
            port: 1999,
            image: None,
            roles,
            templates: Templates {
                worker: Default::default(),
                by_role: BTreeMap::new(),
            },
            script: b"print(1)\n".to_vec(),
            entrypoint: None,
            script_args: Vec::new(),
            bundle: None,
            env: [("A".to_string(), "1".to_string())].into(),
            invocation: "0".into(),
            scheduling: Default::default(),
            volume: None,
            resources: Default::default(),
            hardening: Default::default(),
            experiment: None,
        }
    }

    fn worker(index: u32) -> Task {
        Task {
            role: Role::Worker,
            index,
        }
    }

    #[test]
    fn free_ports_are_distinct() {
        let ports = free_ports(5).unwrap();
        let mut sorted = ports.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 5);
        assert!(ports.iter().all(|p| *p > 0));
    }

    #[test]
    fn tasks_share_the_cluster_and_the_evaluator_is_outside() {
        let roles = Roles::new(None, true, 1, 2, true).unwrap();
        let req = request(roles);
        let tasks = tasks(&req, &[1001, 1002, 1003, 1004], Path::new("/tmp/d"));
        let ids: Vec<String> = tasks.iter().map(|t| t.task.id()).collect();
        assert_eq!(
            ids,
            ["chief-0", "ps-0", "worker-0", "worker-1", "evaluator-0"]
        );
        assert_eq!(tasks[0].address.as_deref(), Some("127.0.0.1:1001"));
        assert_eq!(tasks[4].address, None);
        let env =
            |t: &LocalTask, k: &str| t.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let w1 = &tasks[3];
        assert_eq!(
            env(w1, "TF_CONFIG").unwrap(),
            r#"{"cluster":{"chief":["127.0.0.1:1001"],"ps":["127.0.0.1:1002"],"worker":["127.0.0.1:1003","127.0.0.1:1004"]},"task":{"type":"worker","index":1}}"#
        );
        assert_eq!(env(w1, "WORKER_NUMBER").as_deref(), Some("1"));
        assert_eq!(env(&tasks[0], "WORKER_NUMBER"), None);
        assert_eq!(env(&tasks[4], "TOT_WORKERS").as_deref(), Some("2"));
        assert_eq!(env(&tasks[4], "A").as_deref(), Some("1"));
        assert_eq!(env(&tasks[4], SCRIPT_DIR_VAR).as_deref(), Some("/tmp/d"));
    }

    #[test]
    fn the_verdict_rule_is_the_cluster_one() {
        let ps = Task {
            role: Role::Ps,
            index: 0,
        };
        let chief = Task {
            role: Role::Chief,
            index: 0,
        };
        // Worker 0 decides without a chief.
        let s = [(worker(0), Some(Ended::Code(0))), (worker(1), None)];
        assert_eq!(
            decide("t", &s),
            Some(Outcome::Succeeded {
                deciding: worker(0),
                stopped: vec![worker(1)]
            })
        );
        assert_eq!(
            decide("t", &[(worker(0), None), (worker(1), Some(Ended::Code(0)))]),
            None
        );
        // Any failure fails the run, a signal too.
        let s = [(worker(0), None), (worker(1), Some(Ended::Signal(9)))];
        assert_eq!(
            decide("t", &s),
            Some(Outcome::Failed {
                task: Some(worker(1)),
                ended: Some(Ended::Signal(9)),
                stopped: vec![worker(0)]
            })
        );
        // The chief decides; parameter servers never end on their own.
        let s = [
            (chief, Some(Ended::Code(0))),
            (ps, None),
            (worker(0), Some(Ended::Code(0))),
        ];
        assert!(matches!(
            decide("t", &s),
            Some(Outcome::Succeeded { deciding, .. }) if deciding == chief
        ));
        assert_eq!(
            decide("t", &[(chief, None), (worker(0), Some(Ended::Code(0)))]),
            None
        );
        assert_eq!(
            Ended::Signal(15).to_string(),
            "was killed by signal 15 (SIGTERM)"
        );
        assert_eq!(Ended::Code(3).to_string(), "exited with code 3");
    }
}
