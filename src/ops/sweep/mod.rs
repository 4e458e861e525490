//! `tf-spawner sweep`: an experiment's runs, each an ordinary spawn (`ops/spawn.rs`)
//! followed by an ordinary wait (`ops/wait/`, `--restarts` and all), so many at a
//! time, on the one thread: the next starts when one ends. The experiment's record
//! (`cluster/experiment.rs`) is made before the first run; `--resume` follows the runs
//! that exist and starts only the others. `local.rs`: the same on this machine.

pub(crate) mod definition;
pub(crate) mod local;
pub(crate) mod resume;
mod view;

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::cluster::{Cluster, experiment};
use crate::errors::{self, EXIT_TAG_TAKEN, EXIT_TRAINING_FAILED, ExitError};
use crate::metrics::winner::Results;
use crate::output;
use crate::plan::sweep::{Point, Record, point_text};
use crate::plan::{self, ExperimentRun, SpawnRequest};
use crate::signals;

use super::spawn::QuotaShort;
use super::wait::Wait;

/// A sweep to run on the cluster.
pub(crate) struct Sweep {
    pub record: Record,
    /// The first run's request: the others differ in tag, arguments, parameters.
    pub base: SpawnRequest,
    /// The script's arguments with their placeholders.
    pub args: Vec<String>,
    /// `--parallel` (and where it was given), else (`None`) as many as the quota
    /// holds, [`DEFAULT_PARALLEL`] without a quota.
    pub parallel: Option<(u32, &'static str)>,
    /// `--queue` or `--gang`: every run submitted, the queue decides.
    pub queued: bool,
    /// Each run's wait (its tag set per run).
    pub wait: Wait,
    pub max_in_flight: usize,
    /// `--resume`: the record exists; runs that exist are followed, not created.
    pub resume: bool,
    /// The command that takes the experiment up (this one, with `--resume NAME`).
    pub hint: String,
}

/// Runs at a time when neither `--parallel`, a queue nor a quota bounds them: Katib's
/// default of 3 parallel trials, rounded up so that a 2×2 grid (two parameters of two
/// values, the smallest grid of two) runs at once; a 100-sample search on a shared
/// cluster holds at most 4 runs' pods, not 100.
pub(crate) const DEFAULT_PARALLEL: u32 = 4;

/// How long a run refused for want of quota is tried again (the quota controller counts
/// a finished run's pods out a moment after they end).
const QUOTA_PATIENCE: Duration = Duration::from_secs(120);
const QUOTA_RETRY: Duration = Duration::from_secs(2);

/// Run `index`'s request: the base with its tag, arguments and parameters.
pub(crate) fn request(
    sweep_base: &SpawnRequest,
    args: &[String],
    run: (&str, &Point),
) -> SpawnRequest {
    let (tag, point) = run;
    let mut req = sweep_base.clone();
    req.tag = tag.to_string();
    req.script_args = plan::sweep::fill(args, point);
    req.invocation = crate::inputs::invocation_id();
    req.experiment = Some(ExperimentRun {
        name: req
            .experiment
            .as_ref()
            .map_or_else(String::new, |e| e.name.clone()),
        params: point.clone(),
    });
    req
}

/// The record's runs as points, in the parameters' order.
pub(crate) fn points(record: &Record) -> Vec<(String, Point)> {
    record
        .runs
        .iter()
        .map(|run| {
            let point = record
                .params
                .iter()
                .filter_map(|p| Some((p.name.clone(), run.params.get(&p.name)?.clone())))
                .collect();
            (run.tag.clone(), point)
        })
        .collect()
}

/// Makes the experiment (unless resumed), starts and follows its runs; exit 0 when
/// every run succeeded, 3 naming those that failed.
pub(crate) async fn run(cluster: &Cluster, sweep: &Sweep) -> Result<()> {
    let runs = points(&sweep.record);
    let existing: BTreeSet<String> = experiment::run_tags(cluster).await?.into_iter().collect();
    let (name, ns) = (&sweep.record.name, cluster.namespace());
    if !sweep.resume
        && let Some((tag, _)) = runs.iter().find(|(tag, _)| existing.contains(tag))
    {
        return Err(ExitError::new(EXIT_TAG_TAKEN, format!(
            "run '{tag}' exists already in namespace '{ns}': the sweep's runs are {name}-1 … {name}-{}; pick another name with -t, or delete it (tf-spawner -d -t {tag} -n {ns}); nothing was created",
            runs.len()
        ))
        .into());
    }
    let mut started: BTreeSet<String> = runs
        .iter()
        .filter(|(tag, _)| existing.contains(tag))
        .map(|(tag, _)| tag.clone())
        .collect();
    // Runs whose verdict the record holds and whose objects are gone: never again.
    let recorded: Vec<(usize, Ended)> = runs
        .iter()
        .enumerate()
        .filter(|(_, (tag, _))| !started.contains(tag))
        .filter_map(|(i, (tag, _))| Some((i, Ended::recorded(sweep.record.ended.get(tag)?))))
        .collect();
    started.extend(recorded.iter().map(|(i, _)| runs[*i].0.clone()));
    // On --resume, the runs still under way hold their share of the quota; those that
    // ended hold none.
    let running = if started.is_empty() {
        0
    } else {
        experiment::unfinished_runs(cluster, name)
            .await?
            .intersection(&started)
            .count()
    };
    let at_a_time = at_a_time(cluster, sweep, &runs, running).await?;
    if !sweep.resume
        && let Some(first) = begin(cluster, sweep, runs.first()).await?
    {
        started.insert(first);
    }
    let begun = Begun { started, recorded };
    follow_all(cluster, sweep, &runs, begun, at_a_time).await
}

/// A new experiment: its record, then its first run alone. A first run refused (Pod
/// Security, a quota's rule, an admission webhook: what every run would meet) takes the
/// record back with it, and the sweep ends with the spawn's one line, nothing created.
async fn begin(
    cluster: &Cluster,
    sweep: &Sweep,
    first: Option<&(String, Point)>,
) -> Result<Option<String>> {
    let (name, ns) = (&sweep.record.name, cluster.namespace());
    let Some(uid) = experiment::create(cluster, &sweep.record).await? else {
        return Err(ExitError::new(EXIT_TAG_TAKEN, format!(
            "experiment '{name}' exists already in namespace '{ns}': take it up with {}, or pick another name with -t; nothing was created",
            sweep.hint
        ))
        .into());
    };
    let Some((tag, point)) = first else {
        return Ok(None);
    };
    let _ = output::print(&format!("run {tag} ({}): starting\n", point_text(point)));
    let created = plan::build(&request(&sweep.base, &sweep.args, (tag, point)));
    let created = match created {
        Ok(plan) => super::spawn::create(cluster, &plan, sweep.max_in_flight).await,
        Err(e) => Err(e.into()),
    };
    if let Err(e) = created {
        if let Err(left) = experiment::remove(cluster, name, &uid).await {
            output::warning(&format!(
                "the experiment's record {} is left: {left:#}",
                crate::labels::experiment_record_name(name)
            ));
        }
        return Err(e);
    }
    Ok(Some(tag.clone()))
}

/// Runs at a time: `--parallel`, all with a queue, else what the quota holds (said in
/// one line); a quota with no room for one run is refused before anything is created.
async fn at_a_time(
    cluster: &Cluster,
    sweep: &Sweep,
    runs: &[(String, Point)],
    running: usize,
) -> Result<usize> {
    let total = runs.len();
    let plural = |n: usize| if n == 1 { "run" } else { "runs" };
    let (n, why) = if let Some((n, from)) = sweep.parallel {
        (n as usize, from.to_string())
    } else if sweep.queued {
        (total, "the queue decides which run".to_string())
    } else {
        let first = runs
            .iter()
            .find(|_| true)
            .map(|(tag, point)| plan::build(&request(&sweep.base, &sweep.args, (tag, point))));
        let room = match first {
            Some(plan) => super::spawn::room(cluster, &plan?).await?,
            None => None,
        };
        match room {
            Some((0, why)) if running == 0 => {
                return Err(anyhow::anyhow!(
                    "the namespace's quota leaves room for no run now: {why}; nothing was created"
                ));
            }
            Some((n, why)) if running > 0 => (
                (n as usize).saturating_add(running),
                format!("{running} still running, and {why}"),
            ),
            Some((n, why)) => (n as usize, why),
            None => (
                DEFAULT_PARALLEL as usize,
                format!(
                    "no quota bounds the runs, so at most {DEFAULT_PARALLEL} (--parallel N for another bound)"
                ),
            ),
        }
    };
    let n = n.clamp(1, total.max(1));
    let _ = output::print(&format!(
        "experiment {}: {total} {}, {n} at a time: {why}\n",
        sweep.record.name,
        plural(total)
    ));
    Ok(n)
}

/// How a run ended, for the sweep's verdict.
enum Ended {
    Succeeded,
    Failed(String),
    /// Left running at a signal (its exit code).
    Interrupted(u8),
    /// Not created: a signal came while it waited for quota.
    NotCreated(u8),
    /// Not started: the experiment's record was deleted (`-d --experiment` elsewhere).
    Deleted,
}

impl Ended {
    /// A verdict the record holds (`Succeeded`, `Failed: …`).
    fn recorded(verdict: &str) -> Ended {
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

    /// The verdict the record keeps, for a run that ended.
    fn to_record(&self) -> Option<String> {
        match self {
            Ended::Succeeded => Some("Succeeded".to_string()),
            Ended::Failed(why) => Some(format!("Failed: {why}")),
            _ => None,
        }
    }
}

/// Why the sweep starts no more runs.
#[derive(Clone, Copy)]
enum Halt {
    /// Ctrl-C (its exit code).
    Signal(u8),
    /// The experiment was deleted while it ran.
    Deleted,
}

/// The refusal to create a run of an experiment whose record is gone.
#[derive(Debug)]
struct RecordGone;

impl std::fmt::Display for RecordGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the experiment was deleted")
    }
}

