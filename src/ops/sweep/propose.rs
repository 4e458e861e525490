//! `sweep --method tpe`: the sweep's model-based search between its runs and the
//! proposer (`metrics/tpe.rs`, pure). It keeps what each run is worth to the model: the
//! objective's last value each run printed (an epoch's end, else its last metrics), and
//! how the runs that ended ended; a run stopped early counts with its last rung's value
//! (early stopping's observation), a failed one (or one that printed no objective) as
//! the worst, one under way as the constant liar. Each proposed point is written into
//! the experiment's record (its runs) before its run is created, and each ended run's
//! value with its verdict, so that `--resume` replays the points and proposes the
//! others from the same runs.

use std::collections::BTreeMap;

use crate::metrics::tpe::{self, Outcome, Trial};
use crate::plan::sweep::{ExperimentRecord, Method, PlannedRun, Point, point_text, run_tag};
use crate::progress::Seen;

use super::early::Early;

/// What an unproposed run shows for each parameter until its point is chosen.
const UNCHOSEN: &str = "…";

/// How a run ended, as the search takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Succeeded,
    StoppedEarly,
    Failed,
}

/// A sweep's model-based search.
pub(crate) struct Search {
    /// The record as its `experiment.json` holds it: the runs proposed so far.
    record: ExperimentRecord,
    seed: u64,
    samples: u32,
    lower: bool,
    metric: String,
    /// The objective's last value each run printed.
    last: BTreeMap<String, f64>,
    /// The runs that ended, as the model takes them.
    ended: BTreeMap<String, Outcome>,
}

impl Search {
    /// The record's search, if it is a model-based one (with an objective, which the
    /// sweep requires); the runs that ended before (`--resume`) taken from its
    /// verdicts and values.
    pub fn of(record: &ExperimentRecord) -> Option<Search> {
        let Method::Tpe { samples, seed, .. } = record.method else {
            return None;
        };
        let objective = record.objective.clone()?;
        let ended = record
            .ended
            .keys()
            .map(|tag| {
                let outcome = record
                    .values
                    .get(tag)
                    .map_or(Outcome::Failed, |v| Outcome::Value(*v));
                (tag.clone(), outcome)
            })
            .collect();
        let mut own = record.clone();
        own.ended.clear();
        own.observed.clear();
        own.values.clear();
        Some(Search {
            record: own,
            seed,
            samples,
            lower: objective.lower,
            metric: objective.metric,
            last: BTreeMap::new(),
            ended,
        })
    }

    /// Every run of the search: those recorded with their points, the others (to be
    /// proposed) with [`UNCHOSEN`] values.
    pub fn runs(&self, recorded: Vec<(String, Point)>) -> Vec<(String, Point)> {
        let mut runs = recorded;
        let unchosen: Point = (self.record.params.iter())
            .map(|p| (p.name.clone(), UNCHOSEN.to_string()))
            .collect();
        for i in runs.len()..self.samples as usize {
            runs.push((run_tag(&self.record.name, i), unchosen.clone()));
        }
        runs
    }

    /// Whether run `index`'s point is still to be proposed.
    pub fn unchosen(&self, index: usize) -> bool {
        index >= self.record.runs.len()
    }

    /// A run's training seen: its objective's last value kept.
    pub fn seen(&mut self, seen: &Seen) {
        let Seen::Training { tag, training } = seen else {
            return;
        };
        let printed = (training.epoch_metrics.iter())
            .chain(&training.metrics)
            .find(|(name, v)| *name == self.metric && v.is_finite());
        if let Some((_, v)) = printed {
            self.last.insert(tag.clone(), *v);
        }
    }

    /// Run `tag` ended: how the model takes it, and the value to record with its
    /// verdict.
    pub fn ended(&mut self, tag: &str, how: How, early: Option<&Early>) -> Option<f64> {
        let value = match how {
            How::Succeeded => self.last.get(tag).copied(),
            How::StoppedEarly => early
                .and_then(|e| e.last_observed(tag))
                .or_else(|| self.last.get(tag).copied()),
            How::Failed => None,
        };
        let outcome = value.map_or(Outcome::Failed, Outcome::Value);
        self.ended.insert(tag.to_string(), outcome);
        value
    }

