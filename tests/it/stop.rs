//! The run ends for the cluster when it ends for the user (docs/shared-clusters.md):
//! once `wait` has the verdict, the pods that have not finished are stopped — their
//! `activeDeadlineSeconds` lowered to 1 and marked `tf-spawner/stopped`, so the kubelet
//! ends them and they stay, with their logs — so that a Kueue pod group stops holding its
//! quota (its finish rule, modelled by the test server: no pod of a
//! `retriable-in-group=false` group still active). The test server has no kubelet:
//! [`kubelet_enforces_deadlines`] does its part, as tests/pods sees a real one do it. A
//! pod no node has taken is deleted (it never started). `--keep-running` leaves them.

use std::time::{Duration, Instant};

use kube_testserver::Options;
use serde_json::{Value, json};

use crate::follow::{exited, running, waiting};
use crate::shared::kueue;
use crate::support::{Env, await_while_running, name};
use kube_testserver::RecordedRequest;

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

/// The names of the pods tf-spawner stopped: their deadline lowered to 1, annotated.
fn stopped(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = env
        .list("pods", NS)
        .iter()
        .filter(|p| {
            p["spec"]["activeDeadlineSeconds"] == 1
                && p["metadata"]["annotations"]["tf-spawner/stopped"].is_string()
        })
        .map(|p| name(p).to_string())
        .collect();
    names.sort();
    names
}

/// What a kubelet does with a pod past its `activeDeadlineSeconds` (pkg/kubelet's
/// active deadline handler; seen on v1.20 and v1.36 by tests/pods): SIGTERM, then the
/// pod `Failed` with reason `DeadlineExceeded`, its container terminated (143).
fn kubelet_enforces_deadlines(env: &Env) {
    for pod in stopped(env) {
        env.server.set_pod_status(
            NS,
            &pod,
            json!({"phase": "Failed", "reason": "DeadlineExceeded",
                "message": "Pod was active on the node longer than the specified deadline",
                "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 0,
                    "image": "i", "imageID": "", "started": false,
                    "state": {"terminated": {"exitCode": 143, "reason": "Error",
                        "startedAt": "2024-01-01T00:00:00Z", "finishedAt": "2099-01-01T00:00:00Z"}}}]}),
        );
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

    env.server
        .append_log(NS, "fw-worker-0", "epoch 1 of worker 0\n");
    let out = env.run(&["wait", "-t", "fw"]);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has(
        "stopped 2 pods still running after the verdict: fw-worker-0, fw-worker-2 (kept with their logs until -d; --keep-running leaves them running)",
    );
    // Kept, not deleted: the kubelet ends them by their deadline.
    assert_eq!(stopped(&env), ["fw-worker-0", "fw-worker-2"]);
    assert!(
        pods(&env).iter().all(|(_, _, deleting)| !deleting),
        "{:?}",
        pods(&env)
    );
    assert!(!env.server.kueue_group_finished(NS, &group));
    kubelet_enforces_deadlines(&env);
    assert!(
        env.server.kueue_group_finished(NS, &group),
        "{:?}",
        pods(&env)
    );
    // Their lines stay readable, and every command tells the same story.
    env.run(&["logs", "fw"])
        .success()
        .stdout_has("worker-0 | epoch 1 of worker 0");
    let status = env.run(&["status", "fw"]);
    status
        .success()
        .stdout_has("worker-0: was stopped by tf-spawner after the verdict (its log is kept)")
        .stdout_has("verdict: Failed — pod fw-worker-1 (worker-1) failed: exit code 1");
    assert!(status.stdout.contains("Stopped"), "{status:#?}");
    assert!(!status.stdout.contains("DeadlineExceeded"), "{status:#?}");
    env.run(&["list"])
        .success()
        .stdout_has("worker 0/3 running, 1 failed, 2 stopped by tf-spawner");
    // The verdict is on the run's record.
    let cm = env.server.get("configmaps", NS, "fw-script").unwrap();
    assert_eq!(
        cm["metadata"]["annotations"]["tf-spawner/verdict"],
        "Failed: pod fw-worker-1 (worker-1) failed: exit code 1, reason Error"
    );
}

