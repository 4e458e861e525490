//! `sweep --resume NAME`: the experiment's record taken up as data, never as a command
//! (docs/hardened.md). The record — a ConfigMap anyone who may edit the namespace may
//! write, or a `--local` sweep's file — gives only the runs' tags and points, the random
//! search's seed, the verdicts of the runs that ended and the digests. Everything that
//! runs or is read on this machine (the script, `--dir`, `-e`, `--python`, `--notify`,
//! the working directory, a pod file) is the invocation's own: the user runs the
//! sweep's command again with `--resume NAME`. The record must be one that command would
//! have made: the same parameters, method and script arguments, its runs `NAME-1` … each
//! a point of those parameters; else one line, and nothing starts.

use std::collections::BTreeMap;

use anyhow::Result;

use super::definition::Definition;
use crate::cluster::Cluster;
use crate::errors::UsageError;
use crate::metrics::early::{Objective, STOPPED_EARLY, Stopping};
use crate::plan::sweep::{self as params, Digests, ExperimentRecord, Method, Param, Point, Values};

/// What a `--resume` brings to the record.
pub(crate) struct Taking<'a> {
    pub definition: &'a Definition,
    /// The digests of the script and files as they are now.
    pub digests: &'a Digests,
    /// `--allow-changed`.
    pub allow_changed: bool,
    /// The script and `--dir` as given, for the refusal's words.
    pub script: &'a str,
    pub dir: Option<&'a str>,
}

/// The longest recorded verdict taken (a `Failed: …` line).
const MAX_VERDICT: usize = 500;

/// `--resume NAME` of a sweep on the cluster: its record read and taken up.
pub(crate) async fn read(cluster: &Cluster, taking: &Taking<'_>) -> Result<ExperimentRecord> {
    let name = &taking.definition.name;
    let record_name = crate::labels::experiment_record_name(name);
    let Some(stored) = crate::cluster::experiment::read(cluster, name).await? else {
        return Err(UsageError::new(format!(
            "no experiment '{name}' in namespace '{}' (no configmap {record_name}): see its runs with tf-spawner list, or leave --resume out to start it",
            cluster.namespace(),
        ))
        .into());
    };
    let place = Place {
        what: format!("configmap {record_name}"),
        remove: format!("tf-spawner -d --experiment {name}"),
    };
    take_up(stored, taking, &place)
}

/// Where a record is, and how it is removed, for a refusal's words.
pub(crate) struct Place {
    /// `configmap lrs-experiment`.
    pub what: String,
    /// `tf-spawner -d --experiment lrs`.
    pub remove: String,
}

/// The record vetted and taken up: its runs, seed and ended runs, with the
/// invocation's parameters, arguments and `--parallel`.
pub(crate) fn take_up(
    stored: ExperimentRecord,
    taking: &Taking<'_>,
    place: &Place,
) -> Result<ExperimentRecord> {
    let def = taking.definition;
    let name = &def.name;
    if let Err(there) = same_definition(&stored, def).map_err(|t| cut(&t)) {
        return Err(UsageError::new(format!(
            "experiment '{name}' was started with {there}: run the command it was started with, adding --resume {name} (or pick another name with -t for a new experiment); nothing was started"
        ))
        .into());
    }
    if let Err(why) = vet_runs(&stored, def).map_err(|t| cut(&t)) {
        return Err(UsageError::new(format!(
            "experiment '{name}''s record ({}) is not one this sweep makes: {why}; nothing was started (remove it with {}, or pick another name with -t)",
            place.what, place.remove
        ))
        .into());
    }
    if !taking.allow_changed {
        check_digests(stored.digests.as_ref(), taking)?;
    }
    let ended = recorded_verdicts(&stored);
    let observed = recorded_observations(&stored);
    let values = (stored.values.iter())
        .filter(|(tag, v)| v.is_finite() && ended.contains_key(*tag))
        .map(|(tag, v)| (tag.clone(), *v))
        .collect();
    Ok(ExperimentRecord {
        name: def.name.clone(),
        params: def.params.clone(),
        method: stored.method,
        parallel: def.parallel.or(stored.parallel),
        args: def.args.clone(),
        digests: stored.digests,
        runs: stored.runs,
        ended,
        objective: def.objective.clone(),
        early_stop: def.stopping,
        observed,
        values,
    })
}

