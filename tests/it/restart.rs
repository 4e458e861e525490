//! `wait --restarts` (docs/reference.md, "Restarts"): a run that fails for a reason
//! worth retrying is restarted from its pods, whole or (parameter servers) the lost
//! workers alone, through the ledger. The test drives pod states on the test server
//! while the binary waits, and checks what the server stores and what the user saw.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube_testserver::Fault;
use serde_json::Value;

use crate::follow::{exited, finish, running, start};
use crate::support::{Env, Output, await_attempt, env_var, name, run_pods};

const NS: &str = "default";

fn run_all(env: &Env, names: &[&str]) {
    for n in names {
        running(env, n);
    }
}

/// The ports of the addresses in the run's ConfigMap (the `cluster` of every pod's
/// `TF_CONFIG` from its next start).
fn cluster_ports(env: &Env, tag: &str) -> Vec<u16> {
    let cm = env
        .server
        .get("configmaps", NS, &format!("{tag}-script"))
        .unwrap();
    let cluster: BTreeMap<String, Vec<String>> =
        serde_json::from_str(cm["data"]["tf-cluster.json"].as_str().unwrap()).unwrap();
    let port = |a: &String| a.rsplit_once(':').unwrap().1.parse().unwrap();
    cluster.values().flatten().map(port).collect()
}

/// The `tf-grpc` port of the pod's TF container (its last).
fn grpc_port(env: &Env, pod: &str) -> u64 {
    let pod = env.server.get("pods", NS, pod).unwrap();
    let containers = pod["spec"]["containers"].as_array().unwrap();
    let ports = containers.last().unwrap()["ports"].as_array().unwrap();
    let grpc = ports.iter().find(|p| p["name"] == "tf-grpc").unwrap();
    grpc["containerPort"].as_u64().unwrap()
}

fn restart_lines(out: &Output) -> Vec<&str> {
    out.stdout
        .lines()
        .filter(|l| l.contains(": restart "))
        .collect()
}

fn json(out: &Output) -> Value {
    out.success();
    serde_json::from_str(&out.stdout).expect("JSON")
}

