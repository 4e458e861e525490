//! A sweep's parameters and runs (pure): `--param` read, the grid or the random
//! search expanded into points, the placeholders of the script's arguments filled in,
//! and the experiment's record (docs/experiments.md).
//!
//! - `--param NAME=V1,V2,…`: values (a grid takes every combination; a random search
//!   picks one of them).
//! - `--param NAME=LO..HI` (uniform), `NAME=log:LO..HI` (log-uniform), `NAME=int:LO..HI`
//!   (an integer, both ends included): ranges, as W&B's `uniform`,
//!   `log_uniform_values` and `int_uniform`, or Katib's `double`/`int` feasible space.
//!   A random search (`--samples K`) samples them; a grid enumerates an `int:` range
//!   and refuses the others.
//! - A parameter reaches the script as `{NAME}` in its arguments and as the variable
//!   `TF_SPAWNER_PARAM_<NAME upper-cased>`.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::metrics::early::{Objective, Stopping};

/// The variable of parameter `lr`: `TF_SPAWNER_PARAM_LR`.
pub const PARAM_VAR_PREFIX: &str = "TF_SPAWNER_PARAM_";
/// The variable naming the experiment a run belongs to.
pub const EXPERIMENT_VAR: &str = "TF_SPAWNER_EXPERIMENT";
/// More runs than this need `--yes`.
pub const MAX_RUNS_WITHOUT_YES: u64 = 1000;
/// Never more runs than this, even with `--yes`.
pub const MAX_RUNS: u64 = 100_000;

/// One `--param`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub values: Values,
}

/// What a parameter takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Values {
    /// `V1,V2,…`, as written.
    List(Vec<String>),
    /// `LO..HI`, `log:LO..HI`.
    Range { log: bool, lo: f64, hi: f64 },
    /// `int:LO..HI`, both ends included.
    Int { lo: i64, hi: i64 },
}

/// How the points are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Every combination, in the order the values were given (the last parameter
    /// varies fastest).
    Grid,
    /// `samples` points drawn with `seed`.
    Random { samples: u32, seed: u64 },
    /// `--method tpe`: `samples` runs, the first `startup` the random search's of
    /// `seed`, each other proposed as a quota slot frees (`metrics/tpe.rs`) and
    /// recorded before its run is created.
    Tpe {
        samples: u32,
        seed: u64,
        startup: u32,
    },
}

/// `--method`: how a sweep chooses its points.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Every combination of the values (the default without --samples)
    Grid,
    /// --samples K points drawn at random (the default with --samples)
    Random,
    /// --samples K points, each after the first few chosen from the runs so far
    /// (Tree-structured Parzen Estimator; needs --objective)
    Tpe,
}

/// One run's parameters, in the order of the `--param` flags: name, value as text.
pub type Point = Vec<(String, String)>;

/// `--param TEXT` read; the problem worded to follow `--param `.
pub fn parse_param(text: &str) -> Result<Param, String> {
    let Some((name, values)) = text.split_once('=') else {
        return Err(format!(
            "'{text}': expected NAME=V1,V2,… (a grid) or NAME=LO..HI, log:LO..HI, int:LO..HI (a range, with --samples), e.g. lr=0.1,0.01 or lr=log:1e-4..1e-1"
        ));
    };
    let name = name.trim();
    if !is_identifier(name) {
        return Err(format!(
            "'{text}': the name '{name}' is not an identifier (letters, digits and _, not starting with a digit): it names the placeholder {{NAME}} and ${PARAM_VAR_PREFIX}NAME"
        ));
    }
    let values = parse_values(values.trim())
        .map_err(|problem| format!("{name}={}: {problem}", values.trim()))?;
    Ok(Param {
        name: name.to_string(),
        values,
    })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_values(text: &str) -> Result<Values, String> {
    if text.is_empty() {
        return Err("no values (give NAME=V1,V2,… or a range NAME=LO..HI)".into());
    }
    let (kind, range) = match text.split_once(':') {
        Some((kind @ ("log" | "int" | "uniform"), rest)) => (kind, rest),
        _ if text.contains("..") && !text.contains(',') => ("uniform", text),
        _ => {
            let values: Vec<String> = text.split(',').map(|v| v.trim().to_string()).collect();
            if values.iter().any(String::is_empty) {
                return Err("an empty value in the list".into());
            }
            return Ok(Values::List(values));
        }
    };
    let Some((lo, hi)) = range.split_once("..") else {
        return Err(format!("{kind}: needs a range LO..HI"));
    };
    if kind == "int" {
        let int = |s: &str| {
            s.trim()
                .parse::<i64>()
                .map_err(|_| format!("'{}' is not an integer", s.trim()))
        };
        let (lo, hi) = (int(lo)?, int(hi)?);
        if lo > hi {
            return Err(format!("the range is empty ({lo} > {hi})"));
        }
        return Ok(Values::Int { lo, hi });
    }
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("'{}' is not a number", s.trim()))
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo >= hi {
        return Err(format!(
            "the range is empty (LO must be below HI: {lo}..{hi})"
        ));
    }
    let log = kind == "log";
    if log && lo <= 0.0 {
        return Err("a log range needs LO above 0".into());
    }
    Ok(Values::Range { log, lo, hi })
}