impl std::error::Error for RecordGone {}

/// The runs of a sweep as it begins to follow them.
struct Begun {
    /// Those that exist, or whose verdict the record holds.
    started: BTreeSet<String>,
    /// Those whose verdict the record holds and whose objects are gone.
    recorded: Vec<(usize, Ended)>,
}

/// The runs to follow or start, each with whether it exists: those that exist first
/// (followed), then the others in order (created); none that ended.
fn order(
    runs: &[(String, Point)],
    started: &BTreeSet<String>,
    ended: &[(usize, Ended)],
) -> Vec<(usize, bool)> {
    let mut queue: Vec<(usize, bool)> = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !ended.iter().any(|(e, _)| e == i))
        .map(|(i, (tag, _))| (i, started.contains(tag)))
        .collect();
    queue.sort_by_key(|(i, exists)| (!exists, *i));
    queue
}

/// Starts runs up to `at_a_time`, follows each, starts the next when one ends; on
/// Ctrl-C starts nothing more, lets the runs' own waits end, and says how to resume.
async fn follow_all(
    cluster: &Cluster,
    sweep: &Sweep,
    runs: &[(String, Point)],
    begun: Begun,
    at_a_time: usize,
) -> Result<()> {
    let mut stop = signals::Stop::listen();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut view = view::View::new(&sweep.record.name, runs);
    let mut ended: Vec<(usize, Ended)> = Vec::new();
    for (i, end) in begun.recorded {
        let text = format!("{} (recorded; not started again)", end_text(&end));
        view.ended(&runs[i].0, end_state(&end), &text);
        ended.push((i, end));
    }
    let mut queue = order(runs, &begun.started, &ended).into_iter();
    let mut active = FuturesUnordered::new();
    let mut stopping: Option<Halt> = None;
    loop {
        while stopping.is_none() && active.len() < at_a_time {
            let Some((i, exists)) = queue.next() else {
                break;
            };
            let mut wait = sweep.wait.clone();
            wait.tag = runs[i].0.clone();
            // `--timeout` bounds each run from its start.
            wait.started = std::time::Instant::now();
            wait.observer = Some(tx.clone());
            view.starting(i);
            active.push(one_run(cluster, sweep, &runs[i], exists, wait, i));
        }
        if active.is_empty() {
            break;
        }
        tokio::select! {
            Some((i, end)) = active.next() => {
                // What the run's wait told before it ended (its last lines, read after
                // the verdict) is shown before its end.
                while let Ok(seen) = rx.try_recv() {
                    view.seen(seen);
                }
                match end {
                    Ended::Interrupted(code) | Ended::NotCreated(code) => { stopping.get_or_insert(Halt::Signal(code)); }
                    Ended::Deleted => { stopping.get_or_insert(Halt::Deleted); }
                    _ => {}
                }
                view.ended(&runs[i].0, end_state(&end), &end_text(&end));
                ended.push((i, end));
            }
            Some(seen) = rx.recv() => view.seen(seen),
            code = stop.requested() => { stopping.get_or_insert(Halt::Signal(code)); }
        }
    }
    drop(view);
    conclude(cluster, sweep, runs, &ended, stopping).await
}

