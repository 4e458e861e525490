//! Adaptive sweeps measured on synthetic runs whose loss curve is a known function of
//! their parameters (issue 60, item 6). No cluster, no process: the bench drives the
//! pure pieces a sweep uses (`tf_spawner::adaptive`: the early-stopping board of
//! `metrics/early.rs`, the TPE proposer of `metrics/tpe.rs`, the grid's and the random
//! search's points of `plan/sweep.rs`).
//!
//! (a) Early stopping. A 27-run grid (lr × width × dropout, 3 values each), 27 epochs
//! a run, [`PARALLEL`] runs at a time started in grid order as a sweep starts them;
//! every run's value at every epoch's end goes to the board as a sweep's reading of
//! its log does (`Board::observe`); a run the rule stops frees its slot for the next
//! run at once. Task-hours are epochs trained (one worker a run, every epoch as long).
//! Each rule (off; asha with η 3 and `--min-epochs` 1, the defaults, then 3 and 9;
//! median) runs on the same curves, over [`SEEDS`] seeds of their noise, with the
//! grid's lr given ascending and descending (the fast-starting, worse runs first), on
//! two kinds of curves ([`Curves`]): crossing (τ by lr and width: a large lr leads
//! early and ends worse, a wider net starts slower and ends better) and parallel (one
//! τ: a run's rank at an epoch is its rank at the end, up to the noise).
//!
//! (b) Model-based search. On the final loss of the same curves (no noise) over a log
//! range, a linear range and a list, the runs a random search and a TPE search (each
//! run ended before the next) need before one is within 5% (then 1%) of the known
//! optimum, for [`SEEDS`] seeds; a search that has not got there by [`CAP`] runs
//! counts as `CAP`.
//!
//! Run with `cargo bench --bench adaptive` (a plain binary, `harness = false`);
//! deterministic: every draw is seeded.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tf_spawner::adaptive::{
    Board, DEFAULT_ETA, DEFAULT_MIN_EPOCHS, Method, Objective, Outcome, Param, Point, Rule,
    Stopping, Trial, expand, parse_param, propose, startup,
};

/// Epochs of every run: rungs at 1, 3, 9 (and 27, its last).
const EPOCHS: u32 = 27;
/// Runs at a time (`-p 4`).
const PARALLEL: usize = 4;
/// Seeds of the curves' noise (a) and of the searches (b).
const SEEDS: u64 = 10;
/// The loss at epoch 0: ln 10, a 10-class cross-entropy before training.
const START: f64 = 2.3;
/// The noise of a value at an epoch's end: this share of it (one standard deviation).
const NOISE: f64 = 0.02;
/// The most runs a search of (b) is given.
const CAP: usize = 200;

/// How a run's τ follows its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Curves {
    /// τ ∝ 1/√lr and grows with the width: the curves cross.
    Crossing,
    /// τ 2 for every run: the curves never cross (but for the noise).
    Parallel,
}

/// A run's parameters as numbers.
#[derive(Debug, Clone, Copy)]
struct Config {
    lr: f64,
    width: f64,
    dropout: f64,
}

impl Config {
    fn of(point: &Point) -> Config {
        let get = |name: &str| -> f64 {
            let text = &point.iter().find(|(n, _)| n == name).expect(name).1;
            text.parse().expect("a number")
        };
        Config {
            lr: get("lr"),
            width: get("width"),
            dropout: get("dropout"),
        }
    }

    /// The loss the run ends at without noise: least (0.25) at lr 0.01, width 256,
    /// dropout 0.2; each decade of lr away costs 0.2 (squared), each halving of the
    /// width 0.06, dropout away from 0.2 0.3 (squared).
    fn final_loss(self) -> f64 {
        0.25 + 0.2 * (self.lr.log10() + 2.0).powi(2)
            + 0.06 * (256.0 / self.width).log2()
            + 0.3 * (self.dropout - 0.2).powi(2)
    }

    /// Epochs to cover 63% of the way from [`START`] to the final loss: fewer with a
    /// larger lr (τ ∝ 1/√lr: 2 at lr 0.01, width 128), a few more for a wider net.
    fn tau(self, curves: Curves) -> f64 {
        match curves {
            Curves::Crossing => 2.0 * (0.01 / self.lr).sqrt() * (self.width / 128.0).powf(0.3),
            Curves::Parallel => 2.0,
        }
    }

