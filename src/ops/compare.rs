//! The runs' metrics: kept in each run's record at its verdict and at each restart
//! (`wait`), or on the next `status` of a run nobody followed; read back for `compare`
//! from the records alone (one paged list of the runs' ConfigMaps' metadata, whatever
//! the number of runs), or from the output folders of `--local` runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::record::{self, Ending, Record};
use crate::cluster::{Cluster, experiment};
use crate::labels::{
    EXPERIMENT_LABEL, HELPER_LABEL, LOCAL_OUTPUT_ROOT, RUN_LABEL, label_value_problem, run_selector,
};
use crate::metrics::cost;
use crate::metrics::early::{Objective, STOPPED_EARLY};
use crate::metrics::table::Compared;
use crate::metrics::{METRICS_FILE, PARAMS_FILE, RunMetrics, SWEEP_RECORD_FILE, params};
use crate::output;
use crate::trainlog::Training;
use crate::verdict::{PodView, Tracker, Verdict};

/// The metrics of the attempt `tracker` followed (`training`: what its deciding task
/// printed), after those of the attempts before a restart (`earlier`), with what the run
/// held up to now (`metrics/cost.rs`).
pub fn run_metrics(
    tracker: &Tracker,
    training: &Training,
    earlier: Option<&RunMetrics>,
    all_workers: bool,
) -> Option<RunMetrics> {
    let secs = crate::verdict::timing::of_run(tracker, all_workers).map(|t| t.seconds());
    let now = RunMetrics::of(training, secs, tracker.attempt());
    let mut metrics = match (earlier, now) {
        (Some(e), Some(n)) => e.then(&n),
        (e, n) => n.or_else(|| e.cloned()).unwrap_or_default(),
    };
    metrics.restarts = tracker.attempt();
    let before = earlier.and_then(|e| e.cost);
    let cost = cost::of_views(
        before.as_ref(),
        tracker.live(),
        crate::duration::now(),
        false,
    );
    metrics.cost = (cost.total != cost::Held::default() || before.is_some()).then_some(cost);
    (metrics != RunMetrics::default()).then_some(metrics)
}

/// At a restart: the metrics so far in the run's record (a problem is a note), their
/// cost counted up to now (the next attempt's count starts there).
pub async fn record_restart(cluster: &Cluster, tag: &str, metrics: Option<&mut RunMetrics>) {
    let Some(metrics) = metrics else { return };
    if let Some(cost) = &mut metrics.cost {
        cost.until = Some(crate::duration::now());
    }
    if let Err(e) = record::write_metrics(cluster, tag, metrics).await {
        output::note(&format!(
            "the metrics are not recorded on the run's ConfigMap: {e:#}"
        ));
    }
}

/// `status` of a run whose verdict is final and whose record has no metrics (nobody
/// followed it to its end): its deciding task's log read whole, once, and the metrics
/// (with the verdict, if none was recorded) written in its record. The training read,
/// for `status` to show; `None` when there is nothing to record.
pub async fn keep_metrics(
    cluster: &Cluster,
    tracker: &Tracker,
    record: Option<&Record>,
) -> Option<Training> {
    let record = record.filter(|r| r.metrics.is_none())?;
    let verdict = match tracker.verdict() {
        Verdict::Succeeded => "Succeeded".to_string(),
        Verdict::Failed(f) if !f.kind.is_after_the_fact() => format!("Failed: {f}"),
        _ => return None,
    };
    let training = super::training::whole(cluster, tracker).await?;
    let metrics = run_metrics(tracker, &training, None, false)?;
    // The rest of the record as it is (a merge patch writes every key it names).
    let never: Vec<&str> = record.never_started.iter().map(String::as_str).collect();
    let end = Ending {
        verdict: record.verdict.as_deref().unwrap_or(&verdict),
        never_started: &never,
        not_started: &record.not_started,
        metrics: Some(&metrics),
    };
    if let Err(e) = record::write(cluster, tracker.tag(), end).await {
        output::note(&format!(
            "the metrics are not recorded on the run's ConfigMap: {e:#}"
        ));
    }
    Some(training)
}

