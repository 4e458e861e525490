//! Why a task failed ([`Failure`], [`FailureKind`]): each kind read from its pod (gone,
//! taken away, exited, lost with its node), the waiting reasons that will not fix
//! themselves (an image that cannot be pulled, past its `--pull-grace`), and how a
//! failure is said.

use std::fmt;

use super::peer::PeerAbort;
use super::pod::{self, NODE_LOST, PodView, Reason, one_line};
use crate::roles::Task;

/// The kubelet's waiting reason between two failed pulls of an image.
pub(super) const BACK_OFF: &str = "ImagePullBackOff";
/// Waiting reasons that will not fix themselves: the run fails at once.
pub(super) const FATAL_WAITING: &[&str] = &[
    BACK_OFF,
    "InvalidImageName",
    "CreateContainerConfigError",
    "ErrImageNeverPull",
];
/// `ErrImagePull` may be a passing registry hiccup: fatal the second time it is seen.
pub(super) const PULL_ERROR: &str = "ErrImagePull";
pub(super) const PULL_ERRORS_FATAL: u32 = 2;
/// The built-in `--pull-grace`: how long after its pod's creation a pull error of a
/// task's image (`ErrImagePull`, `ImagePullBackOff`) is not final yet, as a registry's
/// hiccup or a slow mirror heals within minutes, and a wrong `--image` does not.
pub const DEFAULT_PULL_GRACE: std::time::Duration = std::time::Duration::from_secs(300);
/// What a pull error that failed the run adds: the flag to check, and the one to wait
/// longer.
pub(super) const PULL_HINT: &str =
    " (its image cannot be pulled: check --image; a slow registry: --pull-grace)";

/// Why a run failed: which pod, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub pod: String,
    pub task: Option<Task>,
    pub kind: FailureKind,
    /// An exit TensorFlow or JAX blames on a peer (its last log lines say so, see
    /// [`Tracker::note_log`](super::Tracker::note_log)): the task is a victim, the peer
    /// is the cause.
    pub after_peer: Option<PeerAbort>,
}

