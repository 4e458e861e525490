//! A sweep's early stopping, between its runs' training (what each run's wait sees of
//! it) and the rule (`metrics/early.rs`, pure): each value the rule reads is an
//! observation, written to the experiment's record with the decision it leads to
//! *before* the decision is carried out; the decision goes to the run's wait
//! ([`crate::ops::wait::Wait::early`]), which stops the run as after a verdict. On
//! `--resume` the record's observations and decisions are taken back: no run is judged
//! twice at an epoch, none stopped twice.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::watch;

use crate::metrics::early::{Board, Decision, STOPPED_EARLY};
use crate::output;
use crate::plan::sweep::ExperimentRecord;
use crate::trainlog::Training;

/// What one reading of a run's training brings: the observations to write (epoch,
/// value) and the decision to write and carry out, if any.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Reading {
    pub observed: Vec<(u32, f64)>,
    pub decision: Option<Decision>,
}

impl Reading {
    pub fn is_empty(&self) -> bool {
        self.observed.is_empty() && self.decision.is_none()
    }
}

/// The sweep's early stopping: its board and each run's channel to its wait.
pub(crate) struct Early {
    board: Board,
    decisions: BTreeMap<String, watch::Sender<Option<String>>>,
    /// Runs that printed an epoch's end, and those that printed the objective at one.
    epochs: BTreeSet<String>,
    judged: BTreeSet<String>,
    said: bool,
}

/// The line a recorded verdict of a run stopped early holds.
pub(crate) fn recorded_stop(verdict: &str) -> Option<&str> {
    verdict
        .strip_prefix(STOPPED_EARLY)
        .map(|rest| rest.trim_start_matches(':').trim())
}

impl Early {
    /// The record's rule, observations and runs stopped; `None` when early stopping is
    /// off (or the record has no objective, which a sweep refuses before).
    pub fn of(record: &ExperimentRecord) -> Option<Early> {
        let stopping = record.early_stop?;
        let mut board = Board::new(stopping, record.objective.clone()?);
        for (tag, seen) in &record.observed {
            for (epoch, value) in seen {
                board.restore(tag, *epoch, *value);
            }
        }
        for (tag, verdict) in &record.ended {
            if recorded_stop(verdict).is_some() {
                board.stopped(tag);
            }
        }
        Some(Early {
            board,
            decisions: BTreeMap::new(),
            epochs: BTreeSet::new(),
            judged: BTreeSet::new(),
            said: false,
        })
    }

    /// The rule in one line, said once at the sweep's start.
    pub fn about(&self) -> String {
        self.board.stopping.about(&self.board.objective)
    }

    /// Run `tag`'s last observation (`sweep --method tpe`'s value of a run stopped).
    pub fn last_observed(&self, tag: &str) -> Option<f64> {
        self.board.last(tag)
    }

    pub fn metric(&self) -> &str {
        &self.board.objective.metric
    }

    /// The channel run `tag`'s wait listens on; holding the decision already when the
    /// record has one (`recorded`: a `--resume` after the decision, before the stop).
    pub fn channel(
        &mut self,
        tag: &str,
        recorded: Option<&str>,
    ) -> watch::Receiver<Option<String>> {
        let (tx, rx) = watch::channel(recorded.map(str::to_string));
        self.decisions.insert(tag.to_string(), tx);
        rx
    }

    /// What run `tag`'s training brings that the rule has not read yet: each epoch's
    /// end whose objective value the rule reads, in order, up to a decision to stop.
    pub fn read(&mut self, tag: &str, training: &Training) -> Reading {
        let mut reading = Reading::default();
        let history = &training.history;
        if !history.points.is_empty() {
            self.epochs.insert(tag.to_string());
        }
        let Some(at) = history.names.iter().position(|n| n == self.metric()) else {
            return reading;
        };
        for (epoch, values) in &history.points {
            let Some(value) = values.get(at).copied().filter(|v| v.is_finite()) else {
                continue;
            };
            self.judged.insert(tag.to_string());
            if !self.board.wants(tag, *epoch, value) {
                continue;
            }
            reading.observed.push((*epoch, value));
            reading.decision = self.board.observe(tag, (*epoch, training.epochs), value);
            if reading.decision.is_some() {
                break;
            }
        }
        reading
    }

