//! The sweep's view of its runs: a line per change of a run (its state, its epoch, its
//! last metrics), `NAME-2  Running  epoch 3/10, loss 0.31, accuracy 0.9`, on a terminal
//! and on a pipe alike, and each run's end.

use std::collections::BTreeMap;

use crate::output;
use crate::plan::sweep::Point;
use crate::progress::Seen;
use crate::trainlog::{Training, show};

/// Metrics shown on a run's line.
const METRICS: usize = 2;

#[derive(Default)]
struct Row {
    state: String,
    training: Training,
    shown: String,
}

pub(super) struct View {
    rows: BTreeMap<String, Row>,
    width: usize,
}

impl View {
    pub(super) fn new(runs: &[(String, Point)]) -> View {
        View {
            rows: BTreeMap::new(),
            width: runs.iter().map(|(t, _)| t.len()).max().unwrap_or(0),
        }
    }

    /// A run's state or training changed: its line, if its text did.
    pub(super) fn seen(&mut self, seen: Seen) {
        let tag = match seen {
            Seen::State { tag, state } => {
                self.rows.entry(tag.clone()).or_default().state = state;
                tag
            }
            Seen::Training { tag, training } => {
                self.rows.entry(tag.clone()).or_default().training = *training;
                tag
            }
        };
        let width = self.width;
        let Some(row) = self.rows.get_mut(&tag) else {
            return;
        };
        // Per epoch, not per step, as a wait's plain lines.
        let t = &row.training;
        let mut line = format!("{tag:<width$}  {}", row.state);
        if !t.is_empty() {
            line.push_str(&format!("  {}", show::short(t)));
            for (name, value) in t.metrics.iter().take(METRICS) {
                line.push_str(&format!(", {name} {}", show::value(*value)));
            }
        }
        let key = format!("{} {} {}", row.state, show::short(t), t.epochs_done);
        // A verdict is the run's end's line (`ended`), with its reason.
        let end = matches!(row.state.as_str(), "Succeeded" | "Failed");
        if key != row.shown && !end {
            row.shown = key;
            let _ = output::print(&format!("{line}\n"));
        }
    }

    /// A run ended: `NAME-2  Succeeded`.
    pub(super) fn ended(&mut self, tag: &str, how: &str) {
        let width = self.width;
        let _ = output::print(&format!("{tag:<width$}  {how}\n"));
    }
}
