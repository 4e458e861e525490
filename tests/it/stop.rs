//! The run ends for the cluster when it ends for the user (docs/shared-clusters.md):
//! once `wait` has the verdict, the pods that have not finished are stopped (deleted),
//! the finished ones kept with their logs, so that a Kueue pod group stops holding its
//! quota (its finish rule, modelled by the test server: no pod of a
//! `retriable-in-group=false` group still active). `--keep-running` leaves them.

use std::time::{Duration, Instant};

use kube_testserver::Options;
use serde_json::Value;

use crate::follow::{exited, running};
use crate::shared::kueue;
use crate::support::{Env, name};

const NS: &str = "default";

fn group_of(env: &Env) -> String {
    let pod = &env.list("pods", NS)[0];
    pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Kueue admits the group: the gates go, every pod runs.
fn admit_and_run(env: &Env) {
    for pod in env.list("pods", NS) {
        env.server.remove_scheduling_gates(NS, name(&pod));
        running(env, name(&pod));
    }
}

/// `(name, phase, being deleted)` of every pod left, by name.
fn pods(env: &Env) -> Vec<(String, String, bool)> {
    let mut pods: Vec<_> = env
        .list("pods", NS)
        .iter()
        .map(|p: &Value| {
            (
                name(p).to_string(),
                p["status"]["phase"].as_str().unwrap_or("").to_string(),
                p["metadata"].get("deletionTimestamp").is_some(),
            )
        })
        .collect();
    pods.sort();
    pods
}

/// The pods being deleted are gone after their grace period, as the kubelet ends them.
fn await_gone(env: &Env) {
    let start = Instant::now();
    while pods(env).iter().any(|(_, _, deleting)| *deleting) {
        assert!(start.elapsed() < Duration::from_secs(20), "{:?}", pods(env));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_failed_worker_stops_its_hung_peers_and_kueue_frees_the_quota() {
    let env = kueue(Options::default());
    env.spawn(&["-t", "fw", "-w", "3", "--queue", "team-gpu"])
        .success();
    let group = group_of(&env);
    admit_and_run(&env);
    // Worker 1 fails; workers 0 and 2 hang in their all-reduce, running.
    exited(&env, "fw-worker-1", 1);
    assert!(
        !env.server.kueue_group_finished(NS, &group),
        "two still run"
    );

    let out = env.run(&["wait", "-t", "fw"]);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has(
        "stopped 2 unfinished pods of run fw (--keep-running keeps them): fw-worker-0, fw-worker-2",
    );
    assert_eq!(
        pods(&env),
        [
            ("fw-worker-0".into(), "Running".into(), true),
            ("fw-worker-1".into(), "Failed".into(), false),
            ("fw-worker-2".into(), "Running".into(), true),
        ]
    );
    await_gone(&env);
    assert!(
        env.server.kueue_group_finished(NS, &group),
        "{:?}",
        pods(&env)
    );
    // The failed pod stays, with its log; the run's other objects too.
    assert!(
        env.names(NS).contains(&"configmap/fw-script".to_string()),
        "{:?}",
        env.names(NS)
    );
}

/// Parameter-server strategy: the chief succeeds, the parameter servers and workers
/// would serve for ever; the group would never reach its total of succeeded pods.
#[test]
fn after_the_chief_succeeds_the_parameter_servers_and_workers_are_stopped() {
    let env = kueue(Options::default());
    env.spawn(&[
        "-t",
        "ps",
        "--strategy",
        "parameter-server",
        "--ps",
        "2",
        "-w",
        "2",
        "--queue",
        "team-gpu",
    ])
    .success();
    let group = group_of(&env);
    admit_and_run(&env);
    exited(&env, "ps-chief-0", 0);
    assert!(!env.server.kueue_group_finished(NS, &group));

    let out = env.run(&["wait", "-t", "ps"]);
    out.success()
        .stdout_has("stopped 4 unfinished pods of run ps (--keep-running keeps them): ps-ps-0, ps-ps-1, ps-worker-0, ps-worker-1")
        .stdout_has("run ps: Succeeded");
    await_gone(&env);
    assert_eq!(
        pods(&env),
        [("ps-chief-0".into(), "Succeeded".into(), false)]
    );
    assert!(env.server.kueue_group_finished(NS, &group));
}

#[test]
fn keep_running_leaves_them_and_the_quota_stays_taken() {
    let env = kueue(Options::default());
    env.spawn(&["-t", "kr", "-w", "2", "--queue", "team-gpu"])
        .success();
    let group = group_of(&env);
    admit_and_run(&env);
    exited(&env, "kr-worker-1", 1);
    let out = env.run(&["wait", "-t", "kr", "--keep-running"]);
    assert_eq!(out.code, 3, "{out:#?}");
    assert!(!out.stdout.contains("stopped"), "{out:#?}");
    assert_eq!(
        pods(&env),
        [
            ("kr-worker-0".into(), "Running".into(), false),
            ("kr-worker-1".into(), "Failed".into(), false),
        ]
    );
    assert!(!env.server.kueue_group_finished(NS, &group));
}

/// A time-out is not a verdict: the run goes on, nothing is stopped.
#[test]
fn a_timeout_stops_nothing() {
    let env = Env::new();
    env.spawn(&["-t", "to", "-w", "2"]).success();
    running(&env, "to-worker-0");
    running(&env, "to-worker-1");
    let out = env.run(&["wait", "-t", "to", "--timeout", "1s"]);
    assert_eq!(out.code, 4, "{out:#?}");
    assert!(
        pods(&env).iter().all(|(_, _, deleting)| !deleting),
        "{:?}",
        pods(&env)
    );
}

/// `keep_running: true` in the defaults file is `--keep-running` for every wait; the
/// flag needs a wait.
#[test]
fn the_defaults_file_keeps_them_and_the_flag_needs_a_wait() {
    let env = Env::new();
    let dir = env.path(".config/tf-spawner");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "keep_running: true\n").unwrap();
    env.spawn(&["-t", "dk", "-w", "2"]).success();
    running(&env, "dk-worker-1");
    exited(&env, "dk-worker-0", 0);
    let out = env.run(&["wait", "-t", "dk"]);
    out.success().stdout_has("run dk: Succeeded");
    assert!(!out.stdout.contains("stopped"), "{out:#?}");
    assert!(
        pods(&env).iter().all(|(_, _, deleting)| !deleting),
        "{:?}",
        pods(&env)
    );
    env.run(&["config"])
        .success()
        .stdout_has("keep_running")
        .stdout_has("config file");
    std::fs::remove_file(dir.join("config.yaml")).unwrap();
    env.run(&["wait", "-t", "dk"])
        .success()
        .stdout_has("stopped 1 unfinished pod of run dk (--keep-running keeps them): dk-worker-1");
    // clap's own usage error, as for --timeout without --wait.
    let out = env.spawn(&["-t", "nw", "-w", "1", "--keep-running"]);
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("--wait");
    assert!(
        env.list("pods", "default")
            .iter()
            .all(|p| !name(p).starts_with("nw-"))
    );
}