#[test]
fn a_deleted_worker_restarts_the_run_which_then_succeeds() {
    let env = Env::new();
    env.spawn(&["-t", "rs", "-w", "2"]).success();
    let names = ["rs-worker-0", "rs-worker-1"];
    run_all(&env, &names);
    let before = run_pods(&env, "rs");
    let first_config = env.server.get("pods", NS, "rs-worker-1").unwrap();
    let mut child = start(
        &env,
        &["wait", "rs", "--restarts", "2", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "rs-worker-1");
    await_attempt(&env, "rs", &names, "1", &mut child);

    // Same names, new pods, the attempt in the label and the variable, and the same
    // TF_CONFIG; nothing the servers wrote in the old ones.
    let after = run_pods(&env, "rs");
    for n in names {
        assert_ne!(before[n].0, after[n].0, "{n} was re-created");
    }
    let pod = env.server.get("pods", NS, "rs-worker-1").unwrap();
    assert_eq!(env_var(&pod, "TF_SPAWNER_ATTEMPT").as_deref(), Some("1"));
    assert_eq!(
        env_var(&pod, "TF_CONFIG"),
        env_var(&first_config, "TF_CONFIG")
    );
    assert!(pod["spec"].get("nodeName").is_none(), "{pod}");
    // Every task re-created: the cluster moved to the next port, so that a task of the
    // replaced attempt left running (a node cut off) cannot reach the new ones.
    assert_eq!(cluster_ports(&env, "rs"), [2000, 2000]);
    for n in names {
        assert_eq!(grpc_port(&env, n), 2000, "{n}");
    }
    assert_ne!(
        pod["metadata"]["annotations"]["tf-spawner/invocation"],
        first_config["metadata"]["annotations"]["tf-spawner/invocation"]
    );

    run_all(&env, &names);
    exited(&env, "rs-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run rs: Succeeded");
    assert_eq!(
        restart_lines(&out),
        [
            "run rs: restart 1/2 in 0s: pod rs-worker-1 (worker-1) was deleted while it ran; re-creating its 2 pods (attempt 1)"
        ],
        "{out:#?}"
    );

    // status and list show the attempt.
    let status = json(&env.run(&["status", "rs", "-o", "json"]));
    assert_eq!(status["attempt"], 1, "{status}");
    assert!(
        status["pods"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["attempt"] == 1),
        "{status}"
    );
    // Which task the restart was for, as the restart line said it; the counts add up.
    assert_eq!(
        status["restarted_for"],
        "pod rs-worker-1 (worker-1) was deleted while it ran"
    );
    // Who restarted it: the wait, by its host and pid (`cluster/follower.rs::me`).
    let status = env.run(&["status", "rs"]);
    let line = status
        .stdout
        .lines()
        .find(|l| l.starts_with("attempt: 1 "))
        .unwrap_or_default();
    assert!(
        line.starts_with("attempt: 1 (pod rs-worker-1 (worker-1) was deleted while it ran; re-created by tf-spawner on ")
            && line.ends_with(": worker-0, worker-1)"),
        "{status:#?}"
    );
    let list = json(&env.run(&["list", "-o", "json"]));
    assert_eq!(list["runs"][0]["attempt"], 1, "{list}");
    env.run(&["list"])
        .success()
        .stdout_has("Succeeded (attempt 1)")
        .stdout_has("worker 0/2 running, 1 succeeded, 1 stopped by tf-spawner\n");
    out.stdout_has("stopped 1 pod still running after the verdict: rs-worker-1");
}

/// `spawn --wait --restarts`: the spawn follows the run to its verdict, restarting it.
#[test]
fn spawn_wait_with_restarts_follows_the_run_to_its_end() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "-t",
            "sw",
            "-w",
            "2",
            "--wait",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
            script.to_str().unwrap(),
        ],
    );
    let names = ["sw-worker-0", "sw-worker-1"];
    await_attempt(&env, "sw", &names, "0", &mut child);
    run_all(&env, &names);
    // Every pod runs: a plain --wait would have ended here.
    crate::follow::await_watches(&env, 1);
    exited(&env, "sw-worker-1", 137);
    await_attempt(&env, "sw", &names, "1", &mut child);
    run_all(&env, &names);
    exited(&env, "sw-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run sw: restart 1/1 in 0s: pod sw-worker-1 (worker-1) failed: exit code 137")
        .stdout_has("run sw: Succeeded");
    let local = env.spawn(&["--local", "--restarts", "1"]);
    assert_eq!(local.code, 2, "{local:#?}");
    local.stderr_has("--restarts applies to pods on a cluster; --local runs processes");
}

#[test]
fn a_run_that_keeps_failing_retryably_exits_3_after_its_restarts() {
    let env = Env::new();
    env.spawn(&["-t", "kf", "-w", "2"]).success();
    let names = ["kf-worker-0", "kf-worker-1"];
    let mut child = start(
        &env,
        &["wait", "kf", "--restarts", "2", "--restart-backoff", "0s"],
    );
    for attempt in ["0", "1", "2"] {
        await_attempt(&env, "kf", &names, attempt, &mut child);
        run_all(&env, &names);
        // SIGTERM from outside, every time.
        exited(&env, "kf-worker-1", 143);
    }
    let out = finish(child);
    crate::follow::failed_with_logs(&out, 3);
    assert_eq!(restart_lines(&out).len(), 2, "{out:#?}");
    out.stdout_has("run kf: restart 2/2 in 0s: pod kf-worker-1 (worker-1) failed: exit code 143, reason Error; re-creating its 2 pods (attempt 2)");
    assert!(
        out.stderr
            .contains("run kf: not restarted: its 2 restarts (--restarts) are used"),
        "{out:#?}"
    );
    assert!(
        out.stderr
            .contains("error: run 'kf' failed: pod kf-worker-1 (worker-1) failed: exit code 143"),
        "{out:#?}"
    );
    // The last attempt's pods: the failed one kept, the running one stopped (kept).
    let left = run_pods(&env, "kf");
    assert_eq!(left["kf-worker-1"].1, "2");
    let worker_0 = env.server.get("pods", NS, "kf-worker-0").unwrap();
    assert!(
        worker_0["metadata"]["annotations"]["tf-spawner/stopped"].is_string(),
        "worker-0 was stopped: {worker_0}"
    );
    // A second wait goes on counting: no restart is left.
    let again = env.run(&["wait", "kf", "--restarts", "2"]);
    assert_eq!(again.code, 3, "{again:#?}");
    assert!(restart_lines(&again).is_empty(), "{again:#?}");
}