    /// Run `index`'s point, from the runs before it in the record's order (those that
    /// ended as they ended, the others under way); the record to write before the run
    /// is created (its `experiment.json`), and the line that says it.
    pub fn propose(&mut self, index: usize) -> (Point, String, String) {
        // The record's runs as points, in the parameters' order.
        let points: Vec<(&str, Point)> = (self.record.runs.iter())
            .map(|run| {
                let point = (self.record.params.iter())
                    .filter_map(|p| Some((p.name.clone(), run.params.get(&p.name)?.clone())))
                    .collect();
                (run.tag.as_str(), point)
            })
            .collect();
        let trials: Vec<Trial<'_>> = points
            .iter()
            .map(|(tag, point)| Trial {
                point,
                outcome: self.ended.get(*tag).copied().unwrap_or(Outcome::Running),
            })
            .collect();
        let point = tpe::propose(&self.record.params, self.lower, (self.seed, index), &trials);
        let ended = trials
            .iter()
            .filter(|t| t.outcome != Outcome::Running)
            .count();
        let tag = run_tag(&self.record.name, index);
        let line = format!(
            "run {tag}: {} proposed by tpe from {ended} ended and {} running runs",
            point_text(&point),
            trials.len() - ended
        );
        self.record.runs.push(PlannedRun {
            tag,
            params: point.iter().cloned().collect(),
        });
        let text = serde_json::to_string(&self.record).unwrap_or_default();
        (point, text, line)
    }

    /// The parameters searched.
    #[cfg(test)]
    pub fn params(&self) -> &[crate::plan::sweep::Param] {
        &self.record.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::early::Objective;
    use crate::plan::sweep::{expand, parse_param};

    fn record() -> ExperimentRecord {
        let params = vec![parse_param("x=0..1").unwrap()];
        let method = Method::Tpe {
            samples: 6,
            seed: 4,
            startup: 3,
        };
        let points = expand(&params, method);
        let mut r: ExperimentRecord = serde_json::from_str(
            r#"{"name":"t","params":[],"method":"grid","parallel":null,"runs":[]}"#,
        )
        .unwrap();
        r.runs = ExperimentRecord::planned(&points, "t");
        r.params = params;
        r.method = method;
        r.objective = Some(Objective::parse("val_loss").unwrap());
        r
    }

    #[test]
    fn a_resumed_search_proposes_what_the_first_one_did() {
        let mut first = Search::of(&record()).unwrap();
        assert_eq!(first.params().len(), 1);
        let runs = first.runs(crate::ops::sweep::points(&record()));
        assert_eq!(runs.len(), 6);
        assert!(first.unchosen(3) && !first.unchosen(2));
        assert_eq!(runs[4].1[0].1, UNCHOSEN);
        for (tag, v) in [("t-1", 0.5), ("t-2", 0.2)] {
            first.last.insert(tag.into(), v);
            assert_eq!(first.ended(tag, How::Succeeded, None), Some(v));
        }
        assert_eq!(first.ended("t-3", How::Failed, None), None);
        let (point, text, line) = first.propose(3);
        assert!(line.starts_with("run t-4: x="), "{line}");
        assert!(line.ends_with("from 3 ended and 0 running runs"), "{line}");
        // The record as written, with the verdicts and values as their keys keep them.
        let mut back: ExperimentRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.runs.len(), 4);
        back.ended = [
            ("t-1", "Succeeded"),
            ("t-2", "Succeeded"),
            ("t-3", "Failed: x"),
        ]
        .map(|(t, v)| (t.to_string(), v.to_string()))
        .into();
        back.values = [("t-1".to_string(), 0.5), ("t-2".to_string(), 0.2)].into();
        let mut again = Search::of(&back).unwrap();
        assert!(!again.unchosen(3) && again.unchosen(4));
        let mut first_next = first;
        assert_eq!(again.propose(4).0, first_next.propose(4).0);
        assert_eq!(point.len(), 1);
    }

    #[test]
    fn a_run_stopped_early_counts_with_its_last_rung_value() {
        use crate::metrics::early::{Rule, Stopping};
        let mut r = record();
        r.early_stop = Some(Stopping {
            rule: Rule::Asha,
            eta: 3,
            min_epochs: 1,
        });
        r.observed.insert("t-1".into(), [(1, 0.9), (3, 0.7)].into());
        let early = Early::of(&r).unwrap();
        let mut search = Search::of(&r).unwrap();
        // Printed later than the rung, before its stop took effect.
        search.last.insert("t-1".into(), 0.65);
        let value = search.ended("t-1", How::StoppedEarly, Some(&early));
        assert_eq!(value, Some(0.7));
        assert_eq!(search.ended["t-1"], Outcome::Value(0.7));
        // No observation: its last value printed; none: the worst.
        search.last.insert("t-2".into(), 0.4);
        assert_eq!(
            search.ended("t-2", How::StoppedEarly, Some(&early)),
            Some(0.4)
        );
        assert_eq!(search.ended("t-3", How::Succeeded, None), None);
        assert_eq!(search.ended["t-3"], Outcome::Failed);
    }
}
