//! Following a run: `wait` (progress, stuck reasons, fail-fast, verdicts, exit codes,
//! --save-logs, --cleanup), `spawn --wait`, `status`. The test drives pod states on the
//! test server while the binary waits; it synchronises on the binary's watch request,
//! never on time.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{BINARY_BOUND, Env, Output, Watchdog};

const NS: &str = "default";

/// Spawns run `tag` with `args` (e.g. `-w 2`), and checks it was created.
pub fn spawn_run(env: &Env, tag: &str, args: &[&str]) {
    let mut all = vec!["-t", tag];
    all.extend_from_slice(args);
    env.spawn(&all).success();
}

/// A container status of the TF container.
pub fn container(ready: bool, state: Value) -> Value {
    json!([{
        "name": "tensorflow", "ready": ready, "restartCount": 0,
        "image": "tf", "imageID": "", "state": state
    }])
}

/// The node the scheduler puts pods on. Only a bound pod has a kubelet that serves its
/// log; a real server answers 204 and no body for any other.
pub const NODE: &str = "node-1";

/// Blocks until `pod` exists (60 s at most): the helpers below play its kubelet, and a
/// status set on a pod not yet created would be dropped (the test server ignores it),
/// leaving the run waiting on a pod that never ends.
pub fn await_pod_exists(env: &Env, pod: &str) {
    let start = Instant::now();
    while env.server.get("pods", NS, pod).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "pod {pod} was not created within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn running(env: &Env, pod: &str) {
    await_pod_exists(env, pod);
    env.server.bind_pod(NS, pod, NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Running", "containerStatuses": container(true, json!({"running": {}}))}),
    );
}

/// Sends `signal` (`-INT`, `-TERM`) to `child`, as a terminal's Ctrl-C or a CI job's
/// cancel does.
pub fn send(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Ends a pod tf-spawner stopped as the kubelet does at its lowered deadline: Failed,
/// `DeadlineExceeded`, its TF container `terminated` (a container status's `state`).
pub fn deadline_ended(env: &Env, pod: &str, terminated: Value) {
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 0,
                "image": "x:1", "imageID": "", "started": false,
                "state": {"terminated": terminated}}]}),
    );
}

/// A container's end just after tf-spawner's stop (exit 137): the stop, not the task,
/// ended it.
pub fn killed_after_the_stop() -> Value {
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    let ended = (Timestamp::now() + SignedDuration::from_secs(1)).to_string();
    json!({"exitCode": 137, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": ended})
}

pub fn exited(env: &Env, pod: &str, code: i32) {
    let (phase, reason) = if code == 0 {
        ("Succeeded", "Completed")
    } else {
        ("Failed", "Error")
    };
    await_pod_exists(env, pod);
    env.server.bind_pod(NS, pod, NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": phase, "containerStatuses": container(false, json!({
            "terminated": {"exitCode": code, "reason": reason}
        }))}),
    );
}

pub fn waiting(env: &Env, pod: &str, reason: &str, message: &str) {
    await_pod_exists(env, pod);
    env.server.bind_pod(NS, pod, NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Pending", "containerStatuses": container(false, json!({
            "waiting": {"reason": reason, "message": message}
        }))}),
    );
}

pub fn unschedulable(env: &Env, pod: &str, message: &str) {
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message
        }]}),
    );
}

/// Starts the binary in the background.
pub fn start(env: &Env, args: &[&str]) -> Child {
    env.cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tf-spawner")
}

pub fn finish(child: Child) -> Output {
    let dog = Watchdog::arm(child.id(), BINARY_BOUND);
    let out = child.wait_with_output().expect("tf-spawner ends");
    let out = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !dog.disarm(),
        "tf-spawner still ran after {} s (killed): {out:#?}",
        BINARY_BOUND.as_secs()
    );
    out
}

