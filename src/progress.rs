//! Showing a run's progress: one line per role. On a terminal (and without `NO_COLOR`)
//! each role's line is redrawn in place (indicatif), fitted to the terminal's width so
//! that it never wraps and always keeps the reason a task is stuck or failed; otherwise
//! plain lines, printed whole and only when a role's line changes, without escape codes.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output;
use crate::trainlog::{Training, show};
use crate::verdict::{RoleCounts, RoleSummary, Tracker, one_line};

/// Columns assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// `worker    2/4 running, 1 pending, 1 succeeded — worker-3: Unschedulable: 0/3 nodes…`
pub fn role_line(summary: &RoleSummary) -> String {
    let tail = reason_text(summary).map(|r| format!(" — {r}"));
    format!(
        "{:<9} {}{}",
        role_name(summary),
        counts_text(&summary.counts, summary.queue.as_deref()),
        tail.unwrap_or_default()
    )
}

fn role_name(summary: &RoleSummary) -> &'static str {
    summary.role.map_or("(other)", |r| r.as_str())
}

/// `2/4 running, 1 queued in team-gpu, 1 on a lost node, 1 pending, 1 succeeded, 1 failed`: running of
/// the total, then the counts that are not zero (also `list`'s cell).
pub fn counts_text(c: &RoleCounts, queue: Option<&str>) -> String {
    let mut parts = vec![format!("{}/{} running", c.running, c.total)];
    if c.queued > 0 {
        parts.push(match queue {
            Some(q) => format!("{} queued in {q}", c.queued),
            None => format!("{} queued", c.queued),
        });
    }
    for (n, what) in [
        (c.lost, "on a lost node"),
        (c.pending, "pending"),
        (c.succeeded, "succeeded"),
        (c.failed, "failed"),
        (c.stopped, "stopped by tf-spawner"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    parts.join(", ")
}

/// `worker-3: Unschedulable: 0/3 nodes are available…`, `worker-0: Error: exit code 1`.
fn reason_text(summary: &RoleSummary) -> Option<String> {
    let (who, reason) = summary.stuck.as_ref()?;
    Some(format!("{who}: {}", one_line(&reason.to_string())))
}

/// The role's line in at most `width - 1` columns (the last column left free so that
/// no terminal wraps it). The stuck task and its reason stay: the reason's message is
/// cut first (`…`), then the counts shrink to `running/total`; only a terminal too
/// narrow for the role, the task and the reason's first word cuts those.
pub fn fitted_line(summary: &RoleSummary, width: usize) -> String {
    let room = width.saturating_sub(1).max(1);
    let full = role_line(summary);
    if columns(&full) <= room {
        return full;
    }
    let name = format!("{:<9} ", role_name(summary));
    let c = &summary.counts;
    let Some((who, reason)) = summary.stuck.as_ref() else {
        return cut(&full, room);
    };
    let must = format!(" — {who}: {}", reason.reason);
    for counts in [
        counts_text(c, summary.queue.as_deref()),
        format!("{}/{}", c.running, c.total),
    ] {
        let head = format!("{name}{counts}");
        if columns(&head) + columns(&must) < room {
            let tail = format!(" — {who}: {}", one_line(&reason.to_string()));
            return cut(&format!("{head}{tail}"), room);
        }
    }
    cut(&format!("{}{must}", name.trim_end()), room)
}

fn columns(text: &str) -> usize {
    text.chars().count()
}

/// `text` in at most `room` columns, ending in `…` when cut.
pub fn cut(text: &str, room: usize) -> String {
    if columns(text) <= room {
        return text.to_string();
    }
    let mut out: String = text.chars().take(room.saturating_sub(1)).collect();
    out.truncate(out.trim_end_matches([' ', ':']).len());
    out.push('…');
    out
}

/// The terminal's width in columns, when stdout is one.
fn terminal_width() -> usize {
    terminal_size().0
}

/// The terminal's width and height, when stdout is one (else 80 by 24).
pub fn terminal_size() -> (usize, usize) {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok();
    let width = size.map(|w| usize::from(w.ws_col)).filter(|&w| w > 0);
    let height = size.map(|w| usize::from(w.ws_row)).filter(|&h| h > 0);
    (
        width.unwrap_or(DEFAULT_WIDTH),
        height.unwrap_or(DEFAULT_HEIGHT),
    )
}

/// Rows assumed when the terminal does not say.
const DEFAULT_HEIGHT: usize = 24;

/// The training's line: `training  epoch 3/10, step 120/500, loss 0.23, …`.
pub fn training_line(training: &Training) -> String {
    format!("{:<9} {}", TRAINING, show::live(training))
}

/// The key of the training's line among the roles' (no role has this name).
const TRAINING: &str = "training";

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

    /// Why the run waits (`ops/waiting.rs`; `None`: it no longer does): in plain lines
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

/// `still     Pending (worker-0: Unschedulable: …); nothing new for 5m; the API server
/// last answered 3s ago`, `still     Running at epoch 3/10, step 120; nothing new for
/// 10m; …`: `ages` are how long nothing new was printed, and how long ago the API
/// server last answered (how old the state said is: a frozen watch shows).
pub fn heartbeat_line(
    state: &str,
    training: &Training,
    why: Option<&str>,
    (quiet, heard): (Duration, Duration),
) -> String {
    let mut at: Vec<String> = Vec::new();
    if let Some(k) = training.epoch {
        at.push(
            training
                .epochs
                .map_or_else(|| format!("epoch {k}"), |n| format!("epoch {k}/{n}")),
        );
    }
    if let Some(s) = training.step {
        at.push(
            training
                .steps
                .map_or_else(|| format!("step {s}"), |n| format!("step {s}/{n}")),
        );
    }
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {}", at.join(", "))
    };
    let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
    let secs = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs()));
    let (quiet, heard) = (secs(quiet), secs(heard));
    format!(
        "{:<9} {state}{at}{why}; nothing new for {quiet}; the API server last answered {heard} ago",
        "still"
    )
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Role;
    use crate::verdict::{Reason, RoleCounts};

    #[test]
    fn a_role_line_names_counts_and_the_stuck_task() {
        let summary = RoleSummary {
            role: Some(Role::Worker),
            counts: RoleCounts {
                total: 5,
                pending: 1,
                running: 2,
                lost: 1,
                succeeded: 1,
                failed: 0,
                queued: 0,
                stopped: 0,
            },
            stuck: Some((
                "worker-3".into(),
                Reason {
                    reason: "Unschedulable".into(),
                    message: Some(
                        "0/3 nodes are available:\n 3 Insufficient nvidia.com/gpu".into(),
                    ),
                },
            )),
            queue: None,
        };
        assert_eq!(
            role_line(&summary),
            "worker    2/5 running, 1 on a lost node, 1 pending, 1 succeeded — worker-3: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"
        );
        let done = RoleSummary {
            role: Some(Role::Ps),
            counts: RoleCounts {
                total: 2,
                pending: 0,
                running: 0,
                lost: 0,
                succeeded: 1,
                failed: 1,
                queued: 0,
                stopped: 0,
            },
            stuck: None,
            queue: None,
        };
        assert_eq!(
            role_line(&done),
            "ps        0/2 running, 1 succeeded, 1 failed"
        );
        let queued = RoleSummary {
            role: Some(Role::Worker),
            counts: RoleCounts {
                total: 4,
                queued: 4,
                ..RoleCounts::default()
            },
            stuck: None,
            queue: Some("team-gpu".into()),
        };
        assert_eq!(
            role_line(&queued),
            "worker    0/4 running, 4 queued in team-gpu"
        );
    }

    fn summary(counts: RoleCounts, who: &str, reason: &str, message: &str) -> RoleSummary {
        RoleSummary {
            role: Some(Role::Worker),
            counts,
            stuck: Some((
                who.into(),
                Reason {
                    reason: reason.into(),
                    message: Some(message.into()),
                },
            )),
            queue: None,
        }
    }

    fn pending(total: u32) -> RoleCounts {
        RoleCounts {
            total,
            pending: total,
            ..RoleCounts::default()
        }
    }

    #[test]
    fn the_live_line_fits_80_columns_and_keeps_the_reason() {
        let s = summary(
            pending(2),
            "worker-1",
            "Unschedulable",
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        );
        let line = fitted_line(&s, 80);
        assert_eq!(
            line,
            "worker    0/2 running, 2 pending — worker-1: Unschedulable: 0/1 nodes are avai…"
        );
        assert_eq!(line.chars().count(), 79);
        // A line that fits is left whole.
        let short = summary(pending(2), "worker-0", "ErrImagePull", "not found");
        assert_eq!(
            fitted_line(&short, 80),
            "worker    0/2 running, 2 pending — worker-0: ErrImagePull: not found"
        );
    }

    #[test]
    fn a_failed_pod_reads_as_its_reason() {
        let counts = RoleCounts {
            total: 2,
            running: 1,
            failed: 1,
            ..RoleCounts::default()
        };
        let s = summary(counts, "worker-0", "Error", "exit code 1");
        assert_eq!(
            fitted_line(&s, 80),
            "worker    1/2 running, 1 failed — worker-0: Error: exit code 1"
        );
        assert_eq!(
            fitted_line(&s, 40),
            "worker    1/2 — worker-0: Error: exit…"
        );
    }

    #[test]
    fn narrower_terminals_shrink_the_counts_before_the_reason() {
        let counts = RoleCounts {
            total: 4,
            pending: 1,
            running: 2,
            succeeded: 1,
            ..RoleCounts::default()
        };
        let s = summary(
            counts,
            "worker-3",
            "ImagePullBackOff",
            "Back-off pulling image \"x\"",
        );
        for width in [80, 72, 60, 50, 45, 40] {
            let line = fitted_line(&s, width);
            assert!(line.chars().count() < width, "{width}: {line}");
            assert!(
                line.contains("worker-3: ImagePullBackOff"),
                "{width}: {line}"
            );
        }
        assert_eq!(
            fitted_line(&s, 60),
            "worker    2/4 — worker-3: ImagePullBackOff: Back-off pulli…"
        );
        // Too narrow even for that: the role, the task and the reason, cut.
        assert_eq!(fitted_line(&s, 30), "worker — worker-3: ImagePull…");
        // No reason: the counts, cut.
        let plain = RoleSummary {
            stuck: None,
            ..s.clone()
        };
        assert_eq!(fitted_line(&plain, 30), "worker    2/4 running, 1 pen…");
    }
}