/// `--save-logs` waits for a stopped pod's last lines, which its SIGTERM handler prints
/// while it stops. A v1.20 kubelet says the pod `Failed` at once and its container
/// `running` for ever (tests/pods saw it): only the log, which the kubelet ends when the
/// container ends, says when. Before, the log was saved without the handler's line.
#[test]
fn save_logs_waits_for_a_stopped_pod_a_v1_20_kubelet_says_failed_until_its_log_ends() {
    let env = Env::new();
    env.spawn(&["-t", "old", "-w", "2"]).success();
    running(&env, "old-worker-0");
    running(&env, "old-worker-1");
    env.server
        .append_log(NS, "old-worker-0", "worker-0: waiting for my peer\n");
    exited(&env, "old-worker-1", 1);
    let mut wait = crate::follow::start(&env, &["wait", "-t", "old", "--save-logs", "out"]);
    await_while_running(&mut wait, "worker 0 stopped", || {
        let stopped = stopped(&env);
        (stopped == ["old-worker-0"])
            .then_some(())
            .ok_or(format!("{stopped:?}"))
    });
    env.server.set_pod_status(
        NS,
        "old-worker-0",
        json!({"phase": "Failed", "reason": "DeadlineExceeded",
            "containerStatuses": crate::follow::container(false, json!({"running": {}}))}),
    );
    // From the log's end (`wait`'s progress follows the log from its tail already).
    let follows = |r: &RecordedRequest| {
        r.path.ends_with("/pods/old-worker-0/log")
            && r.query.contains("follow=true")
            && r.query.contains("tailLines=0")
    };
    await_while_running(&mut wait, "worker 0's log followed", || {
        let n = env.count_requests(follows);
        (n > 0).then_some(()).ok_or(format!("{n} follows"))
    });
    // The handler prints, the container ends.
    env.server
        .append_log(NS, "old-worker-0", "worker-0: SIGTERM, leaving\n");
    env.server.close_log(NS, "old-worker-0");
    let out = crate::follow::finish(wait);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("saved 2 pod logs in out");
    assert_eq!(
        std::fs::read_to_string(env.path("out/old-worker-0.log")).unwrap(),
        "worker-0: waiting for my peer\nworker-0: SIGTERM, leaving\n"
    );
}

/// A pod no node has taken never started: it has no log and would hold its quota while
/// Pending (the kubelet's deadline counts from a start time it does not have), so it is
/// deleted, and the run's record says so.
#[test]
fn a_pod_no_node_has_taken_is_deleted_and_recorded_as_never_started() {
    let env = Env::new();
    env.spawn(&["-t", "ns", "-w", "3"]).success();
    running(&env, "ns-worker-0");
    exited(&env, "ns-worker-1", 2);
    let out = env.run(&["wait", "-t", "ns"]);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("stopped 1 pod still running after the verdict: ns-worker-0")
        .stdout_has("deleted 1 task that never started: worker-2 (no node had taken it: no log)");
    await_gone(&env);
    let status = env.run(&["status", "ns"]);
    status
        .success()
        .stdout_has("worker-2: never started (Pending: not scheduled yet); its pod (which no node had taken) was deleted by tf-spawner after the verdict")
        .stdout_has("verdict: Failed — pod ns-worker-1 (worker-1) failed: exit code 2");
    assert!(!status.stdout.contains("was deleted before"), "{status:#?}");
}