/// The record's parameters, method and arguments are the invocation's; else what the
/// record has and this command has not, in words.
fn same_definition(stored: &ExperimentRecord, def: &Definition) -> Result<(), String> {
    let texts = |ps: &[Param]| ps.iter().map(param_text).collect::<Vec<_>>().join(" ");
    let same_params = stored.params.len() == def.params.len()
        && stored
            .params
            .iter()
            .zip(&def.params)
            .all(|(a, b)| same_param(a, b));
    if !same_params {
        return Err(format!(
            "{}, not {}",
            texts(&stored.params),
            texts(&def.params)
        ));
    }
    let seeded = |seed: u64| def.seed.is_none_or(|g| g == seed);
    let same_method = match (stored.method, def.method(0)) {
        (Method::Grid, Method::Grid) => true,
        (Method::Random { samples, seed }, Method::Random { samples: k, .. }) => {
            samples == k && seeded(seed)
        }
        (
            Method::Tpe {
                samples,
                seed,
                startup,
                ..
            },
            Method::Tpe {
                samples: k,
                startup: s,
                ..
            },
        ) => samples == k && startup == s && seeded(seed),
        _ => false,
    };
    if !same_method {
        let asked = match (def.method(0), def.seed) {
            (Method::Grid, _) => "a grid".to_string(),
            (method, None) => method_text(method, None),
            (method, Some(s)) => method_text(method, Some(s)),
        };
        let stored_text = match stored.method {
            Method::Grid => "a grid".to_string(),
            Method::Random { seed, .. } | Method::Tpe { seed, .. } => {
                method_text(stored.method, Some(seed))
            }
        };
        return Err(format!("{stored_text}, not {asked}"));
    }
    same_judging(stored, def)?;
    if stored.args != def.args {
        return Err(format!(
            "the script's arguments '{}', not '{}'",
            stored.args.join(" "),
            def.args.join(" ")
        ));
    }
    Ok(())
}

/// The record's objective and early stopping are the invocation's: a resumed sweep
/// judges its runs as it began to.
fn same_judging(stored: &ExperimentRecord, def: &Definition) -> Result<(), String> {
    let objective = |o: &Option<Objective>| {
        o.as_ref().map_or_else(
            || "no --objective".to_string(),
            |o| format!("--objective {}", o.text()),
        )
    };
    if stored.objective != def.objective {
        return Err(format!(
            "{}, not {}",
            objective(&stored.objective),
            objective(&def.objective)
        ));
    }
    let stopping = |s: &Option<Stopping>| match s {
        None => "--early-stop off".to_string(),
        Some(s) => format!(
            "--early-stop {} --eta {} --min-epochs {}",
            s.rule.name(),
            s.eta,
            s.min_epochs
        ),
    };
    if stored.early_stop != def.stopping {
        return Err(format!(
            "{}, not {}",
            stopping(&stored.early_stop),
            stopping(&def.stopping)
        ));
    }
    Ok(())
}

/// `--samples K --seed S`, `--method tpe --samples K --seed S` (the seed when given).
fn method_text(method: Method, seed: Option<u64>) -> String {
    let seed = seed.map_or_else(String::new, |s| format!(" --seed {s}"));
    match method {
        Method::Grid => "a grid".to_string(),
        Method::Random { samples, .. } => format!("--samples {samples}{seed}"),
        Method::Tpe { samples, .. } => format!("--method tpe --samples {samples}{seed}"),
    }
}

/// `--param` as written: `lr=0.1,0.2`, `lr=log:0.0001..0.1`, `k=int:1..4`.
fn param_text(p: &Param) -> String {
    let values = match &p.values {
        Values::List(v) => v.join(","),
        Values::Range { log, lo, hi } => format!("{}{lo}..{hi}", if *log { "log:" } else { "" }),
        Values::Int { lo, hi } => format!("int:{lo}..{hi}"),
    };
    format!("--param {}={values}", p.name)
}

fn same_param(a: &Param, b: &Param) -> bool {
    let near = |x: f64, y: f64| (x - y).abs() <= 1e-12 * x.abs().max(y.abs());
    a.name == b.name
        && match (&a.values, &b.values) {
            (
                Values::Range { log, lo, hi },
                Values::Range {
                    log: log2,
                    lo: lo2,
                    hi: hi2,
                },
            ) => log == log2 && near(*lo, *lo2) && near(*hi, *hi2),
            (x, y) => x == y,
        }
}

