//! `status`'s report: the pods' table, then one section per kind of news (stuck pods,
//! stopped ones, tasks that never started, pending pods' events, helper pods, the
//! restart, the progress), then the verdict and the run's time.

use super::common::{Events, Report, lost, pending_restart, restarted_for, stalled};
use crate::cluster::events::PodEvent;
use crate::cluster::record::Record;
use crate::duration::{self, age};
use crate::ops::status::{never_started, verdict_of};
use crate::output;
use crate::plan::helper_pod::Found;
use crate::trainlog::{Training, show};
use crate::verdict::timing;
use crate::verdict::{
    NODE_LOST, PodView, SCHEDULING_GATED, STOPPED_TEXT, State, Tracker, one_line,
};

/// The table's columns (then PROGRESS when the deciding task printed some).
const COLUMNS: [&str; 11] = [
    "NAME", "ROLE", "PHASE", "READY", "RESTARTS", "NODE", "AGE", "EXIT", "STARTED", "ENDED",
    "DURATION",
];

/// The table shows the events of at most this many pending pods (`-o json`: all).
const EVENTS_SHOWN: usize = 5;

/// The table, the reasons of pods that are stuck, the pending pods' events and the
/// verdict line.
pub fn render(report: &Report) -> String {
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
    let pods = tracker.in_task_order();
    if pods.is_empty() {
        return without_pods(tracker, (record, helpers), now);
    }
    let sections = [
        pods_table(tracker, &pods, record, training, now),
        stuck_lines(&pods, record, now),
        stopped_lines(&pods, record),
        deleted_lines(record),
        pending_restart_line(tracker, record),
        events_table(&pods, events, now),
        helper_lines(helpers, tracker.tag(), now),
        attempt_line(tracker, &pods),
        ended_attempts(tracker, record),
        follower_line(record, now),
        progress_section(tracker, training, stall, now),
        victim_lines(tracker),
        verdict_line(tracker, record),
        timing::of_run(tracker, all_workers).map_or_else(String::new, |t| t.line(now) + "\n"),
        super::common::cost(tracker, record, now).map_or_else(String::new, |c| c.line() + "\n"),
    ];
    sections.concat()
}

