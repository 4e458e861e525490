//! Which pods' logs `logs` shows: `--task`, `--attempt`, `--max-log-requests` and
//! `--heartbeat` ([`Pick`]), and the order pods are followed in when not all can be
//! at once ([`by_priority`]).

use std::time::Duration;

use anyhow::Result;

use crate::roles::{Role, Task};
use crate::verdict::{PodView, Tracker};

/// Which pods' logs: `--task` (all when empty) and, with `-f`, how many at once.
#[derive(Debug, Clone)]
pub struct Pick {
    pub tasks: Vec<Task>,
    pub max_streams: usize,
    /// `--attempt N`: an attempt's log (`None`: the current attempt's).
    pub attempt: Option<u32>,
    /// `--heartbeat` (`ops/holdups.rs`'s [`Notes`](crate::ops::holdups::Notes)).
    pub heartbeat: Option<Duration>,
}

impl Pick {
    /// A `--task` the run does not have is "nothing matched": exit 1 naming its tasks,
    /// never an empty log and exit 0.
    pub(super) fn check(&self, tracker: &Tracker, tag: &str) -> Result<()> {
        let known = tracker.tasks();
        let missing: Vec<String> = (self.tasks.iter())
            .filter(|t| !known.contains(t))
            .map(|t| t.id())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = known.iter().map(|t| t.id()).collect();
        anyhow::bail!(
            "run '{tag}' has no task {} (its tasks: {})",
            missing.join(", "),
            ids.join(", ")
        )
    }

    pub(super) fn wants(&self, pod: &PodView) -> bool {
        self.tasks.is_empty() || pod.task.is_some_and(|t| self.tasks.contains(&t))
    }
}

/// The pods to follow first: the task that decides the run, then pods that failed,
/// then the others in task order.
pub(super) fn by_priority(t: &Tracker, pick: &Pick) -> Vec<PodView> {
    let deciding = Task::deciding(t.tasks().iter().any(|t| t.role == Role::Chief));
    let mut pods: Vec<PodView> = t
        .in_task_order()
        .into_iter()
        .filter(|p| pick.wants(p))
        .cloned()
        .collect();
    pods.sort_by_key(|p| match p.state() {
        _ if p.task == Some(deciding) => 0,
        crate::verdict::State::Failed => 1,
        _ => 2,
    });
    pods
}
