//! Showing a run's progress: one line per role. On a terminal (and without `NO_COLOR`)
//! an indicatif bar per role redrawn in place; otherwise plain lines, printed only
//! when a role's line changes, without escape codes.

use std::collections::BTreeMap;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output;
use crate::verdict::{RoleSummary, Tracker, one_line};

/// `worker     2/4 running, 1 pending, 1 finished — worker-3: Unschedulable: 0/3 nodes…`
pub fn role_line(summary: &RoleSummary) -> String {
    format!("{:<9} {}", role_name(summary), role_text(summary))
}

fn role_name(summary: &RoleSummary) -> &'static str {
    summary.role.map_or("(other)", |r| r.as_str())
}

/// The counts and the stuck reason, without the role name.
pub fn role_text(summary: &RoleSummary) -> String {
    let c = &summary.counts;
    if c.queued > 0 {
        return queued_text(summary);
    }
    let mut text = format!(
        "{}/{} running, {} pending, {} finished",
        c.running,
        c.total,
        c.pending,
        c.finished()
    );
    if c.failed > 0 {
        text.push_str(&format!(" ({} failed)", c.failed));
    }
    if let Some((who, reason)) = &summary.stuck {
        text.push_str(&format!(" — {who}: {}", one_line(&reason.to_string())));
    }
    text
}

/// `0/4 running, 4 queued in team-gpu`: a role with queued pods, then its other
/// non-zero counts and the stuck reason.
fn queued_text(summary: &RoleSummary) -> String {
    let c = &summary.counts;
    let mut text = format!("{}/{} running, {} queued", c.running, c.total, c.queued);
    if let Some(queue) = &summary.queue {
        text.push_str(&format!(" in {queue}"));
    }
    for (n, what) in [(c.pending, "pending"), (c.finished(), "finished")] {
        if n > 0 {
            text.push_str(&format!(", {n} {what}"));
        }
    }
    if c.failed > 0 {
        text.push_str(&format!(" ({} failed)", c.failed));
    }
    if let Some((who, reason)) = &summary.stuck {
        text.push_str(&format!(" — {who}: {}", one_line(&reason.to_string())));
    }
    text
}

/// Where progress goes.
pub enum Progress {
    Bars {
        multi: MultiProgress,
        bars: BTreeMap<String, ProgressBar>,
    },
    Plain {
        last: BTreeMap<String, String>,
    },
}

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
            }
        }
    }

    /// Shows the tracker's current summary.
    pub fn show(&mut self, tracker: &Tracker) {
        let summary = tracker.summary();
        match self {
            Progress::Bars { multi, bars } => {
                for role in &summary {
                    let key = role_name(role).to_string();
                    let bar = bars.entry(key.clone()).or_insert_with(|| {
                        let bar = multi.add(ProgressBar::new(u64::from(role.counts.total)));
                        bar.set_style(
                            ProgressStyle::with_template("{prefix:<9} [{bar:20}] {wide_msg}")
                                .expect("valid template")
                                .progress_chars("=> "),
                        );
                        bar.set_prefix(key);
                        bar
                    });
                    bar.set_message(role_text(role));
                    bar.set_length(u64::from(role.counts.total));
                    bar.set_position(u64::from(role.counts.running + role.counts.finished()));
                }
            }
            Progress::Plain { last } => {
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
                // A closed stdout must not stop the wait: ignore write errors.
                if !text.is_empty() {
                    let _ = output::print(&text);
                }
            }
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
                total: 4,
                pending: 1,
                running: 2,
                succeeded: 1,
                failed: 0,
                queued: 0,
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
            "worker    2/4 running, 1 pending, 1 finished — worker-3: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"
        );
        let done = RoleSummary {
            role: Some(Role::Ps),
            counts: RoleCounts {
                total: 2,
                pending: 0,
                running: 0,
                succeeded: 1,
                failed: 1,
                queued: 0,
            },
            stuck: None,
            queue: None,
        };
        assert_eq!(
            role_line(&done),
            "ps        0/2 running, 0 pending, 2 finished (1 failed)"
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
}
