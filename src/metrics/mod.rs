//! A run's metrics as its record keeps them (pure): what the progress reader
//! (`trainlog`) read from the deciding task's output, at the run's verdict and at each
//! restart, written as one compact JSON annotation on the run's ConfigMap
//! (`labels::METRICS_ANNOTATION`) so that `list` and `compare` read them with the run's
//! metadata, in one request for any number of runs, never a log.
//!
//! Bounds: at most [`HISTORY_METRICS`] metrics, names of at most [`NAME_CHARS`]
//! characters, the per-epoch curve of at most 2,048 epochs (a longer run
//! keeps every 2nd, 4th… epoch, `trainlog::history`), values to 6 significant digits,
//! and the whole annotation at most [`MAX_BYTES`] (the curve thinned again until it
//! fits): the API server takes at most 256 KiB of annotations per object.
//! `--local` runs keep the same JSON as `metrics.json` in their output folder.

pub(crate) mod chart;
pub(crate) mod cost;
pub(crate) mod early;
pub(crate) mod notice;
pub(crate) mod table;
pub(crate) mod tpe;
pub(crate) mod winner;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::trainlog::Training;
pub use crate::trainlog::history::{HISTORY_METRICS, HISTORY_POINTS, lower_is_better};

/// The largest metrics record written, in bytes.
pub const MAX_BYTES: usize = 64 * 1024;
/// The largest metrics record read back, in bytes: the API server's bound on all of an
/// object's annotations (the writer's is [`MAX_BYTES`], but for a record whose curve is
/// thinned away, its verdict's line).
pub const MAX_READ: usize = 256 * 1024;
/// The longest metric name kept.
pub const NAME_CHARS: usize = 100;
/// The file of a `--local` run's metrics, in its output folder.
pub const METRICS_FILE: &str = "metrics.json";
/// The file of a `--local` sweep's run's parameters, in its output folder (the sweep
/// writes it: the same JSON as `labels::PARAMS_ANNOTATION`).
pub const PARAMS_FILE: &str = "params.json";
/// The file of a `--local` sweep's record, in the experiment's own output folder (which
/// is not a run's).
pub const SWEEP_RECORD_FILE: &str = "experiment.json";

/// Parameters as the sweep records them: a JSON object of name to value as text (a
/// value that is not text is kept as its JSON); nothing when it is not one.
pub fn params(text: &str) -> BTreeMap<String, String> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).unwrap_or_default();
    object
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k, s),
            v => (k, v.to_string()),
        })
        .collect()
}

/// What a run's training printed, as its record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Epochs seen to end, and the number the training announced (`Epoch k/N`).
    pub epochs_done: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secs_per_epoch: Option<f64>,
    /// The run's time: from its first task's start to the deciding task's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secs: Option<u64>,
    /// The restarts made (`wait --restarts`): the attempt these metrics end with.
    #[serde(default)]
    pub restarts: u32,
    /// Each metric's value at the last epoch's end, and its best over every epoch.
    #[serde(rename = "final", default)]
    pub last: BTreeMap<String, f64>,
    #[serde(default)]
    pub best: BTreeMap<String, f64>,
    #[serde(default)]
    pub curve: Curve,
    /// A `--local` run's verdict (`Succeeded`, `Failed: …`), in its `metrics.json`; a
    /// cluster run's is its record's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// What the run held (`cost.rs`): task- and GPU-seconds, and where they went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<cost::Cost>,
}

/// The metrics per epoch: `epoch[i]`'s values are `metrics[name][i]` (null: not printed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub epoch: Vec<u32>,
    pub metrics: BTreeMap<String, Vec<Option<f64>>>,
}

/// `v` to 6 significant digits; `None` if it is no number JSON holds.
fn round(v: f64) -> Option<f64> {
    v.is_finite()
        .then(|| format!("{v:.5e}").parse().unwrap_or(v))
}

fn name(n: &str) -> String {
    n.chars().take(NAME_CHARS).collect()
}

impl RunMetrics {
    /// The record of `training`; `None` when it printed no epoch's end nor a metric.
    pub fn of(training: &Training, secs: Option<u64>, restarts: u32) -> Option<RunMetrics> {
        let h = &training.history;
        let last_metrics = if training.epoch_metrics.is_empty() {
            &training.metrics
        } else {
            &training.epoch_metrics
        };
        if training.epochs_done == 0 && last_metrics.is_empty() && h.points.is_empty() {
            return None;
        }
        let values = |pairs: &[(String, f64)]| -> BTreeMap<String, f64> {
            pairs
                .iter()
                .take(HISTORY_METRICS)
                .filter_map(|(n, v)| Some((name(n), round(*v)?)))
                .collect()
        };
        let mut curve = Curve {
            epoch: h.points.iter().map(|p| p.0).collect(),
            metrics: BTreeMap::new(),
        };
        for (i, n) in h.names.iter().enumerate() {
            let column = h.points.iter().map(|p| p.1.get(i).copied().and_then(round));
            curve.metrics.insert(name(n), column.collect());
        }
        Some(RunMetrics {
            epochs_done: training.epochs_done,
            epochs: training.epochs,
            secs_per_epoch: training.secs_per_epoch().and_then(round),
            secs,
            restarts,
            last: values(last_metrics),
            best: values(&h.best),
            curve,
            verdict: None,
            cost: None,
        })
    }