    /// The value at the end of epochs 1..=EPOCHS, `rng` drawing the relative noise.
    fn curve(self, curves: Curves, rng: &mut StdRng) -> Vec<f64> {
        let (end, tau) = (self.final_loss(), self.tau(curves));
        (1..=EPOCHS)
            .map(|e| {
                let clean = end + (START - end) * (-f64::from(e) / tau).exp();
                clean * (1.0 + NOISE * normal(rng))
            })
            .collect()
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn params(texts: &[&str]) -> Vec<Param> {
    texts.iter().map(|t| parse_param(t).expect(t)).collect()
}

/// What one sweep of the grid cost and found.
#[derive(Debug, Clone)]
struct Swept {
    /// Epochs trained by all runs (the task-hours).
    epochs: u32,
    /// Epochs of wall time: from the first run's start to the last run's end.
    wall: u32,
    stopped: usize,
    /// The runs that trained to their last epoch: (index, final value).
    finished: Vec<(usize, f64)>,
}

impl Swept {
    fn best(&self) -> (usize, f64) {
        *(self.finished.iter())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a run finished")
    }
}

/// A sweep of `curves` (in grid order) under `stopping`: [`PARALLEL`] runs at a time,
/// every epoch's value read by the board as the sweep reads it, a stopped run's slot
/// given to the next run at once.
fn sweep(curves: &[Vec<f64>], stopping: Stopping) -> Swept {
    let mut board = Board::new(stopping, Objective::parse("val_loss").expect("objective"));
    let mut swept = Swept {
        epochs: 0,
        wall: 0,
        stopped: 0,
        finished: Vec::new(),
    };
    // (run, epochs done), in the order the runs started.
    let mut running: Vec<(usize, u32)> = Vec::new();
    let mut next = 0;
    loop {
        while running.len() < PARALLEL && next < curves.len() {
            running.push((next, 0));
            next += 1;
        }
        if running.is_empty() {
            return swept;
        }
        swept.wall += 1;
        let mut still = Vec::new();
        for (run, done) in running {
            let epoch = done + 1;
            swept.epochs += 1;
            let value = curves[run][epoch as usize - 1];
            let tag = format!("adaptive-{}", run + 1);
            let decision = board.observe(&tag, (epoch, Some(EPOCHS)), value);
            if epoch == EPOCHS {
                swept.finished.push((run, value));
            } else if decision.is_some() {
                swept.stopped += 1;
            } else {
                still.push((run, epoch));
            }
        }
        running = still;
    }
}

/// The 27 curves of the grid (`lr` in `lr_order`), seeded `seed`: each run's noise its
/// own generator's, so the same configuration has the same curve in either order.
fn grid_curves(lr_order: &str, curves: Curves, seed: u64) -> Vec<Vec<f64>> {
    let grid = params(&[lr_order, "width=64,128,256", "dropout=0,0.2,0.5"]);
    expand(&grid, Method::Grid)
        .iter()
        .map(|point| {
            let c = Config::of(point);
            let key = (c.lr.log10() * 10.0).round() as i64 * 1_000_000
                + (c.width as i64) * 1_000
                + (c.dropout * 10.0).round() as i64;
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9) ^ key as u64);
            c.curve(curves, &mut rng)
        })
        .collect()
}

/// One rule over every seed: its figures against the full grid's.
struct Row {
    stopping: Stopping,
    epochs: Vec<u32>,
    walls: Vec<u32>,
    stopped: Vec<u32>,
    /// Found the grid's best run.
    same: usize,
    /// Its best final value above the grid's best, in %.
    gaps: Vec<f64>,
}

/// The rules compared with the full grid: the defaults, then later first rungs.
const RULES: [(Rule, u32); 4] = [
    (Rule::Asha, DEFAULT_MIN_EPOCHS),
    (Rule::Asha, 3),
    (Rule::Asha, 9),
    (Rule::Median, DEFAULT_MIN_EPOCHS),
];

/// The full grid's epochs and wall time, and each rule's figures over the seeds.
fn rules_over_seeds(lr_order: &str, curves: Curves) -> ((u32, u32), Vec<Row>) {
    let mut rows: Vec<Row> = (RULES.iter())
        .map(|&(rule, min_epochs)| Row {
            stopping: Stopping {
                rule,
                eta: DEFAULT_ETA,
                min_epochs,
            },
            epochs: Vec::new(),
            walls: Vec::new(),
            stopped: Vec::new(),
            same: 0,
            gaps: Vec::new(),
        })
        .collect();
    let mut full = (0, 0);
    for seed in 0..SEEDS {
        let runs = grid_curves(lr_order, curves, seed);
        let off = Stopping {
            rule: Rule::Off,
            ..rows[0].stopping
        };
        let grid = sweep(&runs, off);
        full = (grid.epochs, grid.wall);
        let (best, best_value) = grid.best();
        for row in &mut rows {
            let s = sweep(&runs, row.stopping);
            let (found, value) = s.best();
            row.epochs.push(s.epochs);
            row.walls.push(s.wall);
            row.stopped.push(s.stopped as u32);
            row.same += usize::from(found == best);
            row.gaps.push(100.0 * (value - best_value) / best_value);
        }
    }
    (full, rows)
}

