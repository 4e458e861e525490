//! `status -o json`: the documented, stable shape, and how a run fills it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::common::{Events, Report, lost, restarted_for, stalled};
use crate::cluster::events::PodEvent;
use crate::cluster::follower::FollowerJson;
use crate::cluster::record::Record;
use crate::duration;
use crate::ops::status::{never_started, verdict_of};
use crate::plan::helper_pod::Found;
use crate::trainlog::show;
use crate::verdict::timing;
use crate::verdict::{PodView, one_line};

/// `status -o json`: the documented, stable shape.
#[derive(Debug, Serialize)]
pub struct StatusJson {
    pub tag: String,
    pub namespace: String,
    /// Pending, Running, Succeeded, Failed or Cancelled (recorded by a wait's
    /// `--on-cancel stop`).
    pub verdict: &'static str,
    /// Why the run failed (which pod, exit code, reason), else null.
    pub failure: Option<String>,
    /// Once the verdict is final: seconds from the first task's start to the end of
    /// the task that decided it; else null.
    pub duration_seconds: Option<u64>,
    /// What the run held (docs/reference.md, "What a run cost"): task- and GPU-seconds
    /// in all (`total`) and waiting for the last task to start, in restarts, training;
    /// up to now while it runs. Null when no pod of it ran.
    pub cost: Option<crate::metrics::cost::Cost>,
    /// The run's attempt: 0 until a restart (`wait --restarts`), then the latest
    /// restart's number (the highest of its pods').
    pub attempt: u32,
    /// The failure the latest restart was for (`pod T-worker-1 (worker-1) was deleted
    /// while it ran`), as the restart line of `wait` said it; else null.
    pub restarted_for: Option<String>,
    /// The attempts restarts replaced, each with why it ended (`logs --attempt N`
    /// shows its kept log).
    pub attempts: Vec<AttemptJson>,
    /// The training's progress, from the tail of the deciding task's log (Keras' lines
    /// or tf-spawner's own, docs/progress.md); null when it printed none of them.
    pub progress: Option<show::ProgressJson>,
    /// A restart `wait --restarts` began and stopped before it created its pods again
    /// (its attempt): `tf-spawner wait --restarts` takes it up; else null.
    pub pending_restart: Option<u32>,
    /// Who follows the run now and acts for it (a `wait`, one at a time), when it last
    /// checked in, and whether it still does; else null.
    pub follower: Option<FollowerJson>,
    /// The verdict `wait` recorded on the run's ConfigMap (`Succeeded`, `Failed: …`),
    /// else null. When there is one, `verdict` and `failure` are its.
    pub recorded_verdict: Option<String>,
    /// When the run was made (RFC 3339, its ConfigMap's creation), else null.
    pub created_at: Option<String>,
    /// Tasks whose pods tf-spawner deleted after the verdict because no node had taken
    /// them: they never started.
    pub never_started: Vec<String>,
    /// Why each task tf-spawner stopped or deleted after the verdict before it started
    /// had not started (`{"worker-0": "ErrImagePull: …"}`), as `wait` recorded it.
    pub why_not_started: BTreeMap<String, String>,
    pub pods: Vec<PodJson>,
    /// The run's helper pods (`cp`, `tensorboard`): no tasks of it, deleted by `-d`.
    pub helpers: Vec<HelperJson>,
}

/// One helper pod of the run.
#[derive(Debug, Serialize)]
pub struct HelperJson {
    pub name: String,
    /// `cp`, `tensorboard` or `supervisor`.
    pub kind: String,
    /// The API's phase, or Terminating while it is being deleted.
    pub phase: String,
    pub age_seconds: Option<u64>,
    /// Kept by `tensorboard --keep` until `-d`.
    pub keep: bool,
    /// How it ends, in words (`deleted when the last tensorboard session using it ends (1 now)`).
    pub ends: String,
    /// Its container's last failure (`exit 1: LAST LINE`), null when it never failed.
    pub failed: Option<String>,
    /// How many times its container restarted (a supervisor's, after a failure).
    pub restarts: i32,
}

