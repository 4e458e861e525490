//! A task that failed because a peer did (pure): TensorFlow's collective-abort and
//! coordination-service errors, recognised in the failed task's last log lines.
//!
//! Under `MultiWorkerMirroredStrategy` a worker whose peer is lost (its node dead, its
//! process killed, its own error) does not hang for ever: its all-reduce or its
//! coordination service gives up and the script exits 1. That exit is the *victim's*:
//! the run failed because of the peer, and the peer is what a verdict must name (and a
//! restart must judge). The texts, from TensorFlow's source:
//!
//! - `tensorflow/core/common_runtime/base_collective_executor.cc`,
//!   `BaseCollectiveExecutor::StartAbort`: `"Collective ops is aborted by: " <error>
//!   "\nThe error could be from a previous operation. Restart your program to reset."`,
//!   raised in Python as `UnavailableError`/`AbortedError`/… `[[{{node
//!   CollectiveReduceV2}}]]`; the gRPC error under it names the peer it came from:
//!   `Additional GRPC error information from remote target /job:worker/replica:0/task:1`.
//! - `tsl/distributed_runtime/coordination/coordination_service.cc`: `"Task " <task> "
//!   heartbeat timeout. This indicates that the remote task has failed, got preempted, or
//!   crashed unexpectedly."` and `<task> " has been set to ERROR in coordination service:
//!   "`; its agent (`coordination_service_agent.cc`), on a task whose leader is gone:
//!   `Failed to send RPC to coordination service. Either the leader task was
//!   preempted/died/restarted unexpectedly or this task is experiencing network issues.`

use std::fmt;

use crate::roles::{Role, Task};

/// What TensorFlow prints when a task fails because of a peer (see the module docs).
const MARKERS: &[&str] = &[
    "Collective ops is aborted by",
    "heartbeat timeout. This indicates that the remote task",
    "has been set to ERROR in coordination service",
    "Failed to send RPC to coordination service",
];

/// The longest part of the recognised line kept (for one line of a verdict).
const LINE_CHARS: usize = 160;

/// A task's failure that TensorFlow blames on a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAbort {
    /// The peer the error names (`/job:worker/replica:0/task:1`), when it names one
    /// other than the task itself.
    pub peer: Option<Task>,
    /// The line that says so, shortened.
    pub line: String,
}

impl fmt::Display for PeerAbort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.peer {
            Some(p) => write!(f, "aborted because of its peer {} ({})", p.id(), self.line),
            None => write!(f, "aborted because of a peer ({})", self.line),
        }
    }
}

/// The peer failure `text` (a task's last log lines, or its termination message) reports,
/// if it reports one. `own` is the task that printed it: never named as its own peer.
pub fn recognise(text: &str, own: Option<Task>) -> Option<PeerAbort> {
    let (at, marker) = MARKERS
        .iter()
        .filter_map(|m| text.find(m).map(|at| (at, *m)))
        .min_by_key(|(at, _)| *at)?;
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = without_glog_prefix(text[start..].lines().next().unwrap_or(marker).trim());
    let line: String = match line.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    };
    // The peer: the first task named from the error on that is not the task itself
    // (TensorFlow's lines name its own devices too).
    let peer = tasks_named(&text[start..]).find(|t| Some(*t) != own);
    Some(PeerAbort { peer, line })
}

/// `line` without the prefix absl's log puts before TensorFlow's C++ messages
/// (`W0000 00:00:1795721275.325251   13804 local_rendezvous.cc:412] `): severity, date,
/// time, thread, file and line, which would take half of the verdict's line.
fn without_glog_prefix(line: &str) -> &str {
    let mut chars = line.chars();
    let severity = chars.next().is_some_and(|c| "IWEF".contains(c));
    let digit = chars.next().is_some_and(|c| c.is_ascii_digit());
    match line.find("] ") {
        Some(end) if severity && digit && end < 100 => line[end + 2..].trim_start(),
        _ => line,
    }
}

/// The tasks `/job:NAME/replica:R/task:I` (or `/job:NAME/task:I`) in `text`, in order.
fn tasks_named(text: &str) -> impl Iterator<Item = Task> + '_ {
    text.match_indices("/job:").filter_map(|(at, _)| {
        let rest = &text[at + "/job:".len()..];
        let (job, rest) = rest.split_once('/')?;
        let role = Role::parse(job)?;
        let rest = match rest.strip_prefix("replica:") {
            Some(r) => r.split_once('/')?.1,
            None => rest,
        };
        let digits: String = rest
            .strip_prefix("task:")?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some(Task {
            role,
            index: digits.parse().ok()?,
        })
    })
}