fn median<T: Copy + Into<f64>>(values: &[T]) -> f64 {
    let mut v: Vec<f64> = values.iter().map(|x| (*x).into()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn most<T: Copy + Into<f64>>(values: &[T]) -> f64 {
    values
        .iter()
        .map(|x| (*x).into())
        .fold(f64::NEG_INFINITY, f64::max)
}

/// One line of the table: the columns' widths.
fn line(cells: &[String]) {
    let widths = [9, 17, 7, 6, 14, 12, 9, 7, 8, 13];
    let row: Vec<String> = (cells.iter().zip(widths))
        .enumerate()
        .map(|(i, (c, w))| {
            if i < 3 {
                format!("{c:<w$}")
            } else {
                format!("{c:>w$}")
            }
        })
        .collect();
    println!("{}", row.join(" "));
}

fn row_cells(curves: Curves, lr: &str, full: u32, row: &Row) -> Vec<String> {
    let share = 100.0 * median(&row.epochs) / f64::from(full);
    let worst = 100.0 * most(&row.epochs) / f64::from(full);
    vec![
        format!("{curves:?}").to_lowercase(),
        lr.to_string(),
        row.stopping.rule.name().to_string(),
        row.stopping.min_epochs.to_string(),
        format!("{:.0} ({:.0})", median(&row.epochs), most(&row.epochs)),
        format!("{share:.0}% ({worst:.0}%)"),
        format!("{:.0} ({:.0})", median(&row.walls), most(&row.walls)),
        format!("{:.0}", median(&row.stopped)),
        format!("{}/{SEEDS}", row.same),
        format!("{:.1} ({:.1})", median(&row.gaps), most(&row.gaps)),
    ]
}

fn early_stopping() {
    println!(
        "(a) early stopping: a 27-run grid (lr x width x dropout), {EPOCHS} epochs a run, \
         {PARALLEL} at a time, eta {DEFAULT_ETA}, noise {:.0}% of the value, {SEEDS} seeds",
        NOISE * 100.0
    );
    let head = [
        "curves",
        "grid's lr",
        "rule",
        "min-ep",
        "epochs (max)",
        "of the grid",
        "wall (max)",
        "stopped",
        "best run",
        "gap % (max)",
    ];
    line(&head.map(String::from));
    let mut full_grid = (0, 0);
    for curves in [Curves::Crossing, Curves::Parallel] {
        for order in ["lr=0.001,0.01,0.1", "lr=0.1,0.01,0.001"] {
            let (full, rows) = rules_over_seeds(order, curves);
            full_grid = full;
            let lr = order.trim_start_matches("lr=");
            for row in &rows {
                line(&row_cells(curves, lr, full.0, row));
            }
        }
    }
    println!(
        "  the full grid (off): {} epochs, wall {} epochs; epochs, wall, stopped, gap: the \
         median over the seeds (the most in brackets); best run: the seeds where the best run \
         that trained to its end is the grid's best; gap: its final value above the grid's best",
        full_grid.0, full_grid.1
    );
}

/// The runs search `tpe` (else random) seeded `seed` needs before a run's loss is
/// within `within` (a share) of `optimum` (every run ended before the next); [`CAP`]
/// if none is.
fn runs_to_reach(p: &[Param], (seed, tpe): (u64, bool), optimum: f64, within: f64) -> usize {
    let loss = |point: &Point| Config::of(point).final_loss();
    let reached = |v: f64| v <= optimum * (1.0 + within);
    let budget = CAP as u32;
    let first = if tpe {
        Method::Tpe {
            samples: budget,
            seed,
            startup: startup(budget),
        }
    } else {
        Method::Random {
            samples: budget,
            seed,
        }
    };
    let mut seen: Vec<(Point, f64)> = Vec::new();
    for point in expand(p, first) {
        let v = loss(&point);
        seen.push((point, v));
        if reached(v) {
            return seen.len();
        }
    }
    while seen.len() < CAP {
        let trials: Vec<Trial<'_>> = (seen.iter())
            .map(|(point, v)| Trial {
                point,
                outcome: Outcome::Value(*v),
            })
            .collect();
        let point = propose(p, true, (seed, seen.len()), &trials);
        let v = loss(&point);
        seen.push((point, v));
        if reached(v) {
            return seen.len();
        }
    }
    CAP
}

fn model_based_search() {
    let p = params(&["lr=log:1e-4..1e-1", "dropout=0..0.5", "width=64,128,256"]);
    let optimum = Config {
        lr: 0.01,
        width: 256.0,
        dropout: 0.2,
    }
    .final_loss();
    println!();
    println!(
        "(b) model-based search: runs until one is within 5% (then 1%) of the optimum \
         ({optimum}), --param lr=log:1e-4..1e-1 --param dropout=0..0.5 --param \
         width=64,128,256, one run at a time, at most {CAP} runs (tpe: the first {} random)",
        startup(CAP as u32)
    );
    for within in [0.05, 0.01] {
        let mut medians = Vec::new();
        for (name, tpe) in [("random", false), ("tpe", true)] {
            let runs: Vec<u32> = (0..SEEDS)
                .map(|seed| runs_to_reach(&p, (seed, tpe), optimum, within) as u32)
                .collect();
            let m = median(&runs);
            medians.push(m);
            let each: Vec<String> = runs.iter().map(u32::to_string).collect();
            println!(
                "within {:>2.0}%  {name:<7} median {m:>5.1} runs   seeds 0..{SEEDS}: {}",
                within * 100.0,
                each.join(" ")
            );
        }
        println!(
            "within {:>2.0}%  tpe/random: {:.2} of the runs (the goal at 5%: at most 0.50)",
            within * 100.0,
            medians[1] / medians[0]
        );
    }
}

fn main() {
    early_stopping();
    model_based_search();
}