/// The record's runs are those the sweep makes: `NAME-1` … `NAME-K`, K the runs it
/// makes, each with every parameter and no other, each value one the parameter takes
/// (a grid's: exactly its points, in order).
fn vet_runs(stored: &ExperimentRecord, def: &Definition) -> Result<(), String> {
    if stored.name != def.name {
        return Err(format!("it names experiment '{}'", stored.name));
    }
    let tpe = matches!(stored.method, Method::Tpe { .. });
    let planned = stored.runs.len() as u64;
    if (tpe && planned > def.runs) || (!tpe && planned != def.runs) {
        return Err(format!(
            "{} runs, where the parameters make {}",
            stored.runs.len(),
            def.runs
        ));
    }
    let grid = (stored.method == Method::Grid).then(|| params::expand(&def.params, Method::Grid));
    for (i, run) in stored.runs.iter().enumerate() {
        let tag = params::run_tag(&def.name, i);
        if run.tag != tag {
            return Err(format!("its run {} is named '{}'", i + 1, run.tag));
        }
        let point: Point = def
            .params
            .iter()
            .filter_map(|p| Some((p.name.clone(), run.params.get(&p.name)?.clone())))
            .collect();
        if point.len() != run.params.len() || point.len() != def.params.len() {
            return Err(format!("run {tag} has other parameters than the sweep's"));
        }
        let fits = match &grid {
            Some(points) => points.get(i) == Some(&point),
            None => def
                .params
                .iter()
                .zip(&point)
                .all(|(p, (_, v))| takes(&p.values, v)),
        };
        if !fits {
            return Err(format!(
                "run {tag}'s parameters ({}) are not a point of the sweep's",
                params::point_text(&point)
            ));
        }
    }
    Ok(())
}

/// Whether a parameter takes `value`: one of its values, an integer of its range, a
/// number in its range (give or take the rounding of a sampled value to 4 digits).
fn takes(values: &Values, value: &str) -> bool {
    match values {
        Values::List(v) => v.iter().any(|x| x == value),
        Values::Int { lo, hi } => value.parse::<i64>().is_ok_and(|x| (*lo..=*hi).contains(&x)),
        Values::Range { lo, hi, .. } => value.parse::<f64>().is_ok_and(|x| {
            let slack = 1e-3 * lo.abs().max(hi.abs());
            x.is_finite() && x >= lo - slack && x <= hi + slack
        }),
    }
}

/// The script and `--dir`'s files are those the sweep began with; else one line naming
/// `--allow-changed`.
fn check_digests(recorded: Option<&Digests>, taking: &Taking<'_>) -> Result<()> {
    let name = &taking.definition.name;
    let now = taking.digests;
    let changed = match recorded {
        None => {
            Some("its record holds no digest of the script and files it began with".to_string())
        }
        Some(d) if d.script != now.script => Some(format!(
            "the training script {} changed since it began",
            taking.script
        )),
        Some(d) if d.dir != now.dir => Some(match (taking.dir, &d.dir) {
            (Some(dir), Some(_)) => format!("the files of --dir {dir} changed since it began"),
            (Some(dir), None) => format!("it began without --dir, this command ships {dir}"),
            (None, _) => "it began with --dir, this command ships no directory".to_string(),
        }),
        Some(_) => None,
    };
    match changed {
        None => Ok(()),
        Some(what) => Err(UsageError::new(format!(
            "experiment '{name}': {what}, so its runs would not be comparable: put them back as they were, or add --allow-changed to take it up as they are now"
        ))
        .into()),
    }
}

/// What a refusal quotes of a record, at most 300 characters.
fn cut(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The longest epoch an observation may name, and the most observations taken.
const MAX_EPOCH: u32 = 10_000_000;
const MAX_OBSERVED: usize = 100_000;

/// The record's observations of its own runs: finite values at epochs from 1, bounded
/// (a record is anyone's who may edit the namespace: it may only shape decisions, never
/// what runs).
fn recorded_observations(stored: &ExperimentRecord) -> BTreeMap<String, BTreeMap<u32, f64>> {
    let mut left = MAX_OBSERVED;
    let mut out = BTreeMap::new();
    for (tag, seen) in &stored.observed {
        if !stored.runs.iter().any(|r| &r.tag == tag) {
            continue;
        }
        let kept: BTreeMap<u32, f64> = seen
            .iter()
            .filter(|(e, v)| (1..=MAX_EPOCH).contains(*e) && v.is_finite())
            .take(left)
            .map(|(e, v)| (*e, *v))
            .collect();
        left -= kept.len();
        if !kept.is_empty() {
            out.insert(tag.clone(), kept);
        }
    }
    out
}

/// The record's verdicts of its own runs, each `Succeeded`, `Failed…` or
/// `StoppedEarly…`, bounded.
fn recorded_verdicts(stored: &ExperimentRecord) -> BTreeMap<String, String> {
    stored
        .ended
        .iter()
        .filter(|(tag, _)| stored.runs.iter().any(|r| &r.tag == *tag))
        .filter(|(_, v)| {
            *v == "Succeeded" || v.starts_with("Failed") || v.starts_with(STOPPED_EARLY)
        })
        .map(|(tag, v)| (tag.clone(), v.chars().take(MAX_VERDICT).collect()))
        .collect()
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