fn compared(r: Record) -> Compared {
    Compared {
        tag: r.tag,
        experiment: r.experiment,
        params: r.params,
        verdict: r.verdict,
        metrics: r.metrics,
        followed_by: r.follower.as_ref().map(|h| h.cell(crate::duration::now())),
    }
}

/// What `compare` shows of a run its experiment planned and never started.
pub const NOT_STARTED: &str = "NotStarted";

/// The runs `names` name: with one name, the runs of that experiment if there are any;
/// else each name an experiment's or a run's tag. One paged list of records; then, for
/// the runs with no recorded verdict, one list of their pods ([`in_flight`]); with one
/// experiment's name, its record, whose planned runs never started are listed as such.
pub async fn runs(cluster: &Cluster, names: &[String]) -> Result<Vec<Compared>> {
    Ok(judged_runs(cluster, names).await?.runs)
}

/// The runs compared, and what the one experiment named says of them.
pub struct Judged {
    pub runs: Vec<Compared>,
    /// The objective it was swept for.
    pub objective: Option<Objective>,
    /// Who runs its sweep now, in `compare`'s words: `lr-sweeper-x7k2p (checked in 12s
    /// ago)`, or `… (silent for 3m0s)` when it stopped checking in.
    pub sweeper: Option<String>,
}

/// [`runs`], with the objective the one experiment named was swept for (`sweep
/// --objective`, what `compare` sorts by when not told) and who runs its sweep, from the
/// record read for its runs.
pub async fn judged_runs(cluster: &Cluster, names: &[String]) -> Result<Judged> {
    let mut records = record::all(cluster, false)
        .await
        .map_err(|e| cluster.explain("listing the runs' ConfigMaps", &e))?;
    // A name that is no run's tag may be an experiment: its record (one read) names the
    // runs deleted since, with the verdicts it keeps, and those never started.
    let mut experiments = Vec::new();
    for name in names {
        if label_value_problem(name).is_some() || records.iter().any(|r| &r.tag == name) {
            continue;
        }
        if let Some(planned) = experiment::planned(cluster, name).await.ok().flatten() {
            let gone = deleted_runs(cluster, &planned, &records);
            records.extend(gone);
            experiments.push(planned);
        }
    }
    let chosen = match choose(records, names) {
        Ok(runs) => runs,
        Err(_) if !experiments.is_empty() => Vec::new(),
        Err(missing) => bail!(
            "no run or experiment named {} in namespace '{}' (the runs there: tf-spawner list -n {})",
            missing.join(", "),
            cluster.namespace(),
            cluster.namespace()
        ),
    };
    let open: BTreeSet<String> = chosen
        .iter()
        .filter(|r| r.verdict.is_none())
        .map(|r| r.tag.clone())
        .collect();
    let mut runs = in_flight(cluster, chosen, names).await;
    decided_stops(&mut runs, &experiments, &open);
    let (objective, sweeper) = of_the_one(names, &experiments);
    for planned in experiments {
        for run in planned.runs {
            if !runs.iter().any(|r| r.tag == run.tag) {
                runs.push(Compared {
                    tag: run.tag,
                    experiment: Some(planned.name.clone()),
                    params: run.params,
                    verdict: Some(NOT_STARTED.to_string()),
                    metrics: None,
                    followed_by: None,
                });
            }
        }
    }
    Ok(Judged {
        runs,
        objective,
        sweeper,
    })
}

/// The objective of the one experiment named, and who runs its sweep, in `compare`'s
/// words.
fn of_the_one(
    names: &[String],
    experiments: &[experiment::Planned],
) -> (Option<Objective>, Option<String>) {
    let ([_], [planned]) = (names, experiments) else {
        return (None, None);
    };
    let now = crate::duration::now();
    let sweeper = planned.follower.as_ref().map(|h| h.cell(now));
    (planned.objective.clone(), sweeper)
}

/// The runs whose own record has no verdict (`open`) while their experiment's record
/// holds the decision to stop them early: the sweep records it before carrying it out
/// (its wait stops the pods and records the verdict next; after a Ctrl-C in between,
/// `--resume` does), so they are stopped early, whatever their pods say yet.
fn decided_stops(
    runs: &mut [Compared],
    experiments: &[experiment::Planned],
    open: &BTreeSet<String>,
) {
    for run in runs.iter_mut().filter(|r| open.contains(&r.tag)) {
        let decided = experiments
            .iter()
            .filter_map(|p| p.ended.get(&run.tag))
            .find(|v| v.split(':').next() == Some(STOPPED_EARLY));
        if let Some(verdict) = decided {
            run.verdict = Some(verdict.clone());
        }
    }
}

