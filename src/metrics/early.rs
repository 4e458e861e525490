//! Early stopping of a sweep's losing runs (pure: no I/O). A sweep's objective
//! ([`Objective`], `--objective val_loss:min`) is read at the end of chosen epochs of
//! every run (its *observations*); a rule ([`Stopping`], `--early-stop`) says when a run
//! is behind the others by enough to stop it:
//!
//! - `asha`, ASHA's stopping rule (Li et al., MLSys 2020; Optuna's
//!   `SuccessiveHalvingPruner`, Ray Tune's `ASHAScheduler`): rungs at epochs
//!   `min_epochs·η^k` below the run's epoch count. When a run reaches a rung its value
//!   there is recorded; it is stopped if at least η runs have a value at that rung and
//!   its value is worse than the ⌈n/η⌉-th best of those n values (its own included).
//! - `median`, the median stopping rule (Vizier's, as Katib names it): at every epoch
//!   from `min_epochs` on, a run is stopped if its value is worse than the true median
//!   (not Katib's mean) of the other runs' values at that epoch, once at least
//!   [`MEDIAN_MIN_OTHERS`] others have one.
//!
//! Noise: the value compared is the run's value at that epoch's end, as every run's
//! (Optuna's and Ray's ASHA; W&B's `strict`): the same point of every curve, no
//! smoothing. A tie with the cut-off survives. A run judged once at an epoch is not
//! judged there again ([`Board::observe`] is idempotent), nor ever again once stopped.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lower_is_better;

/// `--eta`'s default: the reduction factor of Li et al. and W&B's Hyperband.
pub const DEFAULT_ETA: u32 = 3;
/// `--min-epochs`' default: the first rung at the first epoch's end.
pub const DEFAULT_MIN_EPOCHS: u32 = 1;
/// The median rule judges a run once this many other runs have a value at the epoch
/// (Katib's `min_trials_required`, Ray's `min_samples_required`: 3).
pub const MEDIAN_MIN_OTHERS: usize = 3;

/// The verdict of a run stopped early, as records keep it (`StoppedEarly: LINE`) and
/// `list`, `status` and `compare` show it.
pub const STOPPED_EARLY: &str = "StoppedEarly";

/// A run's end when a sweep's early stopping stopped it (the decision's line): done,
/// not failed (a wait's and a `--local` run's error, which the sweep tells apart).
#[derive(Debug)]
pub struct StoppedEarly(pub String);

impl std::fmt::Display for StoppedEarly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stopped early: {}", self.0)
    }
}

impl std::error::Error for StoppedEarly {}

/// `--early-stop`: which rule stops the losing runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// Every run trains to its end
    #[default]
    Off,
    /// ASHA's successive halving: at epochs min_epochs·η^k, stop a run outside the
    /// best 1/η of those that reached the epoch
    Asha,
    /// Stop a run worse than the median of the other runs at the same epoch
    Median,
}

impl Rule {
    /// The flag's and the defaults file's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Off => "off",
            Rule::Asha => "asha",
            Rule::Median => "median",
        }
    }
}

/// `--objective METRIC[:min|max]`: the metric the sweep is judged by, and its direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Objective {
    pub metric: String,
    /// Lower is better (`:min`; from the name when not given: a loss, an error).
    pub lower: bool,
}

impl Objective {
    /// `val_loss`, `val_loss:min`, `accuracy:max`.
    pub fn parse(text: &str) -> Result<Objective, String> {
        let (metric, lower) = match text.rsplit_once(':') {
            Some((m, "min")) => (m, Some(true)),
            Some((m, "max")) => (m, Some(false)),
            Some((_, other)) => {
                return Err(format!(
                    "{text:?}: the direction after ':' is min or max, not {other:?} (e.g. val_loss:min)"
                ));
            }
            None => (text, None),
        };
        let bad = |c: char| c.is_whitespace() || c.is_control() || c == ':';
        if metric.is_empty() || metric.chars().any(bad) || metric.chars().count() > 100 {
            return Err(format!(
                "{text:?} is not a metric name (e.g. val_loss, accuracy:max)"
            ));
        }
        Ok(Objective {
            metric: metric.to_string(),
            lower: lower.unwrap_or_else(|| lower_is_better(metric)),
        })
    }

    /// `val_loss:min`.
    pub fn text(&self) -> String {
        format!("{}:{}", self.metric, if self.lower { "min" } else { "max" })
    }

