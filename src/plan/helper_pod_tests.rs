//! The helper pods' tests (`helper_pod.rs`).

use super::*;

fn volume() -> OutputVolume {
    OutputVolume {
        claim: "out".into(),
        path: "/output".into(),
        folder: None,
    }
}

#[test]
fn a_helper_carries_the_tag_mounts_read_only_and_may_be_pinned() {
    let v = volume();
    let pod = pod(&HelperSpec {
        helper: Helper::Tensorboard,
        name: "demo-tensorboard".into(),
        tag: "demo",
        namespace: "ns",
        image: "tb:1".into(),
        volume: &v,
        node: Some("n1".into()),
        security: None,
    });
    let json = serde_json::to_value(&pod).unwrap();
    assert_eq!(json["metadata"]["labels"]["training_attempt"], "demo");
    assert_eq!(
        json["metadata"]["labels"]["tf-spawner/helper"],
        "tensorboard"
    );
    let spec = &json["spec"];
    assert_eq!(
        spec["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "out"
    );
    assert_eq!(
        spec["volumes"][0]["persistentVolumeClaim"]["readOnly"],
        true
    );
    assert_eq!(spec["containers"][0]["volumeMounts"][0]["readOnly"], true);
    assert_eq!(spec["containers"][0]["command"][2], "/output");
    assert_eq!(
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchFields"][0]["values"][0],
        "n1"
    );
}

#[test]
fn a_helper_runs_as_the_run_s_user_and_reads_its_group_s_files() {
    let v = volume();
    let run = PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(1000),
        run_as_group: Some(1000),
        fs_group: Some(1000),
        ..PodSecurityContext::default()
    };
    let pod = pod(&HelperSpec {
        helper: Helper::Cp,
        name: "demo-cp-x".into(),
        tag: "demo",
        namespace: "ns",
        image: "tf".into(),
        volume: &v,
        node: None,
        security: Some(run),
    });
    let json = serde_json::to_value(&pod).unwrap();
    let sc = &json["spec"]["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["runAsUser"], 1000);
    assert_eq!(sc["runAsGroup"], 1000);
    assert_eq!(sc["supplementalGroups"], serde_json::json!([1000]));
    assert!(sc.get("fsGroup").is_none(), "no second chown of the volume");
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    let c = &json["spec"]["containers"][0]["securityContext"];
    assert_eq!(c["allowPrivilegeEscalation"], false);
}

#[test]
fn only_many_modes_let_pods_on_several_nodes_share_a_claim() {
    let modes = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(one_node_only(&modes(&["ReadWriteOnce"])));
    assert!(one_node_only(&modes(&["ReadWriteOncePod"])));
    assert!(!one_node_only(&modes(&["ReadWriteOnce", "ReadWriteMany"])));
}

#[test]
fn a_helper_has_small_requests_and_limits_and_tensorboard_listens_on_loopback() {
    let v = volume();
    let pod = pod(&HelperSpec {
        helper: Helper::Tensorboard,
        name: "demo-tensorboard".into(),
        tag: "demo",
        namespace: "ns",
        image: "tb:1".into(),
        volume: &v,
        node: None,
        security: None,
    });
    let json = serde_json::to_value(&pod).unwrap();
    let c = &json["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
    assert_eq!(c["resources"]["requests"]["cpu"], "100m");
    let command: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(!command.contains(&"--bind_all"), "{command:?}");
    assert_eq!(command[3..5], ["--host", "127.0.0.1"]);
    assert!(c.get("ports").is_none() && c.get("readinessProbe").is_none());
    assert_eq!(c["startupProbe"]["exec"]["command"][0], "python");
    assert!(is_ours(&pod, "demo", Helper::Tensorboard));
    assert!(!is_ours(&pod, "other", Helper::Tensorboard));
    assert!(!is_ours(&pod, "demo", Helper::Cp));
}

#[test]
fn sessions_count_the_others_heard_from_lately() {
    let mut s = Sessions::parse(Some(r#"{"a":1000,"b":990,"old":100}"#));
    assert_eq!(s.others_alive("a", 1000), 1);
    assert_eq!(s.others_alive("c", 1100), 0);
    s.beat("c", 1000);
    assert_eq!(s.0.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    s.leave("a");
    s.leave("b");
    assert_eq!(s.others_alive("c", 1000), 0);
    assert_eq!(Sessions::parse(Some("not json")), Sessions::default());
    assert_eq!(s.to_annotation(), r#"{"c":1000}"#);
}

/// A heartbeat far in the future (a forged one, `4102444800`: the year 2100) keeps
/// no pod: it is no session, and the next beat drops it; a clock a little ahead is
/// believed.
#[test]
fn a_heartbeat_from_the_future_is_no_session() {
    let mut s = Sessions::parse(Some(r#"{"forged":4102444800,"ahead":1060}"#));
    assert_eq!(s.others_alive("me", 1000), 1);
    s.beat("me", 1000);
    assert_eq!(s.0.keys().collect::<Vec<_>>(), ["ahead", "me"]);
}

/// A `cp` killed by SIGKILL cannot delete its pod: the line says what ends it then,
/// never only "deleted when its copy ends".
#[test]
fn a_cp_pods_line_says_what_ends_it_if_its_cp_was_killed() {
    let found = |deadline| Found {
        name: "t-cp-1".into(),
        kind: "cp".into(),
        phase: "Running".into(),
        created: None,
        keep: false,
        sessions: 0,
        deadline,
        failed: None,
    };
    let started = found(Some(1_700_000_000)).ends("t", 1_700_000_000);
    assert!(
        started.contains("if that cp was killed, its deadline ends it by "),
        "{started}"
    );
    let pending = found(None).ends("t", 1_700_000_000);
    assert!(
        pending.ends_with("if that cp was killed, tf-spawner -d -t t deletes it (its deadline counts from its start)"),
        "{pending}"
    );
}

/// A helper whose container failed (a supervisor without a right it needs): its
/// last failure, the termination message's last line, from the state or the last
/// state; none for a container that never failed.
#[test]
fn a_failed_helpers_last_line_is_read_from_its_termination_message() {
    let pod = |status: serde_json::Value| -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "t-supervisor-x", "labels": {HELPER_LABEL: "supervisor"}},
            "status": {"phase": "Running", "containerStatuses": [status]}
        }))
        .unwrap()
    };
    let restarted = pod(serde_json::json!({
        "name": "supervisor", "image": "i", "ready": true, "restartCount": 2,
        "state": {"running": {}},
        "lastState": {"terminated": {"exitCode": 1,
            "message": "supervising run t\nerror: listing pods is forbidden\n\n"}}
    }));
    assert_eq!(
        Found::of(&restarted, 0).unwrap().failed,
        Some(("exit 1: error: listing pods is forbidden".to_string(), 2))
    );
    let failed = pod(serde_json::json!({
        "name": "supervisor", "image": "i", "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": 7}}
    }));
    assert_eq!(
        Found::of(&failed, 0).unwrap().failed,
        Some(("exit 7".to_string(), 0))
    );
    let fine = pod(serde_json::json!({
        "name": "supervisor", "image": "i", "ready": true, "restartCount": 0,
        "state": {"running": {}},
        "lastState": {"terminated": {"exitCode": 0}}
    }));
    assert_eq!(Found::of(&fine, 0).unwrap().failed, None);
}

#[test]
fn tensorboard_over_several_runs_names_each_by_its_tag() {
    let v = volume();
    let mut pod = pod(&HelperSpec {
        helper: Helper::Tensorboard,
        name: "lr-1-tensorboard-abc".into(),
        tag: "lr-1",
        namespace: "ns",
        image: "tf".into(),
        volume: &v,
        node: None,
        security: None,
    });
    let runs = [("lr-1", "/output/lr-1"), ("lr-2", "/output/lr-2")]
        .map(|(t, d)| (t.to_string(), d.to_string()));
    serve_runs(&mut pod, &runs);
    let command = &pod.spec.as_ref().unwrap().containers[0].command;
    let command = command.as_ref().unwrap();
    assert_eq!(command[1], "--logdir_spec");
    assert_eq!(command[2], "lr-1:/output/lr-1,lr-2:/output/lr-2");
}
