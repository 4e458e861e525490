//! `sweep --method tpe`: the next point of a model-based search (pure: no I/O), the
//! Tree-structured Parzen Estimator of Bergstra et al., "Algorithms for
//! Hyper-Parameter Optimization" (NeurIPS 2011), with the defaults of Optuna's
//! `TPESampler` and Hyperopt's `tpe.suggest`:
//!
//! - The first [`startup`] points are random: the random search's first points of the
//!   same seed (`plan::sweep::expand`).
//! - Then each point: the runs so far, in the record's order, split at the γ quantile
//!   of their objective values: the best [`good_count`]`(n)` = min(⌈0.1·n⌉, 25) form
//!   l(x), the others g(x). Each parameter's density is a Parzen estimator: a mixture
//!   of Gaussians truncated to its range (in log space for a `log:` range, on
//!   [lo−½, hi+½] for an `int:` one), one at each observation and one prior (the
//!   range's middle, the range's width), each of weight 1, their widths Hyperopt's
//!   (the larger gap to the neighbouring means, clipped to [width/min(100, 1+n),
//!   width]); a list of values: its counts, smoothed by the prior (weight 1 spread
//!   over the values). [`CANDIDATES`] points are drawn from l; the one of the
//!   largest l(x)/g(x) (the product over the parameters) is proposed.
//! - A run still under way counts as the worst value seen (Optuna's and Hyperopt's
//!   constant liar), a failed run (or one that printed no objective) as the worst; a
//!   run stopped early with its value where it was stopped (the caller's).
//!   With no value seen at all, the point is random.
//!
//! The point is a function of the seed, its index and the runs given (each draw from a
//! generator seeded by both): a `--resume` proposes what the first sweep would have.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::plan::sweep::{Param, Point, Values, sample, shown};

/// Random points before the model: Optuna's `n_startup_trials` (10), but never more
/// than a quarter of the budget (at least [`STARTUP_MIN`]): a 12-run search models 9.
pub const STARTUP_MAX: u32 = 10;
pub const STARTUP_MIN: u32 = 3;
/// Candidates drawn from l(x) per point (Optuna's `n_ei_candidates`, Hyperopt's 24).
pub const CANDIDATES: usize = 24;
/// The most runs in l(x) (Optuna's γ cap).
pub const GOOD_MAX: usize = 25;
/// The prior's weight among the observations' (Optuna's `prior_weight`).
const PRIOR_WEIGHT: f64 = 1.0;

/// The random points of a search of `samples` runs.
pub fn startup(samples: u32) -> u32 {
    samples
        .div_ceil(4)
        .clamp(STARTUP_MIN, STARTUP_MAX)
        .min(samples)
}

/// How many of `n` runs form l(x): min(⌈0.1·n⌉, 25), at least 1.
pub fn good_count(n: usize) -> usize {
    n.div_ceil(10).clamp(1, GOOD_MAX)
}

/// What a run gives the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// Its objective value (a run stopped early: where it was stopped).
    Value(f64),
    /// Still under way: the constant liar, the worst value seen.
    Running,
    /// Failed, or printed no objective: the worst value seen.
    Failed,
}

/// A run so far: its point and outcome.
#[derive(Debug, Clone, Copy)]
pub struct Trial<'a> {
    pub point: &'a Point,
    pub outcome: Outcome,
}

/// The point of run `index` (0-based) of a search seeded `seed`, from `trials` (in the
/// record's order); `lower`: lower values are better.
pub fn propose(
    params: &[Param],
    lower: bool,
    (seed, index): (u64, usize),
    trials: &[Trial<'_>],
) -> Point {
    let mut rng = StdRng::seed_from_u64(mix(seed, index as u64));
    let better = |v: f64| if lower { v } else { -v };
    let values = trials.iter().filter_map(|t| match t.outcome {
        Outcome::Value(v) if v.is_finite() => Some(better(v)),
        _ => None,
    });
    let Some(worst) = values.max_by(f64::total_cmp) else {
        return params
            .iter()
            .map(|p| (p.name.clone(), sample(&p.values, &mut rng)))
            .collect();
    };
    let mut ranked: Vec<(f64, usize)> = trials
        .iter()
        .enumerate()
        .map(|(i, t)| match t.outcome {
            Outcome::Value(v) if v.is_finite() => (better(v), i),
            _ => (worst, i),
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let good = good_count(ranked.len());
    let split = |part: &[(f64, usize)]| -> Vec<&Point> {
        part.iter().map(|(_, i)| trials[*i].point).collect()
    };
    let (l, g) = (split(&ranked[..good]), split(&ranked[good..]));
    let models: Vec<(Density, Density)> = params
        .iter()
        .map(|p| (Density::of(p, &l), Density::of(p, &g)))
        .collect();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..CANDIDATES {
        let x: Vec<f64> = models.iter().map(|(l, _)| l.draw(&mut rng)).collect();
        let score: f64 = models
            .iter()
            .zip(&x)
            .map(|((l, g), x)| l.ln(*x) - g.ln(*x))
            .sum();
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, x));
        }
    }
    let x = best.map(|(_, x)| x).unwrap_or_default();
    params
        .iter()
        .zip(&x)
        .map(|(p, x)| (p.name.clone(), text_of(&p.values, *x)))
        .collect()
}

/// splitmix64 of the seed and the index: each point's own generator.
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One parameter's density over its space: a list's smoothed counts, or a truncated
/// Gaussian mixture on `[lo, hi]`.
#[derive(Debug, Clone)]
enum Density {
    Counts(Vec<f64>),
    Mixture {
        lo: f64,
        hi: f64,
        /// (mean, width, weight).
        parts: Vec<(f64, f64, f64)>,
    },
}