/// The sweep's verdict, the best run named (in the last line, or in a line before the
/// error when runs failed) and the experiment's notice.
async fn conclude(
    cluster: &Cluster,
    sweep: &Sweep,
    runs: &[(String, Point)],
    ended: &[(usize, Ended)],
    stopping: Option<Halt>,
) -> Result<()> {
    // Ctrl-C or the record deleted: no notice, no winner to name.
    let results = match stopping {
        Some(_) => Results::default(),
        None => results(cluster, &sweep.record.name).await,
    };
    let best = results.best.as_ref();
    let best_text = best.map_or_else(String::new, |b| format!("; best {}", b.line()));
    let result = verdict(sweep, runs, ended, stopping, &best_text);
    if let (Err(_), None, Some(best)) = (&result, stopping, best) {
        let name = &sweep.record.name;
        let _ = output::print(&format!("experiment {name}: best {}\n", best.line()));
    }
    notify_end(sweep, runs, ended, &result, results).await;
    result
}

/// The best run and what the runs held, from their records (one list); nothing when
/// they cannot be read.
async fn results(cluster: &Cluster, name: &str) -> Results {
    match super::compare::runs(cluster, &[name.to_string()]).await {
        Ok(runs) => Results::of(runs),
        Err(_) => Results::default(),
    }
}