/// Two parameters with one name (or one variable: `lr` and `LR`).
pub fn check_names(params: &[Param]) -> Result<(), String> {
    for (i, p) in params.iter().enumerate() {
        if let Some(q) = params[..i]
            .iter()
            .find(|q| q.name.eq_ignore_ascii_case(&p.name))
        {
            return Err(format!(
                "--param {} is given twice ({} and {}: one variable {}); give each parameter once, its values comma-separated",
                p.name,
                q.name,
                p.name,
                param_var(&p.name)
            ));
        }
    }
    Ok(())
}

/// How many runs a method makes of `params` (saturating), or why it cannot.
pub fn count(params: &[Param], method: Method) -> Result<u64, String> {
    if params.is_empty() {
        return Err("a sweep needs at least one --param NAME=V1,V2,…".into());
    }
    match method {
        Method::Random { samples, .. } | Method::Tpe { samples, .. } => Ok(u64::from(samples)),
        Method::Grid => params.iter().try_fold(1u64, |n, p| {
            let k = match &p.values {
                Values::List(v) => v.len() as u64,
                Values::Int { lo, hi } => hi.abs_diff(*lo).saturating_add(1),
                Values::Range { log, lo, hi } => {
                    return Err(format!(
                        "--param {}={}{lo}..{hi} is a range: a grid needs values ({}=V1,V2,…), or add --samples K for a random search",
                        p.name,
                        if *log { "log:" } else { "" },
                        p.name
                    ));
                }
            };
            Ok(n.saturating_mul(k))
        }),
    }
}

/// Every run's parameters (a model-based search's first, random ones). `count` must
/// have been checked (bounded) first.
pub fn expand(params: &[Param], method: Method) -> Vec<Point> {
    match method {
        Method::Grid => {
            let mut points: Vec<Point> = vec![Vec::new()];
            for p in params {
                let values = grid_values(&p.values);
                points = points
                    .into_iter()
                    .flat_map(|point| {
                        values.iter().map(move |v| {
                            let mut next = point.clone();
                            next.push((p.name.clone(), v.clone()));
                            next
                        })
                    })
                    .collect();
            }
            points
        }
        Method::Random { samples, seed } => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            (0..samples)
                .map(|_| {
                    params
                        .iter()
                        .map(|p| (p.name.clone(), sample(&p.values, &mut rng)))
                        .collect()
                })
                .collect()
        }
        Method::Tpe { startup, seed, .. } => expand(
            params,
            Method::Random {
                samples: startup,
                seed,
            },
        ),
    }
}

fn grid_values(values: &Values) -> Vec<String> {
    match values {
        Values::List(v) => v.clone(),
        Values::Int { lo, hi } => (*lo..=*hi).map(|i| i.to_string()).collect(),
        Values::Range { .. } => Vec::new(),
    }
}

/// A value drawn from a parameter's values or range (also `metrics/tpe.rs`'s).
pub(crate) fn sample(values: &Values, rng: &mut impl Rng) -> String {
    match values {
        Values::List(v) => v[rng.random_range(0..v.len())].clone(),
        Values::Int { lo, hi } => rng.random_range(*lo..=*hi).to_string(),
        Values::Range { log: false, lo, hi } => shown(rng.random_range(*lo..*hi)),
        Values::Range { log: true, lo, hi } => {
            shown(rng.random_range(lo.ln()..hi.ln()).exp().clamp(*lo, *hi))
        }
    }
}

/// A sampled value as text: 4 significant digits, the shortest form (`0.0003162`).
pub(crate) fn shown(v: f64) -> String {
    let rounded: f64 = format!("{v:.3e}").parse().unwrap_or(v);
    rounded.to_string()
}

/// `TF_SPAWNER_PARAM_LR` for `lr`.
pub fn param_var(name: &str) -> String {
    format!("{PARAM_VAR_PREFIX}{}", name.to_ascii_uppercase())
}

/// The `{NAME}` placeholders of `args`, in order, each once. Braces around anything
/// but an identifier (`{"a": 1}`) are not placeholders.
pub fn placeholders(args: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for arg in args {
        for name in names_in(arg) {
            if !found.iter().any(|f| f == name) {
                found.push(name.to_string());
            }
        }
    }
    found
}

fn names_in(arg: &str) -> impl Iterator<Item = &str> {
    arg.split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(name, _)| name))
        .filter(|name| is_identifier(name))
}

