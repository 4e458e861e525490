//! How a sweep's runs ended, and the sweep's verdict from them: exit 0 when every run
//! is done (succeeded, or stopped early by its early stopping), 3 naming those that
//! failed; on Ctrl-C its code and how to take the experiment up again.

use anyhow::Result;

use crate::cluster::Cluster;
use crate::errors::{self, EXIT_TRAINING_FAILED, ExitError};
use crate::metrics::early::STOPPED_EARLY;
use crate::metrics::winner::Results;
use crate::output;
use crate::plan::sweep::{ExperimentRecord, Point};

/// How a run ended, for the sweep's verdict.
pub(super) enum Ended {
    Succeeded,
    Failed(String),
    /// Left running at a signal (its exit code).
    Interrupted(u8),
    /// Not created: a signal came while it waited for quota.
    NotCreated(u8),
    /// Not started: the experiment's record was deleted (`-d --experiment` elsewhere).
    Deleted,
    /// Stopped by the sweep's early stopping (the decision's line): done, not failed.
    StoppedEarly(String),
}

impl Ended {
    /// A verdict the record holds (`Succeeded`, `Failed: …`).
    pub(super) fn recorded(verdict: &str) -> Ended {
        if let Some(line) = super::early::recorded_stop(verdict) {
            return Ended::StoppedEarly(line.to_string());
        }
        match verdict {
            "Succeeded" => Ended::Succeeded,
            failed => Ended::Failed(
                failed
                    .strip_prefix("Failed: ")
                    .unwrap_or(failed)
                    .to_string(),
            ),
        }
    }

    /// Why the sweep starts no more runs after this end, if it is one that says so.
    pub(super) fn halts(&self) -> Option<Halt> {
        match self {
            Ended::Interrupted(code) | Ended::NotCreated(code) => Some(Halt::Signal(*code)),
            Ended::Deleted => Some(Halt::Deleted),
            _ => None,
        }
    }

    /// The verdict the record keeps, for a run that ended.
    pub(super) fn to_record(&self) -> Option<String> {
        match self {
            Ended::Succeeded => Some("Succeeded".to_string()),
            Ended::Failed(why) => Some(format!("Failed: {why}")),
            Ended::StoppedEarly(line) => Some(format!("{STOPPED_EARLY}: {line}")),
            _ => None,
        }
    }
}

/// The refusal to create a run of an experiment whose record is gone.
#[derive(Debug)]
pub(super) struct RecordGone;

impl std::fmt::Display for RecordGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the experiment was deleted")
    }
}

impl std::error::Error for RecordGone {}

/// Why the sweep starts no more runs.
#[derive(Clone, Copy)]
pub(super) enum Halt {
    /// Ctrl-C (its exit code).
    Signal(u8),
    /// The experiment was deleted while it ran.
    Deleted,
}

pub(super) fn end_state(end: &Ended) -> &'static str {
    match end {
        Ended::Succeeded => "Succeeded",
        Ended::Failed(_) => "Failed",
        Ended::Interrupted(_) => "interrupted",
        Ended::NotCreated(_) => "not started",
        Ended::Deleted => "not started",
        Ended::StoppedEarly(_) => STOPPED_EARLY,
    }
}

pub(super) fn end_text(end: &Ended) -> String {
    match end {
        Ended::Succeeded => "Succeeded".into(),
        Ended::Failed(why) => format!("Failed: {why}"),
        Ended::Interrupted(_) => "left as it is (interrupted)".into(),
        Ended::NotCreated(_) => "not started (interrupted)".into(),
        Ended::Deleted => "not started: the experiment was deleted".into(),
        Ended::StoppedEarly(_) => {
            "stopped early (done; its pods stopped, kept with their logs)".into()
        }
    }
}

