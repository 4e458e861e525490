//! `tf-spawner status -t TAG [-o json]`: the pods of a run and its verdict.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::cli::StatusArgs;
use crate::cluster::events::PodEvent;
use crate::cluster::record::Record;
use crate::duration::{self, age};
use crate::helper::Found;
use crate::ops::status::{Known, known, never_started, pending_events, verdict_of};
use crate::output::{self, ReportFormat};
use crate::settings::Settings;
use crate::timing;
use crate::trainlog::{Training, show};
use crate::verdict::{
    NODE_LOST, PodView, Reason, SCHEDULING_GATED, STOPPED_TEXT, State, Tracker, one_line,
};

/// `status -o json`: the documented, stable shape.
#[derive(Debug, Serialize)]
pub struct StatusJson {
    pub tag: String,
    pub namespace: String,
    /// Pending, Running, Succeeded or Failed.
    pub verdict: &'static str,
    /// Why the run failed (which pod, exit code, reason), else null.
    pub failure: Option<String>,
    /// Once the verdict is final: seconds from the first task's start to the end of
    /// the task that decided it; else null.
    pub duration_seconds: Option<u64>,
    /// The run's attempt: 0 until a restart (`wait --restarts`), then the latest
    /// restart's number (the highest of its pods').
    pub attempt: u32,
    /// The failure the latest restart was for (`pod T-worker-1 (worker-1) was deleted
    /// while it ran`), as the restart line of `wait` said it; else null.
    pub restarted_for: Option<String>,
    /// The training's progress, from the tail of the deciding task's log (Keras' lines
    /// or tf-spawner's own, docs/progress.md); null when it printed none of them.
    pub progress: Option<show::ProgressJson>,
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
    /// `cp` or `tensorboard`.
    pub kind: String,
    /// The API's phase, or Terminating while it is being deleted.
    pub phase: String,
    pub age_seconds: Option<u64>,
    /// Kept by `tensorboard --keep` until `-d`.
    pub keep: bool,
    /// How it ends, in words (`deleted when the last tensorboard session using it ends (1 now)`).
    pub ends: String,
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

/// The newest events of the pending pods, by pod name.
pub type Events = BTreeMap<String, Vec<PodEvent>>;

/// The table shows the events of at most this many pending pods (`-o json`: all).
const EVENTS_SHOWN: usize = 5;

pub async fn exec(settings: &Settings, args: &StatusArgs) -> Result<()> {
    let cluster = settings.connect()?;
    let Known {
        tracker,
        record,
        helpers,
    } = known(&cluster, args.tag.as_str(), args.all_workers).await?;
    let record = record.as_ref();
    let events = pending_events(&cluster, &tracker, record).await;
    let training = crate::ops::training::tail(&cluster, &tracker).await;
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let text = match args.output {
        ReportFormat::Json => {
            let json = to_json(
                &tracker,
                (record, &helpers),
                (&events, (&training, settings.stall_after.value)),
                (args.tag.as_str(), cluster.namespace()),
                now,
                args.all_workers,
            );
            serde_json::to_string_pretty(&json)? + "\n"
        }
        ReportFormat::Table => render(
            &tracker,
            (record, &helpers),
            (&events, (&training, settings.stall_after.value)),
            now,
            args.all_workers,
        ),
    };
    output::print(&text)?;
    Ok(())
}

/// `NodeLost: node N not ready since T (it stopped reporting)` for a pod whose node
/// stopped reporting and that has not ended (as far as the API knows).
fn lost(v: &PodView) -> Option<Reason> {
    let since = v.node_lost?;
    let when = match since {
        0 => String::new(),
        t => format!(" since {}", crate::duration::clock(t)),
    };
    Some(Reason {
        reason: NODE_LOST.into(),
        message: Some(format!(
            "node {} not ready{when} (it stopped reporting)",
            v.node.as_deref().unwrap_or("?")
        )),
    })
}

/// What `reason` and `message` say for one pod (see [`PodJson`]).
fn reason_of(v: &PodView) -> (Option<String>, Option<String>) {
    if let Some(r) = lost(v) {
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

pub fn to_json(
    tracker: &Tracker,
    (record, helpers): (Option<&Record>, &[Found]),
    (events, (training, stall_after)): (&Events, Progressed),
    (tag, namespace): (&str, &str),
    now: i64,
    all_workers: bool,
) -> StatusJson {
    let (verdict, failure) = verdict_of(tracker, record);
    StatusJson {
        tag: tag.to_string(),
        namespace: namespace.to_string(),
        verdict,
        failure,
        duration_seconds: timing::of_run(tracker, all_workers).map(|t| t.seconds()),
        attempt: tracker.attempt(),
        restarted_for: restarted_for(tracker).map(String::from),
        recorded_verdict: record.and_then(|r| r.verdict.clone()),
        created_at: record.and_then(|r| r.created).and_then(duration::rfc3339),
        never_started: record.map(|r| r.never_started.clone()).unwrap_or_default(),
        why_not_started: why_not_started(record),
        helpers: helpers.iter().map(|h| helper_json(h, tag, now)).collect(),
        progress: show::ProgressJson::of(
            training,
            stalled(tracker, training, stall_after, now).is_some(),
        ),
        pods: tracker
            .in_task_order()
            .into_iter()
            .map(|v| pod_json(v, record, events, now))
            .collect(),
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

/// One pod of `status -o json` (see [`PodJson`]).
fn pod_json(v: &PodView, record: Option<&Record>, events: &Events, now: i64) -> PodJson {
    let (reason, message) = reason_of(v);
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
        started_at: v.started_at.and_then(duration::rfc3339),
        finished_at: v.finished_at.and_then(duration::rfc3339),
        duration_seconds: timing::duration(v),
        terminating: v.terminating,
        events: events
            .get(&v.name)
            .map_or_else(Vec::new, |e| e.iter().map(event_json).collect()),
        attempt: v.attempt,
        node_lost_since: v.node_lost.and_then(crate::duration::rfc3339),
        stopped: v.stopped_at.is_some(),
        never_started: never,
    }
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

/// The events of the first pending pods (in task order), newest first, as a table:
/// `TASK AGE TYPE REASON MESSAGE`, kubectl describe's columns.
fn events_table(pods: &[&PodView], events: &Events, now: i64) -> String {
    let with: Vec<(&PodView, &Vec<PodEvent>)> = pods
        .iter()
        .filter_map(|v| events.get(&v.name).map(|e| (*v, e)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = with
        .iter()
        .take(EVENTS_SHOWN)
        .flat_map(|(v, events)| {
            events.iter().map(|e| {
                let seen = e.last_seen.map_or_else(
                    || "-".into(),
                    |t| age(u64::try_from(now.saturating_sub(t)).unwrap_or(0)),
                );
                let reason = match e.count {
                    1 => e.reason.clone(),
                    n => format!("{} (x{n})", e.reason),
                };
                vec![
                    v.label(),
                    seen,
                    e.kind.clone(),
                    reason,
                    one_line(&e.message),
                ]
            })
        })
        .collect();
    let mut out = String::from("\nevents of the pods that have not started (newest first):\n");
    out.push_str(&output::table(
        &["TASK", "AGE", "TYPE", "REASON", "MESSAGE"],
        &rows,
    ));
    if let Some(more) = with.len().checked_sub(EVENTS_SHOWN).filter(|&n| n > 0) {
        out.push_str(&format!(
            "(and {more} more pods not started: their events are in status -o json)\n"
        ));
    }
    out
}

/// The training's progress and the stall bound (`stall_after`), if any.
pub type Progressed<'a> = (&'a Training, Option<std::time::Duration>);

/// `no progress since 21:03:12 UTC (--stall-after 30m)` when the deciding task, still
/// running, printed a progress line and none for longer than the bound.
fn stalled(
    tracker: &Tracker,
    training: &Training,
    bound: Option<std::time::Duration>,
    now: i64,
) -> Option<String> {
    let bound = bound?;
    let last = training.last_at? / 1000;
    let running = crate::ops::training::deciding(tracker).is_some_and(|p| !p.state().finished());
    let quiet = u64::try_from(now.saturating_sub(last)).unwrap_or(0);
    (running && !training.finished() && quiet > bound.as_secs())
        .then(|| crate::ops::wait::stalled_text(training, bound))
}

/// `epoch 7/20, loss 0.31, …, about 40 min left (last progress 12s ago)`.
fn progress_line(training: &Training, now: i64) -> String {
    let mut text = show::line(training, None);
    if let Some(last) = training.last_at {
        let ago = u64::try_from(now.saturating_sub(last / 1000)).unwrap_or(0);
        text.push_str(&format!(" (last progress {} ago)", age(ago)));
    }
    text
}

/// The table's columns (then PROGRESS when the deciding task printed some).
const COLUMNS: [&str; 11] = [
    "NAME", "ROLE", "PHASE", "READY", "RESTARTS", "NODE", "AGE", "EXIT", "STARTED", "ENDED",
    "DURATION",
];

/// The table, the reasons of pods that are stuck, the pending pods' events and the
/// verdict line.
pub fn render(
    tracker: &Tracker,
    (record, helpers): (Option<&Record>, &[Found]),
    (events, (training, stall_after)): (&Events, Progressed),
    now: i64,
    all_workers: bool,
) -> String {
    let pods = tracker.in_task_order();
    if pods.is_empty() {
        return without_pods(tracker, (record, helpers), now);
    }
    let sections = [
        pods_table(tracker, &pods, record, training, now),
        stuck_lines(&pods, record),
        stopped_lines(&pods, record),
        deleted_lines(record),
        events_table(&pods, events, now),
        helper_lines(helpers, tracker.tag(), now),
        attempt_line(tracker, &pods),
        progress_section(tracker, training, stall_after, now),
        verdict_line(tracker, record),
        timing::of_run(tracker, all_workers).map_or_else(String::new, |t| t.line() + "\n"),
    ];
    sections.concat()
}

/// One row per pod ([`COLUMNS`]), and the PROGRESS column when the deciding task printed
/// some: its progress on its row, `-` on the others'.
fn pods_table(
    tracker: &Tracker,
    pods: &[&PodView],
    record: Option<&Record>,
    training: &Training,
    now: i64,
) -> String {
    let mut header = COLUMNS.to_vec();
    let mut rows: Vec<Vec<String>> = pods.iter().map(|v| pod_row(v, record, now)).collect();
    if !training.is_empty() {
        let deciding = crate::ops::training::deciding(tracker).map(|p| p.name.as_str());
        header.push("PROGRESS");
        for (row, v) in rows.iter_mut().zip(pods) {
            row.push(if Some(v.name.as_str()) == deciding {
                show::short(training)
            } else {
                "-".into()
            });
        }
    }
    output::table(&header, &rows)
}

/// One pod's row of the table, in [`COLUMNS`]' order.
fn pod_row(v: &PodView, record: Option<&Record>, now: i64) -> Vec<String> {
    let never = never_started(v, record);
    let or_dash = |cell: Option<String>| cell.unwrap_or_else(|| "-".into());
    vec![
        v.name.clone(),
        v.label(),
        phase_cell(v, never.is_some()),
        format!("{}/{}", v.ready.0, v.ready.1),
        v.restarts.to_string(),
        or_dash(v.node.clone()),
        or_dash(v.age(now).map(age)),
        exit_cell(v, never.is_some()),
        or_dash(v.started_at.map(duration::clock)),
        or_dash(v.finished_at.map(duration::clock)),
        or_dash(timing::duration(v).map(age)),
    ]
}

/// The PHASE cell: the phase shown (kubectl's Terminating for a pod being deleted,
/// whatever its phase; Stopped, Stopping) and, in brackets, why it is so.
fn phase_cell(v: &PodView, never_started: bool) -> String {
    let shown = if v.terminating {
        "Terminating"
    } else if v.state() == State::Stopped && never_started {
        "Stopped (never started)"
    } else if v.state() == State::Stopped {
        "Stopped"
    } else if v.stopping() {
        "Stopping"
    } else {
        v.shown_phase().as_str()
    };
    match (&v.waiting, v.decisive_reason()) {
        _ if v.node_lost.is_some() => format!("{shown} ({NODE_LOST})"),
        _ if v.queued => match &v.queue {
            Some(q) => format!("{shown} (queued in {q})"),
            None => format!("{shown} (queued)"),
        },
        (_, Some(r)) => format!("{shown} ({})", r.reason),
        (Some(w), _) if v.terminated.is_none() => format!("{shown} ({})", w.reason),
        _ => shown.to_string(),
    }
}

/// The EXIT cell: the TF container's exit code and reason (none for a task that never
/// started: the kubelet's 137 then is none of its own).
fn exit_cell(v: &PodView, never_started: bool) -> String {
    v.last_exit
        .as_ref()
        .filter(|_| !never_started)
        .map_or_else(String::new, |e| match &e.reason {
            Some(r) => format!("{} ({r})", e.code),
            None => e.code.to_string(),
        })
}

/// `worker-1: NodeLost: …` for a pod on a lost node, `worker-2: Unschedulable: …` for
/// one waiting with a message (a queue's gate says nothing new; a gang scheduler's
/// reason does).
fn stuck_lines(pods: &[&PodView], record: Option<&Record>) -> String {
    let mut out = String::new();
    for v in pods {
        if let Some(r) = lost(v) {
            out.push_str(&format!("{}: {}\n", v.label(), one_line(&r.to_string())));
        }
        if v.terminated.is_none()
            && let Some(w) = &v.waiting
            && w.message.is_some()
            && !(v.queued && w.reason == SCHEDULING_GATED)
            && never_started(v, record).is_none()
        {
            out.push_str(&format!("{}: {}\n", v.label(), one_line(&w.to_string())));
        }
    }
    out
}

/// One line per pod tf-spawner stopped after the verdict: whether its log is kept, or
/// why it never started.
fn stopped_lines(pods: &[&PodView], record: Option<&Record>) -> String {
    pods.iter()
        .filter(|v| v.stopped_at.is_some())
        .map(|v| match never_started(v, record) {
            Some(why) => format!(
                "{}: never started ({}); stopped by tf-spawner after the verdict (no log)\n",
                v.label(),
                one_line(&why)
            ),
            None => format!("{}: {STOPPED_TEXT} (its log is kept)\n", v.label()),
        })
        .collect()
}

/// `attempt: 2 (…; re-created by wait --restarts: worker-0, worker-1)` after a restart,
/// as the restart line of `wait` said it: the failure, then what was re-created.
fn attempt_line(tracker: &Tracker, pods: &[&PodView]) -> String {
    let attempt = tracker.attempt();
    if attempt == 0 {
        return String::new();
    }
    let restarted: Vec<String> = pods
        .iter()
        .filter(|v| v.attempt == attempt)
        .map(|v| v.label())
        .collect();
    let cause = restarted_for(tracker).map_or_else(String::new, |c| format!("{c}; "));
    format!(
        "attempt: {attempt} ({cause}re-created by wait --restarts: {})\n",
        restarted.join(", ")
    )
}

/// `progress: …` when the deciding task printed some, with the stall if it stalled.
fn progress_section(
    tracker: &Tracker,
    training: &Training,
    stall_after: Option<std::time::Duration>,
    now: i64,
) -> String {
    if training.is_empty() {
        return String::new();
    }
    let mut line = progress_line(training, now);
    if let Some(since) = stalled(tracker, training, stall_after, now) {
        line.push_str(&format!("; {since}"));
    }
    format!("progress: {line}\n")
}

/// The failure the run's latest restart was for, as its pods say.
fn restarted_for(tracker: &Tracker) -> Option<&str> {
    let attempt = tracker.attempt();
    tracker
        .live()
        .filter(|v| attempt > 0 && v.attempt == attempt)
        .find_map(|v| v.restarted_for.as_deref())
}

/// How `status` names a task tf-spawner deleted after the verdict without it starting.
const NEVER_STARTED_TEXT: &str =
    "its pod (which no node had taken) was deleted by tf-spawner after the verdict";

/// `worker-2: never started (Unschedulable: …); its pod … was deleted …`: the tasks
/// `wait` deleted unstarted, with why when the record says.
fn deleted_lines(record: Option<&Record>) -> String {
    let Some(record) = record else {
        return String::new();
    };
    record
        .never_started
        .iter()
        .map(|task| match record.why_not_started(task) {
            Some(why) => format!(
                "{task}: never started ({}); {NEVER_STARTED_TEXT}\n",
                one_line(why)
            ),
            None => format!("{task}: never started; {NEVER_STARTED_TEXT}\n"),
        })
        .collect()
}

fn verdict_line(tracker: &Tracker, record: Option<&Record>) -> String {
    match verdict_of(tracker, record) {
        (name, Some(why)) => format!("verdict: {name} — {why}\n"),
        (name, None) => format!("verdict: {name}\n"),
    }
}

/// A run whose pods are all gone: what its record says.
fn without_pods(
    tracker: &Tracker,
    (record, helpers): (Option<&Record>, &[Found]),
    now: i64,
) -> String {
    let mut out = String::from(if helpers.is_empty() {
        "no pods left"
    } else {
        "no task pods left"
    });
    if let Some(r) = record {
        out.push_str("; the run's ConfigMap remains");
        if let Some(created) = r.created {
            let ago = age(u64::try_from(now.saturating_sub(created)).unwrap_or(0));
            out.push_str(&format!(", made {ago} ago"));
        }
        if let Some(sizes) = &r.sizes {
            let tasks: Vec<String> = sizes.tasks().map(|t| t.id()).collect();
            out.push_str(&format!(
                " for {} tasks ({})",
                tasks.len(),
                tasks.join(", ")
            ));
        }
    }
    out.push_str(&format!(
        " (remove it with: tf-spawner -d -t {})\n",
        record.map_or("TAG", |r| r.tag.as_str())
    ));
    out.push_str(&deleted_lines(record));
    out.push_str(&helper_lines(helpers, tracker.tag(), now));
    out.push_str(&verdict_line(tracker, record));
    out
}

/// One line per helper pod of the run: what it is for, its phase, its age, how it ends.
/// `helper pod/t-tensorboard (tensorboard): Running, 5m; deleted when …`.
fn helper_lines(helpers: &[Found], tag: &str, now: i64) -> String {
    helpers
        .iter()
        .map(|h| {
            let age = h
                .created
                .map_or_else(|| "-".into(), |c| age(u64::try_from(now - c).unwrap_or(0)));
            format!(
                "helper pod/{} ({}): {}, {age}; {}\n",
                h.name,
                h.kind,
                h.phase,
                h.ends(tag)
            )
        })
        .collect()
}

fn helper_json(h: &Found, tag: &str, now: i64) -> HelperJson {
    HelperJson {
        name: h.name.clone(),
        kind: h.kind.clone(),
        phase: h.phase.clone(),
        age_seconds: h.created.map(|c| u64::try_from(now - c).unwrap_or(0)),
        keep: h.keep,
        ends: h.ends(tag),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::events::PodEvent;
    use crate::cluster::record::NotStarted;
    use crate::roles::RoleSizes;
    use crate::verdict::tests::{every_kind_of_run, pod, view};

    /// 00:10:00 on the day the golden run's pods were made.
    const NOW: i64 = 1704067200 + 600;

    /// What `status` reads besides the pods of the golden run: its record, its helper
    /// pods, the pending pods' events and the chief's progress (stalled at 00:08:00).
    fn golden_reads() -> (Record, Vec<Found>, Events, Training) {
        let record = Record {
            namespace: "ns".into(),
            tag: "t".into(),
            created: Some(1704067200 - 30),
            sizes: RoleSizes::parse("chief=1,ps=1,worker=12,evaluator=1"),
            verdict: Some("Failed: pod t-worker-1 (worker-1) failed: exit code 1".into()),
            never_started: vec!["worker-10".into(), "worker-11".into()],
            not_started: vec![
                NotStarted {
                    why: "ErrImagePull: pull access denied".into(),
                    tasks: vec!["worker-4".into()],
                },
                NotStarted {
                    why: "Unschedulable: 0/2 nodes\n are available".into(),
                    tasks: vec!["worker-11".into()],
                },
            ],
        };
        let helper = |name: &str, kind: &str, phase: &str| Found {
            name: name.into(),
            kind: kind.into(),
            phase: phase.into(),
            created: Some(NOW - 90),
            keep: false,
            sessions: 0,
            deadline: None,
        };
        let helpers = vec![
            Found {
                sessions: 1,
                ..helper("t-tensorboard", "tensorboard", "Running")
            },
            Found {
                deadline: Some(NOW + 3600),
                ..helper("t-cp-1", "cp", "Pending")
            },
            Found {
                created: None,
                ..helper("t-cp-2", "cp", "Succeeded")
            },
        ];
        let event = |kind: &str, reason: &str, count, ago: Option<i64>| PodEvent {
            kind: kind.into(),
            reason: reason.into(),
            message: format!("{reason} happened\n  twice"),
            count,
            last_seen: ago.map(|ago| NOW - ago),
        };
        let events: Events = [
            (
                "t-worker-2".to_string(),
                vec![
                    event("Warning", "FailedScheduling", 4, Some(20)),
                    event("Normal", "NotTriggerScaleUp", 1, None),
                ],
            ),
            (
                "t-worker-3".to_string(),
                vec![event("Normal", "Gated", 1, Some(300))],
            ),
        ]
        .into_iter()
        .collect();
        let mut training = Training::default();
        for (at, line) in [
            (60, "Epoch 1/4"),
            (
                200,
                "100/100 - 140s - loss: 0.9 - accuracy: 0.6 - 1400ms/step",
            ),
            (201, "Epoch 2/4"),
            (
                480,
                "50/100 - 70s - loss: 0.5 - accuracy: 0.7 - 1400ms/step",
            ),
        ] {
            training.read((1704067200 + at) * 1000, line, true);
        }
        (record, helpers, events, training)
    }

    #[test]
    fn every_kind_of_run_shows_as_pinned() {
        let t = every_kind_of_run();
        let (record, helpers, events, training) = golden_reads();
        let stall = Some(std::time::Duration::from_secs(60));
        let table = render(
            &t,
            (Some(&record), &helpers),
            (&events, (&training, stall)),
            NOW,
            false,
        );
        insta::assert_snapshot!("table", table);
        let json = to_json(
            &t,
            (Some(&record), &helpers),
            (&events, (&training, stall)),
            ("t", "ns"),
            NOW,
            true,
        );
        insta::assert_snapshot!("json", serde_json::to_string_pretty(&json).unwrap());
        // Without its record, helpers, events or progress.
        let table = render(
            &t,
            (None, &[]),
            (&Events::new(), (&Training::default(), None)),
            NOW,
            true,
        );
        insta::assert_snapshot!("table_alone", table);
        let json = to_json(
            &t,
            (None, &[]),
            (&Events::new(), (&Training::default(), None)),
            ("t", "ns"),
            NOW,
            false,
        );
        insta::assert_snapshot!("json_alone", serde_json::to_string_pretty(&json).unwrap());
    }

    #[test]
    fn a_run_without_pods_shows_as_pinned() {
        let t = Tracker::new("t", false);
        let (record, helpers, events, training) = golden_reads();
        let mut text = String::new();
        for (record, helpers) in [
            (Some(&record), helpers.as_slice()),
            (None, &helpers[..1]),
            (None, &[][..]),
        ] {
            text.push_str(&render(
                &t,
                (record, helpers),
                (&events, (&training, None)),
                NOW,
                false,
            ));
            text.push_str("--\n");
        }
        insta::assert_snapshot!(text);
    }

    #[test]
    fn json_has_the_documented_keys() {
        let mut t = Tracker::new("t", false);
        t.replace(vec![
            view(pod("worker-1", "Running")),
            view(pod("worker-0", "Succeeded")),
        ]);
        let json = serde_json::to_value(to_json(
            &t,
            (None, &[]),
            (&Events::new(), (&Training::default(), None)),
            ("t", "ns"),
            1704067260,
            false,
        ))
        .unwrap();
        assert_eq!(json["verdict"], "Succeeded");
        assert_eq!(json["failure"], serde_json::Value::Null);
        let first = &json["pods"][0];
        let mut keys: Vec<&str> = first
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "age_seconds",
                "attempt",
                "duration_seconds",
                "events",
                "exit_code",
                "finished_at",
                "index",
                "message",
                "name",
                "never_started",
                "node",
                "node_lost_since",
                "phase",
                "queue",
                "queued",
                "ready",
                "reason",
                "restarts",
                "role",
                "started_at",
                "stopped",
                "terminating"
            ]
        );
        assert_eq!(first["name"], "t-worker-0");
        assert_eq!(first["role"], "worker");
        assert_eq!(first["index"], 0);
        assert_eq!(first["ready"], "0/1");
        assert_eq!(first["age_seconds"], 60);
    }

    #[test]
    fn table_ends_with_the_verdict() {
        let mut t = Tracker::new("t", false);
        t.replace(vec![view(pod("worker-0", "Running"))]);
        let text = render(
            &t,
            (None, &[]),
            (&Events::new(), (&Training::default(), None)),
            1704067200 + 5,
            false,
        );
        assert!(text.starts_with("NAME "), "{text}");
        assert!(
            text.contains("t-worker-0   worker-0   Running   0/1"),
            "{text}"
        );
        assert!(text.ends_with("verdict: Running\n"), "{text}");
    }

    #[test]
    fn pending_pods_events_come_before_the_verdict_for_the_first_few_pods() {
        let mut t = Tracker::new("t", false);
        let pods: Vec<_> = (0..7)
            .map(|i| view(pod(&format!("worker-{i}"), "Pending")))
            .collect();
        t.replace(pods);
        let now = 1704067200 + 100;
        let event = |reason: &str, count, ago: i64| PodEvent {
            kind: "Warning".into(),
            reason: reason.into(),
            message: "0/1 nodes are\n available".into(),
            count,
            last_seen: Some(now - ago),
        };
        let events: Events = (0..7)
            .map(|i| {
                (
                    format!("t-worker-{i}"),
                    vec![event("FailedScheduling", 3, 5)],
                )
            })
            .chain([(
                "t-worker-0".to_string(),
                vec![event("FailedScheduling", 3, 5), event("Failed", 1, 200)],
            )])
            .collect();
        let text = render(
            &t,
            (None, &[]),
            (&events, (&Training::default(), None)),
            now,
            false,
        );
        assert!(
            text.contains("events of the pods that have not started (newest first):\nTASK       AGE     TYPE      REASON                  MESSAGE\nworker-0   5s      Warning   FailedScheduling (x3)   0/1 nodes are available\nworker-0   3m20s   Warning   Failed"),
            "{text}"
        );
        assert!(!text.contains("worker-5   5s"), "five pods at most: {text}");
        assert!(
            text.contains(
                "(and 2 more pods not started: their events are in status -o json)\nverdict: Pending\n"
            ),
            "{text}"
        );
        let json = serde_json::to_value(to_json(
            &t,
            (None, &[]),
            (&events, (&Training::default(), None)),
            ("t", "ns"),
            now,
            false,
        ))
        .unwrap();
        assert_eq!(json["pods"][6]["events"][0]["count"], 3);
        assert_eq!(
            json["pods"][0]["events"][1]["last_seen"],
            "2023-12-31T23:58:20Z"
        );
        assert_eq!(
            json["pods"][0]["events"][0]["message"],
            "0/1 nodes are available"
        );
    }
}
