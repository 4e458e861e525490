//! Showing a run's progress: one line per role. On a terminal (and without `NO_COLOR`)
//! each role's line is redrawn in place (indicatif), fitted to the terminal's width so
//! that it never wraps and always keeps the reason a task is stuck or failed; otherwise
//! plain lines, printed whole and only when a role's line changes, without escape codes.
//! Here: where the lines go (bars, plain lines, a view of several runs) and when; their
//! text is `progress/lines.rs`'s.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output;
use crate::trainlog::{Training, show};
use crate::verdict::Tracker;

mod lines;

use lines::{
    TRAINING, fitted_line, heartbeat_line, role_line, role_name, terminal_width, training_line,
};
pub use lines::{counts_text, cut, terminal_size};

/// What a wait followed by a view of several runs (a sweep's, `ops/sweep/mod.rs`) sends
/// instead of drawing its own lines: the run's verdict so far, its training.
#[derive(Debug, Clone)]
pub enum Seen {
    State {
        tag: String,
        state: String,
    },
    Training {
        tag: String,
        training: Box<Training>,
    },
}

mod observer;

/// Where a wait's [`Seen`] goes: a mailbox that keeps each run's newest state and
/// training not read yet (`progress/observer.rs`), never a growing queue.
pub type Observer = observer::Sender<Seen>;
/// The sweep's end of its runs' [`Observer`]s.
pub type Inbox = observer::Receiver<Seen>;

/// A sweep's mailbox.
pub fn observer() -> (Observer, Inbox) {
    observer::channel()
}

impl observer::Newer for Seen {
    fn replaces(&self, older: &Seen) -> bool {
        match (self, older) {
            (Seen::State { tag, .. }, Seen::State { tag: was, .. })
            | (Seen::Training { tag, .. }, Seen::Training { tag: was, .. }) => tag == was,
            _ => false,
        }
    }
}

/// Where a sweep's decision to stop a run early reaches the run's follower (a wait, a
/// `--local` run): the decision's line, once made.
pub type EarlyStop = tokio::sync::watch::Receiver<Option<String>>;

/// The line of the decision to stop the run early, once there is one (at once if it was
/// made before: a `--resume`); never without one.
pub async fn stopped_early(early: &mut Option<EarlyStop>) -> String {
    if let Some(rx) = early {
        loop {
            if let Some(line) = rx.borrow_and_update().clone() {
                return line;
            }
            if rx.changed().await.is_err() {
                break;
            }
        }
    }
    std::future::pending().await
}

/// Where progress goes.
pub enum Progress {
    /// To a view of several runs.
    Observed { tag: String, to: Observer },
    Bars {
        multi: MultiProgress,
        bars: BTreeMap<String, ProgressBar>,
    },
    Plain {
        last: BTreeMap<String, String>,
        /// When lines were printed ([`Quiet`]).
        quiet: Quiet,
    },
}

/// When a plain line was last printed, and the last one that was news (not a
/// heartbeat): what the heartbeat counts from.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    pub printed: Instant,
    pub news: Instant,
}

impl Quiet {
    pub fn new() -> Quiet {
        let now = Instant::now();
        Quiet {
            printed: now,
            news: now,
        }
    }

    /// Prints `text` (news, or a heartbeat) on stdout, noting when.
    fn print(&mut self, text: &str, news: bool) {
        self.printed = Instant::now();
        if news {
            self.news = self.printed;
        }
        // A closed stdout must not stop the wait: ignore write errors.
        let _ = output::print(text);
    }

    /// When a heartbeat is due, `every` after the last line; never on a terminal.
    pub fn due(&self, every: Option<Duration>) -> Option<Instant> {
        let every = every.filter(|d| !d.is_zero() && !std::io::stdout().is_terminal())?;
        Some(self.printed + every)
    }
}

impl Default for Quiet {
    fn default() -> Self {
        Quiet::new()
    }
}

/// The key of the line that says why the run waits (no role has this name).
const WAITING: &str = "waiting";

