//! A `--local` sweep: each run as `tf-spawner --local` runs one (`local/`), one after
//! another unless `--parallel` says more. What `compare --local` reads: the
//! experiment's record in `tf-spawner-output/NAME/experiment.json`, and each run's
//! parameters in its own folder, `tf-spawner-output/NAME-K/params.json` (the JSON of the
//! `tf-spawner/params` annotation), beside what the run writes there.

use std::path::Path;

use anyhow::{Context, Result};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::errors::{EXIT_TRAINING_FAILED, ExitError, UsageError};
use crate::labels::{OUTPUT_DIR_VAR, local_output_dir};
use crate::local::{self, Outcome, RunOptions};
use crate::metrics::winner::{Results, Winner};
use crate::metrics::{PARAMS_FILE, SWEEP_RECORD_FILE};
use crate::output;
use crate::plan::SpawnRequest;
use crate::plan::sweep::{Point, Record, params_json, point_text};
use crate::signals;

/// A `--local` sweep.
pub(crate) struct LocalSweep {
    pub record: Record,
    pub base: SpawnRequest,
    pub args: Vec<String>,
    pub parallel: usize,
    pub python: String,
    pub options: RunOptions,
    /// `--notify`: each run's end and the experiment's.
    pub notify: Option<crate::metrics::notice::Target>,
}

/// Writes the record (refusing an experiment or run folder of the name), runs every
/// run; exit 0 when all succeeded, 3 naming those that failed.
pub(crate) async fn run(sweep: &LocalSweep) -> Result<()> {
    let name = &sweep.record.name;
    let runs = super::points(&sweep.record);
    let record = local_output_dir(name).join(SWEEP_RECORD_FILE);
    if record.exists() {
        return Err(UsageError::new(format!(
            "a local experiment '{name}' exists already ({}): pick another name with -t, or remove that folder",
            record.display()
        ))
        .into());
    }
    if let Some((tag, _)) = runs.iter().find(|(tag, _)| local_output_dir(tag).exists()) {
        return Err(UsageError::new(format!(
            "a local run '{tag}' exists already ({}): pick another name with -t, or remove that folder",
            local_output_dir(tag).display()
        ))
        .into());
    }
    write(&record, &serde_json::to_string_pretty(&sweep.record)?)?;
    let _ = output::print(&format!(
        "local experiment {name}: {} runs, {} at a time, files in {}\n",
        runs.len(),
        sweep.parallel,
        local_output_dir(name).display()
    ));
    let began = std::time::Instant::now();
    let (failed, interrupted) = run_all(sweep, &runs).await;
    let results = std::env::current_dir()
        .ok()
        .filter(|_| interrupted.is_none())
        .and_then(|here| crate::ops::compare::local_runs(&here, std::slice::from_ref(name)).ok())
        .map(Results::of)
        .unwrap_or_default();
    let result = ended(
        sweep,
        (runs.len(), &failed),
        interrupted,
        results.best.as_ref(),
    );
    let told: Vec<(String, &str)> = runs
        .iter()
        .map(|(tag, _)| {
            (
                tag.clone(),
                if failed.contains(tag) {
                    "Failed"
                } else {
                    "Succeeded"
                },
            )
        })
        .collect();
    let notify = sweep.notify.as_ref();
    let seconds = Some(began.elapsed().as_secs());
    crate::ops::notify::after_sweep(notify, (name, None), &told, &result, (seconds, results)).await;
    result
}

/// Exit 0 when every run succeeded, 3 naming those that failed, or the interruption's.
fn ended(
    sweep: &LocalSweep,
    (total, failed): (usize, &[String]),
    interrupted: Option<u8>,
    best: Option<&Winner>,
) -> Result<()> {
    let name = &sweep.record.name;
    let best_text = best.map_or_else(String::new, |b| format!("; best {}", b.line()));
    if let Some(code) = interrupted {
        return Err(ExitError::new(
            code,
            format!("interrupted; local experiment '{name}' was stopped"),
        )
        .into());
    }
    if failed.is_empty() {
        let _ = output::print(&format!(
            "local experiment {name}: all {total} runs succeeded{best_text}\n"
        ));
        return Ok(());
    }
    if let Some(best) = best {
        let _ = output::print(&format!("local experiment {name}: best {}\n", best.line()));
    }
    Err(ExitError::new(
        EXIT_TRAINING_FAILED,
        format!(
            "local experiment '{name}': {} of {} runs failed: {}",
            failed.len(),
            total,
            failed.join(", ")
        ),
    )
    .into())
}

