//! How a local run ends: how a task's process ended ([`Ended`]), the cluster's verdict
//! rule applied to the processes ([`verdict`]), the run's [`Outcome`] and the line that
//! announces it, and the metrics kept for `compare --local`.

use std::process::ExitStatus;
use std::time::Duration;

use rustix::process::Signal;

use crate::roles::{Role, Task};
use crate::trainlog::Training;
use crate::verdict::{Exit, Failure, FailureKind, Phase, PodSetup, PodView, Tracker, Verdict};

/// How a task's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

impl Ended {
    pub(super) fn from_status(status: ExitStatus) -> Ended {
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

/// The outcome once the verdict is final, with the tasks that are still running.
pub(super) fn decide(tag: &str, states: &[(Task, Option<Ended>)]) -> Option<Outcome> {
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

pub(super) fn decision_note(outcome: &Outcome) -> String {
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

/// `worker-0, ps-1`, or `no task` for none.
pub fn ids(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        "no task".to_string()
    } else {
        tasks.iter().map(|t| t.id()).collect::<Vec<_>>().join(", ")
    }
}
