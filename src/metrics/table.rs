//! `compare`'s rows (pure): one per run, its parameters that differ, verdict, time,
//! restarts, epochs, final and best metrics, sorted by a metric, the best marked; as a
//! table, JSON or CSV.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Curve, RunMetrics, lower_is_better, number};
use crate::output::escape_controls;

/// `compare -o`: what it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// A table, then a chart of a metric per epoch
    Table,
    /// Every run's parameters, metrics and curve
    Json,
    /// The same document as YAML
    Yaml,
    /// A row per run: parameters, final and best metrics
    Csv,
}

/// One run as its record says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compared {
    pub tag: String,
    pub experiment: Option<String>,
    pub params: BTreeMap<String, String>,
    /// The recorded verdict (`Succeeded`, `Failed: …`); `None`: not ended (or not
    /// followed yet: `status` records it).
    pub verdict: Option<String>,
    pub metrics: Option<RunMetrics>,
    /// Who follows it now, where and when it last checked in (`mnist-supervisor-x7k2p
    /// (checked in 5s ago)`, `cluster/follower.rs`); `None` when nobody does.
    pub followed_by: Option<String>,
}

impl Compared {
    fn value(&self, metric: &str) -> Option<f64> {
        self.metrics.as_ref()?.best.get(metric).copied()
    }

    /// `Succeeded`, `Failed`, or `-` for a run with no recorded verdict.
    pub fn verdict_word(&self) -> &str {
        self.verdict
            .as_deref()
            .map_or("-", |v| v.split(':').next().unwrap_or(v))
    }

    /// Stopped by its sweep's early stopping (`StoppedEarly: LINE`).
    pub fn stopped_early(&self) -> bool {
        self.verdict_word() == super::early::STOPPED_EARLY
    }
}

/// `compare --no-stopped`: the runs stopped early taken out of `runs`; their tags, in
/// order.
pub fn leave_out_stopped(runs: &mut Vec<Compared>) -> Vec<String> {
    let mut left = Vec::new();
    runs.retain(|r| {
        let stopped = r.stopped_early();
        if stopped {
            left.push(r.tag.clone());
        }
        !stopped
    });
    left.sort();
    left
}

/// `--sort`: the metric, and whether lower values come first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortBy {
    pub metric: String,
    pub lower_first: bool,
}

impl SortBy {
    /// `val_loss` (lowest first: a loss-like name), `accuracy` (highest first), `-NAME`
    /// (highest first whatever the name), `+NAME` (lowest first).
    pub fn parse(text: &str) -> Result<SortBy, String> {
        let (metric, order) = match text.as_bytes().first() {
            Some(b'-') => (&text[1..], Some(false)),
            Some(b'+') => (&text[1..], Some(true)),
            _ => (text, None),
        };
        if metric.is_empty() || metric.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "\"{}\" is not a metric name (e.g. val_loss, -accuracy)",
                escape_controls(text)
            ));
        }
        Ok(SortBy {
            metric: metric.to_string(),
            lower_first: order.unwrap_or_else(|| lower_is_better(metric)),
        })
    }

    /// Without `--sort`: `val_loss`, else `loss`, else the first metric any run has.
    pub fn default_for(runs: &[Compared]) -> Option<SortBy> {
        let names: BTreeSet<&str> = runs
            .iter()
            .filter_map(|r| r.metrics.as_ref())
            .flat_map(|m| m.best.keys().map(String::as_str))
            .collect();
        let metric = ["val_loss", "loss"]
            .into_iter()
            .find(|n| names.contains(n))
            .or_else(|| names.iter().next().copied())?;
        SortBy::parse(metric).ok()
    }

    /// `Err`: the line saying so, when the runs recorded metrics and not the one sorted
    /// by (those recorded are named). Runs with no metric yet (all just started) say
    /// nothing of a name.
    pub fn check(&self, runs: &[Compared]) -> Result<(), String> {
        let names = metric_names(runs, None);
        if names.is_empty() || names.contains(&self.metric) {
            return Ok(());
        }
        let names: Vec<String> = names.iter().map(|n| escape_controls(n)).collect();
        Err(format!(
            "no run recorded a metric '{}' (the metrics recorded: {})",
            escape_controls(&self.metric),
            names.join(", ")
        ))
    }

    pub fn order(&self) -> &'static str {
        if self.lower_first {
            "ascending"
        } else {
            "descending"
        }
    }
}

