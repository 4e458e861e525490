//! Why a follow waits (issue 51 item 4) and the heartbeat in a pipe (item 5): `wait`
//! and `logs -f` say the pending reasons `status` knows (the pod's own, or the newest
//! Event of a pod whose reason is routine) at once and when they change, never twice
//! while unchanged; `logs -f` on stderr, never among the tasks' lines. In a pipe, a
//! line after `--heartbeat` without one.

use std::time::{Duration, Instant};

use kube_testserver::Reporter;

use crate::follow::{
    await_watches, exited, finish, running, spawn_run, start, unschedulable, waiting,
};
use crate::support::Env;
use crate::watched::Watched;

const NS: &str = "default";

/// Blocks until the binary has listed the namespace's Events `n` times in all.
fn await_event_lists(env: &Env, n: usize) {
    let start = Instant::now();
    loop {
        let count = (env.server.requests().iter())
            .filter(|r| r.method == "GET" && r.path.ends_with("/events"))
            .count();
        if count >= n {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no events list after 60s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn wait_says_why_it_waits_at_once_and_when_the_reason_changes() {
    let env = Env::new();
    spawn_run(&env, "why", &["-w", "1"]);
    waiting(&env, "why-worker-0", "ContainerCreating", "");
    let mount = "MountVolume.SetUp failed for volume \"data\" : configmap \"data\" not found";
    assert!(env.server.record_pod_event(
        NS,
        "why-worker-0",
        Reporter::Kubelet,
        ("Warning", "FailedMount", mount),
        2
    ));
    let child = start(&env, &["wait", "-t", "why", "--timeout", "10s"]);
    await_watches(&env, 1);
    await_event_lists(&env, 1);
    let message = "0/1 nodes are available: 1 Insufficient cpu.";
    unschedulable(&env, "why-worker-0", message);
    let out = finish(child);
    assert_eq!(out.code, 4, "{out:#?}");
    // At once the pod's own reason, then (its Events read) the kubelet's.
    let routine = "waiting   worker-0: ContainerCreating\n";
    let first = format!("waiting   worker-0: FailedMount: {mount}\n");
    let second = format!("waiting   worker-0: Unschedulable: {message}\n");
    assert_eq!(out.stdout.matches(routine).count(), 1, "{out:#?}");
    assert!(
        out.stdout.find(routine) < out.stdout.find(&first),
        "{out:#?}"
    );
    assert_eq!(out.stdout.matches(&first).count(), 1, "{out:#?}");
    assert_eq!(out.stdout.matches(&second).count(), 1, "{out:#?}");
    assert!(
        out.stdout.find(&first) < out.stdout.find(&second),
        "{out:#?}"
    );
}

#[test]
fn logs_follow_says_why_on_stderr_and_beats_in_a_pipe() {
    let env = Env::new();
    spawn_run(&env, "lw", &["-w", "1"]);
    let message = "0/1 nodes are available: 1 Insufficient memory.";
    unschedulable(&env, "lw-worker-0", message);
    let mut child =
        crate::watched::Watched::start(&env, &["logs", "-f", "-t", "lw", "--heartbeat", "1s"]);
    // A heartbeat while the pod stays unchanged.
    child.await_stderr("note: still not started, nothing new for 1s");
    running(&env, "lw-worker-0");
    env.server.append_log(NS, "lw-worker-0", "epoch 1\n");
    exited(&env, "lw-worker-0", 0);
    env.server.close_log(NS, "lw-worker-0");
    let out = child.finish();
    out.success();
    let said = format!("note: not started yet: worker-0: Unschedulable: {message}\n");
    assert_eq!(out.stderr.matches(&said).count(), 1, "{out:#?}");
    assert!(
        out.stderr.contains(&format!(
            "note: still not started, nothing new for 1s: worker-0: Unschedulable: {message}\n"
        )),
        "{out:#?}"
    );
    // The task's own output is its lines alone.
    assert_eq!(out.stdout, "worker-0 | epoch 1\n", "{out:#?}");
}

#[test]
fn wait_beats_in_a_pipe_while_nothing_changes_and_not_with_0s() {
    let env = Env::new();
    spawn_run(&env, "hb", &["-w", "1"]);
    let message = "0/1 nodes are available: 1 Insufficient cpu.";
    unschedulable(&env, "hb-worker-0", message);
    // Without a beat first, then with one a second: once the second has beaten (the
    // first has waited longer since its first look), both are interrupted.
    let said = format!("waiting   worker-0: Unschedulable: {message}\n");
    let mut silent = Watched::start(&env, &["wait", "-t", "hb", "--heartbeat", "0s"]);
    silent.await_stdout(&said);
    let mut beating = Watched::start(&env, &["wait", "-t", "hb", "--heartbeat", "1s"]);
    let beat = format!(
        "still     Pending (worker-0: Unschedulable: {message}); nothing new for 1s; the API server last answered "
    );
    beating.await_stdout(&beat);
    let [beating, silent] = [beating, silent].map(|mut w| {
        crate::follow::send(w.child(), "-INT");
        w.finish()
    });
    assert_eq!(beating.code, 130, "{beating:#?}");
    // The reason itself was said once.
    assert_eq!(beating.stdout.matches(&said).count(), 1, "{beating:#?}");
    assert_eq!(silent.code, 130, "{silent:#?}");
    assert!(!silent.stdout.contains("still "), "{silent:#?}");
}

/// A node with `cpu` and `memory` allocatable, and a pod of another namespace on it that
/// asks for `used` CPUs.
fn busy_node(env: &Env, cpu: &str, memory: &str, used: &str) {
    let room = serde_json::json!({ "cpu": cpu, "memory": memory, "pods": "110" });
    env.server.insert(
        "nodes",
        "",
        serde_json::json!({ "metadata": { "name": "busy" }, "status": { "capacity": room, "allocatable": room } }),
    );
    env.server.create_namespace("other");
    env.server.insert(
        "pods",
        "other",
        serde_json::json!({
            "metadata": { "name": "hog" },
            "spec": { "nodeName": "busy", "containers": [{ "name": "c", "image": "x",
                "resources": { "requests": { "cpu": used, "memory": "1Gi" } } }] },
            "status": { "phase": "Running" },
        }),
    );
}

#[test]
fn spawn_warns_when_no_node_has_room_now_and_says_nothing_when_it_may_not_look() {
    let env = Env::with(kube_testserver::Options {
        users: vec![kube_testserver::User::namespaced("team", NS)],
        ..kube_testserver::Options::default()
    });
    // The built-in template asks 1 CPU and 1Gi; 1500m of the node's 2 CPUs are taken.
    busy_node(&env, "2", "8Gi", "1500m");
    let out = env.spawn(&["-t", "full", "-w", "2"]);
    out.success().stderr_has(
        "warning: no node has room for one of the worker pods now (too little cpu left by what already runs; each asks for cpu 1, memory 1Gi); the most is on busy, cpu 500m, memory 7Gi free: they stay Pending until pods there end; ask for less (--cpu, --memory) or wait for room",
    );
    // Half a CPU fits: no warning.
    let out = env.spawn(&["-t", "half", "-w", "1", "--cpu", "500m"]);
    assert!(!out.success().stderr.contains("warning"), "{out:#?}");
    // Credentials that may not list nodes nor every namespace's pods: nothing said.
    let kubeconfig = env
        .server
        .write_kubeconfig(env.dir.path(), "team", Some(NS));
    let script = env.script();
    let out = env.run_as(
        &kubeconfig,
        &["-t", "team", "-w", "1", script.to_str().unwrap()],
    );
    assert_eq!(out.success().stderr, "", "{out:#?}");
}