/// Every run, `parallel` at a time; after Ctrl-C, none more. The runs that failed, and
/// the interruption's exit code.
async fn run_all(sweep: &LocalSweep, runs: &[(String, Point)]) -> (Vec<String>, Option<u8>) {
    let mut queue = runs.iter();
    let mut active = FuturesUnordered::new();
    let (mut failed, mut interrupted) = (Vec::new(), None);
    loop {
        while interrupted.is_none() && active.len() < sweep.parallel {
            let Some(run) = queue.next() else { break };
            active.push(one(sweep, run));
        }
        let Some((tag, ended)) = active.next().await else {
            break;
        };
        let (outcome, trained) = match ended {
            Ok((outcome, trained)) => (Ok(outcome), trained),
            Err(e) => (Err(e), None),
        };
        let told = told(&tag, &outcome);
        crate::ops::notify::after_local(sweep.notify.as_ref(), &tag, &told).await;
        match outcome {
            Ok(Outcome::Succeeded { .. }) => {
                let _ = output::print(&format!("run {tag} (local): Succeeded\n"));
                if let Some(line) = trained {
                    let _ = output::print(&format!("{line}\n"));
                }
            }
            Ok(Outcome::Interrupted(code)) => {
                interrupted.get_or_insert(code);
            }
            Ok(_) => failed.push(tag),
            Err(e) => {
                output::note(&format!("run {tag}: {}", crate::errors::one_line(&e)));
                failed.push(tag);
            }
        }
    }
    (failed, interrupted)
}

/// A run's outcome as `--notify` tells it: the error a `--local` run of its own ends with.
fn told(tag: &str, outcome: &Result<Outcome>) -> Result<()> {
    let (code, why) = match outcome {
        Ok(Outcome::Succeeded { .. }) => return Ok(()),
        Ok(Outcome::Interrupted(code)) => (*code, "interrupted".to_string()),
        Ok(Outcome::Failed { task, ended, .. }) => (
            EXIT_TRAINING_FAILED,
            format!(
                "{} {}",
                task.map_or_else(|| "a task".to_string(), crate::roles::Task::id),
                ended.map_or_else(|| "failed".to_string(), |e| e.to_string())
            ),
        ),
        Ok(Outcome::TimedOut { .. }) => (crate::errors::EXIT_TIMEOUT, "timed out".to_string()),
        Err(e) => (EXIT_TRAINING_FAILED, crate::errors::one_line(e)),
    };
    Err(ExitError::new(code, format!("local run '{tag}' failed: {why}")).into())
}

/// One local run, its parameters written in its folder first and what it printed of the
/// training kept there at its end (`metrics.json`, which `compare --local` reads), as a
/// `--local` run of its own keeps it; the training's line said under the run's verdict.
async fn one(
    sweep: &LocalSweep,
    (tag, point): &(String, Point),
) -> (String, Result<(Outcome, Option<String>)>) {
    let outcome = async {
        let mut request = super::request(&sweep.base, &sweep.args, (tag, point));
        let dir = std::path::absolute(local_output_dir(tag))?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| UsageError::new(format!("cannot create {}: {e}", dir.display())))?;
        write(&dir.join(PARAMS_FILE), &params_json(point))?;
        request
            .env
            .insert(OUTPUT_DIR_VAR.to_string(), dir.display().to_string());
        if let Some(experiment) = &request.experiment {
            request.env.extend(experiment.variables());
        }
        let plan = local::plan(&request, &sweep.python)?;
        let _ = output::print(&format!(
            "local run {tag} ({}): files in {}\n",
            point_text(point),
            dir.display()
        ));
        let mut stop = Box::pin(signals::stop_requested());
        let began = std::time::Instant::now();
        let (outcome, training) = local::run(&plan, &sweep.options, &mut stop).await?;
        local::keep_metrics(&dir, &outcome, &training, began.elapsed());
        Ok((outcome, crate::trainlog::show::report(&training)))
    };
    (tag.clone(), outcome.await)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