/// The runs of an experiment that its record says ended and whose own records are gone
/// (deleted): each with its parameters and the verdict the experiment's record keeps,
/// said in a note.
fn deleted_runs(
    cluster: &Cluster,
    planned: &experiment::Planned,
    records: &[Record],
) -> Vec<Record> {
    let gone: Vec<Record> = planned
        .runs
        .iter()
        .filter(|run| !records.iter().any(|r| r.tag == run.tag))
        .filter_map(|run| {
            let verdict = planned.ended.get(&run.tag)?.clone();
            Some(Record {
                namespace: cluster.namespace().to_string(),
                tag: run.tag.clone(),
                verdict: Some(verdict),
                experiment: Some(planned.name.clone()),
                params: run.params.clone(),
                ..Record::default()
            })
        })
        .collect();
    if !gone.is_empty() {
        let tags: Vec<&str> = gone.iter().map(|r| r.tag.as_str()).collect();
        output::note(&format!(
            "experiment {}: {} deleted; the verdicts are its record's, their metrics are gone",
            planned.name,
            match tags.as_slice() {
                [one] => format!("run {one} was"),
                many => format!("runs {} were", many.join(", ")),
            }
        ));
    }
    gone
}

/// The records as compared: a run with a recorded verdict as its record says; the
/// others by their pods (one list: the experiment's, or each run's): their verdict now
/// (`Running`, or the end nobody recorded, which is then recorded with its metrics as
/// `status` does) and the curve so far of a run in flight (its deciding task's log read
/// to now).
async fn in_flight(cluster: &Cluster, chosen: Vec<Record>, names: &[String]) -> Vec<Compared> {
    let open: Vec<&str> = chosen
        .iter()
        .filter(|r| r.verdict.is_none())
        .map(|r| r.tag.as_str())
        .collect();
    let mut trackers = match open.is_empty() {
        true => BTreeMap::new(),
        false => pods_of(cluster, &open, names).await,
    };
    let now = crate::duration::now();
    let mut out = Vec::new();
    for r in chosen {
        let Some(mut tracker) = r
            .verdict
            .is_none()
            .then(|| trackers.remove(&r.tag))
            .flatten()
        else {
            out.push(compared(r));
            continue;
        };
        tracker.at(now);
        let (verdict, why) = super::status::verdict_of(&tracker, Some(&r));
        let training = match verdict {
            "Succeeded" | "Failed" | "Cancelled" => keep_metrics(cluster, &tracker, Some(&r)).await,
            "Running" => super::training::whole(cluster, &tracker).await,
            _ => None,
        };
        let earlier = r.metrics.as_ref();
        let metrics = match &training {
            Some(t) => run_metrics(&tracker, t, earlier, false).or_else(|| earlier.cloned()),
            None => earlier.cloned(),
        };
        let verdict = match why {
            Some(why) => format!("{verdict}: {why}"),
            None => verdict.to_string(),
        };
        out.push(Compared {
            verdict: Some(verdict),
            metrics,
            ..compared(r)
        });
    }
    out
}