    /// Whether `a` is strictly worse than `b`.
    pub fn worse(&self, a: f64, b: f64) -> bool {
        if self.lower { a > b } else { a < b }
    }

    /// `values` best first.
    fn ranked(&self, mut values: Vec<f64>) -> Vec<f64> {
        values.sort_by(|a, b| {
            if self.lower {
                a.total_cmp(b)
            } else {
                b.total_cmp(a)
            }
        });
        values
    }
}

/// `--early-stop`, `--eta`, `--min-epochs`, as the record keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopping {
    pub rule: Rule,
    pub eta: u32,
    pub min_epochs: u32,
}

impl Stopping {
    /// ASHA's rung at epoch `epoch` (1 for `min_epochs`), if it is one.
    pub fn rung_of(&self, epoch: u32) -> Option<u32> {
        let (eta, mut at) = (
            u64::from(self.eta.max(2)),
            u64::from(self.min_epochs.max(1)),
        );
        let mut rung = 1;
        while at < u64::from(epoch) {
            at *= eta;
            rung += 1;
        }
        (at == u64::from(epoch)).then_some(rung)
    }

    /// ASHA's rungs of a run of `epochs` epochs: those below its last epoch.
    pub fn rungs(&self, epochs: u32) -> u32 {
        (1..epochs).filter(|e| self.rung_of(*e).is_some()).count() as u32
    }

    /// Whether the rule reads the objective at epoch `epoch`'s end.
    pub fn checks(&self, epoch: u32) -> bool {
        match self.rule {
            Rule::Off => false,
            Rule::Asha => self.rung_of(epoch).is_some(),
            Rule::Median => epoch >= self.min_epochs.max(1),
        }
    }

    /// The line the sweep prints once: the rule, its epochs and what is compared.
    pub fn about(&self, objective: &Objective) -> String {
        let better = if objective.lower { "lower" } else { "higher" };
        let what = format!(
            "{} at the epoch's end ({better} is better; the value at that epoch, not the best so far)",
            objective.metric
        );
        match self.rule {
            Rule::Off => "early stopping off".to_string(),
            Rule::Asha => {
                let m = u64::from(self.min_epochs.max(1));
                let e = u64::from(self.eta.max(2));
                format!(
                    "early stopping: asha, rungs at epochs {}, {}, {}, … (--min-epochs {m}, --eta {e}); at a rung a run outside the best 1/{e} of the runs there (once {e} are) stops; judged by {what}",
                    m,
                    m * e,
                    m * e * e
                )
            }
            Rule::Median => format!(
                "early stopping: median, at every epoch from {} on (--min-epochs); a run worse than the median of the other runs there (once {MEDIAN_MIN_OTHERS} are) stops; judged by {what}",
                self.min_epochs.max(1)
            ),
        }
    }
}

/// Why a run is stopped: what [`Decision::line`] says.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub tag: String,
    pub epoch: u32,
    pub value: f64,
    pub cutoff: f64,
    pub against: Against,
}

/// What the run's value was compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Against {
    /// ASHA: the `rank`-th best of `runs` runs at rung `rung` (of `rungs`, when the run's
    /// epochs are known).
    Rank {
        rank: usize,
        runs: usize,
        rung: u32,
        rungs: Option<u32>,
    },
    /// The median of `others` other runs.
    Median { others: usize },
}

