//! `tf-spawner sweep`: an experiment's runs, each an ordinary spawn (`ops/spawn.rs`)
//! followed by an ordinary wait (`ops/wait/`, `--restarts` and all), so many at a
//! time, on the one thread: the next starts when one ends. The experiment's record
//! (`cluster/experiment.rs`) is made before the first run; `--resume` follows the runs
//! that exist and starts only the others. `local.rs`: the same on this machine.

mod attached;
pub(crate) mod definition;
pub(crate) mod detach;
pub(crate) mod early;
mod ending;
mod judges;
pub(crate) mod local;
pub(crate) mod propose;
pub(crate) mod resume;
mod view;

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use futures::future::{FutureExt, LocalBoxFuture};
use futures::stream::FuturesUnordered;
use futures::{StreamExt, future};

use crate::cluster::{Cluster, experiment};
use crate::errors::{EXIT_TAG_TAKEN, ExitError};
use crate::metrics::notice::ExperimentEnd;
use crate::metrics::winner::Results;
use crate::output;
use crate::plan::sweep::{ExperimentRecord, Point, point_text};
use crate::plan::{self, ExperimentRun, SpawnRequest};
use crate::signals;

use early::Early;
use ending::{Ended, Halt, RecordGone, end_state, end_text, ended_by, results, verdict};
use judges::{Judges, record_end};
use propose::Search;

use super::spawn::QuotaShort;
use super::wait::Wait;