/// Sorts the runs by the best value of `by`'s metric (runs without it last, by tag);
/// the best run's tag: the first succeeded run with the metric, else the first with it.
pub fn sort(runs: &mut [Compared], by: Option<&SortBy>) -> Option<String> {
    runs.sort_by(|a, b| a.tag.cmp(&b.tag));
    let by = by?;
    runs.sort_by(|a, b| match (a.value(&by.metric), b.value(&by.metric)) {
        (Some(x), Some(y)) if by.lower_first => x.total_cmp(&y),
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let with = || runs.iter().filter(|r| r.value(&by.metric).is_some());
    with()
        .find(|r| r.verdict_word() == "Succeeded")
        .or_else(|| with().next())
        .map(|r| r.tag.clone())
}

/// The parameters whose values are not the same in every run (all of them for one run).
pub fn differing(runs: &[Compared]) -> Vec<String> {
    let names: BTreeSet<&String> = runs.iter().flat_map(|r| r.params.keys()).collect();
    names
        .into_iter()
        .filter(|n| {
            runs.len() == 1 || {
                let first = runs[0].params.get(*n);
                runs.iter().any(|r| r.params.get(*n) != first)
            }
        })
        .cloned()
        .collect()
}

/// The metrics of any run, the sort's first.
fn metric_names(runs: &[Compared], by: Option<&SortBy>) -> Vec<String> {
    let mut names: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| r.metrics.as_ref())
        .flat_map(|m| m.last.keys().chain(m.best.keys()).cloned())
        .collect();
    let mut out = Vec::new();
    if let Some(by) = by {
        names.remove(&by.metric);
        out.push(by.metric.clone());
    }
    out.extend(names);
    out
}

fn time_cell(m: Option<&RunMetrics>) -> String {
    m.and_then(|m| m.secs)
        .map_or_else(|| "-".into(), crate::duration::age)
}

fn epochs_cell(m: Option<&RunMetrics>) -> String {
    match m {
        Some(RunMetrics {
            epochs_done,
            epochs: Some(n),
            ..
        }) => format!("{epochs_done}/{n}"),
        Some(m) => m.epochs_done.to_string(),
        None => "-".into(),
    }
}

/// The cost column (`metrics/cost.rs`), if any run has a cost: GPU-hours when some run
/// had GPUs, else task-hours.
fn cost_column(runs: &[Compared]) -> Option<(&'static str, bool)> {
    let costs = runs.iter().filter_map(|r| r.metrics.as_ref()?.cost);
    let gpus = costs.clone().any(|c| c.total.gpu_seconds > 0);
    costs.clone().next().map(|_| {
        if gpus {
            ("GPU-H", true)
        } else {
            ("TASK-H", false)
        }
    })
}

fn cost_cell(m: Option<&RunMetrics>, gpus: bool) -> String {
    m.and_then(|m| m.cost).map_or_else(
        || "-".into(),
        |c| {
            let s = if gpus {
                c.total.gpu_seconds
            } else {
                c.total.task_seconds
            };
            format!("{:.2}", s as f64 / 3600.0)
        },
    )
}

/// The table: the best run marked `*`.
pub fn render(runs: &[Compared], by: Option<&SortBy>, best: Option<&str>) -> String {
    let params = differing(runs);
    let metrics = metric_names(runs, by);
    let mut headers: Vec<String> = vec![String::new(), "TAG".into()];
    headers.extend(params.iter().map(|p| escape_controls(p)));
    headers.extend(["VERDICT", "TIME", "RESTARTS", "EPOCHS"].map(String::from));
    let cost = cost_column(runs);
    headers.extend(cost.map(|(h, _)| h.to_string()));
    headers.extend(metrics.iter().map(|m| escape_controls(m)));
    if let Some(by) = by {
        headers.push(format!("BEST {}", escape_controls(&by.metric)));
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let m = r.metrics.as_ref();
            let mark = if best == Some(r.tag.as_str()) {
                "*"
            } else {
                ""
            };
            let mut row = vec![mark.to_string(), r.tag.clone()];
            row.extend(params.iter().map(|p| {
                r.params
                    .get(p)
                    .map_or_else(|| "-".into(), |v| escape_controls(v))
            }));
            row.push(r.verdict_word().to_string());
            row.push(time_cell(m));
            row.push(m.map_or_else(|| "-".into(), |m| m.restarts.to_string()));
            row.push(epochs_cell(m));
            row.extend(cost.map(|(_, gpus)| cost_cell(m, gpus)));
            let cell = |v: Option<&f64>| v.map_or_else(|| "-".into(), |v| number(*v));
            row.extend(metrics.iter().map(|n| cell(m.and_then(|m| m.last.get(n)))));
            if let Some(by) = by {
                row.push(cell(m.and_then(|m| m.best.get(&by.metric))));
            }
            row
        })
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    crate::output::table(&headers, &rows)
}

/// `compare -o json`: the documented shape.
#[derive(Debug, Serialize)]
pub struct CompareJson<'a> {
    pub experiment: Option<&'a str>,
    /// The metric sorted by and its order (`ascending`: lowest first).
    pub sort: Option<SortJson<'a>>,
    /// The best run's tag.
    pub best: Option<&'a str>,
    pub runs: Vec<RunJson<'a>>,
    /// With `--no-stopped`: the tags of the runs stopped early it left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<&'a [String]>,
}

