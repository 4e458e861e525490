//! Has the run started, and if not, what holds it up (`--start-timeout`): pure.
//!
//! A run has started when every task's pod is running or has finished
//! ([`Tracker::started`]). Until then, each task still pending has a reason: the
//! scheduler's (`Unschedulable: 0/3 nodes are available: …`), the kubelet's
//! (`ContainerCreating`, `ErrImagePull: …`), its queue's (gated by Kueue, waiting for a
//! gang), or none yet. The timer that uses this is `ops/wait/fold.rs`'s; it counts from
//! [`Tracker::created`], so `wait` run later agrees with `spawn --wait`.

use super::{Reason, SCHEDULING_GATED, State, Tracker};
use crate::roles::Task;

/// Tasks listed in a [`Holdup`] line; the others are counted.
const SHOWN_TASKS: usize = 3;
/// Distinct reasons listed; the others are counted.
const SHOWN_REASONS: usize = 4;

/// One reason the run has not started, and the tasks it holds back (in task order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holdup {
    pub reason: Reason,
    pub tasks: Vec<String>,
}

impl Tracker {
    /// When the run was created: its earliest pod's `creationTimestamp` (seconds since
    /// the epoch), deleted pods included; `None` before any pod is seen.
    pub fn created(&self) -> Option<i64> {
        self.pods
            .values()
            .filter_map(|e| e.view().times.created)
            .min()
    }

    /// Why the run has not started: the tasks still pending, grouped by reason, reasons
    /// in the task order of their first task. Empty once every task has started.
    pub fn holdups(&self) -> Vec<Holdup> {
        let mut out: Vec<Holdup> = Vec::new();
        for (task, name, state, _) in self.states() {
            if state != State::Pending {
                continue;
            }
            let label = task.map_or_else(|| name.clone(), Task::id);
            let reason = self.pending_reason(&name);
            match out.iter_mut().find(|h| h.reason == reason) {
                Some(h) => h.tasks.push(label),
                None => out.push(Holdup {
                    reason,
                    tasks: vec![label],
                }),
            }
        }
        out
    }

    /// The pods that have not started (no container ran) and have not ended, with why
    /// (their task or pod name, pod name, reason): what the run's record keeps of a
    /// task tf-spawner stops or deletes after the verdict before it ever ran.
    pub fn unstarted(&self) -> Vec<(String, String, Reason)> {
        self.in_task_order()
            .into_iter()
            .filter(|v| !v.started && !v.state().finished())
            .map(|v| (v.label(), v.name.clone(), self.pending_reason(&v.name)))
            .collect()
    }

    /// Why the pending pod `name` is not running.
    fn pending_reason(&self, name: &str) -> Reason {
        let view = self.pods.get(name).map(|e| e.view());
        let queued = view.is_some_and(|v| v.queued);
        let waiting = view
            .and_then(|v| v.waiting.clone())
            .filter(|w| !(queued && w.reason == SCHEDULING_GATED));
        if let Some(reason) = waiting {
            return self.with_pull_error(name, reason);
        }
        let queue = view.and_then(|v| v.queue.as_deref());
        let message = match (queued, queue, view.and_then(|v| v.node.as_deref())) {
            (true, Some(queue), _) => format!("waiting in queue {queue}, not admitted yet"),
            (true, None, _) => "waiting for its gang or queue, not admitted yet".to_string(),
            (false, _, Some(node)) => format!("on node {node}, no container started yet"),
            (false, _, None) => "not scheduled yet".to_string(),
        };
        Reason {
            reason: if queued { "Queued" } else { "Pending" }.to_string(),
            message: Some(message),
        }
    }
}

