//! What an experiment's end says of its runs (pure): the best run, by the metric and
//! order `compare` sorts by without `--sort` (`table::SortBy::default_for`: `val_loss`,
//! else `loss`, else the first; lowest first for a loss-like name), chosen as `compare`
//! marks it (`table::sort`: the first run that succeeded, else the first with the
//! metric), or by the sweep's `--objective`; and what every run held. The sweep's last line and its notice tell them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::cost::Cost;
use super::early::Objective;
use super::number;
use super::table::{self, Compared, SortBy};

/// Metrics a winner's line names: the one it won by, then its others' final values.
const SHOWN: usize = 3;

/// The best run of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Winner {
    pub tag: String,
    pub params: BTreeMap<String, String>,
    /// The metric it is best by, the order (`ascending`: lowest first) and its value
    /// (the run's best over its epochs, as `compare` ranks).
    pub metric: String,
    pub order: &'static str,
    pub value: f64,
    pub verdict: Option<String>,
    /// The run's time: from its first task's start to the deciding task's end.
    pub duration_seconds: Option<u64>,
    pub epochs_done: u32,
    /// Each metric's value at the last epoch's end.
    pub metrics: BTreeMap<String, f64>,
    /// What it held.
    pub cost: Option<Cost>,
}

/// An experiment's end as its runs' records tell it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Results {
    pub best: Option<Winner>,
    /// What every run held, added up; `None` when no run recorded it.
    pub cost: Option<Cost>,
}

impl Results {
    /// The best of `runs` (none when no run recorded a metric) and their cost; the best
    /// by the experiment's `objective` when it has one (as `compare` ranks them then).
    pub fn judged(mut runs: Vec<Compared>, objective: Option<&Objective>) -> Results {
        let cost = runs
            .iter()
            .filter_map(|r| r.metrics.as_ref()?.cost)
            .reduce(|a, b| a.plus(&b));
        let by = match objective {
            Some(o) => Some(SortBy {
                metric: o.metric.clone(),
                lower_first: o.lower,
            }),
            None => SortBy::default_for(&runs),
        };
        let best = table::sort(&mut runs, by.as_ref()).and_then(|tag| {
            let by = by?;
            let run = runs.into_iter().find(|r| r.tag == tag)?;
            let m = run.metrics?;
            Some(Winner {
                value: *m.best.get(&by.metric)?,
                order: by.order(),
                metric: by.metric,
                tag: run.tag,
                params: run.params,
                verdict: run.verdict,
                duration_seconds: m.secs,
                epochs_done: m.epochs_done,
                metrics: m.last,
                cost: m.cost,
            })
        });
        Results { best, cost }
    }
}

impl Winner {
    /// `ex-2 (lr=0.01): val_loss 0.031, accuracy 0.98, 2m 5s, held 0.02 task-hours`:
    /// the metric it won by (its best), its other final metrics, its time and cost.
    pub fn line(&self) -> String {
        let mut line = self.tag.clone();
        if !self.params.is_empty() {
            let params: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            line.push_str(&format!(" ({})", params.join(" ")));
        }
        let mut shown = vec![format!("{} {}", self.metric, number(self.value))];
        shown.extend(
            self.metrics
                .iter()
                .filter(|(name, _)| **name != self.metric)
                .take(SHOWN - 1)
                .map(|(name, v)| format!("{name} {}", number(*v))),
        );
        line.push_str(&format!(": {}", shown.join(", ")));
        if let Some(s) = self.duration_seconds {
            let took = humantime::format_duration(std::time::Duration::from_secs(s));
            line.push_str(&format!(", {took}"));
        }
        if let Some(c) = &self.cost {
            line.push_str(&format!(", {}", c.held()));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunMetrics;
    use crate::metrics::cost::Held;

    fn run(tag: &str, verdict: &str, val_loss: f64, loss: f64, task_seconds: u64) -> Compared {
        let mut m = RunMetrics {
            epochs_done: 2,
            secs: Some(125),
            cost: Some(Cost {
                total: Held {
                    task_seconds,
                    gpu_seconds: 0,
                },
                training: Held {
                    task_seconds,
                    gpu_seconds: 0,
                },
                ..Cost::default()
            }),
            ..RunMetrics::default()
        };
        m.last.insert("val_loss".into(), val_loss + 0.01);
        m.last.insert("loss".into(), loss);
        m.best.insert("val_loss".into(), val_loss);
        m.best.insert("loss".into(), loss);
        Compared {
            tag: tag.into(),
            experiment: Some("ex".into()),
            params: BTreeMap::from([("lr".to_string(), tag.replace("ex-", "0."))]),
            verdict: Some(verdict.into()),
            metrics: Some(m),
            followed_by: None,
        }
    }

    #[test]
    fn the_winner_is_compares_best_by_val_loss_and_a_failed_run_is_not_chosen() {
        let runs = vec![
            run("ex-1", "Succeeded", 0.5, 0.4, 3600),
            run("ex-2", "Failed: worker-0 exited 1", 0.1, 0.1, 1800),
            run("ex-3", "Succeeded", 0.3, 0.35, 1800),
        ];
        let by_loss = Results::judged(runs.clone(), Objective::parse("loss").ok().as_ref());
        assert_eq!(by_loss.best.unwrap().metric, "loss");
        let r = Results::judged(runs, None);
        let best = r.best.unwrap();
        assert_eq!(best.tag, "ex-3");
        assert_eq!(
            (best.metric.as_str(), best.order),
            ("val_loss", "ascending")
        );
        assert_eq!(best.value, 0.3);
        assert_eq!(
            best.line(),
            "ex-3 (lr=0.3): val_loss 0.3, loss 0.35, 2m 5s, held 0.50 task-hours"
        );
        // Every run's time held, added up.
        assert_eq!(r.cost.unwrap().total.task_seconds, 7200);
    }

    #[test]
    fn without_metrics_there_is_no_winner() {
        let r = Results::judged(
            vec![Compared {
                tag: "ex-1".into(),
                ..Compared::default()
            }],
            None,
        );
        assert_eq!(r, Results::default());
    }
}