#[derive(Debug, Serialize)]
pub struct SortJson<'a> {
    pub metric: &'a str,
    pub order: &'static str,
}

#[derive(Debug, Serialize)]
pub struct RunJson<'a> {
    pub tag: &'a str,
    pub params: &'a BTreeMap<String, String>,
    pub verdict: Option<&'a str>,
    pub seconds: Option<u64>,
    pub restarts: Option<u32>,
    pub epochs_done: Option<u32>,
    #[serde(rename = "final")]
    pub last: Option<&'a BTreeMap<String, f64>>,
    pub best: Option<&'a BTreeMap<String, f64>>,
    pub curve: Option<&'a Curve>,
    /// What the run held (`metrics/cost.rs`).
    pub cost: Option<crate::metrics::cost::Cost>,
}

pub fn to_json<'a>(
    runs: &'a [Compared],
    experiment: Option<&'a str>,
    by: Option<&'a SortBy>,
    best: Option<&'a str>,
) -> CompareJson<'a> {
    CompareJson {
        experiment,
        sort: by.map(|b| SortJson {
            metric: &b.metric,
            order: b.order(),
        }),
        best,
        runs: runs
            .iter()
            .map(|r| {
                let m = r.metrics.as_ref();
                RunJson {
                    tag: &r.tag,
                    params: &r.params,
                    verdict: r.verdict.as_deref(),
                    seconds: m.and_then(|m| m.secs),
                    restarts: m.map(|m| m.restarts),
                    epochs_done: m.map(|m| m.epochs_done),
                    last: m.map(|m| &m.last),
                    best: m.map(|m| &m.best),
                    curve: m.map(|m| &m.curve),
                    cost: m.and_then(|m| m.cost),
                }
            })
            .collect(),
        left_out: None,
    }
}

/// `compare -o csv`: a header, then a row per run: tag, every parameter as
/// `param.NAME` (apart from the results: a parameter `epochs` is `param.epochs`),
/// verdict, seconds, restarts, epochs, `final_NAME` and `best_NAME` of every metric,
/// the task-seconds and GPU-seconds the run held, `best` (`true` for the best run).
pub fn to_csv(runs: &[Compared], best: Option<&str>) -> String {
    let params: BTreeSet<&String> = runs.iter().flat_map(|r| r.params.keys()).collect();
    let metrics = metric_names(runs, None);
    let mut header = vec!["tag".to_string()];
    header.extend(params.iter().map(|p| format!("param.{p}")));
    header.extend(["verdict", "seconds", "restarts", "epochs"].map(String::from));
    header.extend(metrics.iter().map(|m| format!("final_{m}")));
    header.extend(metrics.iter().map(|m| format!("best_{m}")));
    header.extend(["task_seconds", "gpu_seconds"].map(String::from));
    header.push("best".into());
    let mut out = csv_line(&header);
    for r in runs {
        let m = r.metrics.as_ref();
        let opt = |v: Option<String>| v.unwrap_or_default();
        let mut row = vec![r.tag.clone()];
        row.extend(params.iter().map(|p| opt(r.params.get(*p).cloned())));
        row.push(opt(r.verdict.clone()));
        row.push(opt(m.and_then(|m| m.secs).map(|s| s.to_string())));
        row.push(opt(m.map(|m| m.restarts.to_string())));
        row.push(opt(m.map(|m| m.epochs_done.to_string())));
        for map in [m.map(|m| &m.last), m.map(|m| &m.best)] {
            row.extend(
                metrics
                    .iter()
                    .map(|n| opt(map.and_then(|x| x.get(n)).map(|v| v.to_string()))),
            );
        }
        let cost = m.and_then(|m| m.cost).map(|c| c.total);
        row.push(opt(cost.map(|c| c.task_seconds.to_string())));
        row.push(opt(cost.map(|c| c.gpu_seconds.to_string())));
        row.push((best == Some(r.tag.as_str())).to_string());
        out.push_str(&csv_line(&row));
    }
    out
}

/// One CSV record (RFC 4180: a field with a comma, quote or line end is quoted), each
/// field [`inert`].
fn csv_line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| inert(f))
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.into_owned()
            }
        })
        .collect();
    quoted.join(",") + "\n"
}

/// A field a spreadsheet would take for a formula (it starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return: a parameter's value or a metric's name from the cluster,
/// `=HYPERLINK(…)`) prefixed with `'`, as OWASP's CSV injection advice says; a number
/// (`-0.5`) is left as it is: it is no formula.
pub fn inert(field: &str) -> std::borrow::Cow<'_, str> {
    let risky = field.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && field.parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{field}"))
    } else {
        std::borrow::Cow::Borrowed(field)
    }
}
