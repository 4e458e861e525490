//! The sweep's view of its runs. On a terminal: one table, a row per run (its
//! parameters, state, epoch and last metrics) and a line of counts, redrawn in place as
//! the runs change (an indicatif bar whose message is the table, shown through
//! `output::live`, so every other line printed meanwhile goes above it). Elsewhere (a
//! pipe, a file, `NO_COLOR`): a line per change of a run, `NAME-2  Running  epoch 3/10,
//! val_loss 0.35, loss 0.31`, as before. The metrics shown are the last printed, the
//! one the experiment is judged by first. Both print each run's end as its own line.
//!
//! [`Board`] is the pure part: what each run is at, the pipe's lines and the table.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output;
use crate::plan::sweep::Point;
use crate::progress::{self, Seen};
use crate::trainlog::{Training, show};

/// Metrics shown on a run's line and row.
const METRICS: usize = 2;

/// What a run is at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    /// Not started yet.
    Waiting,
    /// Being created (or, on `--resume`, looked at).
    Starting,
    /// The verdict so far: `Pending`, `Running`.
    Seen(String),
    /// Its end: `Succeeded`, `Failed`, `interrupted`.
    Ended(&'static str),
}

impl State {
    fn text(&self) -> &str {
        match self {
            State::Waiting => "waiting",
            State::Starting => "starting",
            State::Seen(s) => s,
            State::Ended(s) => s,
        }
    }

    /// Which rows a short terminal keeps: runs under way, then failed, then ended,
    /// then waiting.
    fn rank(&self) -> u8 {
        match self {
            State::Starting | State::Seen(_) => 0,
            State::Ended("Failed") => 1,
            State::Ended(_) => 2,
            State::Waiting => 3,
        }
    }
}

#[derive(Debug, Clone)]
struct Row {
    tag: String,
    point: Point,
    state: State,
    training: Training,
    /// What the pipe's last line of the run said.
    shown: String,
}

/// Every run of the sweep and what it is at (pure).
#[derive(Debug, Clone)]
pub(super) struct Board {
    name: String,
    rows: Vec<Row>,
    width: usize,
}

impl Board {
    pub(super) fn new(name: &str, runs: &[(String, Point)]) -> Board {
        Board {
            name: name.to_string(),
            rows: runs
                .iter()
                .map(|(tag, point)| Row {
                    tag: tag.clone(),
                    point: point.clone(),
                    state: State::Waiting,
                    training: Training::default(),
                    shown: String::new(),
                })
                .collect(),
            width: runs.iter().map(|(t, _)| t.len()).max().unwrap_or(0),
        }
    }

    fn row(&mut self, tag: &str) -> Option<&mut Row> {
        self.rows.iter_mut().find(|r| r.tag == tag)
    }

    /// Run `i`'s point, proposed (`--method tpe`).
    pub(super) fn proposed(&mut self, i: usize, point: &Point) {
        if let Some(row) = self.rows.get_mut(i) {
            row.point = point.clone();
        }
    }

    /// Run `i` is being created or looked at.
    pub(super) fn starting(&mut self, i: usize) {
        if let Some(row) = self.rows.get_mut(i) {
            row.state = State::Starting;
        }
    }

    /// A run's state or training changed: the pipe's line for it, if its state or
    /// epoch did (per epoch, not per step, as a wait's plain lines).
    pub(super) fn seen(&mut self, seen: Seen) -> Option<String> {
        let width = self.width;
        let row = match seen {
            Seen::State { tag, state } => {
                let row = self.row(&tag)?;
                if matches!(row.state, State::Ended(_)) {
                    return None;
                }
                row.state = State::Seen(state);
                row
            }
            Seen::Training { tag, training } => {
                let row = self.row(&tag)?;
                row.training = *training;
                row
            }
        };
        let t = &row.training;
        let mut line = format!("{:<width$}  {}", row.tag, row.state.text());
        if !t.is_empty() {
            line.push_str(&format!("  {}", show::short(t)));
            if !t.metrics.is_empty() {
                line.push_str(&format!(", {}", metrics_text(t)));
            }
        }
        let key = format!("{} {} {}", row.state.text(), show::short(t), t.epochs_done);
        // A verdict is the run's end's line (`ended`), with its reason.
        let end = matches!(row.state.text(), "Succeeded" | "Failed");
        if key == row.shown || end {
            return None;
        }
        row.shown = key;
        Some(format!("{line}\n"))
    }

    /// A run ended (`state`: `Succeeded`, `Failed`, `interrupted`): its line,
    /// `NAME-2  Failed: why`.
    pub(super) fn ended(&mut self, tag: &str, state: &'static str, how: &str) -> String {
        if let Some(row) = self.row(tag) {
            row.state = State::Ended(state);
        }
        let width = self.width;
        format!("{tag:<width$}  {how}\n")
    }