/// A sweep to run on the cluster.
pub(crate) struct Sweep {
    pub record: ExperimentRecord,
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
    /// `--detach`: the experiment handed to a supervisor once its first run is made.
    pub detach: Option<detach::Detach>,
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

/// Run `tag`'s request: the base with its tag, arguments and parameters (`point`).
pub(crate) fn request(
    sweep_base: &SpawnRequest,
    args: &[String],
    tag: &str,
    point: &Point,
) -> SpawnRequest {
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
pub(crate) fn points(record: &ExperimentRecord) -> Vec<(String, Point)> {
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
    let runs = match Search::of(&sweep.record) {
        Some(search) => search.runs(points(&sweep.record)),
        None => points(&sweep.record),
    };
    let (name, ns) = (&sweep.record.name, cluster.namespace());
    // Taken up while another sweeper has it: shown, nothing done (`attached.rs`).
    if sweep.resume
        && sweep.detach.is_none()
        && let Some(holder) = detach::live_holder(cluster, name).await?
    {
        return attached::follow(cluster, (name, &sweep.hint), &runs, holder).await;
    }
    let existing: BTreeSet<String> = experiment::run_tags(cluster).await?.into_iter().collect();
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
    if let Some(detach) = &sweep.detach {
        return detach::hand_over(cluster, (name, sweep.resume), detach).await;
    }
    let begun = Begun { started, recorded };
    held(cluster, sweep, runs, begun, at_a_time).await
}

/// [`follow_all`] while this sweep has the experiment (`detach.rs`: one sweeper at a
/// time), letting go at its end.
async fn held(
    cluster: &Cluster,
    sweep: &Sweep,
    runs: Vec<(String, Point)>,
    begun: Begun,
    at_a_time: usize,
) -> Result<()> {
    let name = &sweep.record.name;
    let (mut lease, me) = match detach::hold(cluster, name).await? {
        detach::Hold::Ours(lease, me) => (lease, me),
        detach::Hold::Gone => {
            return Err(anyhow::anyhow!(
                "experiment '{name}' was deleted (its record {} is gone); nothing was started",
                crate::labels::experiment_record_name(name)
            ));
        }
        detach::Hold::Held(holder) => {
            let at = (name.as_str(), sweep.hint.as_str());
            return attached::follow(cluster, at, &runs, holder).await;
        }
    };
    let result = tokio::select! {
        result = follow_all(cluster, sweep, runs, begun, at_a_time) => result,
        holder = lease.lost() => Err(anyhow::anyhow!(
            "experiment '{name}' was taken over by {} while this sweep did not check in for {}s (a machine asleep, a network cut); this sweep acts on nothing more",
            holder.who, crate::cluster::follower::HOLD.as_secs()
        )),
    };
    drop(lease);
    detach::release(cluster, name, &me, &result).await;
    result
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
    let created = plan::build(&request(&sweep.base, &sweep.args, tag, point));
    let created = match created {
        Ok(mut plan) => {
            // `--detach`: its supervisor made with it, and taken back with it.
            plan.supervisor = sweep
                .detach
                .as_ref()
                .map(|d| d.objects(name, ns, &plan.invocation));
            super::spawn::create(cluster, &plan, sweep.max_in_flight).await
        }
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
            .map(|(tag, point)| plan::build(&request(&sweep.base, &sweep.args, tag, point)));
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

/// The runs under way, each to its end.
type Active<'a> = FuturesUnordered<LocalBoxFuture<'a, (usize, Ended)>>;

/// Starts runs up to `at_a_time`, follows each, starts the next when one ends (its
/// point proposed then, `--method tpe`); on Ctrl-C starts nothing more, lets the runs'
/// own waits end, and says how to resume.
async fn follow_all(
    cluster: &Cluster,
    sweep: &Sweep,
    mut runs: Vec<(String, Point)>,
    begun: Begun,
    at_a_time: usize,
) -> Result<()> {
    let mut stop = signals::Stop::listen();
    let (tx, mut rx) = crate::progress::observer();
    let mut view = view::View::new(&sweep.record.name, &runs);
    let mut ended = recorded(&mut view, &runs, begun.recorded);
    let mut queue = order(&runs, &begun.started, &ended).into_iter();
    let mut active: Active<'_> = FuturesUnordered::new();
    let mut stopping: Option<Halt> = None;
    let mut judges = Judges::of(&sweep.record);
    loop {
        while stopping.is_none() && active.len() < at_a_time {
            let Some((i, exists)) = queue.next() else {
                break;
            };
            let at = (cluster, sweep.record.name.as_str());
            if let Err(end) = judges
                .point_for(at, &mut runs, &mut view, (i, exists))
                .await
            {
                active.push(future::ready((i, end)).boxed_local());
                continue;
            }
            let wait = wait_of(sweep, &runs[i].0, &tx, judges.early.as_mut());
            view.starting(i);
            active.push(one_run(cluster, sweep, runs[i].clone(), exists, wait, i).boxed_local());
        }
        if active.is_empty() {
            break;
        }
        tokio::select! {
            Some((i, end)) = active.next() => {
                // What the run's wait told before it ended (its last lines, read after
                // the verdict) is shown before its end.
                while let Some(seen) = rx.try_recv() {
                    judges.saw(&seen);
                    view.seen(seen);
                }
                stopping = stopping.or(end.halts());
                record_end(cluster, &sweep.record.name, &runs[i].0, &end, &mut judges).await;
                view.ended(&runs[i].0, end_state(&end), &end_text(&end));
                ended.push((i, end));
            }
            Some(seen) = rx.recv() => {
                judges.judge(cluster, &sweep.record.name, &seen).await;
                view.seen(seen);
            }
            code = stop.requested() => { stopping.get_or_insert(Halt::Signal(code)); }
        }
    }
    drop(view);
    conclude(cluster, sweep, &runs, &ended, stopping).await
}

/// The runs whose verdict the record holds, each said once.
fn recorded(
    view: &mut view::View,
    runs: &[(String, Point)],
    recorded: Vec<(usize, Ended)>,
) -> Vec<(usize, Ended)> {
    for (i, end) in &recorded {
        let text = format!("{} (recorded; not started again)", end_text(end));
        view.ended(&runs[*i].0, end_state(end), &text);
    }
    recorded
}

/// Run `tag`'s wait: the sweep's, `--timeout` counted from now, its progress to the
/// sweep's view (`observer`), told early stopping's decision (one the record holds
/// already, on `--resume`, at once).
fn wait_of(
    sweep: &Sweep,
    tag: &str,
    observer: &crate::progress::Observer,
    early: Option<&mut Early>,
) -> Wait {
    let mut wait = sweep.wait.clone();
    wait.tag = tag.to_string();
    wait.started = std::time::Instant::now();
    wait.observer = Some(observer.clone());
    if let Some(early) = early {
        let recorded = sweep.record.ended.get(tag);
        let decided = recorded.and_then(|v| early::recorded_stop(v));
        wait.early = Some(early.channel(tag, decided));
    }
    wait
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
        None => results(cluster, &sweep.record).await,
    };
    let best = results.best.as_ref();
    let best_text = best.map_or_else(String::new, |b| format!("; best {}", b.line()));
    let names = (
        sweep.record.name.as_str(),
        sweep.base.namespace.as_str(),
        sweep.hint.as_str(),
    );
    let result = verdict(names, runs, ended, stopping, &best_text);
    if let (Err(_), None, Some(best)) = (&result, stopping, best) {
        let name = &sweep.record.name;
        let _ = output::print(&format!("experiment {name}: best {}\n", best.line()));
    }
    notify_end(sweep, runs, ended, &result, results).await;
    result
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
    let end = ExperimentEnd {
        name: &sweep.record.name,
        namespace: Some(&sweep.base.namespace),
        runs: &told,
        seconds: Some(sweep.wait.started.elapsed().as_secs()),
        results,
    };
    super::notify::after_sweep(sweep.wait.notify.as_ref(), end, result).await;
}

async fn one_run(
    cluster: &Cluster,
    sweep: &Sweep,
    (tag, point): (String, Point),
    exists: bool,
    wait: Wait,
    index: usize,
) -> (usize, Ended) {
    if !exists {
        let _ = output::print(&format!("run {tag} ({}): starting\n", point_text(&point)));
        let created = create(cluster, sweep, &tag, &point).await;
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
    (index, end)
}

/// Creates a run as a spawn does; a refusal for want of quota is tried again while
/// the sweep's other runs end.
async fn create(cluster: &Cluster, sweep: &Sweep, tag: &str, point: &Point) -> Result<()> {
    let plan = plan::build(&request(&sweep.base, &sweep.args, tag, point))?;
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
