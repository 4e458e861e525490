//! Shared clusters (README, "Shared clusters"): `--deadline`, `--priority-class`,
//! `--queue`; what they put on the pods, how a stopped or queued run is reported.

use serde_json::json;

use crate::follow::{await_watches, container, failed_with_logs, finish, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

#[test]
fn deadline_and_priority_class_reach_every_pod() {
    let env = Env::new();
    spawn_run(
        &env,
        "dl",
        &[
            "-w",
            "2",
            "--chief",
            "--deadline",
            "1h30m",
            "--priority-class",
            "team-high",
        ],
    );
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(pod["spec"]["activeDeadlineSeconds"], json!(5400), "{pod:#}");
        assert_eq!(
            pod["spec"]["priorityClassName"],
            json!("team-high"),
            "{pod:#}"
        );
    }
}

#[test]
fn bad_deadlines_and_priority_classes_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (&["--deadline", "0"][..], "--deadline 0s is too short"),
        (
            &["--deadline", "soon"][..],
            "--deadline \"soon\": expected number",
        ),
        (
            &["--priority-class", "Team_High"][..],
            "--priority-class \"Team_High\" is not a valid name",
        ),
        (
            &["--local", "--deadline", "1h"][..],
            "--deadline applies to pods on a cluster",
        ),
        (
            &["--local", "--priority-class", "p"][..],
            "--priority-class applies to pods",
        ),
    ] {
        let out = env.spawn(args);
        out.failure(2).stderr_has(needle);
        assert!(env.names(NS).is_empty(), "nothing created for {args:?}");
    }
}

/// What a kubelet writes when a pod outlives its `activeDeadlineSeconds`.
fn deadline_exceeded(env: &Env, pod: &str) {
    env.server.bind_pod(NS, pod, crate::follow::NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({
            "phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": container(false, json!({
                "terminated": {"exitCode": 137, "reason": "Error"}
            }))
        }),
    );
}

#[test]
fn a_run_past_its_deadline_fails_with_deadline_exceeded() {
    let env = Env::new();
    spawn_run(&env, "late", &["-w", "1", "--deadline", "10m"]);
    let child = start(&env, &["wait", "-t", "late"]);
    await_watches(&env, 1);
    deadline_exceeded(&env, "late-worker-0");
    let out = finish(child);
    failed_with_logs(&out, 3);
    out.stderr_has(
        "error: run 'late' failed: pod late-worker-0 (worker-0) failed: exit code 137, reason DeadlineExceeded: Pod was active on the node longer than the specified deadline",
    );

    let out = env.run(&["status", "-t", "late"]);
    out.stdout_has("Failed (DeadlineExceeded)")
        .stdout_has("reason DeadlineExceeded");
    let out = env.run(&["status", "-t", "late", "-o", "json"]);
    let status: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        status["pods"][0]["reason"],
        json!("DeadlineExceeded"),
        "{status:#}"
    );
    assert_eq!(status["pods"][0]["exit_code"], json!(137), "{status:#}");
}