#[test]
fn a_failure_not_worth_retrying_ends_the_run_at_once() {
    let env = Env::new();
    env.spawn(&["-t", "nr", "-w", "2"]).success();
    run_all(&env, &["nr-worker-0", "nr-worker-1"]);
    exited(&env, "nr-worker-1", 1);
    let before = run_pods(&env, "nr");
    let out = env.run(&["wait", "nr", "--restarts", "3"]);
    crate::follow::failed_with_logs(&out, 3);
    assert!(restart_lines(&out).is_empty(), "{out:#?}");
    // Which rule, and what would change it, in one line.
    out.stderr_has("run nr: not restarted: exit 1 is not in --restart-on (removed,exit:42,exit:137,exit:143; add exit:1 to retry it)");
    assert_eq!(run_pods(&env, "nr")["nr-worker-1"], before["nr-worker-1"]);
    // No pod was created again: one POST per pod, both by the spawn.
    let posts = env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .count();
    assert_eq!(posts, 2);
}

#[test]
fn a_parameter_server_runs_lost_worker_comes_back_alone() {
    let env = Env::new();
    env.spawn(&[
        "-t",
        "ps",
        "--strategy",
        "parameter-server",
        "--ps",
        "1",
        "-w",
        "2",
    ])
    .success();
    let names = ["ps-chief-0", "ps-ps-0", "ps-worker-0", "ps-worker-1"];
    run_all(&env, &names);
    let before = run_pods(&env, "ps");
    let mut child = start(
        &env,
        &["wait", "ps", "--restarts", "1", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "ps-worker-1");
    await_attempt(&env, "ps", &["ps-worker-1"], "1", &mut child);
    let after = run_pods(&env, "ps");
    for n in ["ps-chief-0", "ps-ps-0", "ps-worker-0"] {
        assert_eq!(after[n], before[n], "{n} was left as it was");
    }
    assert_ne!(after["ps-worker-1"].0, before["ps-worker-1"].0);
    // A worker re-created alone rejoins the tasks that run on: on their port.
    assert_eq!(cluster_ports(&env, "ps"), [1999; 4]);
    assert_eq!(grpc_port(&env, "ps-worker-1"), 1999);

    running(&env, "ps-worker-1");
    exited(&env, "ps-chief-0", 0);
    let out = finish(child);
    out.success().stdout_has("run ps: Succeeded");
    assert_eq!(
        restart_lines(&out),
        [
            "run ps: restart 1/1 in 0s: pod ps-worker-1 (worker-1) was deleted while it ran; re-creating worker-1 alone (attempt 1)"
        ],
        "{out:#?}"
    );
    let status = json(&env.run(&["status", "ps", "-o", "json"]));
    let attempts: Vec<(String, u64)> = status["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["attempt"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        attempts.contains(&("ps-chief-0".into(), 0)) && status["attempt"] == 1,
        "{status}"
    );
}

/// The run's ConfigMap refuses the move to the next port (a 500 on every PATCH after the
/// restart's record): the restart fails before any pod is created, said in one line, and
/// the run ends with the failure that called for it; the addresses stay as they were.
#[test]
fn a_restart_whose_port_move_is_refused_creates_nothing() {
    let env = Env::new();
    env.spawn(&["-t", "mp", "-w", "2"]).success();
    let names = ["mp-worker-0", "mp-worker-1"];
    run_all(&env, &names);
    env.server.add_fault(
        // The first is the wait taking the run (`cluster/follower.rs`), the second the
        // restart recorded, the third the move to the new port.
        Fault::on("PATCH", "/configmaps/mp-script")
            .nth(3)
            .always()
            .status(500),
    );
    let args = ["wait", "mp", "--restarts", "1", "--restart-backoff", "0s"];
    let mut child = start(&env, &[&args[..], &["--retries", "1"]].concat());
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "mp-worker-1");
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(began.elapsed() < Duration::from_secs(60), "no end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("run mp: restart 1 failed: moving the run's tasks to their new port")
        .stderr_has("error: run 'mp' failed: pod mp-worker-1 (worker-1) was deleted while it ran");
    assert!(
        run_pods(&env, "mp").is_empty(),
        "{:?}",
        run_pods(&env, "mp")
    );
    assert_eq!(cluster_ports(&env, "mp"), [1999, 1999]);
}

/// The restart's creates fail for good (a 500 on every pod create from the second
/// on): the pod it created is deleted again, the run ends with the failure that called
/// for the restart, and what is left is said.
#[test]
fn a_restart_whose_creates_fail_deletes_what_it_created() {
    let env = Env::new();
    env.spawn(&["-t", "cf", "-w", "3"]).success();
    let names = ["cf-worker-0", "cf-worker-1", "cf-worker-2"];
    run_all(&env, &names);
    env.server
        .add_fault(Fault::on("POST", "/pods").nth(2).always().status(500));
    let mut child = start(
        &env,
        &[
            "wait",
            "cf",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
            "--retries",
            "1",
        ],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "cf-worker-1");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "no end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = finish(child);
    crate::follow::failed_with_logs(&out, 3);
    out.stderr_has("run cf: restart 1 failed: creating pod/")
        .stderr_has("what it had created was deleted again: no pod cf-worker-0, cf-worker-1, cf-worker-2 now (the services and ConfigMap are kept)")
        .stderr_has("error: run 'cf' failed: pod cf-worker-1 (worker-1) was deleted while it ran");
    // One create landed (the first), and was deleted again; the others never did.
    let start = Instant::now();
    while !run_pods(&env, "cf").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            run_pods(&env, "cf")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let landed = env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods") && r.status == 201)
        .count();
    assert_eq!(landed, 4, "3 by the spawn, 1 by the restart");
    let names = env.names(NS);
    assert!(
        names.contains(&"configmap/cf-script".to_string())
            && names.contains(&"service/cf-worker-1".to_string()),
        "{names:?}"
    );
}

/// A create whose answer is lost is retried; the 409 that follows finds the pod the
/// restart made (its invocation annotation): the restart goes on, with one pod each.
#[test]
fn a_lost_answer_during_the_restart_creates_is_recovered() {
    let env = Env::new();
    env.spawn(&["-t", "la", "-w", "2"]).success();
    let names = ["la-worker-0", "la-worker-1"];
    run_all(&env, &names);
    env.server
        .add_fault(Fault::on("POST", "/pods").nth(1).times(1).drop_response());
    let mut child = start(
        &env,
        &["wait", "la", "--restarts", "1", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "la-worker-0");
    await_attempt(&env, "la", &names, "1", &mut child);
    run_all(&env, &names);
    exited(&env, "la-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run la: Succeeded");
    assert_eq!(run_pods(&env, "la").len(), 2);
}

/// Ctrl-C while a restart waits out its backoff: the run's pods are gone, none is
/// created again, and the message says so.
#[test]
fn ctrl_c_during_a_restart_says_what_is_left() {
    let env = Env::new();
    env.spawn(&["-t", "cc", "-w", "2"]).success();
    run_all(&env, &["cc-worker-0", "cc-worker-1"]);
    let child = start(
        &env,
        &["wait", "cc", "--restarts", "1", "--restart-backoff", "5m"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "cc-worker-1");
    let start = Instant::now();
    while !run_pods(&env, "cc").is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "not deleted");
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::follow::send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has("error: interrupted while restarting run 'cc' (attempt 1): its pods were deleted and none has been created again")
        .stderr_has("take the restart up again: tf-spawner wait -t cc --restarts 1");
    assert!(run_pods(&env, "cc").is_empty());

    // The restart was recorded in the run's ConfigMap before the deletes: the next
    // `wait --restarts` takes it up (no pod of the run is left to read it from), creates
    // attempt 1's pods and follows them to the verdict; the record is cleared.
    let cm = env.server.get("configmaps", NS, "cc-script").unwrap();
    assert_eq!(cm["metadata"]["annotations"]["tf-spawner/restarting"], "1");
    // `status` says a restart is pending and how to take it up (issue 49).
    env.run(&["status", "-t", "cc"])
        .success()
        .stdout_has("restart 1 is pending: a wait --restarts began it and stopped before it created the pods again (take it up: tf-spawner wait -t cc --restarts 1;");
    let status: Value =
        serde_json::from_str(&env.run(&["status", "-t", "cc", "-o", "json"]).stdout).unwrap();
    assert_eq!(status["pending_restart"], 1, "{status:#}");
    let mut child = crate::follow::start(&env, &["wait", "cc", "--restarts", "1"]);
    await_attempt(&env, "cc", &["cc-worker-0", "cc-worker-1"], "1", &mut child);
    // On the port the record chose: the next one, once.
    assert_eq!(cluster_ports(&env, "cc"), [2000, 2000]);
    assert_eq!(grpc_port(&env, "cc-worker-1"), 2000);
    // Cleared right after the creates.
    let start = Instant::now();
    loop {
        let cm = env.server.get("configmaps", NS, "cc-script").unwrap();
        let recorded = cm["binaryData"].get("restart.json.gz").is_some()
            || cm["metadata"]["annotations"]
                .get("tf-spawner/restarting")
                .is_some();
        if !recorded {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{cm}");
        std::thread::sleep(Duration::from_millis(20));
    }
    run_all(&env, &["cc-worker-0", "cc-worker-1"]);
    exited(&env, "cc-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run cc: Succeeded");
    assert_eq!(
        restart_lines(&out),
        [
            "run cc: restart 1/1 in 0s: taking up the restart that was stopped; re-creating cc-worker-0, cc-worker-1 (attempt 1)"
        ],
        "{out:#?}"
    );
}

/// Ctrl-C right after the `restart 1/1` line, before the restart deleted anything (its
/// record's write hangs): the message says no pod was deleted, and none was (issue 49;
/// main said "its pods were deleted").
#[test]
fn ctrl_c_before_a_restart_deletes_says_nothing_was_deleted() {
    let env = Env::new();
    env.spawn(&["-t", "cn", "-w", "2"]).success();
    run_all(&env, &["cn-worker-0", "cn-worker-1"]);
    // The restart's record: the second patch (the first is the wait taking the run).
    env.server.add_fault(
        Fault::on("PATCH", "/configmaps/cn-script")
            .nth(2)
            .hang(Duration::from_secs(30)),
    );
    let child = start(&env, &["wait", "cn", "--restarts", "1"]);
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "cn-worker-1");
    let start = Instant::now();
    while env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/configmaps/cn-script"))
        .count()
        < 2
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no record written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stdout_has("run cn: restart 1/1 in ").stderr_has(
        "interrupted while restarting run 'cn' (attempt 1): it had deleted none of its pods yet",
    );
    let left = run_pods(&env, "cn");
    assert!(left.get("cn-worker-0").is_some_and(|p| !p.2), "{left:?}");
}

/// Interrupted in its backoff, a restart leaves a run `-d` removes whole (its ConfigMap,
/// services and the record), and `wait --restarts 0` does not take it up.
#[test]
fn an_interrupted_restart_is_removed_whole_by_delete() {
    let env = Env::new();
    env.spawn(&["-t", "cd", "-w", "2"]).success();
    run_all(&env, &["cd-worker-0", "cd-worker-1"]);
    let child = start(
        &env,
        &["wait", "cd", "--restarts", "1", "--restart-backoff", "5m"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "cd-worker-1");
    let start = Instant::now();
    while !run_pods(&env, "cd").is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "not deleted");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    assert_eq!(finish(child).code, 130);
    env.run(&["wait", "cd", "--timeout", "2s"]).failure(1);
    assert!(
        run_pods(&env, "cd").is_empty(),
        "not taken up without --restarts"
    );
    env.run(&["-d", "-t", "cd", "-y"]).success();
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn restart_flags_are_checked_and_shown_by_config() {
    let env = Env::new();
    for (args, says) in [
        (
            vec!["wait", "x", "--restart-on", "exit:300"],
            "--restart-on \"exit:300\": \"exit:300\" needs an exit code from 1 to 255",
        ),
        (
            vec!["wait", "x", "--restart-on", "sometimes"],
            "is not one of them",
        ),
        (
            vec!["-t", "x", "--restarts", "2"],
            "--restarts acts while a run is followed: add --wait",
        ),
    ] {
        let out = if args[0] == "wait" {
            env.run(&args)
        } else {
            env.spawn(&args)
        };
        assert_eq!(out.code, 2, "{out:#?}");
        out.stderr_has(says);
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.list("configmaps", NS).is_empty());
    let file = env.defaults_file("restarts: 3\nrestart_on: exit:7\n");
    let out = json(&env.run(&["config", "-o", "json"]));
    assert_eq!(out["settings"]["restarts"]["value"], 3, "{out}");
    assert_eq!(out["settings"]["restarts"]["source"], "file");
    assert_eq!(
        out["settings"]["restart_on"]["value"],
        "removed,exit:7,exit:42,exit:137,exit:143"
    );
    std::fs::write(&file, "restart_on: exit:0\n").unwrap();
    let out = env.run(&["config"]);
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("key 'restart_on'");
}

/// A parameter-server run's worker re-created alone and lost again (before a node took
/// it: gone at once) is its second restart, not its first again: the count is of the
/// attempts made, not of the pods there.
#[test]
fn a_worker_lost_again_counts_as_the_next_restart() {
    let env = Env::new();
    env.spawn(&[
        "-t",
        "la2",
        "--strategy",
        "parameter-server",
        "--ps",
        "1",
        "-w",
        "1",
    ])
    .success();
    run_all(&env, &["la2-chief-0", "la2-ps-0", "la2-worker-0"]);
    let mut child = start(
        &env,
        &["wait", "la2", "--restarts", "2", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 1);
    for attempt in ["1", "2"] {
        env.server.delete_pod(NS, "la2-worker-0");
        await_attempt(&env, "la2", &["la2-worker-0"], attempt, &mut child);
    }
    // Never on a node: deleted, it is gone at once.
    env.server.delete_pod(NS, "la2-worker-0");
    let out = finish(child);
    crate::follow::failed_with_logs(&out, 3);
    assert_eq!(restart_lines(&out).len(), 2, "{out:#?}");
    out.stdout_has("(attempt 2)");
    assert!(
        out.stderr
            .contains("run la2: not restarted: its 2 restarts (--restarts) are used"),
        "{out:#?}"
    );
}

/// `--deadline` is the run's: a restart gives the new pods what is left of it, counted
/// from the first attempt's start, and a kill by the deadline is never retried.
#[test]
fn the_deadline_counts_once_across_restarts_and_its_kill_is_not_retried() {
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    let env = Env::new();
    env.spawn(&["-t", "dl", "-w", "2", "--deadline", "1h"])
        .success();
    let names = ["dl-worker-0", "dl-worker-1"];
    let started = Timestamp::now() - SignedDuration::from_mins(40);
    for n in names {
        env.server.bind_pod(NS, n, crate::follow::NODE);
        env.server.set_pod_status(
            NS,
            n,
            serde_json::json!({
                "phase": "Running", "startTime": started.to_string(),
                "containerStatuses": crate::follow::container(true, serde_json::json!({"running": {}}))
            }),
        );
    }
    let mut child = start(
        &env,
        &["wait", "dl", "--restarts", "3", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 1);
    env.server.delete_pod(NS, "dl-worker-1");
    await_attempt(&env, "dl", &names, "1", &mut child);
    for n in names {
        let pod = env.server.get("pods", NS, n).unwrap();
        let left = pod["spec"]["activeDeadlineSeconds"].as_i64().unwrap();
        // 20 minutes are left of the hour (less the seconds the test took).
        assert!((1140..=1200).contains(&left), "{n}: {left}");
        // The run's first start goes with it, for the run's time.
        let carried = pod["metadata"]["annotations"]["tf-spawner/run-started"].as_str();
        assert_eq!(carried, Some(started.to_string().as_str()), "{pod}");
    }
    run_all(&env, &names);
    env.server.bind_pod(NS, "dl-worker-0", crate::follow::NODE);
    env.server.set_pod_status(
        NS,
        "dl-worker-0",
        serde_json::json!({
            "phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": crate::follow::container(false, serde_json::json!({
                "terminated": {"exitCode": 143, "reason": "Error"}
            }))
        }),
    );
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    assert_eq!(restart_lines(&out).len(), 1, "{out:#?}");
    out.stderr_has(
        "run dl: not restarted: the run's --deadline ended it, and a deadline is never retried",
    )
    .stderr_has("the run's --deadline ended it");
}

/// Every attempt stays readable until `-d`: a restart keeps the replaced pods' logs
/// (`logs --attempt N`, `--save-logs`, `status`), and `-d` deletes them with the run.
#[test]
fn a_restart_keeps_the_replaced_attempts_logs_until_delete() {
    let env = Env::new();
    env.spawn(&["-t", "kl", "-w", "2"]).success();
    let names = ["kl-worker-0", "kl-worker-1"];
    run_all(&env, &names);
    env.server.append_log(NS, "kl-worker-0", "w0 epoch 1\n");
    env.server
        .append_log(NS, "kl-worker-1", "w1 epoch 1\nw1 killed\n");
    let mut child = start(
        &env,
        &[
            "wait",
            "kl",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
            "--save-logs",
            "out",
        ],
    );
    crate::follow::await_watches(&env, 1);
    exited(&env, "kl-worker-1", 137);
    await_attempt(&env, "kl", &names, "1", &mut child);
    run_all(&env, &names);
    env.server.append_log(NS, "kl-worker-1", "attempt 1 here\n");
    exited(&env, "kl-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run kl: Succeeded");

    // Kept in the run's objects, labelled with the run and the attempt.
    let kept: Vec<Value> = env
        .list("configmaps", NS)
        .into_iter()
        .filter(|c| name(c).ends_with("-log"))
        .collect();
    let kept_names: Vec<&str> = kept.iter().map(name).collect();
    assert_eq!(kept_names, ["kl-worker-0-a0-log", "kl-worker-1-a0-log"]);
    assert!(
        kept.iter()
            .all(|c| c["metadata"]["labels"]["training_attempt"] == "kl"
                && c["metadata"]["labels"]["tf-spawner/attempt"] == "0")
    );

    let old = env.run(&["logs", "kl", "--attempt", "0"]);
    old.success()
        .stdout_has("worker-0 | w0 epoch 1")
        .stdout_has("worker-1 | w1 killed")
        .stderr_has("run kl: attempt 0 ended: pod kl-worker-1 (worker-1) failed: exit code 137");
    assert!(!old.stdout.contains("attempt 1 here"), "{old:#?}");
    let tail = env.run(&[
        "logs",
        "kl",
        "--attempt",
        "0",
        "--task",
        "worker-1",
        "--tail",
        "1",
    ]);
    assert_eq!(tail.success().stdout.trim_end(), "worker-1 | w1 killed");
    let now = env.run(&["logs", "kl"]);
    now.success().stdout_has("worker-1 | attempt 1 here");
    assert!(!now.stdout.contains("w1 killed"), "{now:#?}");
    let beyond = env.run(&["logs", "kl", "--attempt", "2"]);
    assert_eq!(beyond.code, 2, "{beyond:#?}");
    beyond.stderr_has("--attempt 2: run 'kl' has had no attempt 2: its current one is 1");

    env.run(&["status", "kl"]).success().stdout_has(
        "attempt 0 ended: pod kl-worker-1 (worker-1) failed: exit code 137, reason Error (its log: tf-spawner logs -t kl --attempt 0)",
    );
    let status = json(&env.run(&["status", "kl", "-o", "json"]));
    assert_eq!(status["attempts"][0]["attempt"], 0, "{status}");

    let saved = |f: &str| std::fs::read_to_string(env.path(&format!("out/{f}"))).unwrap();
    assert_eq!(
        saved("kl-worker-1.attempt-0.log"),
        "w1 epoch 1\nw1 killed\n"
    );
    assert_eq!(saved("kl-worker-1.log"), "attempt 1 here\n");

    env.run(&["-d", "-t", "kl", "-y"]).success();
    assert!(
        env.list("configmaps", NS).is_empty(),
        "{:?}",
        env.list("configmaps", NS)
    );
}

/// `logs -f` follows a run across its restarts to the verdict, saying when an attempt
/// begins (the restart made by a `wait --restarts` in another process).
#[test]
fn logs_follow_goes_on_across_a_restart() {
    let env = Env::new();
    env.spawn(&["-t", "lf", "-w", "2"]).success();
    let names = ["lf-worker-0", "lf-worker-1"];
    run_all(&env, &names);
    env.server
        .append_log(NS, "lf-worker-1", "first attempt line\n");
    let mut logs = crate::watched::Watched::start(&env, &["logs", "-f", "lf"]);
    crate::follow::await_watches(&env, 1);
    let mut child = start(
        &env,
        &["wait", "lf", "--restarts", "1", "--restart-backoff", "0s"],
    );
    crate::follow::await_watches(&env, 2);
    exited(&env, "lf-worker-1", 137);
    await_attempt(&env, "lf", &names, "1", &mut child);
    run_all(&env, &names);
    env.server
        .append_log(NS, "lf-worker-1", "second attempt line\n");
    // `logs -f` follows the new attempt's pods while they run.
    logs.await_stdout("worker-1 | second attempt line");
    exited(&env, "lf-worker-1", 0);
    exited(&env, "lf-worker-0", 0);
    env.server.close_log(NS, "lf-worker-0");
    env.server.close_log(NS, "lf-worker-1");
    finish(child).success().stdout_has("run lf: Succeeded");
    let out = logs.finish();
    out.success()
        .stdout_has("worker-1 | first attempt line")
        .stdout_has("worker-1 | second attempt line")
        .stderr_has("run lf: attempt 1 begins");
}

/// Issue 50 item 4: a run whose pods all vanished before any `wait` followed it is
/// restarted from the pods its spawn recorded in its ConfigMap: the same pods (same
/// `TF_CONFIG`, same containers) as attempt 1, and the run then succeeds.
#[test]
fn pods_gone_before_any_wait_are_recreated_from_the_record() {
    let env = Env::new();
    env.spawn(&["-t", "rv", "-w", "2"]).success();
    let names = ["rv-worker-0", "rv-worker-1"];
    let first = env.server.get("pods", NS, "rv-worker-1").unwrap();
    for n in names {
        env.server.delete_pod(NS, n);
    }
    assert!(run_pods(&env, "rv").is_empty());
    let mut child = start(
        &env,
        &["wait", "rv", "--restarts", "1", "--restart-backoff", "0s"],
    );
    await_attempt(&env, "rv", &names, "1", &mut child);
    let pod = env.server.get("pods", NS, "rv-worker-1").unwrap();
    assert_eq!(env_var(&pod, "TF_SPAWNER_ATTEMPT").as_deref(), Some("1"));
    assert_eq!(env_var(&pod, "TF_CONFIG"), env_var(&first, "TF_CONFIG"));
    assert_eq!(pod["spec"]["volumes"], first["spec"]["volumes"]);
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        first["spec"]["containers"][0]["image"]
    );
    run_all(&env, &names);
    exited(&env, "rv-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run rv: Succeeded");
    assert_eq!(
        restart_lines(&out),
        [
            "run rv: restart 1/1 in 0s: every pod of the run was gone when this wait began; re-creating its 2 pods from its record (attempt 1)"
        ],
        "{out:#?}"
    );
    let status = json(&env.run(&["status", "rv", "-o", "json"]));
    assert_eq!(status["attempt"], 1, "{status}");
    assert_eq!(
        status["restarted_for"],
        "every pod of the run was gone when this wait began"
    );
}

/// A run with one of its two pods gone before the follow began: the verdict names it
/// gone, and the restart re-creates it from the record beside the other one's own pod.
#[test]
fn a_pod_gone_before_the_wait_is_recreated_beside_the_live_one() {
    let env = Env::new();
    env.spawn(&["-t", "rw", "-w", "2"]).success();
    let names = ["rw-worker-0", "rw-worker-1"];
    env.server.delete_pod(NS, "rw-worker-1");
    running(&env, "rw-worker-0");
    let mut child = start(
        &env,
        &["wait", "rw", "--restarts", "1", "--restart-backoff", "0s"],
    );
    await_attempt(&env, "rw", &names, "1", &mut child);
    run_all(&env, &names);
    exited(&env, "rw-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run rw: Succeeded");
    let lines = restart_lines(&out);
    assert_eq!(lines.len(), 1, "{out:#?}");
    assert!(
        lines[0].ends_with("re-creating its 2 pods (attempt 1)"),
        "{out:#?}"
    );
}