    /// The record's keys for a reading (`observed.TAG.EPOCH`, `ended.TAG`).
    pub fn keys(&self, tag: &str, reading: &Reading) -> BTreeMap<String, String> {
        use crate::cluster::experiment::{ended_key, observed_key};
        let mut data: BTreeMap<String, String> = reading
            .observed
            .iter()
            .map(|(e, v)| (observed_key(tag, *e), v.to_string()))
            .collect();
        if let Some(d) = &reading.decision {
            data.insert(ended_key(tag), self.verdict(d));
        }
        data
    }

    /// The verdict a decision records: `StoppedEarly: LINE`.
    pub fn verdict(&self, decision: &Decision) -> String {
        format!("{STOPPED_EARLY}: {}", decision.line(self.metric()))
    }

    /// Carries the decision out, once recorded: its line printed, the run's wait told.
    pub fn act(&mut self, decision: &Decision) {
        let line = decision.line(self.metric());
        let _ = output::print(&format!("{line}\n"));
        if let Some(tx) = self.decisions.get(&decision.tag) {
            tx.send_replace(Some(line));
        }
    }

    /// Run `tag` ended: if it never printed the objective at an epoch's end, said once
    /// for the sweep (such a run is never stopped early).
    pub fn ended(&mut self, tag: &str) {
        if self.said || self.judged.contains(tag) {
            return;
        }
        self.said = true;
        let metric = self.metric().to_string();
        let what = if self.epochs.contains(tag) {
            format!("printed no {metric} at an epoch's end")
        } else {
            "printed no epoch lines (Keras' Epoch k/N and its end, or tf-spawner's own: docs/progress.md)".to_string()
        };
        output::note(&format!(
            "run {tag} {what}: early stopping never stops a run it cannot judge by {metric} (said once)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::early::{Objective, Rule, Stopping};

    fn record() -> ExperimentRecord {
        let mut r: ExperimentRecord = serde_json::from_str(
            r#"{"name":"e","params":[],"method":"grid","parallel":null,"runs":[]}"#,
        )
        .unwrap();
        r.objective = Some(Objective::parse("val_loss").unwrap());
        r.early_stop = Some(Stopping {
            rule: Rule::Asha,
            eta: 2,
            min_epochs: 1,
        });
        r
    }

    fn training(values: &[f64]) -> Training {
        let mut t = Training::default();
        for (i, v) in values.iter().enumerate() {
            t.history
                .push(i as u32 + 1, &[("val_loss".to_string(), *v)]);
        }
        t.epochs = Some(10);
        t
    }

    #[test]
    fn readings_follow_the_rungs_and_a_resume_judges_nobody_twice() {
        let mut early = Early::of(&record()).unwrap();
        let a = early.read("e-1", &training(&[0.5, 0.4, 0.3]));
        // Rungs at 1, 2, 4 (η 2): epochs 1 and 2 read, 3 not a rung.
        assert_eq!(a.observed, [(1, 0.5), (2, 0.4)]);
        assert!(early.read("e-1", &training(&[0.5, 0.4, 0.3])).is_empty());
        let b = early.read("e-2", &training(&[0.9]));
        let d = b
            .decision
            .clone()
            .expect("stopped: 2 runs, the 1st best is 0.5");
        let keys = early.keys("e-2", &b);
        assert_eq!(keys["observed.e-2.1"], "0.9");
        assert_eq!(keys["ended.e-2"], early.verdict(&d));
        // The record read back: e-2 is stopped, e-1's rungs are known.
        let mut back = record();
        back.observed
            .insert("e-1".into(), [(1, 0.5), (2, 0.4)].into());
        back.observed.insert("e-2".into(), [(1, 0.9)].into());
        back.ended.insert("e-2".into(), early.verdict(&d));
        let mut again = Early::of(&back).unwrap();
        assert!(again.read("e-2", &training(&[0.9, 0.8])).is_empty());
        assert!(again.read("e-1", &training(&[0.5, 0.4])).is_empty());
        assert_eq!(
            recorded_stop(&back.ended["e-2"]),
            Some(d.line("val_loss").as_str())
        );
    }
}