/// Placeholders and parameters must match: a placeholder names a parameter; when the
/// arguments have placeholders, every parameter is in one (with none, the parameters
/// reach the script as variables alone).
pub fn check_placeholders(params: &[Param], args: &[String]) -> Result<(), String> {
    let used = placeholders(args);
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    if let Some(unknown) = used.iter().find(|u| !names.contains(&u.as_str())) {
        return Err(format!(
            "the placeholder {{{unknown}}} in the script's arguments names no parameter (the parameters: {}); add --param {unknown}=… or correct it",
            names.join(", ")
        ));
    }
    if used.is_empty() {
        return Ok(());
    }
    if let Some(unused) = names.iter().find(|n| !used.iter().any(|u| u == *n)) {
        return Err(format!(
            "--param {unused} is in no placeholder of the script's arguments: add {{{unused}}} after --, or use no placeholder at all to pass every parameter as ${PARAM_VAR_PREFIX}NAME alone"
        ));
    }
    Ok(())
}

/// `args` with each `{NAME}` replaced by the point's value, in one pass: a value is
/// never read for placeholders again (`--param 'a={b}'` gives `{b}`, not b's value).
pub fn fill(args: &[String], point: &Point) -> Vec<String> {
    args.iter().map(|arg| fill_one(arg, point)).collect()
}

fn fill_one(arg: &str, point: &Point) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after
            .split_once('}')
            .and_then(|(name, _)| Some((name, point.iter().find(|(n, _)| n == name)?)));
        match value {
            Some((name, (_, value))) => {
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The tag of run `index` (0-based) of experiment `name`: `NAME-1` ….
pub fn run_tag(name: &str, index: usize) -> String {
    format!("{name}-{}", index.saturating_add(1))
}

/// A point as the run's `tf-spawner/params` annotation: a JSON object, name → text.
pub fn params_json(point: &Point) -> String {
    let map: BTreeMap<&str, &str> = point
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serde_json::to_string(&map).unwrap_or_default()
}

/// `lr=0.1 batch=64`.
pub fn point_text(point: &Point) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--dry-run`'s plan: a row per run, its tag, parameters and (when the script has
/// any) the arguments it gets.
pub fn runs_table(runs: &[(String, Point)], args: &[String]) -> String {
    let names: Vec<&str> = runs
        .first()
        .map(|(_, p)| p.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    let mut headers = vec!["RUN"];
    headers.extend(&names);
    if !args.is_empty() {
        headers.push("ARGS");
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(tag, point)| {
            let mut row = vec![tag.clone()];
            row.extend(point.iter().map(|(_, v)| v.clone()));
            if !args.is_empty() {
                row.push(fill(args, point).join(" "));
            }
            row
        })
        .collect();
    crate::output::table(&headers, &rows)
}

/// The experiment's record (its ConfigMap's `experiment.json`, or the `--local`
/// sweep's `tf-spawner-output/NAME/experiment.json`): what `--resume` needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRecord {
    pub name: String,
    pub params: Vec<Param>,
    pub method: Method,
    /// Runs at a time (`None`: as many as the quota holds, or all with a queue).
    pub parallel: Option<u32>,
    /// The script's arguments as given, placeholders unfilled: compared with those of
    /// the `--resume` invocation, never run (the record is data: what runs on this
    /// machine, and what it reads, is the invocation's; docs/hardened.md).
    #[serde(default)]
    pub args: Vec<String>,
    /// The script's and the shipped directory's digests at the sweep's start.
    #[serde(default)]
    pub digests: Option<Digests>,
    /// Every run: its tag and its parameters.
    pub runs: Vec<PlannedRun>,
    /// The verdict of each run that ended (`Succeeded`, `Failed: …`), by tag: written
    /// as each ends (on the cluster, the record's `ended.TAG` keys), so `--resume`
    /// starts none of them again, even once the run is deleted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ended: BTreeMap<String, String>,
    /// `--objective`: the metric the experiment is judged by (`compare`'s sort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<Objective>,
    /// `--early-stop`, `--eta`, `--min-epochs`; `None`: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<Stopping>,
    /// The objective's value at each epoch early stopping read, by run and epoch:
    /// written as each is read, before it decides anything (on the cluster, the
    /// record's `observed.TAG.EPOCH` keys), so `--resume` judges no run again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, BTreeMap<u32, f64>>,
    /// `--method tpe`: the objective's value each run ended with, as the search took
    /// it (on the cluster, the record's `value.TAG` keys), written with its verdict.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, f64>,
}

/// `sha256:HEX` digests of what a sweep's runs are made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digests {
    /// The training script's bytes.
    pub script: String,
    /// `--dir`'s files (each path and content, not their times), if shipped.
    #[serde(default)]
    pub dir: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    pub tag: String,
    pub params: BTreeMap<String, String>,
}

impl ExperimentRecord {
    /// The runs' points, as the record has them (in `params`' order).
    pub fn planned(points: &[Point], name: &str) -> Vec<PlannedRun> {
        points
            .iter()
            .enumerate()
            .map(|(i, p)| PlannedRun {
                tag: run_tag(name, i),
                params: p.iter().cloned().collect(),
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