    /// The record as the annotation's text: compact JSON of at most [`MAX_BYTES`].
    pub fn to_text(&self) -> String {
        let mut m = self.clone();
        loop {
            let text = serde_json::to_string(&m).unwrap_or_default();
            if text.len() <= MAX_BYTES || m.curve.epoch.is_empty() {
                return text;
            }
            m.curve.thin();
        }
    }

    /// A record read back; `None` if it is not one. Bounded as the writer bounds it (an
    /// editor of the namespace may write the annotation, a `--local` run's script the
    /// file): at most [`MAX_READ`] bytes, then [`HISTORY_METRICS`] metrics of names of
    /// [`NAME_CHARS`], a curve of [`HISTORY_POINTS`] epochs, a verdict of a line.
    pub fn parse(text: &str) -> Option<RunMetrics> {
        if text.len() > MAX_READ {
            return None;
        }
        let mut m: RunMetrics = serde_json::from_str(text).ok()?;
        let names = |map: &mut BTreeMap<String, f64>| {
            *map = std::mem::take(map)
                .into_iter()
                .take(HISTORY_METRICS)
                .map(|(n, v)| (name(&n), v))
                .collect();
        };
        names(&mut m.last);
        names(&mut m.best);
        m.curve.epoch.truncate(HISTORY_POINTS);
        let epochs = m.curve.epoch.len();
        m.curve.metrics = std::mem::take(&mut m.curve.metrics)
            .into_iter()
            .take(HISTORY_METRICS)
            .map(|(n, mut column)| {
                column.resize(epochs, None);
                (name(&n), column)
            })
            .collect();
        if let Some(v) = &mut m.verdict {
            *v = v
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(500)
                .collect();
        }
        Some(m)
    }

    /// The metrics of an attempt after a restart, `self` being the earlier attempts':
    /// the curve's epochs before the new attempt's first are kept, the best is over both.
    pub fn then(&self, next: &RunMetrics) -> RunMetrics {
        let first = next.curve.epoch.first().copied();
        let keep = self
            .curve
            .epoch
            .iter()
            .take_while(|e| first.is_none_or(|f| **e < f))
            .count();
        let mut curve = Curve {
            epoch: self.curve.epoch[..keep].to_vec(),
            metrics: BTreeMap::new(),
        };
        curve.epoch.extend(&next.curve.epoch);
        let names = self.curve.metrics.keys().chain(next.curve.metrics.keys());
        for n in names {
            let before = self.curve.metrics.get(n).map(|v| &v[..keep.min(v.len())]);
            let mut column: Vec<Option<f64>> = before.map_or(vec![None; keep], <[_]>::to_vec);
            match next.curve.metrics.get(n) {
                Some(after) => column.extend(after),
                None => column.extend(std::iter::repeat_n(None, next.curve.epoch.len())),
            }
            curve.metrics.insert(n.clone(), column);
        }
        let mut best = self.best.clone();
        for (n, v) in &next.best {
            let better = |old: &f64| if lower_is_better(n) { v < old } else { v > old };
            if best.get(n).is_none_or(better) {
                best.insert(n.clone(), *v);
            }
        }
        let before = first.map_or(self.epochs_done, |f| f.saturating_sub(1));
        RunMetrics {
            epochs_done: before.saturating_add(next.epochs_done),
            secs: match (self.secs, next.secs) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => b.or(a),
            },
            best,
            curve,
            ..next.clone()
        }
    }

    /// The metric `list` shows: `val_loss`, else `loss`, else the first.
    pub fn headline(&self) -> Option<(&str, f64)> {
        let name = objective(self.last.keys().map(String::as_str))?;
        self.last.get_key_value(name).map(|(n, v)| (n.as_str(), *v))
    }
}

impl Curve {
    /// Every other epoch dropped (the first kept).
    fn thin(&mut self) {
        let keep = |i: usize| i.is_multiple_of(2);
        self.epoch = self
            .epoch
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, e)| *e)
            .collect();
        for column in self.metrics.values_mut() {
            *column = column
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, v)| *v)
                .collect();
        }
    }

    /// The points of metric `name`: (epoch, value) where printed.
    pub fn series(&self, name: &str) -> Vec<(u32, f64)> {
        let Some(column) = self.metrics.get(name) else {
            return Vec::new();
        };
        self.epoch
            .iter()
            .zip(column)
            .filter_map(|(e, v)| Some((*e, (*v)?)))
            .collect()
    }
}

/// The metric a run is judged by when nobody says (`compare`'s sort, `list`'s
/// column, the sweep's view): `val_loss`, else `loss`, else the first of `names`.
pub fn objective<'a>(names: impl Iterator<Item = &'a str> + Clone) -> Option<&'a str> {
    ["val_loss", "loss"]
        .into_iter()
        .find(|n| names.clone().any(|m| m == *n))
        .or_else(|| names.clone().next())
}

/// A number as tables show it: 4 significant digits, plain where that reads well.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = if a == 0.0 {
        0
    } else {
        a.log10().floor() as i32
    };
    let decimals = (3 - digits).clamp(0, 6) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests;