/// `--notify`'s notice at the experiment's end: each run's verdict in a word, the
/// sweep's time, the best run and what the runs held.
async fn notify_end(
    sweep: &Sweep,
    runs: &[(String, Point)],
    ended: &[(usize, Ended)],
    result: &Result<()>,
    results: Results,
) {
    let told: Vec<(String, &str)> = ended
        .iter()
        .map(|(i, e)| (runs[*i].0.clone(), end_state(e)))
        .collect();
    let experiment = (
        sweep.record.name.as_str(),
        Some(sweep.base.namespace.as_str()),
    );
    let seconds = Some(sweep.wait.started.elapsed().as_secs());
    let target = sweep.wait.notify.as_ref();
    super::notify::after_sweep(target, experiment, &told, result, (seconds, results)).await;
}

fn end_state(end: &Ended) -> &'static str {
    match end {
        Ended::Succeeded => "Succeeded",
        Ended::Failed(_) => "Failed",
        Ended::Interrupted(_) => "interrupted",
        Ended::NotCreated(_) => "not started",
        Ended::Deleted => "not started",
    }
}

fn end_text(end: &Ended) -> String {
    match end {
        Ended::Succeeded => "Succeeded".into(),
        Ended::Failed(why) => format!("Failed: {why}"),
        Ended::Interrupted(_) => "left as it is (interrupted)".into(),
        Ended::NotCreated(_) => "not started (interrupted)".into(),
        Ended::Deleted => "not started: the experiment was deleted".into(),
    }
}

