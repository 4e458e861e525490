//! `status`'s tests: its table and `-o json` of a run with a pod of every kind, pinned.

use super::common::{Events, Report};
use super::json::to_json;
use super::table::render;
use crate::cluster::events::PodEvent;
use crate::cluster::record::{NotStarted, Record};
use crate::ops::wait::StallBound;
use crate::plan::helper_pod::Found;
use crate::roles::RoleSizes;
use crate::trainlog::Training;
use crate::verdict::tests::{every_kind_of_run, pod, view};
use crate::verdict::{PodView, Tracker};

/// No stall is named (a derived bound with a factor of 0).
const NO_STALL: StallBound = StallBound::Derived {
    factor: 0,
    floor: std::time::Duration::from_secs(60),
};

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
        restarting: None,
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
        ..Record::default()
    };
    let helper = |name: &str, kind: &str, phase: &str| Found {
        name: name.into(),
        kind: kind.into(),
        phase: phase.into(),
        created: Some(NOW - 90),
        keep: false,
        sessions: 0,
        deadline: None,
        failed: None,
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
        Found {
            failed: Some((
                "exit 1: error: listing pods is forbidden for system:serviceaccount:ns:tf-spawner-supervisor: add the Role rule for pods (list) of examples/rbac.yaml".into(),
                3,
            )),
            ..helper("t-supervisor-x7k2p", "supervisor", "Running")
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

/// A tracker of run `t` holding `pods`.
fn tracker_of(pods: Vec<PodView>) -> Tracker {
    let mut t = Tracker::new("t", false);
    t.replace(pods);
    t
}

/// `status`'s table and `-o json` of `tracker` alone at `now`: no record, helper pod
/// or progress; `events`, the pending pods' events.
fn shown(tracker: &Tracker, events: &Events, now: i64) -> (String, serde_json::Value) {
    let report = Report {
        tracker,
        record: None,
        helpers: &[],
        events,
        training: &Training::default(),
        stall: NO_STALL,
        now,
        all_workers: false,
    };
    let json = serde_json::to_value(to_json(&report, ("t", "ns"))).expect("JSON");
    (render(&report), json)
}

#[test]
fn every_kind_of_run_shows_as_pinned() {
    let t = every_kind_of_run();
    let (record, helpers, events, training) = golden_reads();
    let stall = StallBound::After(std::time::Duration::from_secs(60));
    let table = render(&Report {
        tracker: &t,
        record: Some(&record),
        helpers: &helpers,
        events: &events,
        training: &training,
        stall,
        now: NOW,
        all_workers: false,
    });
    insta::assert_snapshot!("table", table);
    let json = to_json(
        &Report {
            tracker: &t,
            record: Some(&record),
            helpers: &helpers,
            events: &events,
            training: &training,
            stall,
            now: NOW,
            all_workers: true,
        },
        ("t", "ns"),
    );
    insta::assert_snapshot!("json", serde_json::to_string_pretty(&json).unwrap());
    // Without its record, helpers, events or progress.
    let table = render(&Report {
        tracker: &t,
        record: None,
        helpers: &[],
        events: &Events::new(),
        training: &Training::default(),
        stall: NO_STALL,
        now: NOW,
        all_workers: true,
    });
    insta::assert_snapshot!("table_alone", table);
    let json = to_json(
        &Report {
            tracker: &t,
            record: None,
            helpers: &[],
            events: &Events::new(),
            training: &Training::default(),
            stall: NO_STALL,
            now: NOW,
            all_workers: false,
        },
        ("t", "ns"),
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
        text.push_str(&render(&Report {
            tracker: &t,
            record,
            helpers,
            events: &events,
            training: &training,
            stall: NO_STALL,
            now: NOW,
            all_workers: false,
        }));
        text.push_str("--\n");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn json_has_the_documented_keys() {
    let t = tracker_of(vec![
        view(pod("worker-1", "Running")),
        view(pod("worker-0", "Succeeded")),
    ]);
    let (_, json) = shown(&t, &Events::new(), 1704067260);
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
    let t = tracker_of(vec![view(pod("worker-0", "Running"))]);
    let (text, _) = shown(&t, &Events::new(), 1704067200 + 5);
    assert!(text.starts_with("NAME "), "{text}");
    assert!(
        text.contains("t-worker-0   worker-0   Running   0/1"),
        "{text}"
    );
    assert!(text.ends_with("verdict: Running\n"), "{text}");
}

#[test]
fn pending_pods_events_come_before_the_verdict_for_the_first_few_pods() {
    let t = tracker_of(
        (0..7)
            .map(|i| view(pod(&format!("worker-{i}"), "Pending")))
            .collect(),
    );
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
    let (text, json) = shown(&t, &events, now);
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

/// Worker `index` failed with exit 1 at 14:31:`second` (its container's `finishedAt`).
fn failed_at(index: u32, second: u32) -> PodView {
    let mut p = pod(&format!("worker-{index}"), "Failed");
    p["status"]["containerStatuses"] = serde_json::json!([{
        "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"terminated": {"exitCode": 1, "reason": "Error",
            "startedAt": "2026-11-26T14:30:00Z",
            "finishedAt": format!("2026-11-26T14:31:{second:02}Z")}}
    }]);
    view(p)
}

/// Issue 50: worker 1 raised, worker 0 died of the collective it broke (real
/// TensorFlow logs, `verdict/tests/logs/`). The morning after, `status` names worker 1,
/// whichever order the kubelet's clock gives the two exits, and says what worker 0 died
/// of; pinned in both orders.
#[test]
fn the_task_that_failed_first_is_blamed_in_both_orders() {
    let victim = include_str!("../../verdict/tests/logs/victim-socket-closed.log");
    let raised = include_str!("../../verdict/tests/logs/raised.log");
    for (name, victim_at, raised_at) in [("raised_first", 43, 33), ("victim_first", 32, 33)] {
        let mut t = tracker_of(vec![failed_at(0, victim_at), failed_at(1, raised_at)]);
        t.note_log("t-worker-0", victim);
        t.note_log("t-worker-1", raised);
        let (text, _) = shown(&t, &Events::new(), 1795703520);
        assert!(
            text.contains(
                "verdict: Failed — pod t-worker-1 (worker-1) failed: exit code 1, reason Error\n"
            ),
            "{name}: {text}"
        );
        insta::assert_snapshot!(name, text);
    }
}