/// The pod watches the binary has opened for run `tag`.
pub fn run_watches(env: &Env, tag: &str) -> usize {
    let selector = format!("training_attempt={tag},");
    env.server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods") && r.param("watch").as_deref() == Some("true"))
        .filter(|r| {
            r.param("labelSelector")
                .is_some_and(|s| s.starts_with(&selector))
        })
        .count()
}

/// Blocks until the binary has opened `n` pod watches for run `tag` (so it follows the
/// run past its list). A run whose follow decides at its list (its pods had ended)
/// opens none: a sweep's earlier runs are not counted on. A safety net of 60 s.
pub fn await_run_watches(env: &Env, tag: &str, n: usize) {
    let start = Instant::now();
    while run_watches(env, tag) < n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pod watch of run {tag} after 60s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Blocks until the binary has opened `n` pod watches in all (so it has seen the state
/// set before). A safety net of 60 s turns a hang into a failure.
pub fn await_watches(env: &Env, n: usize) {
    let start = Instant::now();
    loop {
        let count = env
            .server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/pods") && r.param("watch").as_deref() == Some("true"))
            .count();
        if count >= n {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pod watch after 60s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until a pod watch of run `tag` (its wait following it) was asked for: its
/// spawn has returned, so a Ctrl-C from now on leaves the run whole (one sent while the
/// spawn still runs rolls the run back).
pub fn await_followed(env: &Env, tag: &str) {
    // Its pods, not the helper pods of `cp` and `tensorboard`.
    let selector = format!("training_attempt={tag},!tf-spawner/helper");
    let start = Instant::now();
    while !env.server.requests().iter().any(|r| {
        r.path.ends_with("/pods")
            && r.param("watch").as_deref() == Some("true")
            && r.param("labelSelector").as_deref() == Some(&selector)
    }) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pod watch of run {tag} after 60s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A failure whose stderr may carry log lines before the one `error:` line, which is last.
#[track_caller]
pub fn failed_with_logs(out: &Output, code: i32) {
    assert_eq!(out.code, code, "expected exit {code}, got {out:#?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("error: "), "{out:#?}");
    assert_eq!(out.stderr.matches("error: ").count(), 1, "{out:#?}");
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
}

fn status_json(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["status", "-o", "json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    out.success();
    serde_json::from_str(&out.stdout).expect("status -o json is JSON")
}

#[test]
fn wait_shows_progress_and_stuck_reasons_until_success() {
    let env = Env::new();
    spawn_run(&env, "prog", &["-w", "2"]);
    waiting(&env, "prog-worker-0", "ContainerCreating", "");
    unschedulable(
        &env,
        "prog-worker-1",
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
    );
    let child = start(&env, &["wait", "-t", "prog"]);
    await_watches(&env, 1);
    running(&env, "prog-worker-0");
    running(&env, "prog-worker-1");
    exited(&env, "prog-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("worker    0/2 running, 2 pending — worker-1: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
        .stdout_has("run prog: Succeeded");
    // Plain lines (not a terminal): no escape codes, one line per change.
    assert!(!out.stdout.contains('\x1b'), "{out:#?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let mut deduped = lines.clone();
    deduped.dedup();
    assert_eq!(lines, deduped, "a line is printed only when it changes");
    // One list and one watch, however many updates (and, worker 1 still running at the
    // verdict, one list of the pods to stop).
    let pod_requests = env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/pods"))
        .count();
    assert!(pod_requests <= 4, "{pod_requests} pod requests");
}

#[test]
fn spawn_wait_returns_once_every_pod_runs() {
    let env = Env::new();
    let child = {
        let script = env.script();
        start(
            &env,
            &["-t", "sw", "-w", "2", "--wait", script.to_str().unwrap()],
        )
    };
    await_watches(&env, 1);
    running(&env, "sw-worker-0");
    running(&env, "sw-worker-1");
    let out = finish(child);
    out.success()
        .stdout_has("run sw created")
        .stdout_has("worker    2/2 running")
        .stdout_has("run sw: all 2 pods started");
    // The wait is under way: no `next:` commands.
    assert!(!out.stdout.contains("next:"), "{out:#?}");
}

#[test]
fn each_stuck_reason_is_reported() {
    let env = Env::new();
    spawn_run(&env, "stuck", &["-w", "5"]);
    unschedulable(
        &env,
        "stuck-worker-0",
        "0/3 nodes are available: 3 Insufficient cpu.",
    );
    waiting(&env, "stuck-worker-1", "ContainerCreating", "");
    waiting(
        &env,
        "stuck-worker-2",
        "CrashLoopBackOff",
        "back-off 5m0s restarting failed container",
    );
    waiting(
        &env,
        "stuck-worker-3",
        "CreateContainerError",
        "context deadline exceeded",
    );
    waiting(
        &env,
        "stuck-worker-4",
        "ErrImagePull",
        "rpc error: not found",
    );
    let out = env.run(&["status", "-t", "stuck"]);
    out.success()
        .stdout_has("Pending (Unschedulable)")
        .stdout_has("worker-0: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.")
        .stdout_has("Pending (ContainerCreating)")
        .stdout_has("worker-2: CrashLoopBackOff: back-off 5m0s restarting failed container")
        .stdout_has("worker-3: CreateContainerError: context deadline exceeded")
        .stdout_has("worker-4: ErrImagePull: rpc error: not found")
        .stdout_has("verdict: Pending");
    // A reason that may fix itself keeps wait waiting, and the timeout names it.
    let out = env.run(&["wait", "-t", "stuck", "--for", "start", "--timeout", "1s"]);
    out.failure(4)
        .stderr_has("timed out after 1s waiting for run 'stuck' to start (verdict so far: Pending; worker-0: Unschedulable");
}

#[test]
fn an_image_that_cannot_be_pulled_fails_fast() {
    let env = Env::new();
    spawn_run(&env, "pull", &["-w", "2", "--pull-grace", "0s"]);
    running(&env, "pull-worker-0");
    waiting(
        &env,
        "pull-worker-1",
        "ImagePullBackOff",
        "Back-off pulling image \"nope:1\"",
    );
    let out = env.run(&["wait", "-t", "pull"]);
    out.failure(6).stderr_has(
        "run 'pull' failed: pod pull-worker-1 (worker-1) cannot start: ImagePullBackOff: Back-off pulling image \"nope:1\" (its image cannot be pulled: check --image; a slow registry: --pull-grace)",
    );

    // ErrImagePull: the second sighting is final.
    let env = Env::new();
    spawn_run(&env, "pull2", &["-w", "1", "--pull-grace", "0s"]);
    waiting(&env, "pull2-worker-0", "ErrImagePull", "pull access denied");
    let child = start(&env, &["wait", "-t", "pull2"]);
    await_watches(&env, 1);
    waiting(
        &env,
        "pull2-worker-0",
        "ErrImagePull",
        "pull access denied, again",
    );
    let out = finish(child);
    out.failure(6)
        .stderr_has("cannot start: ErrImagePull: pull access denied, again");
}

/// Issue 50 item 6: a pull error within the run's grace (`--pull-grace`, built in 5m,
/// from each pod's creation) is no verdict: a slow registry or a hiccup passes; the
/// spawn records a grace it was given on every pod, for every later verb.
#[test]
fn a_pull_error_within_the_grace_is_no_verdict() {
    let env = Env::new();
    spawn_run(&env, "slow", &["-w", "1"]);
    let pod = env.server.get("pods", NS, "slow-worker-0").unwrap();
    assert!(
        pod["metadata"]["annotations"]
            .get("tf-spawner/pull-grace")
            .is_none(),
        "the built-in grace is not written: {pod:#}"
    );
    waiting(
        &env,
        "slow-worker-0",
        "ImagePullBackOff",
        "Back-off pulling image \"big:1\"",
    );
    let out = env.run(&["wait", "-t", "slow", "--timeout", "2s"]);
    out.failure(4).stderr_has("verdict so far: Pending");
    env.run(&["status", "slow"])
        .success()
        .stdout_has("verdict: Pending");
    // A grace of the run's own, in minutes, is on its pods; past it, the verdict.
    spawn_run(&env, "late", &["-w", "1", "--pull-grace", "10m"]);
    let pod = env.server.get("pods", NS, "late-worker-0").unwrap();
    assert_eq!(
        pod["metadata"]["annotations"]["tf-spawner/pull-grace"],
        "600"
    );
    spawn_run(&env, "now", &["-w", "1", "--pull-grace", "0s"]);
    waiting(
        &env,
        "now-worker-0",
        "ImagePullBackOff",
        "Back-off pulling image \"nope:1\"",
    );
    env.run(&["wait", "-t", "now"])
        .failure(6)
        .stderr_has("cannot start: ImagePullBackOff: Back-off pulling image \"nope:1\" (its image cannot be pulled: check --image;");
}

#[test]
fn a_missing_secret_fails_spawn_wait() {
    let env = Env::new();
    let script = env.script();
    let child = start(
        &env,
        &["-t", "cfg", "-w", "1", "--wait", script.to_str().unwrap()],
    );
    await_watches(&env, 1);
    waiting(
        &env,
        "cfg-worker-0",
        "CreateContainerConfigError",
        "secret \"creds\" not found",
    );
    let out = finish(child);
    out.failure(6)
        .stderr_has("cannot start: CreateContainerConfigError: secret \"creds\" not found");
}

#[test]
fn worker_zero_decides_and_the_exit_code_says_so() {
    let env = Env::new();
    spawn_run(&env, "ok", &["-w", "2"]);
    running(&env, "ok-worker-1");
    exited(&env, "ok-worker-0", 0);
    // --keep-running: worker 1 is not stopped after the verdict, for the next wait.
    env.run(&["wait", "-t", "ok", "--keep-running"])
        .success()
        .stdout_has("run ok: Succeeded");
    // With --all-workers, worker 1 still running keeps the run going.
    let out = env.run(&["wait", "-t", "ok", "--all-workers", "--timeout", "1s"]);
    out.failure(4).stderr_has("verdict so far: Running");
    assert_eq!(
        status_json(&env, &["-t", "ok", "--all-workers"])["verdict"],
        "Running"
    );
    exited(&env, "ok-worker-1", 0);
    env.run(&["wait", "-t", "ok", "--all-workers"]).success();
}

#[test]
fn any_failed_replica_fails_the_run_with_its_last_log_lines() {
    let env = Env::new();
    spawn_run(&env, "bad", &["-w", "3"]);
    running(&env, "bad-worker-0");
    running(&env, "bad-worker-2");
    running(&env, "bad-worker-1");
    let lines: String = (1..=30).map(|i| format!("step {i}\n")).collect();
    env.server.append_log(NS, "bad-worker-1", &lines);
    env.server
        .append_log(NS, "bad-worker-1", "Traceback: ValueError: bad shape\n");
    let child = start(&env, &["wait", "-t", "bad"]);
    await_watches(&env, 1);
    exited(&env, "bad-worker-1", 2);
    let out = finish(child);
    failed_with_logs(&out, 3);
    out.stderr_has("last log lines of pod bad-worker-1:")
        .stderr_has("worker-1 | step 30\nworker-1 | Traceback: ValueError: bad shape\n")
        .stderr_has(
            "error: run 'bad' failed: pod bad-worker-1 (worker-1) failed: exit code 2, reason Error",
        );
    assert!(
        !out.stderr.contains("step 11\n"),
        "only the last 20 lines: {out:#?}"
    );
    assert!(out.stderr.contains("step 12\n"), "{out:#?}");
}

#[test]
fn the_chief_decides_when_there_is_one() {
    let env = Env::new();
    spawn_run(
        &env,
        "ps",
        &["--strategy", "parameter-server", "--ps", "1", "-w", "2"],
    );
    running(&env, "ps-chief-0");
    running(&env, "ps-ps-0");
    running(&env, "ps-worker-1");
    exited(&env, "ps-worker-0", 0);
    let status = status_json(&env, &["-t", "ps"]);
    assert_eq!(status["verdict"], "Running", "{status:#}");
    let child = start(&env, &["wait", "-t", "ps"]);
    await_watches(&env, 1);
    exited(&env, "ps-chief-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("chief     1/1 running")
        .stdout_has("ps        1/1 running")
        .stdout_has("run ps: Succeeded");
}

#[test]
fn a_deleted_pod_fails_the_run() {
    let env = Env::new();
    spawn_run(&env, "gone", &["-w", "2"]);
    running(&env, "gone-worker-0");
    running(&env, "gone-worker-1");
    let child = start(&env, &["wait", "-t", "gone"]);
    await_watches(&env, 1);
    let out = env.run(&["-d", "-t", "gone"]);
    out.success();
    // Its pods are on a node: deleted, they linger for their grace period with a
    // deletion timestamp, and the wait says so at once.
    let out = finish(child);
    // The two DELETEs go out at once: either deletion may be the one seen first.
    out.failure(3);
    assert!(
        ["0", "1"].iter().any(|i| out.stderr.contains(&format!(
            "pod gone-worker-{i} (worker-{i}) was deleted while it ran"
        ))),
        "{out:#?}"
    );
}

#[test]
fn timeout_exits_4() {
    let env = Env::new();
    spawn_run(&env, "slow", &["-w", "1"]);
    running(&env, "slow-worker-0");
    env.run(&["wait", "-t", "slow", "--timeout", "1s"])
        .failure(4)
        .stderr_has("timed out after 1s waiting for run 'slow' to end (verdict so far: Running)");
}

#[test]
fn save_logs_then_cleanup_leaves_the_logs_and_zero_objects() {
    let env = Env::new();
    spawn_run(
        &env,
        "ci",
        &[
            "-w",
            "2",
            "-e",
            env.write("env", "TOKEN=x\n").to_str().unwrap(),
        ],
    );
    let served = [
        ("ci-worker-0", "epoch 1 loss 0.5\nepoch 2 loss 0.25\n"),
        ("ci-worker-1", "worker one\n"),
    ];
    for (pod, text) in served {
        running(&env, pod);
        env.server.append_log(NS, pod, text);
    }
    exited(&env, "ci-worker-0", 0);
    exited(&env, "ci-worker-1", 0);
    let out = env.run(&["wait", "-t", "ci", "--save-logs", "out/logs", "--cleanup"]);
    out.success()
        .stdout_has("saved 2 pod logs in out/logs")
        .stdout_has("run ci: Succeeded");
    for (pod, text) in served {
        let saved = std::fs::read_to_string(env.path(&format!("out/logs/{pod}.log"))).unwrap();
        assert_eq!(saved, text);
    }
    assert_eq!(env.names_not_terminating(NS), Vec::<String>::new());
}

#[test]
fn save_logs_skips_a_pod_that_never_started() {
    let env = Env::new();
    spawn_run(&env, "half", &["-w", "2"]);
    running(&env, "half-worker-0");
    env.server.append_log(NS, "half-worker-0", "up\n");
    // worker-1 has no node: its log request would answer 204, like an empty log.
    let out = env.run(&[
        "wait",
        "-t",
        "half",
        "--timeout",
        "1s",
        "--save-logs",
        "out",
    ]);
    assert_eq!(out.code, 4, "{out:#?}");
    out.stdout_has("saved 1 pod logs in out")
        .stderr_has("note: pod half-worker-1 has not started yet; no log\n");
    assert_eq!(
        std::fs::read_to_string(env.path("out/half-worker-0.log")).unwrap(),
        "up\n"
    );
    assert!(!env.path("out/half-worker-1.log").exists());
}

#[test]
fn a_failed_run_is_cleaned_up_too_and_keeps_exit_3() {
    let env = Env::new();
    spawn_run(&env, "fc", &["-w", "1"]);
    running(&env, "fc-worker-0");
    env.server.append_log(NS, "fc-worker-0", "oops\n");
    exited(&env, "fc-worker-0", 1);
    let out = env.run(&["wait", "-t", "fc", "--save-logs", "out", "--cleanup"]);
    failed_with_logs(&out, 3);
    assert_eq!(
        std::fs::read_to_string(env.path("out/fc-worker-0.log")).unwrap(),
        "oops\n"
    );
    assert_eq!(env.names_not_terminating(NS), Vec::<String>::new());
}

#[test]
fn status_json_has_the_documented_keys() {
    let env = Env::new();
    spawn_run(&env, "st", &["-w", "2"]);
    running(&env, "st-worker-0");
    exited(&env, "st-worker-1", 3);
    let status = status_json(&env, &["-t", "st"]);
    assert_eq!(status["tag"], "st");
    assert_eq!(status["namespace"], NS);
    assert_eq!(status["verdict"], "Failed");
    assert_eq!(
        status["failure"],
        "pod st-worker-1 (worker-1) failed: exit code 3, reason Error"
    );
    let pods = status["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for key in [
        "name",
        "role",
        "index",
        "phase",
        "ready",
        "restarts",
        "node",
        "age_seconds",
        "exit_code",
        "reason",
        "message",
    ] {
        assert!(pods[0].get(key).is_some(), "{key} missing in {status:#}");
    }
    assert_eq!(pods[0]["name"], "st-worker-0");
    assert_eq!(pods[0]["phase"], "Running");
    assert_eq!(pods[0]["ready"], "1/1");
    assert_eq!(pods[1]["role"], "worker");
    assert_eq!(pods[1]["index"], 1);
    assert_eq!(pods[1]["exit_code"], 3);
    assert_eq!(pods[1]["reason"], "Error");

    let out = env.run(&["status", "-t", "st"]);
    out.success()
        .stdout_has("NAME          ROLE       PHASE")
        .stdout_has("3 (Error)")
        .stdout_has("verdict: Failed — pod st-worker-1 (worker-1) failed: exit code 3");
}

/// A kubelet of 1.27 or later (the one-node v1.36 cluster showed it) writes a pod's
/// terminal phase seconds after its container ended: until then the pod is `Running`
/// with a terminated container. The verdict and the table go by the container.
#[test]
fn a_pod_whose_container_ended_is_shown_ended_before_the_kubelet_writes_its_phase() {
    let env = Env::new();
    spawn_run(&env, "late", &["-w", "2"]);
    for (pod, code, reason) in [
        ("late-worker-0", 0, "Completed"),
        ("late-worker-1", 3, "Error"),
    ] {
        env.server.bind_pod(NS, pod, NODE);
        env.server.set_pod_status(
            NS,
            pod,
            json!({"phase": "Running", "containerStatuses": container(false, json!({
                "terminated": {"exitCode": code, "reason": reason}
            }))}),
        );
    }
    let out = env.run(&["status", "-t", "late"]);
    let out = out.success();
    let row = |pod: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(pod))
            .unwrap_or_else(|| panic!("no row for {pod}: {out:#?}"))
            .to_string()
    };
    assert!(row("late-worker-0 ").contains(" Succeeded "), "{out:#?}");
    assert!(row("late-worker-1 ").contains(" Failed "), "{out:#?}");
    out.stdout_has("verdict: Failed");
    // The JSON keeps the API's phase, beside the exit code that decides.
    let json = status_json(&env, &["-t", "late"]);
    assert_eq!(json["pods"][0]["phase"], "Running", "{json:#}");
    assert_eq!(json["pods"][0]["exit_code"], 0, "{json:#}");
}

#[test]
fn an_unknown_tag_is_a_clear_error() {
    let env = Env::new();
    env.run(&["status", "-t", "nope"])
        .failure(1)
        .stderr_has("no pods labelled training_attempt=nope in namespace 'default'");
    env.run(&["wait", "-t", "nope"])
        .failure(1)
        .stderr_has("no pods labelled training_attempt=nope");
}

/// Runs `args` on a pseudo-terminal (util-linux `script`), or `None` without it.
fn on_terminal(env: &Env, args: &[&str], no_color: bool) -> Option<Output> {
    on_terminal_of(env, args, no_color, None)
}

/// [`on_terminal`] on a terminal `columns` wide (`stty cols`).
fn on_terminal_of(
    env: &Env,
    args: &[&str],
    no_color: bool,
    columns: Option<u16>,
) -> Option<Output> {
    let script = std::process::Command::new("script")
        .arg("--version")
        .output();
    if !script.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no `script` to make a terminal");
        return None;
    }
    let mut line = std::iter::once(crate::support::BIN)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(columns) = columns {
        line = format!("stty cols {columns} rows 24 && {line}");
    }
    // The binary's clean environment (see `Env::cmd`), given to `script`.
    let base = env.cmd();
    let mut cmd = std::process::Command::new("script");
    cmd.current_dir(env.dir.path()).env_clear();
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    cmd.args(["-qec", &line, "/dev/null"]).stdin(Stdio::null());
    Some(crate::support::run(&mut cmd))
}

#[test]
fn a_terminal_gets_bars_unless_no_color() {
    let env = Env::new();
    spawn_run(&env, "tty", &["-w", "2"]);
    running(&env, "tty-worker-1");
    exited(&env, "tty-worker-0", 0);
    // --keep-running: worker 1 is not stopped after the verdict, for the next wait.
    let Some(out) = on_terminal(&env, &["wait", "-t", "tty", "--keep-running"], false) else {
        return;
    };
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(
        out.stdout.contains("\x1b["),
        "bars redraw in place: {out:#?}"
    );
    assert!(out.stdout.contains("1/2 running, 1 succeeded"), "{out:#?}");
    assert!(
        out.stdout.contains("succeeded\r\nrun tty: Succeeded\r\n")
            || out.stdout.contains(" \r\nrun tty: Succeeded\r\n"),
        "the verdict on its own line: {out:#?}"
    );
    let out = on_terminal(&env, &["wait", "-t", "tty"], true).unwrap();
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(
        !out.stdout.contains('\x1b'),
        "NO_COLOR: plain lines: {out:#?}"
    );
    assert!(out.stdout.contains("worker    1/2 running"), "{out:#?}");
}

/// What a terminal shows of output with escape codes: each line as last drawn,
/// whatever was redrawn over it (`\r`, erase-line and cursor moves dropped).
fn drawn_lines(out: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut chars = out.chars().peekable();
    let mut current = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ parameters final-byte.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\r' | '\n' => {
                if !current.is_empty() {
                    lines.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// On a terminal the live progress line never wraps (it is fitted to the width) and
/// keeps the stuck task and its reason, cutting the message first; a failed pod reads
/// as its reason.
#[test]
fn the_live_line_fits_the_terminal_and_keeps_the_reason() {
    let env = Env::new();
    spawn_run(&env, "fit", &["-w", "2"]);
    unschedulable(
        &env,
        "fit-worker-1",
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    );
    for columns in [80u16, 50] {
        let args = ["wait", "-t", "fit", "--timeout", "1s"];
        let Some(out) = on_terminal_of(&env, &args, false, Some(columns)) else {
            return;
        };
        assert_eq!(out.code, 4, "{out:#?}");
        assert!(out.stdout.contains("\x1b["), "redrawn in place: {out:#?}");
        let lines = drawn_lines(&out.stdout);
        // indicatif fills the rest of the line with spaces.
        let live: Vec<&str> = lines
            .iter()
            .filter(|l| l.starts_with("worker"))
            .map(|l| l.trim_end())
            .collect();
        assert!(!live.is_empty(), "{out:#?}");
        for line in &live {
            assert!(
                line.chars().count() < usize::from(columns),
                "{columns} columns: {line:?} ({} long)",
                line.chars().count()
            );
            assert!(line.contains("worker-1: Unschedulable"), "{line:?}");
        }
        if columns == 80 {
            assert_eq!(
                *live.last().unwrap(),
                "worker    0/2 running, 2 pending — worker-1: Unschedulable: 0/3 nodes are avai…"
            );
        }
    }
    // A failed pod: its reason, not "(1 failed) —".
    let env = Env::new();
    spawn_run(&env, "fitf", &["-w", "2"]);
    running(&env, "fitf-worker-0");
    exited(&env, "fitf-worker-1", 137);
    let args = ["wait", "-t", "fitf", "--timeout", "1s"];
    let Some(out) = on_terminal_of(&env, &args, false, Some(80)) else {
        return;
    };
    let lines = drawn_lines(&out.stdout);
    let live = lines.iter().rfind(|l| l.starts_with("worker")).unwrap();
    assert!(
        live.starts_with("worker    1/2 running, 1 failed — worker-1: ")
            && live.contains("exit code 137"),
        "{out:#?}"
    );
}

/// A pod of run `tag` as tf-spawner makes them (labels and the cluster annotation),
/// stored directly: a run too big to spawn in a test.
pub fn insert_worker(env: &Env, tag: &str, index: usize, workers: usize) {
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {
                   "name": format!("{tag}-worker-{index}"),
                   "labels": {"training_attempt": tag, "tf-spawner/replica-type": "worker",
                              "tf-spawner/replica-index": index.to_string()},
                   "annotations": {"tf-spawner/cluster": format!("worker={workers}")}},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "tensorflow", "image": "tf"}]}}),
    );
}

/// A run larger than a page (500 pods): the list comes in pages, each asked for with
/// the one before's continue token, then one watch, however many pods.
#[test]
fn a_big_run_costs_a_list_in_pages_and_one_watch() {
    let env = Env::new();
    for i in 0..1_001 {
        insert_worker(&env, "big", i, 1_001);
    }
    for i in 1..1_001 {
        running(&env, &format!("big-worker-{i}"));
    }
    env.server.clear_requests();
    // --keep-running: the wait's own requests (the stop after a verdict is measured in
    // `stop.rs`).
    let child = start(&env, &["wait", "-t", "big", "--keep-running"]);
    await_watches(&env, 1);
    running(&env, "big-worker-0");
    exited(&env, "big-worker-0", 0);
    finish(child)
        .success()
        .stdout_has("worker    1001/1001 running")
        .stdout_has("run big: Succeeded");
    // And one stream of the deciding task's log, for the training's progress.
    let (logs, requests): (Vec<_>, Vec<_>) = env
        .server
        .requests()
        .into_iter()
        .partition(|r| r.path.ends_with("/log"));
    assert_eq!(logs.len(), 1, "{logs:#?}");
    assert!(logs[0].path.ends_with("/pods/big-worker-0/log"));
    // On the run's ConfigMap, which this run made by hand has not: the wait looks for it
    // to take the run (`cluster/follower.rs`), records the verdict (404), and looks for
    // it to let go of the run; nothing else.
    let (record, requests): (Vec<_>, Vec<_>) = requests
        .into_iter()
        .partition(|r| r.path.contains("/configmaps"));
    let methods: Vec<&str> = record.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["GET", "PATCH", "GET"], "{record:#?}");
    // The pages and the watch.
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let pages: Vec<(Option<String>, bool)> = requests[..3]
        .iter()
        .map(|r| (r.param("limit"), r.param("continue").is_some()))
        .collect();
    let page = Some("500".to_string());
    assert_eq!(
        pages,
        [(page.clone(), false), (page.clone(), true), (page, true)]
    );
    assert_eq!(requests[3].param("watch").as_deref(), Some("true"));
    // status reads the same pages.
    let status = env.run(&["status", "-t", "big"]);
    assert_eq!(status.code, 0);
    assert_eq!(status.stdout.matches("big-worker-").count(), 1_001);
    assert!(status.stdout.ends_with("verdict: Succeeded\n"));
}