impl Decision {
    /// `lr-4 stopped at epoch 3 (rung 2 of 4): val_loss 0.91, worse than 0.62, the 2nd
    /// best of 6 runs at epoch 3`.
    pub fn line(&self, metric: &str) -> String {
        let (tag, e) = (&self.tag, self.epoch);
        let (v, c) = (super::number(self.value), super::number(self.cutoff));
        match &self.against {
            Against::Rank {
                rank,
                runs,
                rung,
                rungs,
            } => {
                let of = rungs.map_or_else(String::new, |n| format!(" of {n}"));
                format!(
                    "{tag} stopped at epoch {e} (rung {rung}{of}): {metric} {v}, worse than {c}, the {} best of {runs} runs at epoch {e}",
                    ordinal(*rank)
                )
            }
            Against::Median { others } => format!(
                "{tag} stopped at epoch {e}: {metric} {v}, worse than {c}, the median of {others} other runs at epoch {e}"
            ),
        }
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
pub fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Every run's observations of the objective, by epoch, and the runs stopped.
#[derive(Debug, Clone)]
pub struct Board {
    pub stopping: Stopping,
    pub objective: Objective,
    /// Epoch → run → value at that epoch's end.
    observed: BTreeMap<u32, BTreeMap<String, f64>>,
    stopped: BTreeSet<String>,
}

impl Board {
    pub fn new(stopping: Stopping, objective: Objective) -> Board {
        Board {
            stopping,
            objective,
            observed: BTreeMap::new(),
            stopped: BTreeSet::new(),
        }
    }

    /// Whether run `tag`'s value at `epoch` is one the rule reads and has not read yet.
    pub fn wants(&self, tag: &str, epoch: u32, value: f64) -> bool {
        value.is_finite()
            && self.stopping.checks(epoch)
            && !self.stopped.contains(tag)
            && !self
                .observed
                .get(&epoch)
                .is_some_and(|m| m.contains_key(tag))
    }

    /// An observation read back from the record: kept, judged no more.
    pub fn restore(&mut self, tag: &str, epoch: u32, value: f64) {
        if value.is_finite() {
            self.observed
                .entry(epoch)
                .or_default()
                .insert(tag.to_string(), value);
        }
    }

    /// A run stopped (now, or before a `--resume`): never judged again.
    pub fn stopped(&mut self, tag: &str) {
        self.stopped.insert(tag.to_string());
    }

    /// Run `tag`'s value at the last epoch observed (a run stopped early: where it was
    /// stopped).
    pub fn last(&self, tag: &str) -> Option<f64> {
        self.observed
            .values()
            .rev()
            .find_map(|m| m.get(tag).copied())
    }

    #[cfg(test)]
    pub fn is_stopped(&self, tag: &str) -> bool {
        self.stopped.contains(tag)
    }

    /// Run `tag` (of `epochs` epochs, when known) has `value` at `epoch`'s end: kept,
    /// and the decision to stop it, if the rule says so (the run is then marked
    /// stopped). `None` for a value the rule does not read ([`Board::wants`]).
    pub fn observe(
        &mut self,
        tag: &str,
        (epoch, epochs): (u32, Option<u32>),
        value: f64,
    ) -> Option<Decision> {
        if !self.wants(tag, epoch, value) {
            return None;
        }
        self.restore(tag, epoch, value);
        // A run at its last epoch is done training: its value counts for the others, it
        // is never stopped (ASHA's rungs are those below a run's last epoch).
        if epochs.is_some_and(|n| epoch >= n) {
            return None;
        }
        let at = &self.observed[&epoch];
        let against = match self.stopping.rule {
            Rule::Off => None,
            Rule::Asha => self.asha(at, epoch, epochs),
            Rule::Median => self.median(at, tag),
        }?;
        let (cutoff, against) = against;
        if !self.objective.worse(value, cutoff) {
            return None;
        }
        self.stopped(tag);
        Some(Decision {
            tag: tag.to_string(),
            epoch,
            value,
            cutoff,
            against,
        })
    }

    /// The ⌈n/η⌉-th best of the n values at the rung, when n ≥ η.
    fn asha(
        &self,
        at: &BTreeMap<String, f64>,
        epoch: u32,
        epochs: Option<u32>,
    ) -> Option<(f64, Against)> {
        let eta = self.stopping.eta.max(2) as usize;
        let runs = at.len();
        if runs < eta {
            return None;
        }
        let rank = runs.div_ceil(eta);
        let ranked = self.objective.ranked(at.values().copied().collect());
        let against = Against::Rank {
            rank,
            runs,
            rung: self.stopping.rung_of(epoch)?,
            rungs: epochs.map(|n| self.stopping.rungs(n)),
        };
        Some((ranked[rank - 1], against))
    }

    /// The median of the other runs' values, once there are enough of them.
    fn median(&self, at: &BTreeMap<String, f64>, tag: &str) -> Option<(f64, Against)> {
        let mut others: Vec<f64> = at
            .iter()
            .filter(|(t, _)| t.as_str() != tag)
            .map(|(_, v)| *v)
            .collect();
        if others.len() < MEDIAN_MIN_OTHERS {
            return None;
        }
        others.sort_by(f64::total_cmp);
        let n = others.len();
        let median = if n % 2 == 1 {
            others[n / 2]
        } else {
            (others[n / 2 - 1] + others[n / 2]) / 2.0
        };
        Some((median, Against::Median { others: n }))
    }
}

#[cfg(test)]
#[path = "early_tests.rs"]
mod tests;