#[derive(Debug, Serialize)]
pub struct PodJson {
    pub name: String,
    /// chief, ps, worker or evaluator; null for a pod without tf-spawner's labels.
    pub role: Option<&'static str>,
    pub index: Option<u32>,
    /// The pod's phase as the API reports it: Pending, Running, Succeeded, Failed or
    /// Unknown. (The table shows a pod whose container has ended as Succeeded or Failed
    /// while a 1.27+ kubelet still reports it Running.)
    pub phase: &'static str,
    /// Ready containers / containers, e.g. "1/1".
    pub ready: String,
    pub restarts: u32,
    pub node: Option<String>,
    pub age_seconds: Option<u64>,
    /// Exit code of the TF container when it has terminated (now or before a restart).
    pub exit_code: Option<i32>,
    /// The terminated container's reason, else why the pod is waiting
    /// (Unschedulable, ImagePullBackOff…), else the pod's reason (Evicted…).
    pub reason: Option<String>,
    pub message: Option<String>,
    /// Held back by a queue (scheduling gates, Kueue), not stuck.
    pub queued: bool,
    /// The queue the pod names (its Kueue LocalQueue, else its Volcano queue), else null.
    pub queue: Option<String>,
    /// When the TF container started (RFC 3339), from its state; null before.
    pub started_at: Option<String>,
    /// When it ended (RFC 3339); null while it runs.
    pub finished_at: Option<String>,
    /// How long it ran, in seconds, once it has ended; else null.
    pub duration_seconds: Option<u64>,
    /// Being deleted (kubectl's Terminating); `phase` is still the API's.
    pub terminating: bool,
    /// For a pending pod (being deleted or not), its newest events (at most 5, newest first: what `kubectl
    /// describe pod` lists); else empty.
    pub events: Vec<EventJson>,
    /// The attempt the pod belongs to (its `tf-spawner/attempt` label; 0 without one).
    pub attempt: u32,
    /// When its node was found to have stopped reporting (RFC 3339; `reason` is then
    /// NodeLost), else null.
    pub node_lost_since: Option<String>,
    /// Stopped by tf-spawner after the run's verdict (it ends, or has ended, by its
    /// lowered `activeDeadlineSeconds`; its log is kept).
    pub stopped: bool,
    /// Stopped before its container ever started: why it had not (`ErrImagePull: …`);
    /// its `exit_code` is then null (the kubelet's 137 `ContainerStatusUnknown` is none).
    pub never_started: Option<String>,
}

/// One event about a pending pod.
#[derive(Debug, Serialize)]
pub struct EventJson {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub count: u32,
    /// When it last happened (RFC 3339), if the event says.
    pub last_seen: Option<String>,
}

pub fn to_json(report: &Report, (tag, namespace): (&str, &str)) -> StatusJson {
    let Report {
        tracker,
        record,
        helpers,
        events,
        training,
        stall,
        now,
        all_workers,
    } = *report;
    let (verdict, failure) = verdict_of(tracker, record);
    StatusJson {
        tag: tag.to_string(),
        namespace: namespace.to_string(),
        verdict,
        failure,
        duration_seconds: timing::of_run(tracker, all_workers).map(|t| t.seconds()),
        cost: super::common::cost(tracker, record, now),
        attempt: tracker.attempt(),
        restarted_for: restarted_for(tracker).map(String::from),
        attempts: record
            .map(|r| r.attempts.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|(attempt, ended)| AttemptJson {
                attempt: *attempt,
                ended: ended.clone(),
            })
            .collect(),
        pending_restart: super::common::pending_restart(tracker, record),
        follower: record
            .and_then(|r| r.follower.as_ref())
            .map(|h| h.json(now)),
        recorded_verdict: record.and_then(|r| r.verdict.clone()),
        created_at: record.and_then(|r| r.created).and_then(duration::rfc3339),
        never_started: record.map(|r| r.never_started.clone()).unwrap_or_default(),
        why_not_started: why_not_started(record),
        helpers: helpers.iter().map(|h| helper_json(h, tag, now)).collect(),
        progress: show::ProgressJson::of(
            training,
            stalled(tracker, training, stall, now).is_some(),
        ),
        pods: tracker
            .in_task_order()
            .into_iter()
            .map(|v| pod_json(v, record, events, now))
            .collect(),
    }
}

