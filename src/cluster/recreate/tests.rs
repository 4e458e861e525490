//! The pure parts of a restart together: a template, the next attempt made from it, and
//! the run's deadline and first start they carry.

use super::deadline::run_deadline;
use super::*;
use crate::labels::{NODE_NAME_ANNOTATION, STOPPED_ANNOTATION};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

fn stored() -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": "t-worker-1", "namespace": "default", "uid": "u-1",
            "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "tf-spawner"}],
            "labels": {"training_attempt": "t", "tf-spawner/attempt": "0"},
            "annotations": {"tf-spawner/invocation": "first"}
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [
                {"name": "sidecar", "image": "s", "ports": [{"containerPort": 80}]},
                {"name": "tensorflow", "image": "tf", "ports": [
                    {"name": "metrics", "containerPort": 9090},
                    {"name": "tf-grpc", "containerPort": 1999}
                ], "env": [
                    {"name": "A", "value": "1"},
                    {"name": "TF_SPAWNER_ATTEMPT", "value": "0"}
                ]}
            ]
        },
        "status": {"phase": "Running"}
    }))
    .unwrap()
}

#[test]
fn a_template_has_nothing_the_servers_wrote_and_the_next_attempt_is_marked() {
    let next = Next {
        attempt: 2,
        invocation: "second",
        cause: "pod x failed",
        by: "tf-spawner on laptop, pid 7",
        port: Some(2000),
    };
    let pod = next_attempt(&template(stored()), &next, Timestamp::UNIX_EPOCH);
    let value = serde_json::to_value(&pod).unwrap();
    let meta = &value["metadata"];
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        assert!(meta.get(field).is_none(), "{field}: {value}");
    }
    assert!(value.get("status").is_none(), "{value}");
    assert!(value["spec"].get("nodeName").is_none(), "{value}");
    assert_eq!(meta["labels"]["tf-spawner/attempt"], "2");
    assert_eq!(meta["annotations"]["tf-spawner/invocation"], "second");
    assert_eq!(
        meta["annotations"]["tf-spawner/restarted-by"],
        "tf-spawner on laptop, pid 7"
    );
    assert_eq!(
        value["spec"]["containers"][1]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "TF_SPAWNER_ATTEMPT", "value": "2"}])
    );
    assert!(value["spec"]["containers"][0].get("env").is_none());
    // Only the TF container's TensorFlow port moves.
    let ports = |i: usize| value["spec"]["containers"][i]["ports"].clone();
    assert_eq!(ports(0), json!([{"containerPort": 80}]));
    assert_eq!(
        ports(1),
        json!([{"name": "metrics", "containerPort": 9090}, {"name": "tf-grpc", "containerPort": 2000}])
    );
    let kept = next_attempt(
        &template(stored()),
        &Next { port: None, ..next },
        Timestamp::UNIX_EPOCH,
    );
    let kept = serde_json::to_value(&kept).unwrap();
    assert_eq!(
        kept["spec"]["containers"][1]["ports"][1]["containerPort"],
        1999
    );
}

fn attempt(n: u32) -> Next<'static> {
    Next {
        attempt: n,
        invocation: "i",
        cause: "c",
        by: "b",
        port: None,
    }
}

#[test]
fn the_deadline_counts_once_from_the_runs_first_start() {
    let t = |s: &str| -> Timestamp { s.parse().unwrap() };
    let mut first = stored();
    first.spec.as_mut().unwrap().active_deadline_seconds = Some(3600);
    first.status =
        Some(serde_json::from_value(json!({"startTime": "2026-01-01T00:00:10Z"})).unwrap());
    // A pod stopped after a verdict says nothing of the run's deadline.
    let mut stopped = first.clone();
    stopped.spec.as_mut().unwrap().active_deadline_seconds = Some(1);
    stopped.status =
        Some(serde_json::from_value(json!({"startTime": "2026-01-01T00:00:00Z"})).unwrap());
    stopped
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(STOPPED_ANNOTATION.into(), "x".into());
    let at = run_deadline(&[first.clone(), stopped.clone()]);
    assert_eq!(at, Some(t("2026-01-01T01:00:10Z")));
    let template = with_time(template(stopped), DEADLINE_AT_ANNOTATION, at);
    assert_eq!(
        template.spec.as_ref().unwrap().active_deadline_seconds,
        None
    );
    // 40 minutes later, the next attempt gets the 20 left; a third the same way.
    let next = next_attempt(&template, &attempt(1), t("2026-01-01T00:40:10Z"));
    assert_eq!(
        next.spec.as_ref().unwrap().active_deadline_seconds,
        Some(1200)
    );
    assert_eq!(run_deadline(std::slice::from_ref(&next)), at);
    assert_eq!(deadline_left(&next, t("2026-01-01T02:00:00Z")), Some(0));
    let late = next_attempt(&next, &attempt(2), t("2026-01-01T02:00:00Z"));
    assert_eq!(late.spec.as_ref().unwrap().active_deadline_seconds, Some(1));
    // Without a deadline, none.
    assert_eq!(run_deadline(&[stored()]), None);
    let plain = next_attempt(&template_of_plain(), &attempt(1), t("2026-01-01T02:00:00Z"));
    assert_eq!(plain.spec.unwrap().active_deadline_seconds, None);
}