    /// The table as a terminal shows it: a header, a row per run (those under way
    /// first when the terminal has not the `height` for all of them), a line of
    /// counts; each line at most `width - 1` columns.
    pub(super) fn render(&self, width: usize, height: usize) -> String {
        let room = height.saturating_sub(3).max(1);
        let mut shown: Vec<usize> = (0..self.rows.len()).collect();
        if shown.len() > room {
            shown.sort_by_key(|&i| (self.rows[i].state.rank(), i));
            shown.truncate(room);
            shown.sort_unstable();
        }
        let names: Vec<&str> = self
            .rows
            .first()
            .map(|r| r.point.iter().map(|(k, _)| k.as_str()).collect())
            .unwrap_or_default();
        let mut headers = vec!["RUN"];
        headers.extend(&names);
        headers.extend(["STATE", "EPOCH", "METRICS"]);
        let cells: Vec<Vec<String>> = shown
            .iter()
            .map(|&i| {
                let r = &self.rows[i];
                let mut cells = vec![r.tag.clone()];
                cells.extend(r.point.iter().map(|(_, v)| v.clone()));
                cells.push(r.state.text().to_string());
                cells.push(epoch_text(&r.training));
                cells.push(metrics_text(&r.training));
                cells
            })
            .collect();
        let room = width.saturating_sub(1).max(1);
        let mut out = String::new();
        for line in output::table(&headers, &cells).lines() {
            out.push_str(&progress::cut(line, room));
            out.push('\n');
        }
        let hidden = self.rows.len() - shown.len();
        out.push_str(&progress::cut(&self.counts(hidden), room));
        out
    }

    /// `experiment ex: 3 runs: 1 succeeded, 1 running, 1 waiting (1 not shown)`.
    fn counts(&self, hidden: usize) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for row in &self.rows {
            let word = match row.state.text() {
                crate::metrics::early::STOPPED_EARLY => "stopped early".to_string(),
                other => other.to_lowercase(),
            };
            match counts.iter_mut().find(|(w, _)| *w == word) {
                Some((_, n)) => *n += 1,
                None => counts.push((word, 1)),
            }
        }
        let order = |w: &str| {
            ["succeeded", "failed", "running", "pending", "starting"]
                .iter()
                .position(|o| *o == w)
                .unwrap_or(5)
        };
        counts.sort_by_key(|(w, _)| order(w));
        let parts: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
        let total = self.rows.len();
        let mut line = format!(
            "experiment {}: {total} {}: {}",
            self.name,
            if total == 1 { "run" } else { "runs" },
            parts.join(", ")
        );
        if hidden > 0 {
            line.push_str(&format!(" ({hidden} not shown)"));
        }
        line
    }
}

/// `3/10`, `3`, `step 40/100`, or empty.
fn epoch_text(t: &Training) -> String {
    match (t.epoch, t.epochs) {
        (Some(k), Some(n)) => format!("{k}/{n}"),
        (Some(k), None) => k.to_string(),
        _ if t.is_empty() => String::new(),
        _ => show::short(t),
    }
}

/// `val_loss 0.35, loss 0.31`: the last metrics printed, the one the experiment is
/// judged by first (`metrics::objective`); `(epoch 1)` after them when they are an
/// earlier epoch's than the one under way (which printed none yet).
fn metrics_text(t: &Training) -> String {
    let first = crate::metrics::objective(t.metrics.iter().map(|(n, _)| n.as_str()));
    let ordered = t
        .metrics
        .iter()
        .filter(|(n, _)| Some(n.as_str()) == first)
        .chain(t.metrics.iter().filter(|(n, _)| Some(n.as_str()) != first));
    let mut text = ordered
        .take(METRICS)
        .map(|(name, value)| format!("{name} {}", show::value(*value)))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(k) = t.metrics_from_before() {
        text.push_str(&format!(" (epoch {k})"));
    }
    text
}

/// The board shown: redrawn on a terminal, lines on a pipe.
pub(super) struct View {
    board: Board,
    live: Option<ProgressBar>,
}

impl View {
    /// On a terminal (`output::fancy_stdout`), the table drawn now.
    pub(super) fn new(name: &str, runs: &[(String, Point)]) -> View {
        let board = Board::new(name, runs);
        let live = output::fancy_stdout().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
            bar.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
            output::live(Some(bar.clone()));
            bar
        });
        let mut view = View { board, live };
        view.draw(true);
        view
    }

    /// The table again (on a terminal); `force`: past indicatif's rate limit, for a
    /// change of state, lest the screen keep an older one.
    fn draw(&mut self, force: bool) {
        if let Some(bar) = &self.live {
            let (width, height) = progress::terminal_size();
            bar.set_message(self.board.render(width, height));
            if force {
                bar.force_draw();
            }
        }
    }

    pub(super) fn proposed(&mut self, i: usize, point: &Point) {
        self.board.proposed(i, point);
    }

    pub(super) fn starting(&mut self, i: usize) {
        self.board.starting(i);
        self.draw(true);
    }

    pub(super) fn seen(&mut self, seen: Seen) {
        let line = self.board.seen(seen);
        match (&self.live, line) {
            (Some(_), line) => self.draw(line.is_some()),
            (None, Some(line)) => {
                let _ = output::print(&line);
            }
            (None, None) => {}
        }
    }

    /// A run ended: its line (above the table on a terminal).
    pub(super) fn ended(&mut self, tag: &str, state: &'static str, how: &str) {
        let line = self.board.ended(tag, state, how);
        let _ = output::print(&line);
        self.draw(true);
    }
}

impl Drop for View {
    /// The table's last state stays on the screen; what follows prints below it.
    fn drop(&mut self) {
        if let Some(bar) = self.live.take() {
            output::live(None);
            bar.abandon();
            // The cursor is left at the end of the table's last line.
            let _ = output::print("\n");
        }
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
