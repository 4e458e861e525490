//! The metrics of every epoch of one task's output, bounded (pure): at most
//! [`HISTORY_POINTS`] epochs are kept; when a run has more, every other kept point is
//! dropped and only every 2nd (then 4th, 8th…) epoch is kept from then on, so a run of
//! 5,000 epochs keeps every 4th (1,250 points, a curve), one of a million every 512th.
//! The best value of each metric is over every epoch, kept or not.

/// Epochs kept at most.
pub const HISTORY_POINTS: usize = 2048;
/// Metrics kept at most per epoch (their names as printed, in order).
pub const HISTORY_METRICS: usize = 16;

/// One epoch's end: its number (from 1) and its metrics, in the order of
/// [`History::names`] (NaN: not printed at that epoch).
pub type Point = (u32, Vec<f64>);

#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// Every `stride`-th epoch end is kept.
    pub stride: u32,
    /// The metrics' names, in the order they were first printed.
    pub names: Vec<String>,
    pub points: Vec<Point>,
    /// The best value of each metric over every epoch end ([`lower_is_better`]).
    pub best: Vec<(String, f64)>,
    /// Epoch ends seen (kept or not).
    seen: u64,
}

impl Default for History {
    fn default() -> History {
        History {
            stride: 1,
            names: Vec::new(),
            points: Vec::new(),
            best: Vec::new(),
            seen: 0,
        }
    }
}

/// Whether a lower value of metric `name` is the better one: names of losses and errors
/// (`loss`, `val_loss`, `mae`, `mse`, `rmse`, `error`, `perplexity`, `crossentropy`…);
/// any other (`accuracy`, `auc`, `precision`…) is better higher.
pub fn lower_is_better(name: &str) -> bool {
    const LOWER: [&str; 11] = [
        "loss",
        "error",
        "err",
        "mae",
        "mse",
        "rmse",
        "mape",
        "msle",
        "perplexity",
        "crossentropy",
        "hinge",
    ];
    let name = name.to_ascii_lowercase();
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| LOWER.iter().any(|l| word == *l || word.ends_with(l)))
}

impl History {
    /// Records the end of epoch `epoch` with its metrics.
    pub fn push(&mut self, epoch: u32, metrics: &[(String, f64)]) {
        self.fold_best(metrics);
        let metrics = self.values(metrics);
        if self.seen.is_multiple_of(u64::from(self.stride)) {
            if self.points.len() == HISTORY_POINTS {
                self.halve();
            }
            // After halving, this epoch may fall between the kept ones.
            if self.seen.is_multiple_of(u64::from(self.stride)) {
                self.points.push((epoch, metrics));
            }
        }
        self.seen += 1;
    }

    /// The metrics of the last epoch end, printed again (Keras 3 draws the epoch's end
    /// twice, the second time with the validation metrics).
    pub fn amend(&mut self, epoch: u32, metrics: &[(String, f64)]) {
        self.fold_best(metrics);
        let values = self.values(metrics);
        if let Some(last) = self.points.last_mut().filter(|p| p.0 == epoch) {
            last.1 = values;
        }
    }

    /// The values of `metrics` in the order of [`History::names`] (new names added, up to
    /// [`HISTORY_METRICS`]).
    fn values(&mut self, metrics: &[(String, f64)]) -> Vec<f64> {
        for (name, _) in metrics {
            if self.names.len() < HISTORY_METRICS && !self.names.contains(name) {
                self.names.push(name.clone());
            }
        }
        self.names
            .iter()
            .map(|n| {
                metrics
                    .iter()
                    .find(|(m, _)| m == n)
                    .map_or(f64::NAN, |(_, v)| *v)
            })
            .collect()
    }

    fn halve(&mut self) {
        let mut i: u32 = 0;
        self.points.retain(|_| {
            i += 1;
            !i.is_multiple_of(2)
        });
        self.stride = self.stride.saturating_mul(2);
    }

    fn fold_best(&mut self, metrics: &[(String, f64)]) {
        for (name, value) in metrics.iter().filter(|(_, v)| v.is_finite()) {
            let full = self.best.len() >= HISTORY_METRICS;
            match self.best.iter_mut().find(|(n, _)| n == name) {
                Some((_, best)) => {
                    let better = if lower_is_better(name) {
                        *value < *best
                    } else {
                        *value > *best
                    };
                    if better {
                        *best = *value;
                    }
                }
                None if !full => self.best.push((name.clone(), *value)),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(loss: f64) -> Vec<(String, f64)> {
        vec![("loss".into(), loss), ("accuracy".into(), 1.0 - loss)]
    }

    #[test]
    fn loss_like_names_are_better_lower() {
        for name in [
            "loss",
            "val_loss",
            "mae",
            "val_mse",
            "error_rate",
            "categorical_crossentropy",
        ] {
            assert!(lower_is_better(name), "{name}");
        }
        for name in ["accuracy", "val_accuracy", "auc", "precision", "recall"] {
            assert!(!lower_is_better(name), "{name}");
        }
    }

    #[test]
    fn the_best_is_over_every_epoch_and_by_direction() {
        let mut h = History::default();
        h.push(1, &m(0.5));
        h.push(2, &m(0.2));
        h.push(3, &m(0.4));
        assert_eq!(h.best, vec![("loss".into(), 0.2), ("accuracy".into(), 0.8)]);
        h.amend(3, &[("loss".into(), 0.1)]);
        assert_eq!(h.names, vec!["loss", "accuracy"]);
        assert_eq!(h.points[2].1[0], 0.1);
        assert!(h.points[2].1[1].is_nan());
        assert_eq!(h.best[0], ("loss".into(), 0.1));
    }

    #[test]
    fn a_long_run_keeps_every_other_epoch_within_the_bound() {
        let mut h = History::default();
        let n = 5000u32;
        for e in 1..=n {
            h.push(e, &m(1.0 / f64::from(e)));
        }
        assert!(h.points.len() <= HISTORY_POINTS, "{}", h.points.len());
        assert!(h.points.len() > HISTORY_POINTS / 2, "{}", h.points.len());
        assert_eq!(h.stride, 4);
        assert_eq!(h.points[0].0, 1);
        assert!(h.points.windows(2).all(|w| w[1].0 - w[0].0 == 4));
        assert_eq!(h.best[0], ("loss".into(), 1.0 / f64::from(n)));
    }
}
