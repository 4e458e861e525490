//! A `--local` sweep: each run as `tf-spawner --local` runs one (`ops/local_run.rs`), one
//! after another unless `--parallel` says more. What `compare --local` reads: the
//! experiment's record in `tf-spawner-output/NAME/experiment.json`, and each run's
//! parameters in its own folder, `tf-spawner-output/NAME-K/params.json` (the JSON of the
//! `tf-spawner/params` annotation), beside what the run writes there.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::errors::{EXIT_TAG_TAKEN, EXIT_TRAINING_FAILED, ExitError, UsageError};
use crate::labels::local_output_dir;
use crate::metrics::winner::{Results, Winner};
use crate::metrics::{METRICS_FILE, SWEEP_RECORD_FILE};
use crate::ops::local_run::{self, LocalOptions, Ran, Which};
use crate::output;
use crate::plan::SpawnRequest;
use crate::plan::sweep::{Point, Record};
use crate::signals;

/// A `--local` sweep.
pub(crate) struct LocalSweep {
    pub record: Record,
    pub base: SpawnRequest,
    pub args: Vec<String>,
    pub parallel: usize,
    /// How each run is run; its `notify` (`--notify`) is told each run's end and the
    /// experiment's.
    pub local: LocalOptions,
    /// `--resume`: the record exists (taken up, `read`); the runs that ended are not run
    /// again, the others are (their processes ended with the sweep).
    pub resume: bool,
    /// The command that takes the experiment up (this one, with `--resume NAME`).
    pub hint: String,
}

/// The largest local record read.
const MAX_RECORD_BYTES: u64 = 64 * 1024 * 1024;

/// `--resume NAME --local`: the record in `tf-spawner-output/NAME/`, taken up as the
/// cluster's is (data only, vetted: `resume.rs`).
pub(crate) fn read(taking: &super::resume::Taking<'_>) -> Result<Record> {
    let name = &taking.definition.name;
    let path = record_path(name);
    let mut text = String::new();
    match std::fs::File::open(&path) {
        Ok(file) => file
            .take(MAX_RECORD_BYTES)
            .read_to_string(&mut text)
            .with_context(|| format!("cannot read {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(UsageError::new(format!(
                "no local experiment '{name}' here (no {}): run it from the directory it was started in, or leave --resume out to start it",
                path.display()
            ))
            .into());
        }
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    };
    let stored: Record = serde_json::from_str(&text).map_err(|e| {
        UsageError::new(format!(
            "{} is not a local experiment's record ({e})",
            path.display()
        ))
    })?;
    let place = super::resume::Place {
        what: path.display().to_string(),
        remove: format!("rm -r {}", local_output_dir(name).display()),
    };
    super::resume::take_up(stored, taking, &place)
}

fn record_path(name: &str) -> PathBuf {
    local_output_dir(name).join(SWEEP_RECORD_FILE)
}

/// Writes the record (refusing an experiment or run folder of the name), runs every
/// run; exit 0 when all succeeded, 3 naming those that failed.
pub(crate) async fn run(sweep: &LocalSweep) -> Result<()> {
    let name = &sweep.record.name;
    let runs = super::points(&sweep.record);
    let record = record_path(name);
    if !sweep.resume {
        refuse_taken(sweep, &runs)?;
        write(&record, &serde_json::to_string_pretty(&sweep.record)?)?;
    }
    let _ = output::print(&format!(
        "local experiment {name}: {} runs, {} at a time, files in {}\n",
        runs.len(),
        sweep.parallel,
        local_output_dir(name).display()
    ));
    let began = std::time::Instant::now();
    let mut before = ended_before(sweep, &runs);
    let (failed, interrupted) = run_all(sweep, &runs, &mut before).await;
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
    let notify = sweep.local.notify.as_ref();
    let seconds = Some(began.elapsed().as_secs());
    crate::ops::notify::after_sweep(notify, (name, None), &told, &result, (seconds, results)).await;
    result
}

/// A new local experiment: neither its folder nor a run's may exist (exit 7, a name
/// taken).
fn refuse_taken(sweep: &LocalSweep, runs: &[(String, Point)]) -> Result<()> {
    let name = &sweep.record.name;
    let record = record_path(name);
    let taken = if record.exists() {
        Some(format!(
            "a local experiment '{name}' exists already ({}): take it up with {}, or pick another name with -t",
            record.display(),
            sweep.hint
        ))
    } else {
        runs.iter()
            .find(|(tag, _)| local_output_dir(tag).exists())
            .map(|(tag, _)| {
                format!(
                    "a local run '{tag}' exists already ({}): pick another name with -t, or remove that folder",
                    local_output_dir(tag).display()
                )
            })
    };
    match taken {
        Some(line) => Err(ExitError::new(EXIT_TAG_TAKEN, line).into()),
        None => Ok(()),
    }
}

