//! Nodes fail (docs/preemption.md, "A lost node"): `--node-lost-after` on the pods, a
//! task whose node stopped reporting named by `status` and `wait`, its eviction a
//! failure `--restarts` retries, and its pods, which no kubelet will ever confirm gone,
//! force-deleted by the restart. The test server plays the node-lifecycle controller and
//! the taint manager as v1.36 does (what `tests/pods/nodes.rs` saw).

use serde_json::{Value, json};

use crate::follow::{NODE, await_watches, container, exited, finish, running, spawn_run, start};
use crate::support::{Env, await_attempt};

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
    env.defaults_file("node_lost_after: 2m\n");
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
    await_attempt(&env, "lr", &["lr-worker-1"], "1", &mut child);
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

/// What the surviving worker prints when its peer's node dies under an all-reduce
/// (TensorFlow's texts, see `src/verdict/peer.rs`), and what a worker that raised and
/// its victim print.
const SURVIVOR_LOG: &str = include_str!("../../src/verdict/tests/logs/survivor-peer-node-lost.log");
const RAISED_LOG: &str = include_str!("../../src/verdict/tests/logs/raised.log");
const VICTIM_LOG: &str = include_str!("../../src/verdict/tests/logs/victim-socket-closed.log");

/// Pod `pod` ended with `code` at 14:31:`second` (the kubelet's `finishedAt`), having
/// printed `log`.
fn ended(env: &Env, pod: &str, code: i32, second: u32, log: &str) {
    env.server.bind_pod(NS, pod, NODE);
    env.server.append_log(NS, pod, log);
    env.server.close_log(NS, pod);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Failed", "containerStatuses": container(false, json!({
            "terminated": {"exitCode": code, "reason": "Error",
                "startedAt": "2026-11-26T14:30:00Z",
                "finishedAt": format!("2026-11-26T14:31:{second:02}Z")}
        }))}),
    );
}