/// `worker-1: Unschedulable: 0/1 nodes are available: …; worker-2, worker-3 and 5 more:
/// ContainerCreating`, at most [`SHOWN_REASONS`] reasons.
pub fn describe_holdups(holdups: &[Holdup]) -> String {
    if holdups.is_empty() {
        // The timer saw the run not started; the last events, not yet settled, start it.
        return "the last pending task started as the time ran out".to_string();
    }
    let mut parts: Vec<String> = holdups
        .iter()
        .take(SHOWN_REASONS)
        .map(|h| {
            let mut who = h.tasks[..h.tasks.len().min(SHOWN_TASKS)].join(", ");
            if h.tasks.len() > SHOWN_TASKS {
                who.push_str(&format!(" and {} more", h.tasks.len() - SHOWN_TASKS));
            }
            format!("{who}: {}", h.reason)
        })
        .collect();
    if holdups.len() > SHOWN_REASONS {
        parts.push(format!(
            "and {} other reasons",
            holdups.len() - SHOWN_REASONS
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{pod, view};
    use super::*;
    use serde_json::json;

    fn tracker(pods: Vec<serde_json::Value>) -> Tracker {
        let mut t = Tracker::new("t", false);
        t.replace(pods.into_iter().map(view).collect());
        t
    }

    fn unschedulable(task: &str) -> serde_json::Value {
        let mut p = pod(task, "Pending");
        p["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        }]);
        p
    }

    #[test]
    fn a_started_run_has_no_holdups() {
        let mut done = pod("worker-1", "Succeeded");
        done["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:05Z");
        let t = tracker(vec![pod("worker-0", "Running"), done]);
        assert!(t.started());
        assert_eq!(t.holdups(), []);
        assert_eq!(
            describe_holdups(&t.holdups()),
            "the last pending task started as the time ran out"
        );
        assert_eq!(t.created(), Some(1_704_067_200), "the earliest pod's");
        assert_eq!(Tracker::new("t", false).created(), None);
    }

    #[test]
    fn pending_tasks_are_grouped_by_reason_in_task_order() {
        let mut creating = pod("worker-3", "Pending");
        creating["spec"]["nodeName"] = json!("node-a");
        let t = tracker(vec![
            pod("worker-0", "Running"),
            unschedulable("worker-1"),
            unschedulable("worker-2"),
            creating,
            pod("worker-4", "Pending"),
        ]);
        assert!(!t.started());
        let holdups = t.holdups();
        let tasks: Vec<&[String]> = holdups.iter().map(|h| h.tasks.as_slice()).collect();
        assert_eq!(
            tasks,
            [&["worker-1", "worker-2"][..], &["worker-3"], &["worker-4"]]
        );
        assert_eq!(
            describe_holdups(&holdups),
            "worker-1, worker-2: Unschedulable: 0/1 nodes are available: 1 node(s) didn't match \
             Pod's node affinity/selector.; worker-3: Pending: on node node-a, no container \
             started yet; worker-4: Pending: not scheduled yet"
        );
    }

    #[test]
    fn a_queued_pod_names_its_queue_and_a_waiting_container_its_reason() {
        let mut gated = pod("worker-0", "Pending");
        gated["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("team-gpu");
        gated["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
        gated["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"
        }]);
        let mut pulling = pod("worker-1", "Pending");
        pulling["status"]["containerStatuses"] = json!([{
            "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
            "state": {"waiting": {"reason": "ErrImagePull", "message": "rpc error: not found"}}
        }]);
        let t = tracker(vec![gated, pulling]);
        assert_eq!(
            describe_holdups(&t.holdups()),
            "worker-0: Queued: waiting in queue team-gpu, not admitted yet; \
             worker-1: ErrImagePull: rpc error: not found"
        );
    }

    #[test]
    fn many_tasks_and_reasons_are_counted_not_listed() {
        let mut pods: Vec<serde_json::Value> = (0..10)
            .map(|i| unschedulable(&format!("worker-{i}")))
            .collect();
        for (i, reason) in ["A", "B", "C", "D", "E"].iter().enumerate() {
            let mut p = pod(&format!("ps-{i}"), "Pending");
            p["status"]["conditions"] = json!([{
                "type": "PodScheduled", "status": "False", "reason": reason
            }]);
            pods.push(p);
        }
        let text = describe_holdups(&tracker(pods).holdups());
        assert!(
            text.starts_with("ps-0: A; ps-1: B; ps-2: C; ps-3: D; and 2 other reasons"),
            "{text}"
        );
        let t = tracker(
            (0..10)
                .map(|i| unschedulable(&format!("worker-{i}")))
                .collect(),
        );
        assert!(
            describe_holdups(&t.holdups())
                .starts_with("worker-0, worker-1, worker-2 and 7 more: Unschedulable"),
        );
    }
}