impl Progress {
    /// Bars on a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        if output::fancy_stdout() {
            Progress::Bars {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stdout()),
                bars: BTreeMap::new(),
            }
        } else {
            Progress::Plain {
                last: BTreeMap::new(),
                quiet: Quiet::new(),
            }
        }
    }

    /// Shows the tracker's current summary.
    pub fn show(&mut self, tracker: &Tracker) {
        let summary = tracker.summary();
        match self {
            Progress::Observed { tag, to } => {
                let state = tracker.verdict().name().to_string();
                let _ = to.send(Seen::State {
                    tag: tag.clone(),
                    state,
                });
            }
            Progress::Bars { multi, bars } => {
                let width = terminal_width();
                for role in &summary {
                    let bar = bar(multi, bars, role_name(role));
                    bar.set_message(output::escape_controls(&fitted_line(role, width)));
                }
            }
            Progress::Plain { last, quiet } => {
                let mut text = String::new();
                for role in &summary {
                    let line = role_line(role);
                    let key = role_name(role).to_string();
                    if last.get(&key) != Some(&line) {
                        text.push_str(&line);
                        text.push('\n');
                        last.insert(key, line);
                    }
                }
                if !text.is_empty() {
                    quiet.print(&text, true);
                }
            }
        }
    }

    /// Shows the training's progress (from the deciding task's log) below the roles:
    /// on a terminal redrawn as it changes; in plain lines once per epoch (its start
    /// and its end), not per step.
    pub fn show_training(&mut self, training: &Training) {
        if training.is_empty() {
            return;
        }
        match self {
            Progress::Observed { tag, to } => {
                let _ = to.send(Seen::Training {
                    tag: tag.clone(),
                    training: Box::new(training.clone()),
                });
            }
            Progress::Bars { multi, bars } => {
                let width = terminal_width();
                let bar = bar(multi, bars, TRAINING);
                let line = cut(&training_line(training), width.saturating_sub(1).max(1));
                bar.set_message(output::escape_controls(&line));
            }
            Progress::Plain { last, quiet } => {
                let key = format!("{} {}", show::short(training), training.epochs_done);
                if last.get(TRAINING) != Some(&key) {
                    last.insert(TRAINING.to_string(), key);
                    quiet.print(&format!("{}\n", training_line(training)), true);
                }
            }
        }
    }

    /// Names a stall on the training's line: `training  epoch 3/10, … — no progress since …`.
    pub fn show_stall(&mut self, training: &Training, stalled: &str) {
        let line = format!("{} — {stalled}", training_line(training));
        match self {
            Progress::Observed { .. } => {}
            Progress::Bars { multi, bars } => {
                let width = terminal_width();
                let bar = bar(multi, bars, TRAINING);
                let line = cut(&line, width.saturating_sub(1).max(1));
                bar.set_message(output::escape_controls(&line));
            }
            Progress::Plain { last, quiet } => {
                last.insert(TRAINING.to_string(), String::new());
                quiet.print(&format!("{line}\n"), true);
            }
        }
    }

    /// Why the run waits (`ops/holdups.rs`; `None`: it no longer does): in plain lines
    /// each new reason once, below the roles. On a terminal the role lines, redrawn in
    /// place, carry the first stuck task's reason.
    pub fn show_waiting(&mut self, why: Option<&str>) {
        if let (Progress::Plain { quiet, .. }, Some(why)) = (self, why) {
            quiet.print(&format!("{WAITING:<9} {why}\n"), true);
        }
    }

    /// When the heartbeat is due (plain lines on a stdout that is not a terminal, every
    /// `every` without a line); `None`: never.
    pub fn heartbeat_due(&self, every: Option<Duration>) -> Option<Instant> {
        match self {
            Progress::Plain { quiet, .. } => quiet.due(every),
            _ => None,
        }
    }

    /// The heartbeat: `still     Running at epoch 3/10, step 120/500; nothing new for 5m;
    /// the API server last answered 20s ago` (`state`: the run's; `why`: why it waits, if
    /// it does; `heard`: how long ago the API server last answered the follow).
    pub fn heartbeat(
        &mut self,
        state: &str,
        training: &Training,
        why: Option<&str>,
        heard: Duration,
    ) {
        if let Progress::Plain { quiet, .. } = self {
            let ages = (quiet.news.elapsed(), heard);
            let line = heartbeat_line(state, training, why, ages);
            quiet.print(&format!("{line}\n"), false);
        }
    }

    /// Leaves the last state on screen.
    pub fn finish(&mut self) {
        if let Progress::Bars { bars, .. } = self {
            for bar in bars.values() {
                bar.abandon();
            }
            if !bars.is_empty() {
                // The cursor is left at the end of the last bar.
                let _ = output::print("\n");
            }
            bars.clear();
        }
    }
}

/// The bar of `key`, added below the others the first time.
fn bar<'a>(
    multi: &MultiProgress,
    bars: &'a mut BTreeMap<String, ProgressBar>,
    key: &str,
) -> &'a ProgressBar {
    bars.entry(key.to_string()).or_insert_with(|| {
        let bar = multi.add(ProgressBar::no_length());
        bar.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
        bar
    })
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