/// A pod on a node whose image cannot be pulled never started: `wait` stops it (kept; no
/// log promised) and records why on the run's ConfigMap, so `status` tells it the same
/// way before the kubelet ends the pod and after (when its container status reads a
/// `ContainerStatusUnknown` 137, which is no exit), and its verdict is wait's, not the
/// Pending that a pod back in `ErrImagePull` reads as (issue 35, items 3 and 5).
#[test]
fn a_pod_that_never_started_is_stopped_and_status_keeps_why_and_wait_s_verdict() {
    let env = Env::new();
    env.spawn(&["-t", "pull", "-w", "2", "--pull-grace", "0s"])
        .success();
    running(&env, "pull-worker-0");
    let back_off = "Back-off pulling image \"x:1\": ErrImagePull: failed to pull: no such host";
    waiting(&env, "pull-worker-1", "ImagePullBackOff", back_off);
    let out = env.run(&["wait", "-t", "pull"]);
    assert_eq!(out.code, 6, "{out:#?}");
    out.stdout_has("stopped 1 pod still running after the verdict: pull-worker-0 (kept with its log")
        .stdout_has("stopped 1 pod that never started: pull-worker-1 (no log; kept until -d: tf-spawner status -t pull says why)");
    let verdict = format!(
        "verdict: Failed — pod pull-worker-1 (worker-1) cannot start: ImagePullBackOff: {back_off} (its image cannot be pulled: check --image; a slow registry: --pull-grace)\n"
    );
    let line = format!(
        "worker-1: never started (ImagePullBackOff: {back_off}); stopped by tf-spawner after the verdict (no log)\n"
    );
    // The kubelet tries the pull again before it ends the pod: ErrImagePull, once.
    waiting(
        &env,
        "pull-worker-1",
        "ErrImagePull",
        "failed to pull: no such host",
    );
    for kubelet_ended_it in [false, true] {
        if kubelet_ended_it {
            crate::follow::deadline_ended(
                &env,
                "pull-worker-1",
                json!({"exitCode": 137, "reason": "ContainerStatusUnknown",
                    "message": "The container could not be located when the pod was terminated"}),
            );
        }
        let status = env.run(&["status", "pull"]);
        status.success().stdout_has(&line).stdout_has(&verdict);
        assert!(!status.stdout.contains("137"), "{status:#?}");
        assert!(
            !status.stdout.contains("worker-1: ErrImagePull"),
            "{status:#?}"
        );
        if kubelet_ended_it {
            status.stdout_has("Stopped (never started)");
        }
        env.run(&["list"]).success().stdout_has("pull   Failed ");
    }
    let json: Value =
        serde_json::from_str(&env.run(&["status", "pull", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["verdict"], "Failed");
    assert_eq!(json["pods"][1]["exit_code"], Value::Null);
    assert_eq!(
        json["pods"][1]["never_started"],
        format!("ImagePullBackOff: {back_off}")
    );
    assert_eq!(json["pods"][0]["never_started"], Value::Null);
    assert_eq!(
        json["why_not_started"],
        json!({"worker-1": format!("ImagePullBackOff: {back_off}")})
    );

    // The kubelet ends the stopped worker-0 too; a later `wait` tells the run's end as
    // the first did (exit 6, the pull), not "stopped by tf-spawner after the verdict"
    // (exit 3), and leaves the record as it was.
    crate::follow::deadline_ended(
        &env,
        "pull-worker-0",
        crate::follow::killed_after_the_stop(),
    );
    let record = |env: &Env| env.server.get("configmaps", NS, "pull-script").unwrap();
    let before = record(&env)["metadata"]["annotations"].clone();
    let again = env.run(&["wait", "-t", "pull"]);
    assert_eq!(again.code, 6, "{again:#?}");
    again.stderr_has(&format!(
        "run 'pull' failed: pod pull-worker-1 (worker-1) cannot start: ImagePullBackOff: {back_off}"
    ));
    assert!(
        !again.stderr.contains("stopped by tf-spawner"),
        "{again:#?}"
    );
    let after = record(&env)["metadata"]["annotations"].clone();
    for key in ["tf-spawner/verdict", "tf-spawner/not-started"] {
        assert_eq!(after[key], before[key], "{key}");
    }
    env.run(&["status", "pull"]).success().stdout_has(&verdict);
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
        .stdout_has("stopped 4 pods still running after the verdict: ps-ps-0, ps-ps-1, ps-worker-0, ps-worker-1")
        .stdout_has("run ps: Succeeded");
    kubelet_enforces_deadlines(&env);
    assert!(env.server.kueue_group_finished(NS, &group));
    // A Succeeded run's counts add up: nothing failed.
    env.run(&["status", "ps"])
        .success()
        .stdout_has("verdict: Succeeded\n");
    env.run(&["list"])
        .success()
        .stdout_has("ps 0/2 running, 2 stopped by tf-spawner")
        .stdout_has("worker 0/2 running, 2 stopped by tf-spawner");
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
    assert!(stopped(&env).is_empty(), "{:?}", pods(&env));
}

/// `keep_running: true` in the defaults file is `--keep-running` for every wait; the
/// flag needs a wait.
#[test]
fn the_defaults_file_keeps_them_and_the_flag_needs_a_wait() {
    let env = Env::new();
    let file = env.defaults_file("keep_running: true\n");
    env.spawn(&["-t", "dk", "-w", "2"]).success();
    running(&env, "dk-worker-1");
    exited(&env, "dk-worker-0", 0);
    let out = env.run(&["wait", "-t", "dk"]);
    out.success().stdout_has("run dk: Succeeded");
    assert!(!out.stdout.contains("stopped"), "{out:#?}");
    assert!(stopped(&env).is_empty(), "{:?}", pods(&env));
    env.run(&["config"])
        .success()
        .stdout_has("keep_running")
        .stdout_has("config file");
    std::fs::remove_file(&file).unwrap();
    env.run(&["wait", "-t", "dk"])
        .success()
        .stdout_has("stopped 1 pod still running after the verdict: dk-worker-1");
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

/// A run is known while any of it exists: its pods all gone (a bad image, deleted by
/// someone), its ConfigMap is its record, and a new spawn with the tag says what is left.
#[test]
fn a_run_whose_pods_are_all_gone_is_listed_and_its_tag_refusal_says_what_is_left() {
    let env = Env::new();
    env.spawn(&["-t", "bare", "-w", "2"]).success();
    exited(&env, "bare-worker-1", 1);
    running(&env, "bare-worker-0");
    assert_eq!(env.run(&["wait", "bare"]).code, 3);
    for pod in ["bare-worker-0", "bare-worker-1"] {
        env.server.delete_pod(NS, pod);
    }
    await_gone(&env);
    assert!(env.list("pods", NS).is_empty());
    let list = env.run(&["list"]);
    list.success().stdout_has("bare   Failed").stdout_has(
        "no pods left (its ConfigMap and services remain: tf-spawner -d -t bare removes them)",
    );
    let status = env.run(&["status", "bare"]);
    status
        .success()
        .stdout_has("no pods left; the run's ConfigMap remains, made ")
        .stdout_has(" for 2 tasks (worker-0, worker-1) (remove it with: tf-spawner -d -t bare)")
        .stdout_has("verdict: Failed — pod bare-worker-1 (worker-1) failed: exit code 1");
    let json: Value = serde_json::from_str(&env.run(&["list", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["runs"][0]["pods"], 0);
    assert_eq!(json["runs"][0]["verdict"], "Failed");
    let again = env.spawn(&["-t", "bare", "-w", "2"]);
    again
        .failure(7)
        .stderr_has("run 'bare' already exists in namespace 'default' (left of it: 2 services, 1 configmap, no pods; it ended Failed: pod bare-worker-1 (worker-1) failed: exit code 1")
        .stderr_has("see it with: tf-spawner status bare -n default; delete it (its logs too), and wait until its pods are gone so the tag is free, with: tf-spawner -d --wait -t bare -n default");
}