/// One run: created (unless it exists; refused for want of quota, tried again a while),
/// then followed to its end.
async fn one_run(
    cluster: &Cluster,
    sweep: &Sweep,
    (tag, point): &(String, Point),
    exists: bool,
    wait: Wait,
    index: usize,
) -> (usize, Ended) {
    if !exists {
        let _ = output::print(&format!("run {tag} ({}): starting\n", point_text(point)));
        let created = create(cluster, sweep, (tag, point)).await;
        if let Err(e) = created {
            return match ended_by(&e) {
                Ended::Interrupted(code) => (index, Ended::NotCreated(code)),
                other => (index, other),
            };
        }
    }
    let end = match super::wait::run(cluster, &wait).await {
        Ok(()) => Ended::Succeeded,
        Err(e) => ended_by(&e),
    };
    if let Some(verdict) = end.to_record()
        && let Err(e) = experiment::record_ended(cluster, &sweep.record.name, tag, &verdict).await
    {
        output::note(&format!("run {tag}: {}", errors::one_line(&e)));
    }
    (index, end)
}

fn ended_by(e: &anyhow::Error) -> Ended {
    let code = errors::exit_code(e);
    if e.downcast_ref::<RecordGone>().is_some() {
        Ended::Deleted
    } else if code == errors::EXIT_INTERRUPTED || code == errors::EXIT_TERMINATED {
        Ended::Interrupted(code)
    } else {
        Ended::Failed(errors::one_line(e))
    }
}

/// Creates a run as a spawn does; a refusal for want of quota is tried again while
/// the sweep's other runs end.
async fn create(cluster: &Cluster, sweep: &Sweep, run: (&str, &Point)) -> Result<()> {
    let plan = plan::build(&request(&sweep.base, &sweep.args, run))?;
    // Deleted meanwhile (`-d --experiment`): no run of it starts again.
    if experiment::read(cluster, &sweep.record.name)
        .await?
        .is_none()
    {
        return Err(RecordGone.into());
    }
    let since = std::time::Instant::now();
    let mut stop = signals::Stop::listen();
    loop {
        match super::spawn::create(cluster, &plan, sweep.max_in_flight).await {
            Err(e)
                if e.downcast_ref::<QuotaShort>().is_some() && since.elapsed() < QUOTA_PATIENCE =>
            {
                tokio::select! {
                    () = tokio::time::sleep(QUOTA_RETRY) => {}
                    code = stop.requested() => {
                        return Err(ExitError::new(code, "interrupted before the run was created").into());
                    }
                }
            }
            result => return result,
        }
    }
}

/// The last line of a sweep whose runs all succeeded, naming the best (`best_text`).
fn all_succeeded(name: &str, ns: &str, runs: usize, best_text: &str) {
    let all = match runs {
        1 => "its one run".to_string(),
        n => format!("all {n} runs"),
    };
    let _ = output::print(&format!(
        "experiment {name}: {all} succeeded{best_text} (compare them: tf-spawner compare {name} -n {ns})\n"
    ));
}

/// Exit 0 when every run succeeded (the last line naming the best, `best_text`); 3
/// naming the failed; on Ctrl-C its code and how to take the experiment up again.
fn verdict(
    sweep: &Sweep,
    runs: &[(String, Point)],
    ended: &[(usize, Ended)],
    stopping: Option<Halt>,
    best_text: &str,
) -> Result<()> {
    let name = &sweep.record.name;
    let ns = &sweep.base.namespace;
    let count = |of: fn(&Ended) -> bool| ended.iter().filter(|(_, e)| of(e)).count();
    let succeeded = count(|e| matches!(e, Ended::Succeeded));
    let failed: Vec<&str> = ended
        .iter()
        .filter(|(_, e)| matches!(e, Ended::Failed(_)))
        .map(|(i, _)| runs[*i].0.as_str())
        .collect();
    let left = runs.len().saturating_sub(succeeded + failed.len());
    if let Some(Halt::Deleted) = stopping {
        return Err(anyhow::anyhow!(
            "experiment '{name}' was deleted while the sweep ran (its record {} is gone): {succeeded} succeeded, {} failed, the other {left} runs never started or were deleted",
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
                "interrupted; experiment '{name}' was left as it is ({succeeded} succeeded, {} failed, {running} left running, {} not started); take it up with: {}",
                failed.len(),
                left.saturating_sub(running),
                sweep.hint
            ),
        )
        .into());
    }
    if failed.is_empty() {
        all_succeeded(name, ns, runs.len(), best_text);
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