impl Density {
    /// The density of `p`'s values in `points` (those that do not parse are left out).
    fn of(p: &Param, points: &[&Point]) -> Density {
        let texts = points
            .iter()
            .filter_map(|pt| pt.iter().find(|(n, _)| *n == p.name).map(|(_, v)| v));
        match &p.values {
            Values::List(values) => {
                let k = values.len() as f64;
                let mut weights = vec![PRIOR_WEIGHT / k; values.len()];
                for t in texts {
                    if let Some(j) = values.iter().position(|v| v == t) {
                        weights[j] += 1.0;
                    }
                }
                Density::Counts(weights)
            }
            values => {
                let (lo, hi) = space(values);
                let xs: Vec<f64> = texts
                    .filter_map(|t| internal(values, t))
                    .map(|x| x.clamp(lo, hi))
                    .collect();
                Density::Mixture {
                    lo,
                    hi,
                    parts: parzen(&xs, lo, hi),
                }
            }
        }
    }

    /// A value drawn: a list's index, or a point of the space.
    fn draw(&self, rng: &mut StdRng) -> f64 {
        match self {
            Density::Counts(weights) => pick(weights.iter().copied(), rng) as f64,
            Density::Mixture { lo, hi, parts } => {
                let (mean, width, _) = parts[pick(parts.iter().map(|p| p.2), rng)];
                for _ in 0..100 {
                    let x = mean + width * normal(rng);
                    if (*lo..=*hi).contains(&x) {
                        return x;
                    }
                }
                mean.clamp(*lo, *hi)
            }
        }
    }

    /// The log of the density at `x`.
    fn ln(&self, x: f64) -> f64 {
        match self {
            Density::Counts(weights) => {
                let total: f64 = weights.iter().sum();
                let w = weights.get(x as usize).copied().unwrap_or(0.0);
                (w / total).ln()
            }
            Density::Mixture { lo, hi, parts } => {
                let total: f64 = parts.iter().map(|p| p.2).sum();
                let sum: f64 = parts
                    .iter()
                    .map(|&(m, s, w)| {
                        let mass = phi((hi - m) / s) - phi((lo - m) / s);
                        let z = (x - m) / s;
                        w * (-0.5 * z * z).exp()
                            / (s * (2.0 * std::f64::consts::PI).sqrt())
                            / mass.max(f64::MIN_POSITIVE)
                    })
                    .sum();
                (sum / total).ln()
            }
        }
    }
}

/// The Parzen estimator's parts: a Gaussian at each of `xs` and the prior, their
/// widths Hyperopt's (`adaptive_parzen_normal`).
fn parzen(xs: &[f64], lo: f64, hi: f64) -> Vec<(f64, f64, f64)> {
    let span = hi - lo;
    let prior = (lo + hi) / 2.0;
    // (mean, is the prior), sorted by mean.
    let mut means: Vec<(f64, bool)> = xs.iter().map(|x| (*x, false)).collect();
    means.push((prior, true));
    means.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = means.len();
    let least = span / (100.0_f64).min(1.0 + n as f64);
    (0..n)
        .map(|i| {
            let (mean, is_prior) = means[i];
            if is_prior {
                return (mean, span, PRIOR_WEIGHT);
            }
            let left = (i > 0).then(|| mean - means[i - 1].0);
            let right = (i + 1 < n).then(|| means[i + 1].0 - mean);
            let gap = match (left, right) {
                (Some(l), Some(r)) => l.max(r),
                (Some(g), None) | (None, Some(g)) => g,
                (None, None) => span,
            };
            (mean, gap.clamp(least, span), 1.0)
        })
        .collect()
}

/// A range's space: log for `log:`, widened by ½ each side for `int:`.
fn space(values: &Values) -> (f64, f64) {
    match values {
        Values::Range { log: true, lo, hi } => (lo.ln(), hi.ln()),
        Values::Range { lo, hi, .. } => (*lo, *hi),
        Values::Int { lo, hi } => (*lo as f64 - 0.5, *hi as f64 + 0.5),
        Values::List(_) => (0.0, 1.0),
    }
}

/// A value's text as a point of its space.
fn internal(values: &Values, text: &str) -> Option<f64> {
    let v: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
    match values {
        Values::Range { log: true, .. } => (v > 0.0).then(|| v.ln()),
        _ => Some(v),
    }
}

/// A point of the space as the value's text (as a random search shows it).
fn text_of(values: &Values, x: f64) -> String {
    match values {
        Values::List(v) => v[(x as usize).min(v.len() - 1)].clone(),
        Values::Int { lo, hi } => (x.round() as i64).clamp(*lo, *hi).to_string(),
        Values::Range { log: true, lo, hi } => shown(x.exp().clamp(*lo, *hi)),
        Values::Range { lo, hi, .. } => shown(x.clamp(*lo, *hi)),
    }
}

/// An index drawn by weight.
fn pick(weights: impl Iterator<Item = f64> + Clone, rng: &mut StdRng) -> usize {
    let total: f64 = weights.clone().sum();
    let mut at = rng.random::<f64>() * total;
    let mut last = 0;
    for (i, w) in weights.enumerate() {
        last = i;
        if at < w {
            return i;
        }
        at -= w;
    }
    last
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The standard normal's distribution function (erfc of Numerical Recipes, relative
/// error under 1.2e-7).
fn phi(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

#[cfg(test)]
#[path = "tpe_tests.rs"]
mod tests;