/// One line per task that failed because of a peer, as TensorFlow or JAX said in its last
/// lines (`verdict/peer.rs`): what it died of, pointing at the peer.
fn victim_lines(tracker: &Tracker) -> String {
    tracker
        .failures()
        .iter()
        .filter_map(|f| {
            let abort = f.after_peer.as_ref()?;
            let who = f.task.map_or_else(|| f.pod.clone(), |t| t.id());
            Some(format!("{who}: failed, {abort}\n"))
        })
        .collect()
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
    out.push_str(&pending_restart_line(tracker, record));
    out.push_str(&helper_lines(helpers, tracker.tag(), now));
    out.push_str(&verdict_line(tracker, record));
    out
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
        or_dash(v.times.started_at.map(|t| duration::clock(t, now))),
        or_dash(v.times.finished_at.map(|t| duration::clock(t, now))),
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
fn stuck_lines(pods: &[&PodView], record: Option<&Record>, now: i64) -> String {
    let mut out = String::new();
    for v in pods {
        if let Some(r) = lost(v, now) {
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
        .filter(|v| v.times.stopped_at.is_some())
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

/// A restart recorded and not carried out (`wait --restarts` stopped before it created
/// the attempt's pods again): what to do about it. None once a pod of that attempt is
/// there.
fn pending_restart_line(tracker: &Tracker, record: Option<&Record>) -> String {
    match pending_restart(tracker, record) {
        Some(n) => {
            let tag = tracker.tag();
            format!(
                "restart {n} is pending: a wait --restarts began it and stopped before it created the pods again (take it up: tf-spawner wait -t {tag} --restarts {n}; or delete the run: tf-spawner -d -t {tag})\n"
            )
        }
        None => String::new(),
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

/// One line per helper pod of the run: what it is for, its phase, its age, how it ends.
/// `helper pod/t-tensorboard (tensorboard): Running, 5m; deleted when …`.
fn helper_lines(helpers: &[Found], tag: &str, now: i64) -> String {
    helpers
        .iter()
        .map(|h| {
            let age = h
                .created
                .map_or_else(|| "-".into(), |c| age(u64::try_from(now - c).unwrap_or(0)));
            let failed = match &h.failed {
                Some((last, 0)) => format!("; it failed: {last}"),
                Some((last, n)) => format!("; it failed ({n} restarts), the last time: {last}"),
                None => String::new(),
            };
            format!(
                "helper pod/{} ({}): {}, {age}; {}{failed}\n",
                h.name,
                h.kind,
                h.phase,
                h.ends(tag, now)
            )
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
    let cause = restarted_for(tracker).map_or_else(String::new, |c| format!("{}; ", one_line(c)));
    let by = tracker
        .live()
        .filter(|v| v.attempt == attempt)
        .find_map(|v| v.restarted_by.clone())
        .unwrap_or_else(|| "wait --restarts".to_string());
    format!(
        "attempt: {attempt} ({cause}re-created by {by}: {})\n",
        restarted.join(", ")
    )
}

/// `followed by: tf-spawner on HOST, pid N (checked in 12s ago)`: who restarts, stops
/// and records the run now (`cluster/follower.rs`), or that it stopped checking in.
fn follower_line(record: Option<&Record>, now: i64) -> String {
    let Some(h) = record.and_then(|r| r.follower.as_ref()) else {
        return String::new();
    };
    let ago = duration::age(now.saturating_sub(h.checked_in).max(0) as u64);
    if h.is_live(now) {
        format!("followed by: {} (checked in {ago} ago)\n", h.who)
    } else {
        format!(
            "followed by: {}, which stopped checking in {ago} ago (the next wait takes the run over)\n",
            h.who
        )
    }
}

/// One line per attempt a restart replaced, with why it ended and where its log is:
/// `attempt 0 ended: pod T-worker-1 (worker-1) failed: exit code 137 (its log: tf-spawner
/// logs -t T --attempt 0)`.
fn ended_attempts(tracker: &Tracker, record: Option<&Record>) -> String {
    let tag = tracker.tag();
    record
        .map(|r| r.attempts.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|(n, why)| {
            format!(
                "attempt {n} ended: {} (its log: tf-spawner logs -t {tag} --attempt {n})\n",
                one_line(why)
            )
        })
        .collect()
}

/// `progress: …` when the deciding task printed some, with the stall if it stalled.
fn progress_section(
    tracker: &Tracker,
    training: &Training,
    stall: crate::ops::wait::StallBound,
    now: i64,
) -> String {
    if training.is_empty() {
        return String::new();
    }
    let ended = matches!(
        tracker.verdict(),
        crate::verdict::Verdict::Succeeded | crate::verdict::Verdict::Failed(_)
    );
    let mut line = progress_line(training, now, ended);
    if let Some(since) = stalled(tracker, training, stall, now) {
        line.push_str(&format!("; {since}"));
    }
    format!("progress: {line}\n")
}

/// `epoch 7/20, loss 0.31, …, about 40 min left (last progress 12s ago)`; no estimate
/// once the verdict is in (`ended`).
fn progress_line(training: &Training, now: i64, ended: bool) -> String {
    let mut text = match ended {
        true => show::line_ended(training, None),
        false => show::line(training, None),
    };
    if let Some(last) = training.last_at {
        let ago = u64::try_from(now.saturating_sub(last / 1000)).unwrap_or(0);
        text.push_str(&format!(" (last progress {} ago)", age(ago)));
    }
    text
}

fn verdict_line(tracker: &Tracker, record: Option<&Record>) -> String {
    match verdict_of(tracker, record) {
        (name, Some(why)) => format!("verdict: {name} — {why}\n"),
        (name, None) => format!("verdict: {name}\n"),
    }
}