impl Failure {
    /// A failure of `pod` (`task`) of this kind, blamed on nobody else.
    pub fn new(pod: String, task: Option<Task>, kind: FailureKind) -> Failure {
        Failure {
            pod,
            task,
            kind,
            after_peer: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The pod failed, or its TF container exited non-zero.
    Exited {
        code: Option<i32>,
        reason: Option<String>,
        message: Option<String>,
    },
    /// The pod cannot start (image pull, bad config).
    CannotStart(Reason),
    /// The pod was deleted (or never created) before the run finished.
    Gone,
    /// The pod was taken away before it ended (evicted, preempted, deleted while it
    /// ran): not the training's failure.
    Removed(Reason),
    /// Stopped by tf-spawner after an earlier verdict (`cluster/stop.rs`): named only
    /// when nothing else explains the end (the earlier verdict is on the run's record).
    Stopped,
}

impl FailureKind {
    /// Taken away from outside (deleted, evicted, preempted): not the training's own end.
    pub(super) fn is_removal(&self) -> bool {
        matches!(self, FailureKind::Gone | FailureKind::Removed(_))
    }

    /// Evidence lost since: a stop after the verdict, or a plain deletion (what a
    /// cleanup, `-d` or tf-spawner's deletion of a pod no node had taken does too). A
    /// verdict recorded when the run ended says more.
    pub fn is_after_the_fact(&self) -> bool {
        matches!(self, FailureKind::Stopped) || self.is_plain_deletion()
    }

    /// A plain deletion: what a stop after the verdict, a cleanup or `-d` does too.
    pub(super) fn is_plain_deletion(&self) -> bool {
        match self {
            FailureKind::Gone => true,
            FailureKind::Removed(r) => r.reason == pod::DELETED,
            _ => false,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.task {
            Some(t) => format!("pod {} ({})", self.pod, t.id()),
            None => format!("pod {}", self.pod),
        };
        match &self.kind {
            FailureKind::Exited {
                code,
                reason,
                message,
            } => {
                write!(f, "{who} failed")?;
                if let Some(code) = code {
                    write!(f, ": exit code {code}")?;
                }
                if let Some(reason) = reason {
                    write!(f, ", reason {reason}")?;
                }
                if let Some(message) = message {
                    write!(f, ": {}", one_line(message))?;
                }
                if reason.as_deref() == Some(pod::DEADLINE_EXCEEDED) {
                    write!(f, "; the run's --deadline ended it")?;
                }
                if let Some(abort) = &self.after_peer {
                    write!(f, "; {abort}")?;
                }
                Ok(())
            }
            FailureKind::CannotStart(reason) if is_pull(reason) => {
                write!(f, "{who} {CANNOT_START_TEXT}: {reason}{PULL_HINT}")
            }
            FailureKind::CannotStart(reason) => write!(f, "{who} {CANNOT_START_TEXT}: {reason}"),
            FailureKind::Gone => write!(f, "{who} was deleted before the run finished"),
            FailureKind::Stopped => write!(f, "{who} {STOPPED_TEXT}"),
            FailureKind::Removed(r) => {
                let what = match r.reason.as_str() {
                    pod::DELETED => return write!(f, "{who} was deleted while it ran"),
                    NODE_LOST => return write!(f, "{who} was lost with its node: {r}"),
                    "Evicted" | "EvictionByEvictionAPI" | "TerminationByKubelet" => "evicted",
                    "Preempting" | "PreemptionByScheduler" | "PreemptionByKubeScheduler" => {
                        "preempted"
                    }
                    _ => "taken away",
                };
                write!(f, "{who} was {what} before it ended ({r})")
            }
        }
    }
}

/// How a task that cannot start is named (`pod P (worker-0) cannot start: WHY`), which a
/// later `wait` reads back from the run's record (`ops/wait/recorded.rs`).
pub const CANNOT_START_TEXT: &str = "cannot start";

/// How every command names a task tf-spawner stopped after the run's verdict.
pub const STOPPED_TEXT: &str = "was stopped by tf-spawner after the verdict";

/// A task gone from the API before it finished: lost with its node, taken away for a
/// reason, else deleted.
pub(super) fn gone(v: &PodView) -> FailureKind {
    match (&v.removal, v.node_lost) {
        (_, Some(since)) => FailureKind::Removed(lost_node(v, since)),
        (Some(r), _) if r.reason != pod::DELETED => FailureKind::Removed(r.clone()),
        _ => FailureKind::Gone,
    }
}

/// A task taken away (`removal`) while it is there. Taken from a node that stopped
/// reporting (the taint manager's eviction at the pod's toleration, or a deletion):
/// lost with its node.
pub(super) fn taken_away(v: &PodView, removal: &Reason) -> FailureKind {
    match removal.clone() {
        // Deleted before it ever ran: not "while it ran".
        r if r.reason == pod::DELETED && !v.started => FailureKind::Gone,
        r => FailureKind::Removed(match v.node_lost {
            Some(since) => lost_node(v, since),
            None => r,
        }),
    }
}

/// A failed task's exit: its code, and the reason that says most (the pod's decisive
/// one, else the container's, else the pod's).
pub(super) fn exited(v: &PodView) -> FailureKind {
    let exit = v.terminated.clone().or_else(|| v.last_exit.clone());
    let (reason, message) = match (&exit, &v.pod_reason) {
        (_, Some(r)) if v.decisive_reason().is_some() => {
            (Some(r.reason.clone()), r.message.clone())
        }
        (Some(e), _) if e.reason.is_some() => (e.reason.clone(), e.message.clone()),
        (_, Some(r)) => (Some(r.reason.clone()), r.message.clone()),
        (Some(e), None) => (None, e.message.clone()),
        (None, None) => (None, None),
    };
    FailureKind::Exited {
        code: exit.map(|e| e.code),
        reason,
        message,
    }
}

/// The reason of a task whose node stopped reporting `since` (0: unknown).
pub(super) fn lost_node(v: &PodView, since: i64) -> Reason {
    let node = v.node.as_deref().unwrap_or("?");
    let when = match since {
        0 => String::new(),
        t => crate::duration::rfc3339(t).map_or_else(String::new, |t| format!(" since {t}")),
    };
    Reason {
        reason: NODE_LOST.into(),
        message: Some(format!(
            "node {node} not ready{when} (it stopped reporting)"
        )),
    }
}

/// A waiting reason of an image that cannot be pulled (`--pull-grace`).
pub(super) fn is_pull(reason: &Reason) -> bool {
    reason.reason == PULL_ERROR || reason.reason == BACK_OFF
}
