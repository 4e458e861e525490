//! A task that failed because a peer did (pure): TensorFlow's and JAX's collective-abort
//! and coordination-service errors, recognised in the failed task's last log lines.
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
//!
//! JAX (`--framework keras` or `jax`; jax 0.10.2, read in jaxlib's `libjax_common.so`
//! and seen in real runs) aborts the survivor instead: exit 134 (SIGABRT, a fatal absl
//! log), after a Python traceback it may print at once. Its texts:
//!
//! - `xla/pjrt/distributed/client.h:80` (the fatal line): `Terminating process because the
//!   JAX distributed service detected fatal errors. This most likely indicates that another
//!   task died; …` followed by the error: its coordination service's, the same code as
//!   TensorFlow's above (`xla/tsl/distributed_runtime/coordination/`), which names a task
//!   by its number: `Task 1 heartbeat timeout. This indicates that the remote task has
//!   failed, …` (a task JAX lost: worker 1, tf-spawner's process ids being the worker
//!   numbers) or `Failed to send RPC to coordination service. Either the leader task was
//!   preempted/died/restarted unexpectedly …` (the leader is JAX's process 0: worker 0).
//! - XLA's CPU collectives on Gloo, the Python error a survivor raises at once (as
//!   `jax.errors.JaxRuntimeError: INTERNAL: Error dispatching computation: …`): `Gloo
//!   all-reduce failed: [external/gloo/gloo/transport/tcp/pair.cc:538] Read error
//!   [127.0.0.1]:43154: Connection reset by peer` (also `Gloo AllGather failed`, `Gloo
//!   ReduceScatter failed`, `Gloo all-to-all failed`, `Gloo collective permute failed`).
//!   It names no task; when the fatal line was printed before the traceback it is not
//!   among a pod's last lines, so this is what a verdict sees.

use std::fmt;

use crate::roles::{Role, Task};

/// A text a task prints when it fails because of a peer (see the module docs).
struct Marker {
    text: &'static str,
    /// The line is shown from the marker on (what precedes it says nothing).
    from_marker: bool,
}

const fn marker(text: &'static str) -> Marker {
    Marker {
        text,
        from_marker: false,
    }
}

const fn gloo(text: &'static str) -> Marker {
    Marker {
        text,
        from_marker: true,
    }
}

/// What TensorFlow and JAX print when a task fails because of a peer.
const MARKERS: &[Marker] = &[
    marker("Collective ops is aborted by"),
    marker("heartbeat timeout. This indicates that the remote task"),
    marker("has been set to ERROR in coordination service"),
    marker("Failed to send RPC to coordination service"),
    marker("the JAX distributed service detected fatal errors"),
    gloo("Gloo all-reduce failed"),
    gloo("Gloo AllGather failed"),
    gloo("Gloo ReduceScatter failed"),
    gloo("Gloo all-to-all failed"),
    gloo("Gloo collective permute failed"),
];

/// Signs that the text is JAX's, not TensorFlow's (their coordination services print the
/// same errors).
const JAX_SIGNS: &[&str] = &[
    "JAX distributed service",
    "jax.errors.",
    "/xla.coordination.",
    "Gloo ",
];

/// JAX's fatal line when its leader, process 0, is gone.
const JAX_LEADER_GONE: &str = "Either the leader task was preempted/died";

/// The longest part of the recognised line kept (for one line of a verdict).
const LINE_CHARS: usize = 160;

/// A task's failure that TensorFlow or JAX blames on a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAbort {
    /// Who says so: `TensorFlow` or `JAX`.
    pub said_by: &'static str,
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
        .filter_map(|m| text.find(m.text).map(|at| (at, m)))
        .min_by_key(|(at, _)| *at)?;
    let start = match marker.from_marker {
        true => at,
        false => text[..at].rfind('\n').map_or(0, |n| n + 1),
    };
    let line = without_glog_prefix(text[start..].lines().next().unwrap_or(marker.text).trim());
    let line: String = match line.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    };
    let jax = JAX_SIGNS.iter().any(|s| text.contains(s));
    // The peer: the first task named from the error on that is not the task itself
    // (TensorFlow's lines name its own devices too).
    let peer = match jax {
        true => jax_tasks_named(&text[start..]).find(|t| Some(*t) != own),
        false => tasks_named(&text[start..]).find(|t| Some(*t) != own),
    };
    let said_by = if jax { "JAX" } else { "TensorFlow" };
    Some(PeerAbort {
        said_by,
        peer,
        line,
    })
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

/// The workers JAX's coordination service names in `text`, in order: `Task N heartbeat
/// timeout` (JAX's task N is process N, tf-spawner's worker N), and its leader (process 0)
/// when the fatal line says the leader is gone.
fn jax_tasks_named(text: &str) -> impl Iterator<Item = Task> + '_ {
    let heartbeats = text.match_indices("Task ").filter_map(|(at, _)| {
        let rest = &text[at + "Task ".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        rest[digits.len()..]
            .starts_with(" heartbeat timeout")
            .then(|| digits.parse().ok())
            .flatten()
            .map(|index| (at, index))
    });
    let leader = text.find(JAX_LEADER_GONE).map(|at| (at, 0));
    let mut named: Vec<(usize, u32)> = heartbeats.chain(leader).collect();
    named.sort_unstable();
    named.into_iter().map(|(_, index)| Task {
        role: Role::Worker,
        index,
    })
}