/// The pods of runs `tags`, by run: one list of the experiment's when `names` is one
/// experiment, else one per run. A list that fails leaves those runs as recorded.
async fn pods_of(cluster: &Cluster, tags: &[&str], names: &[String]) -> BTreeMap<String, Tracker> {
    let one_experiment = match names {
        [name] if !tags.contains(&name.as_str()) && label_value_problem(name).is_none() => {
            Some(name)
        }
        _ => None,
    };
    let selectors: Vec<String> = match one_experiment {
        Some(name) => vec![format!(
            "{EXPERIMENT_LABEL}={name},{RUN_LABEL},!{HELPER_LABEL}"
        )],
        None => tags.iter().map(|t| run_selector(t)).collect(),
    };
    let mut trackers: BTreeMap<String, Tracker> = BTreeMap::new();
    for selector in selectors {
        let listed = cluster
            .list_pages::<Pod>(&selector, false, |pods, _| {
                for pod in &pods {
                    let labels = pod.metadata.labels.as_ref();
                    let Some(tag) = labels.and_then(|l| l.get(RUN_LABEL)) else {
                        continue;
                    };
                    trackers
                        .entry(tag.clone())
                        .or_insert_with(|| Tracker::new(tag, false))
                        .update(PodView::from_pod(pod));
                }
            })
            .await;
        if let Err(e) = listed {
            output::note(&format!(
                "the runs in flight are shown as recorded: {:#}",
                cluster.explain("listing their pods", &e)
            ));
            return BTreeMap::new();
        }
    }
    // A run whose pods are all gone is judged by its record alone.
    for tag in tags {
        trackers
            .entry(tag.to_string())
            .or_insert_with(|| Tracker::new(tag, false));
    }
    trackers
}

/// The records `names` name (the runs of an experiment, or a run by its tag), in the
/// order found; the names that name nothing as the error.
fn choose(records: Vec<Record>, names: &[String]) -> Result<Vec<Record>, Vec<String>> {
    let named = |r: &Record, n: &String| r.experiment.as_ref() == Some(n) || &r.tag == n;
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !records.iter().any(|r| named(r, n)))
        .map(|n| format!("'{}'", output::escape_controls(n)))
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    Ok(records
        .into_iter()
        .filter(|r| names.iter().any(|n| named(r, n)))
        .collect())
}

/// `compare --local`: the `--local` runs under `tf-spawner-output/` in `root` that
/// `names` name: a run's tag (its folder), or an experiment `NAME`, whose runs are the
/// folders `NAME-1`, `NAME-2`… Each run's `metrics.json` and the sweep's `params.json`.
/// The objective a `--local` experiment (`names`, one name) was swept for, from its
/// record's file (at most 64 MiB).
pub fn local_objective(root: &Path, names: &[String]) -> Option<Objective> {
    #[derive(serde::Deserialize)]
    struct Only {
        objective: Option<Objective>,
    }
    let [name] = names else { return None };
    let path = root
        .join(LOCAL_OUTPUT_ROOT)
        .join(name)
        .join(SWEEP_RECORD_FILE);
    let mut text = String::new();
    let file = std::fs::File::open(path).ok()?;
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 64 << 20), &mut text).ok()?;
    let objective = serde_json::from_str::<Only>(&text).ok()?.objective?;
    Objective::parse(&objective.metric).ok().map(|_| objective)
}

pub fn local_runs(root: &Path, names: &[String]) -> Result<Vec<Compared>> {
    let dir = root.join(LOCAL_OUTPUT_ROOT);
    let mut tags: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    tags.sort();
    let of_experiment = |tag: &str, n: &str| {
        tag.strip_prefix(n)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    // A local sweep's own folder holds its record, not a run.
    let is_run = |tag: &str| {
        let at = dir.join(tag);
        !at.join(SWEEP_RECORD_FILE).is_file() || at.join(METRICS_FILE).is_file()
    };
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for n in names {
        let found: Vec<&String> = tags
            .iter()
            .filter(|t| (*t == n && is_run(t)) || of_experiment(t, n))
            .collect();
        if found.is_empty() {
            missing.push(format!("'{}'", output::escape_controls(n)));
        }
        for tag in found {
            if !out.iter().any(|c: &Compared| &c.tag == tag) {
                out.push(local_run(
                    &dir.join(tag),
                    tag,
                    of_experiment(tag, n).then_some(n),
                ));
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "no local run or experiment named {} in {}",
            missing.join(", "),
            dir.display()
        );
    }
    Ok(out)
}

/// A local run's folder read: its metrics and parameters, if written.
fn local_run(dir: &Path, tag: &str, experiment: Option<&String>) -> Compared {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let metrics = read(METRICS_FILE).and_then(|t| RunMetrics::parse(&t));
    let params = read(PARAMS_FILE).map(|t| params(&t)).unwrap_or_default();
    Compared {
        tag: tag.to_string(),
        experiment: experiment.cloned(),
        params,
        verdict: metrics.as_ref().and_then(|m| m.verdict.clone()),
        metrics,
        followed_by: None,
    }
}
