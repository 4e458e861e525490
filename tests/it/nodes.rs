//! Nodes fail (docs/preemption.md, "A lost node"): `--node-lost-after` on the pods, a
//! task whose node stopped reporting named by `status` and `wait`, its eviction a
//! failure `--restarts` retries, and its pods, which no kubelet will ever confirm gone,
//! force-deleted by the restart. The test server plays the node-lifecycle controller and
//! the taint manager as v1.36 does (what `tests/pods/nodes.rs` saw).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::follow::{NODE, await_watches, container, exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// What the node-lifecycle controller leaves on a running pod whose node stopped
/// reporting (`Ready` False, `ContainersReady` still True); with `evicted`, what the
/// taint manager adds when the pod's toleration runs out (then it deletes the pod, which
/// stays Terminating: no kubelet confirms it).
fn lost(env: &Env, pod: &str, evicted: bool) {
    env.server.bind_pod(NS, pod, NODE);
    let mut conditions = vec![
        json!({"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:01:00Z"}),
        json!({"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}),
    ];
    if evicted {
        conditions.push(json!({"type": "DisruptionTarget", "status": "True",
            "reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint"}));
    }
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Running", "conditions": conditions,
               "containerStatuses": container(true, json!({"running": {}}))}),
    );
    if evicted {
        env.server.mark_terminating(NS, pod);
    }
}

fn tolerations(pod: &Value) -> Vec<(String, i64)> {
    pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["effect"] == "NoExecute")
        .map(|t| {
            (
                t["key"].as_str().unwrap_or("").to_string(),
                t["tolerationSeconds"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

#[test]
fn node_lost_after_reaches_every_pod_from_the_flag_or_the_defaults_file() {
    let env = Env::new();
    spawn_run(
        &env,
        "nl",
        &["-w", "2", "--chief", "--node-lost-after", "45s"],
    );
    let want = vec![
        ("node.kubernetes.io/not-ready".to_string(), 45),
        ("node.kubernetes.io/unreachable".to_string(), 45),
    ];
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(tolerations(pod), want, "{pod:#}");
    }
    let dir = env.path(".config/tf-spawner");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "node_lost_after: 2m\n").unwrap();
    spawn_run(&env, "nf", &["-w", "1"]);
    let pod = env.server.get("pods", NS, "nf-worker-0").unwrap();
    assert_eq!(tolerations(&pod)[0].1, 120, "{pod:#}");
    let out = env.run(&["config"]);
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("node_lost_after"))
        .unwrap_or_else(|| panic!("{out:#?}"));
    assert!(row.contains("2m") && row.contains("config file"), "{row}");
}

#[test]
fn bad_node_lost_after_values_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (
            &["--node-lost-after", "0"][..],
            "--node-lost-after 0s is too short",
        ),
        (
            &["--node-lost-after", "soon"][..],
            "--node-lost-after \"soon\": expected number",
        ),
        (
            &["--local", "--node-lost-after", "1m"][..],
            "--node-lost-after applies to pods on a cluster",
        ),
    ] {
        let out = env.spawn(args);
        out.failure(2).stderr_has(needle);
        assert!(env.names(NS).is_empty(), "nothing created for {args:?}");
    }
}

#[test]
fn a_task_on_a_lost_node_is_named_then_its_eviction_ends_wait_with_exit_3() {
    let env = Env::new();
    spawn_run(&env, "ln", &["-w", "2"]);
    running(&env, "ln-worker-0");
    lost(&env, "ln-worker-1", false);
    let out = env.run(&["status", "-t", "ln"]);
    out.success()
        .stdout_has("Running (NodeLost)")
        .stdout_has("worker-1: NodeLost: node node-1 not ready since ")
        .stdout_has("verdict: Running");
    let status: Value =
        serde_json::from_str(&env.run(&["status", "-t", "ln", "-o", "json"]).stdout).unwrap();
    assert_eq!(status["pods"][1]["reason"], "NodeLost", "{status:#}");
    assert_eq!(
        status["pods"][1]["node_lost_since"], "2026-01-01T00:01:00Z",
        "{status:#}"
    );
    assert_eq!(
        status["pods"][0]["node_lost_since"],
        Value::Null,
        "{status:#}"
    );

    let child = start(&env, &["wait", "-t", "ln"]);
    await_watches(&env, 1);
    lost(&env, "ln-worker-1", true);
    let out = finish(child);
    out.failure(3)
        .stdout_has("1/2 running, 1 on a lost node")
        .stderr_has("error: run 'ln' failed: pod ln-worker-1 (worker-1) was lost with its node: NodeLost: node node-1 not ready since 2026-01-01T00:01:00Z (it stopped reporting)");
}

/// The restart does not wait forever on a pod of a lost node: it force-deletes it
/// (grace period 0), which removes it at once; a plain deletion would leave it
/// Terminating for good.
#[test]
fn a_restart_force_deletes_the_pods_of_a_lost_node_and_runs_again() {
    let env = Env::new();
    spawn_run(&env, "lr", &["-w", "2", "--node-lost-after", "10s"]);
    running(&env, "lr-worker-0");
    running(&env, "lr-worker-1");
    let mut child = start(
        &env,
        &[
            "wait",
            "-t",
            "lr",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_watches(&env, 1);
    lost(&env, "lr-worker-1", true);
    let began = Instant::now();
    loop {
        let fresh = env.server.get("pods", NS, "lr-worker-1").is_some_and(|p| {
            p["metadata"]["labels"]["tf-spawner/attempt"] == "1"
                && p["metadata"].get("deletionTimestamp").is_none()
        });
        if fresh {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("wait ended ({status}) before attempt 1");
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no attempt 1 after 60s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let deletes: Vec<String> = env
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with("/pods/lr-worker-1"))
        .map(|r| r.query)
        .collect();
    assert!(!deletes.is_empty(), "no DELETE of lr-worker-1");
    running(&env, "lr-worker-0");
    running(&env, "lr-worker-1");
    exited(&env, "lr-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run lr: restart 1/1 in 0s: pod lr-worker-1 (worker-1) was lost with its node: NodeLost: node node-1 not ready since 2026-01-01T00:01:00Z (it stopped reporting); re-creating its 2 pods (attempt 1)")
        .stdout_has("run lr: force-deleting lr-worker-1 (its node stopped reporting")
        .stdout_has("run lr: Succeeded");
}