/// One run: created (unless it exists; refused for want of quota, tried again a while),
/// then followed to its end.
pub(super) fn ended_by(e: &anyhow::Error) -> Ended {
    let code = errors::exit_code(e);
    if let Some(early) = e.downcast_ref::<crate::metrics::early::StoppedEarly>() {
        Ended::StoppedEarly(early.0.clone())
    } else if e.downcast_ref::<RecordGone>().is_some() {
        Ended::Deleted
    } else if code == errors::EXIT_INTERRUPTED || code == errors::EXIT_TERMINATED {
        Ended::Interrupted(code)
    } else {
        Ended::Failed(errors::one_line(e))
    }
}

/// The last line of a sweep whose runs all succeeded, naming the best (`best_text`).
fn all_succeeded(name: &str, ns: &str, (runs, stopped): (usize, usize), best_text: &str) {
    let all = match (runs, stopped) {
        (1, 0) => "its one run succeeded".to_string(),
        (n, 0) => format!("all {n} runs succeeded"),
        (n, k) => format!("all {n} runs done: {}", done_text(n.saturating_sub(k), k)),
    };
    let _ = output::print(&format!(
        "experiment {name}: {all}{best_text} (compare them: tf-spawner compare {name} -n {ns})\n"
    ));
}

/// `2 succeeded`, `2 succeeded, 1 stopped early`.
fn done_text(succeeded: usize, stopped: usize) -> String {
    match stopped {
        0 => format!("{succeeded} succeeded"),
        k => format!("{succeeded} succeeded, {k} stopped early"),
    }
}

/// Exit 0 when every run is done (the last line naming the best, `best_text`); 3
/// naming the failed; on Ctrl-C its code and how to take the experiment up again
/// (`hint`).
pub(super) fn verdict(
    (name, ns, hint): (&str, &str, &str),
    runs: &[(String, Point)],
    ended: &[(usize, Ended)],
    stopping: Option<Halt>,
    best_text: &str,
) -> Result<()> {
    let count = |of: fn(&Ended) -> bool| ended.iter().filter(|(_, e)| of(e)).count();
    let succeeded = count(|e| matches!(e, Ended::Succeeded));
    let failed: Vec<&str> = ended
        .iter()
        .filter(|(_, e)| matches!(e, Ended::Failed(_)))
        .map(|(i, _)| runs[*i].0.as_str())
        .collect();
    let stopped = count(|e| matches!(e, Ended::StoppedEarly(_)));
    let done = done_text(succeeded, stopped);
    let left = runs
        .len()
        .saturating_sub(succeeded + failed.len() + stopped);
    if let Some(Halt::Deleted) = stopping {
        return Err(anyhow::anyhow!(
            "experiment '{name}' was deleted while the sweep ran (its record {} is gone): {done}, {} failed, the other {left} runs never started or were deleted",
            crate::labels::experiment_record_name(name),
            failed.len()
        ));
    }
    if let Some(Halt::Signal(code)) = stopping {
        // The runs under way when the signal came end as interrupted (left running); the
        // rest were never taken from the queue.
        let running = count(|e| matches!(e, Ended::Interrupted(_)));
        return Err(ExitError::new(
            code,
            format!(
                "interrupted; experiment '{name}' was left as it is ({done}, {} failed, {running} left running, {} not started); take it up with: {hint}",
                failed.len(),
                left.saturating_sub(running),
            ),
        )
        .into());
    }
    if failed.is_empty() {
        all_succeeded(name, ns, (runs.len(), stopped), best_text);
        return Ok(());
    }
    Err(ExitError::new(
        EXIT_TRAINING_FAILED,
        format!(
            "experiment '{name}': {} of {} runs failed: {} (see: tf-spawner status {} -n {ns})",
            failed.len(),
            runs.len(),
            failed.join(", "),
            failed[0]
        ),
    )
    .into())
}

/// The best run and what the runs held, from their records (one list); nothing when
/// they cannot be read.
pub(super) async fn results(cluster: &Cluster, record: &ExperimentRecord) -> Results {
    match crate::ops::compare::runs(cluster, std::slice::from_ref(&record.name)).await {
        Ok(runs) => Results::judged(runs, record.objective.as_ref()),
        Err(_) => Results::default(),
    }
}
