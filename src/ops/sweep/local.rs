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
use crate::metrics::early::{STOPPED_EARLY, StoppedEarly};
use crate::metrics::notice::ExperimentEnd;
use crate::metrics::winner::{Results, Winner};
use crate::metrics::{METRICS_FILE, SWEEP_RECORD_FILE};
use crate::ops::local_run::{self, LocalOptions, Ran, Which};
use crate::output;
use crate::plan::SpawnRequest;
use crate::plan::sweep::{ExperimentRecord, PlannedRun, Point};
use crate::signals;

use super::early::Early;
use super::propose::{How, Search};

/// A `--local` sweep.
pub(crate) struct LocalSweep {
    pub record: ExperimentRecord,
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
pub(crate) fn read(taking: &super::resume::Taking<'_>) -> Result<ExperimentRecord> {
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
    let stored: ExperimentRecord = serde_json::from_str(&text).map_err(|e| {
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
    let runs = match Search::of(&sweep.record) {
        Some(search) => search.runs(super::points(&sweep.record)),
        None => super::points(&sweep.record),
    };
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
    let kept = run_all(sweep, runs.clone(), ended_before(sweep, &runs)).await;
    let results = std::env::current_dir()
        .ok()
        .filter(|_| kept.interrupted.is_none())
        .and_then(|here| crate::ops::compare::local_runs(&here, std::slice::from_ref(name)).ok())
        .map(|runs| Results::judged(runs, sweep.record.objective.as_ref()))
        .unwrap_or_default();
    let result = ended(sweep, (runs.len(), &kept), results.best.as_ref());
    let told: Vec<(String, &str)> = runs
        .iter()
        .map(|(tag, _)| {
            let word = if kept.failed.contains(tag) {
                "Failed"
            } else if kept.stopped.contains(tag) {
                STOPPED_EARLY
            } else {
                "Succeeded"
            };
            (tag.clone(), word)
        })
        .collect();
    let end = ExperimentEnd {
        name,
        namespace: None,
        runs: &told,
        seconds: Some(began.elapsed().as_secs()),
        results,
    };
    crate::ops::notify::after_sweep(sweep.local.notify.as_ref(), end, &result).await;
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
        let taken = |v: &String| {
            v == "Succeeded" || v.starts_with("Failed") || v.starts_with(STOPPED_EARLY)
        };
        if let Some(verdict) = verdict.filter(taken) {
            let _ = output::print(&format!(
                "run {tag} (local): {verdict} (recorded; not run again)\n"
            ));
            ended.insert(tag.clone(), verdict);
        }
    }
    ended
}

/// Exit 0 when every run succeeded, 3 naming those that failed, or the interruption's.
fn ended(sweep: &LocalSweep, (total, kept): (usize, &Kept), best: Option<&Winner>) -> Result<()> {
    let (failed, interrupted) = (&kept.failed, kept.interrupted);
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
        let all = match kept.stopped.len() {
            0 => format!("all {total} runs succeeded"),
            k => format!(
                "all {total} runs done: {} succeeded, {k} stopped early",
                total.saturating_sub(k)
            ),
        };
        let _ = output::print(&format!("local experiment {name}: {all}{best_text}\n"));
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

/// What a local sweep keeps as its runs end: its record as written, the runs that
/// failed and those stopped early, and the interruption's exit code.
struct Kept {
    record: ExperimentRecord,
    failed: Vec<String>,
    stopped: Vec<String>,
    interrupted: Option<u8>,
}

impl Kept {
    /// The record with the verdicts of the runs that ended before (`--resume`).
    fn new(sweep: &LocalSweep, ended: BTreeMap<String, String>) -> Kept {
        let of = |early: bool| -> Vec<String> {
            ended
                .iter()
                .filter(|(_, v)| super::early::recorded_stop(v).is_some() == early)
                .filter(|(_, v)| early || v.starts_with("Failed"))
                .map(|(tag, _)| tag.clone())
                .collect()
        };
        let (failed, stopped) = (of(false), of(true));
        let mut record = sweep.record.clone();
        record.ended = ended;
        Kept {
            record,
            failed,
            stopped,
            interrupted: None,
        }
    }

    /// The record written again; a problem is a note naming `what` is not kept.
    fn write(&self, tag: &str, what: &str) -> bool {
        let written = serde_json::to_string_pretty(&self.record)
            .map_err(anyhow::Error::from)
            .and_then(|text| write(&record_path(&self.record.name), &text));
        if let Err(e) = &written {
            output::note(&format!("run {tag}: {what} is not kept: {e:#}"));
        }
        written.is_ok()
    }

    /// A run's end (`ops/local_run.rs` said it and told `--notify`): kept in the record
    /// and counted.
    async fn run_ended(&mut self, sweep: &LocalSweep, tag: String, ran: Result<Ran>) {
        match ran {
            Ok(Ran {
                interrupted: Some(code),
                ..
            }) => {
                self.interrupted.get_or_insert(code);
            }
            Ok(Ran { verdict, .. }) => {
                self.keep_verdict(&tag, &verdict);
                match &verdict {
                    Ok(()) => {}
                    Err(e) if e.downcast_ref::<StoppedEarly>().is_some() => self.stopped.push(tag),
                    Err(_) => self.failed.push(tag),
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
                self.keep_verdict(&tag, &told);
                output::note(&format!("run {tag}: {}", crate::errors::one_line(&e)));
                self.failed.push(tag);
            }
        }
    }

    /// A run's verdict kept in the experiment's record (`--resume` runs it no more).
    fn keep_verdict(&mut self, tag: &str, told: &Result<()>) {
        let code = |e: &anyhow::Error| crate::errors::exit_code(e);
        let verdict = match told {
            Ok(()) => "Succeeded".to_string(),
            Err(e) if e.downcast_ref::<StoppedEarly>().is_some() => {
                let line = e.downcast_ref::<StoppedEarly>();
                format!("{STOPPED_EARLY}: {}", line.map_or("", |l| l.0.as_str()))
            }
            Err(e) if code(e) == EXIT_TRAINING_FAILED || code(e) == crate::errors::EXIT_TIMEOUT => {
                format!("Failed: {}", crate::errors::one_line(e))
            }
            Err(_) => return,
        };
        self.record.ended.insert(tag.to_string(), verdict);
        self.write(tag, "its verdict");
    }

    /// Run `index`'s point proposed and kept in the record before the run starts; a
    /// record that cannot be written starts no run (it is counted failed).
    fn propose(&mut self, search: &mut Search, index: usize) -> Option<Point> {
        let (point, _, line) = search.propose(index);
        let tag = crate::plan::sweep::run_tag(&self.record.name, index);
        self.record.runs.push(PlannedRun {
            tag: tag.clone(),
            params: point.iter().cloned().collect(),
        });
        if !self.write(&tag, "its proposed point, so it was not started, and") {
            self.failed.push(tag);
            return None;
        }
        let _ = output::print(&format!("{line}\n"));
        Some(point)
    }

    /// A run's training seen: what early stopping reads of it kept in the record, then
    /// its decision (if any) carried out; a record that cannot be written stops nothing.
    fn judge(&mut self, early: &mut Early, seen: &crate::progress::Seen) {
        let crate::progress::Seen::Training { tag, training } = seen else {
            return;
        };
        let reading = early.read(tag, training);
        if reading.is_empty() {
            return;
        }
        let observed = self.record.observed.entry(tag.clone()).or_default();
        observed.extend(reading.observed.iter().copied());
        if let Some(decision) = &reading.decision {
            let verdict = early.verdict(decision);
            self.record.ended.insert(tag.clone(), verdict);
        }
        if self.write(tag, "what early stopping read")
            && let Some(decision) = &reading.decision
        {
            early.act(decision);
        }
    }
}

/// Every run, `parallel` at a time, judged by early stopping and its point proposed
/// (`--method tpe`) if the sweep has them; after Ctrl-C, none more.
async fn run_all(
    sweep: &LocalSweep,
    mut runs: Vec<(String, Point)>,
    ended: BTreeMap<String, String>,
) -> Kept {
    let mut kept = Kept::new(sweep, ended);
    let before: Vec<String> = kept.record.ended.keys().cloned().collect();
    let queue: Vec<usize> = (0..runs.len())
        .filter(|i| !before.contains(&runs[*i].0))
        .collect();
    let mut queue = queue.into_iter();
    let mut active = FuturesUnordered::new();
    let (tx, mut rx) = crate::progress::observer();
    let mut early = Early::of(&sweep.record);
    let mut search = Search::of(&kept.record);
    if let Some(early) = &early {
        let _ = output::print(&format!("{}\n", early.about()));
    }
    loop {
        while kept.interrupted.is_none() && active.len() < sweep.parallel {
            let Some(i) = queue.next() else { break };
            if let Some(search) = search.as_mut().filter(|s| s.unchosen(i)) {
                let Some(point) = kept.propose(search, i) else {
                    continue;
                };
                runs[i].1 = point;
            }
            let observer = (early.is_some() || search.is_some()).then(|| tx.clone());
            let options = options_of(sweep, &runs[i].0, observer, early.as_mut());
            active.push(one(sweep, runs[i].clone(), options));
        }
        tokio::select! {
            next = active.next() => {
                let Some((tag, ran)) = next else { break };
                while let Some(seen) = rx.try_recv() {
                    if let Some(search) = &mut search {
                        search.seen(&seen);
                    }
                }
                if let (Some(early), true) = (&mut early, trained_to_end(&ran)) {
                    early.ended(&tag);
                }
                let searched = how(&ran).zip(search.as_mut());
                if let Some(v) = searched.and_then(|(h, s)| s.ended(&tag, h, early.as_ref())) {
                    kept.record.values.insert(tag.clone(), v);
                }
                kept.run_ended(sweep, tag, ran).await;
            }
            Some(seen) = rx.recv() => {
                if let Some(early) = &mut early {
                    kept.judge(early, &seen);
                }
                if let Some(search) = &mut search {
                    search.seen(&seen);
                }
            }
        }
    }
    kept
}

/// Run `tag`'s options: the sweep's, its training told to `observer`, judged by
/// `early`.
fn options_of(
    sweep: &LocalSweep,
    tag: &str,
    observer: Option<crate::progress::Observer>,
    early: Option<&mut Early>,
) -> LocalOptions {
    let mut options = sweep.local.clone();
    options.run.observer = observer.map(|tx| (tag.to_string(), tx));
    if let Some(early) = early {
        options.run.early = Some(early.channel(tag, None));
    }
    options
}

/// How a run that ended is taken by the search; `None`: it did not end (interrupted).
fn how(ran: &Result<Ran>) -> Option<How> {
    match ran {
        Ok(Ran {
            interrupted: Some(_),
            ..
        }) => None,
        Ok(Ran {
            verdict: Ok(()), ..
        }) => Some(How::Succeeded),
        Ok(Ran {
            verdict: Err(e), ..
        }) if e.downcast_ref::<StoppedEarly>().is_some() => Some(How::StoppedEarly),
        _ => Some(How::Failed),
    }
}

/// Whether a run's training ran to its end (it succeeded, or a task failed): not timed
/// out, interrupted, stopped early or unable to start.
fn trained_to_end(ran: &Result<Ran>) -> bool {
    match ran {
        Ok(Ran {
            verdict,
            interrupted: None,
        }) => verdict.as_ref().map_or_else(
            |e| crate::errors::exit_code(e) == EXIT_TRAINING_FAILED,
            |()| true,
        ),
        _ => false,
    }
}

/// One local run (`ops/local_run.rs`), its parameters written in its folder; `local`:
/// the sweep's options with this run's early stopping.
async fn one(
    sweep: &LocalSweep,
    (tag, point): (String, Point),
    local: LocalOptions,
) -> (String, Result<Ran>) {
    let request = super::request(&sweep.base, &sweep.args, &tag, &point);
    let mut stop = Box::pin(signals::stop_requested());
    let which = Which::Swept(&point);
    let ran = local_run::run(&local, request, which, &mut stop).await;
    (tag, ran)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