/// One pod of `status -o json` (see [`PodJson`]).
fn pod_json(v: &PodView, record: Option<&Record>, events: &Events, now: i64) -> PodJson {
    let (reason, message) = reason_of(v, now);
    let never = never_started(v, record);
    PodJson {
        name: v.name.clone(),
        role: v.task.map(|t| t.role.as_str()),
        index: v.task.map(|t| t.index),
        phase: v.phase.as_str(),
        ready: format!("{}/{}", v.ready.0, v.ready.1),
        restarts: v.restarts,
        node: v.node.clone(),
        age_seconds: v.age(now),
        exit_code: v
            .last_exit
            .as_ref()
            .filter(|_| never.is_none())
            .map(|e| e.code),
        reason,
        message,
        queued: v.queued,
        queue: v.queue.clone(),
        started_at: v.times.started_at.and_then(duration::rfc3339),
        finished_at: v.times.finished_at.and_then(duration::rfc3339),
        duration_seconds: timing::duration(v),
        terminating: v.terminating,
        events: events
            .get(&v.name)
            .map_or_else(Vec::new, |e| e.iter().map(event_json).collect()),
        attempt: v.attempt,
        node_lost_since: v.node_lost.and_then(crate::duration::rfc3339),
        stopped: v.times.stopped_at.is_some(),
        never_started: never,
    }
}

/// What `reason` and `message` say for one pod (see [`PodJson`]).
fn reason_of(v: &PodView, now: i64) -> (Option<String>, Option<String>) {
    if let Some(r) = lost(v, now) {
        (Some(r.reason), r.message)
    } else if let Some(r) = v.decisive_reason() {
        (Some(r.reason.clone()), r.message.clone())
    } else if let Some(exit) = &v.last_exit {
        (exit.reason.clone(), exit.message.clone())
    } else if let Some(w) = &v.waiting {
        (Some(w.reason.clone()), w.message.clone())
    } else if let Some(r) = &v.pod_reason {
        (Some(r.reason.clone()), r.message.clone())
    } else {
        (None, None)
    }
}

/// Why each task `wait` stopped or deleted before it started had not started, by task.
fn why_not_started(record: Option<&Record>) -> BTreeMap<String, String> {
    record
        .map(|r| r.not_started.as_slice())
        .unwrap_or_default()
        .iter()
        .flat_map(|n| n.tasks.iter().map(|t| (t.clone(), n.why.clone())))
        .collect()
}

fn event_json(e: &PodEvent) -> EventJson {
    EventJson {
        kind: e.kind.clone(),
        reason: e.reason.clone(),
        message: one_line(&e.message),
        count: e.count,
        last_seen: e.last_seen.and_then(duration::rfc3339),
    }
}

fn helper_json(h: &Found, tag: &str, now: i64) -> HelperJson {
    HelperJson {
        name: h.name.clone(),
        kind: h.kind.clone(),
        phase: h.phase.clone(),
        age_seconds: h.created.map(|c| u64::try_from(now - c).unwrap_or(0)),
        keep: h.keep,
        ends: h.ends(tag, now),
        failed: h.failed.as_ref().map(|(last, _)| last.clone()),
        restarts: h.failed.as_ref().map_or(0, |(_, n)| *n),
    }
}

/// An attempt a restart replaced.
#[derive(Debug, serde::Serialize)]
pub struct AttemptJson {
    pub attempt: u32,
    /// Why it ended: the failure its restart was for.
    pub ended: String,
}