/// The bug of issue 48 (item 5): the tasks on two nodes, one node dies, the survivor's
/// all-reduce aborts (exit 1, not retryable) long before the cluster names the node
/// lost. That exit must not decide while its peer has not ended: `wait` holds (a
/// second watch), and when the peer's node is named lost, restarts at once, before the
/// taint manager's eviction.
#[test]
fn a_survivors_collective_abort_beside_a_lost_peer_restarts_the_run() {
    let env = Env::new();
    spawn_run(&env, "sv", &["-w", "2", "--node-lost-after", "10s"]);
    running(&env, "sv-worker-0");
    running(&env, "sv-worker-1");
    let mut child = start(
        &env,
        &[
            "wait",
            "-t",
            "sv",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_watches(&env, 1);
    ended(&env, "sv-worker-0", 1, 40, SURVIVOR_LOG);
    await_watches(&env, 2);
    assert!(
        child.try_wait().unwrap().is_none(),
        "wait decided on the survivor's abort"
    );
    lost(&env, "sv-worker-1", false);
    await_attempt(&env, "sv", &["sv-worker-1"], "1", &mut child);
    running(&env, "sv-worker-0");
    running(&env, "sv-worker-1");
    exited(&env, "sv-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run sv: worker-0 failed because of a peer (TensorFlow says so); waiting up to 70s for worker-1 to end or be named lost")
        .stdout_has("run sv: restart 1/1 in 0s: pod sv-worker-1 (worker-1) was lost with its node: NodeLost: node node-1 not ready since 2026-01-01T00:01:00Z (it stopped reporting); re-creating its 2 pods (attempt 1)")
        .stdout_has("run sv: force-deleting sv-worker-1 (its node stopped reporting")
        .stdout_has("run sv: Succeeded");
}

/// What a Keras 3 worker on JAX printed last when its peer was killed: its shutdown
/// barrier saw task 1's heartbeat time out, and it aborted (exit 134; a real run).
const JAX_SURVIVOR_LOG: &str =
    include_str!("../../src/verdict/tests/logs/jax-survivor-heartbeat.log");

/// The same on JAX (`--framework keras`): the survivor's abort, exit 134 (not retryable
/// by itself), waits on its peer, and the peer's loss restarts the run.
#[test]
fn a_jax_survivors_abort_beside_a_lost_peer_restarts_the_run() {
    let env = Env::new();
    let args = [
        "-w",
        "2",
        "--framework",
        "keras",
        "--node-lost-after",
        "10s",
    ];
    spawn_run(&env, "js", &args);
    running(&env, "js-worker-0");
    running(&env, "js-worker-1");
    let mut child = start(
        &env,
        &[
            "wait",
            "-t",
            "js",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_watches(&env, 1);
    ended(&env, "js-worker-0", 134, 40, JAX_SURVIVOR_LOG);
    await_watches(&env, 2);
    assert!(
        child.try_wait().unwrap().is_none(),
        "wait decided on the survivor's abort"
    );
    lost(&env, "js-worker-1", false);
    await_attempt(&env, "js", &["js-worker-1"], "1", &mut child);
    running(&env, "js-worker-0");
    running(&env, "js-worker-1");
    exited(&env, "js-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run js: worker-0 failed because of a peer (JAX says so); waiting up to 70s for worker-1 to end or be named lost")
        .stdout_has("run js: restart 1/1 in 0s: pod js-worker-1 (worker-1) was lost with its node")
        .stdout_has("run js: Succeeded");
}

/// The same abort, but no peer turns out lost within the bound (`--node-lost-after`
/// and `--node-grace`): the survivor's failure stands, pointing at the peer it names,
/// and nothing is restarted.
#[test]
fn a_survivors_abort_with_no_lost_peer_fails_the_run_after_the_bound() {
    let env = Env::new();
    spawn_run(&env, "nb", &["-w", "2", "--node-lost-after", "1s"]);
    running(&env, "nb-worker-0");
    running(&env, "nb-worker-1");
    let child = start(
        &env,
        &["wait", "-t", "nb", "--restarts", "1", "--node-grace", "1s"],
    );
    await_watches(&env, 1);
    ended(&env, "nb-worker-0", 1, 40, SURVIVOR_LOG);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("run nb: worker-0 failed because of a peer (TensorFlow says so); waiting up to 2s for worker-1")
        .stderr_has("error: run 'nb' failed: pod nb-worker-0 (worker-0) failed: exit code 1, reason Error; aborted because of its peer worker-1 (Collective ops is aborted by: failed to connect to all addresses")
        .stderr_has("last log lines of pod nb-worker-0:")
        .stdout_lacks("restart 1/1");
    assert_eq!(
        env.server.get("pods", NS, "nb-worker-0").unwrap()["metadata"]["labels"]["tf-spawner/attempt"],
        "0",
        "not restarted"
    );
}

/// Issue 50 (item 1): worker 1 raised, worker 0 died of the collective it broke. A
/// `wait` started after both ended and `status` name worker 1 with its last lines,
/// whichever the kubelet ended first by a second's clock: the victim's own log says
/// it was a peer's doing.
#[test]
fn a_late_wait_and_status_blame_the_task_that_failed_first() {
    for (victim_at, raised_at) in [(43, 33), (33, 33), (32, 33)] {
        let env = Env::new();
        spawn_run(&env, "bl", &["-w", "2"]);
        ended(&env, "bl-worker-0", 1, victim_at, VICTIM_LOG);
        ended(&env, "bl-worker-1", 1, raised_at, RAISED_LOG);
        let blamed = "pod bl-worker-1 (worker-1) failed: exit code 1, reason Error";
        let out = env.run(&["status", "-t", "bl"]);
        out.success()
            .stdout_has(&format!("verdict: Failed — {blamed}\n"))
            .stdout_has("last log lines of pod bl-worker-1:")
            .stdout_has("RequestedFailure: worker-1: failing after epoch 2");
        let out = env.run(&["wait", "-t", "bl"]);
        assert_eq!(out.code, 3, "{out:#?}");
        out.stderr_has(&format!("error: run 'bl' failed: {blamed}\n"))
            .stderr_has("last log lines of pod bl-worker-1:");
    }
}

/// Every task of the attempt on a node that stopped reporting: nothing reachable is
/// stopped by the restart, so if the node is only cut off its tasks train on; the
/// restart says so (docs/preemption.md, "A partitioned node"). Not when a task was
/// elsewhere (the test above).
#[test]
fn a_restart_of_a_run_wholly_on_lost_nodes_warns_of_a_partition() {
    let env = Env::new();
    spawn_run(&env, "wl", &["-w", "2", "--node-lost-after", "10s"]);
    running(&env, "wl-worker-0");
    running(&env, "wl-worker-1");
    let mut child = start(
        &env,
        &[
            "wait",
            "-t",
            "wl",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_watches(&env, 1);
    lost(&env, "wl-worker-0", false);
    lost(&env, "wl-worker-1", true);
    await_attempt(&env, "wl", &["wl-worker-0", "wl-worker-1"], "1", &mut child);
    running(&env, "wl-worker-0");
    running(&env, "wl-worker-1");
    exited(&env, "wl-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run wl: force-deleting wl-worker-0, wl-worker-1 (its node stopped reporting")
        .stderr_has("note: run wl: every task of attempt 0 was on a node that stopped reporting; if it is cut off rather than dead, they may train on and write to the run's volume");
}

/// A live `wait` without restarts that hears the victim first (the kubelet reported its
/// exit before the peer's): it holds the verdict for the peer it names, and names the
/// peer once it ends, with the peer's last lines.
#[test]
fn a_live_wait_that_sees_the_victim_first_names_the_peer() {
    let env = Env::new();
    spawn_run(&env, "lv", &["-w", "2"]);
    running(&env, "lv-worker-0");
    running(&env, "lv-worker-1");
    let child = start(&env, &["wait", "-t", "lv"]);
    await_watches(&env, 1);
    ended(&env, "lv-worker-0", 1, 33, VICTIM_LOG);
    await_watches(&env, 2);
    ended(&env, "lv-worker-1", 1, 33, RAISED_LOG);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("run lv: worker-0 failed because of a peer (TensorFlow says so); waiting up to 15s for worker-1 to end or be named lost")
        .stderr_has("error: run 'lv' failed: pod lv-worker-1 (worker-1) failed: exit code 1, reason Error\n")
        .stderr_has("worker-1 | RequestedFailure: worker-1: failing after epoch 2");
}
