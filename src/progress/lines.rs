//! The text of a run's progress lines, apart from where they are drawn (`progress.rs`):
//! a role's line (`role_line`, the counts that `list` shows too), fitted to a terminal's
//! width (`fitted_line`, `cut`), the training's line and the heartbeat; the terminal's
//! size. Pure but for reading that size.

use std::time::Duration;

use crate::trainlog::{Training, show};
use crate::verdict::{RoleCounts, RoleSummary, one_line};

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

pub(super) fn role_name(summary: &RoleSummary) -> &'static str {
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
pub(super) fn terminal_width() -> usize {
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
pub(super) const TRAINING: &str = "training";

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