/// The verdicts of the runs that ended before (`--resume`): the record's, else the one
/// kept in the run's folder (`metrics.json`); each said in a line.
fn ended_before(sweep: &LocalSweep, runs: &[(String, Point)]) -> BTreeMap<String, String> {
    let mut ended = BTreeMap::new();
    if !sweep.resume {
        return ended;
    }
    for (tag, _) in runs {
        let kept = || {
            let text = std::fs::read_to_string(local_output_dir(tag).join(METRICS_FILE)).ok()?;
            crate::metrics::RunMetrics::parse(&text)?.verdict
        };
        let verdict = sweep.record.ended.get(tag).cloned().or_else(kept);
        if let Some(verdict) = verdict.filter(|v| v == "Succeeded" || v.starts_with("Failed")) {
            let _ = output::print(&format!(
                "run {tag} (local): {verdict} (recorded; not run again)\n"
            ));
            ended.insert(tag.clone(), verdict);
        }
    }
    ended
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
            format!(
                "interrupted; local experiment '{name}' was stopped; take it up with: {}",
                sweep.hint
            ),
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
async fn run_all(
    sweep: &LocalSweep,
    runs: &[(String, Point)],
    ended: &mut BTreeMap<String, String>,
) -> (Vec<String>, Option<u8>) {
    let mut failed: Vec<String> = ended
        .iter()
        .filter(|(_, v)| *v != "Succeeded")
        .map(|(tag, _)| tag.clone())
        .collect();
    let before: Vec<String> = ended.keys().cloned().collect();
    let mut queue = runs.iter().filter(|(tag, _)| !before.contains(tag));
    let mut active = FuturesUnordered::new();
    let mut interrupted = None;
    loop {
        while interrupted.is_none() && active.len() < sweep.parallel {
            let Some(run) = queue.next() else { break };
            active.push(one(sweep, run));
        }
        let Some((tag, ran)) = active.next().await else {
            break;
        };
        match ran {
            Ok(Ran {
                interrupted: Some(code),
                ..
            }) => {
                interrupted.get_or_insert(code);
            }
            Ok(Ran { verdict, .. }) => {
                keep_verdict(sweep, ended, &tag, &verdict);
                if verdict.is_err() {
                    failed.push(tag);
                }
            }
            Err(e) => {
                // A run that could not start is a failed run, told and kept as one.
                let told = Err(ExitError::new(
                    EXIT_TRAINING_FAILED,
                    format!("local run '{tag}' failed: {}", crate::errors::one_line(&e)),
                )
                .into());
                crate::ops::notify::after_local(sweep.local.notify.as_ref(), &tag, &told).await;
                keep_verdict(sweep, ended, &tag, &told);
                output::note(&format!("run {tag}: {}", crate::errors::one_line(&e)));
                failed.push(tag);
            }
        }
    }
    (failed, interrupted)
}

/// A run's verdict kept in the experiment's record (`--resume` runs it no more); a
/// problem is a note.
fn keep_verdict(
    sweep: &LocalSweep,
    ended: &mut BTreeMap<String, String>,
    tag: &str,
    told: &Result<()>,
) {
    let verdict = match told {
        Ok(()) => "Succeeded".to_string(),
        Err(e)
            if crate::errors::exit_code(e) == EXIT_TRAINING_FAILED
                || crate::errors::exit_code(e) == crate::errors::EXIT_TIMEOUT =>
        {
            format!("Failed: {}", crate::errors::one_line(e))
        }
        Err(_) => return,
    };
    ended.insert(tag.to_string(), verdict);
    let mut record = sweep.record.clone();
    record.ended = ended.clone();
    let written = serde_json::to_string_pretty(&record)
        .map_err(anyhow::Error::from)
        .and_then(|text| write(&record_path(&record.name), &text));
    if let Err(e) = written {
        output::note(&format!("run {tag}: its verdict is not kept: {e:#}"));
    }
}

/// One local run (`ops/local_run.rs`), its parameters written in its folder.
async fn one(sweep: &LocalSweep, (tag, point): &(String, Point)) -> (String, Result<Ran>) {
    let request = super::request(&sweep.base, &sweep.args, (tag, point));
    let mut stop = Box::pin(signals::stop_requested());
    let which = Which::Swept(point);
    let ran = local_run::run(&sweep.local, request, which, &mut stop).await;
    (tag.clone(), ran)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