fn template_of_plain() -> Pod {
    with_time(template(stored()), DEADLINE_AT_ANNOTATION, None)
}

fn annotated(name: &str, pairs: &[(&str, &str)], started: Option<&str>) -> Pod {
    let mut pod = stored();
    pod.metadata.name = Some(name.into());
    let a = pod.metadata.annotations.as_mut().unwrap();
    for (k, v) in pairs {
        a.insert(k.to_string(), v.to_string());
    }
    pod.status = started.map(|t| serde_json::from_value(json!({"startTime": t})).unwrap());
    pod
}

fn book(created: &str, deadline: Option<i64>) -> Book {
    let mut spawned = stored();
    spawned.spec.as_mut().unwrap().active_deadline_seconds = deadline;
    Book {
        created: Some(created.parse().unwrap()),
        spawned: Some(Ok([("t-worker-1".to_string(), spawned)].into())),
        restart: None,
        cluster: None,
    }
}

#[test]
fn the_record_bounds_the_deadline_and_a_start_in_the_future_is_ignored() {
    let t = |s: &str| -> Timestamp { s.parse().unwrap() };
    let now = t("2026-01-01T05:00:00Z");
    let pods = [
        // Planted: a start after now and a deadline a day past the record's.
        annotated(
            "t-worker-0",
            &[
                (RUN_STARTED_ANNOTATION, "2026-01-02T00:00:00Z"),
                (DEADLINE_AT_ANNOTATION, "2026-01-02T00:00:00Z"),
            ],
            Some("2026-01-01T00:10:00Z"),
        ),
        // The run's first start, carried by a re-created pod.
        annotated(
            "t-worker-1",
            &[(RUN_STARTED_ANNOTATION, "2026-01-01T00:05:00Z")],
            None,
        ),
        // Before the run was made: not ours.
        annotated(
            "t-worker-2",
            &[(RUN_STARTED_ANNOTATION, "2025-12-31T00:00:00Z")],
            None,
        ),
    ];
    let (times, warnings) = run_times(&pods, &book("2026-01-01T00:00:00Z", Some(3600)), now);
    assert_eq!(times.started, Some(t("2026-01-01T00:05:00Z")));
    assert_eq!(times.deadline, Some(t("2026-01-01T01:05:00Z")));
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].contains("t-worker-0's tf-spawner/run-started"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].ends_with("is in the future: ignored"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].ends_with("is before the run was made: ignored"),
        "{warnings:?}"
    );
    assert!(
        warnings[2].contains("is later than the run's record allows (2026-01-01T01:05:00Z"),
        "{warnings:?}"
    );
    // Every pod gone: from the run's making.
    let (times, warnings) = run_times(&[], &book("2026-01-01T00:00:00Z", Some(60)), now);
    assert_eq!(times.deadline, Some(t("2026-01-01T00:01:00Z")));
    assert!(warnings.is_empty());
    // A record without a deadline: a planted one is refused, none is set.
    let (times, warnings) = run_times(&pods[..1], &book("2026-01-01T00:00:00Z", None), now);
    assert_eq!(times.deadline, None);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // No record of pods (an earlier version): the pods' own deadline, the future
    // start still ignored.
    let old = Book {
        spawned: None,
        ..book("2026-01-01T00:00:00Z", None)
    };
    let (times, warnings) = run_times(&pods[..1], &old, now);
    assert_eq!(times.started, Some(t("2026-01-01T00:10:00Z")));
    assert_eq!(times.deadline, Some(t("2026-01-02T00:00:00Z")));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn a_node_the_template_named_is_kept() {
    let mut pod = stored();
    pod.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(NODE_NAME_ANNOTATION.into(), "node-1".into());
    let spec = template(pod).spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("node-1"));
}
