//! `--start-timeout` (of `wait` and `spawn --wait`): a run whose tasks are not all
//! running (or finished) that long after its creation fails with exit 5, naming the
//! tasks still pending and why; its started pods are stopped, `--cleanup` removes it; a
//! run that started in time is not affected. The clock is the run's creation (its
//! earliest pod's creationTimestamp), so a later `wait` agrees with `spawn --wait`.

use crate::follow::{exited, failed_with_logs, running, spawn_run, unschedulable};
use crate::support::{Env, name};

const NS: &str = "default";
const SELECTOR: &str =
    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.";

/// Every pod of the run is stopped (its deadline lowered: a pod on a node), gone or
/// being deleted (a pod no node had taken).
fn stopped(env: &Env, tag: &str) -> bool {
    env.list("pods", NS)
        .iter()
        .filter(|p| name(p).starts_with(&format!("{tag}-")))
        .all(|p| {
            p["metadata"].get("deletionTimestamp").is_some()
                || p["spec"]["activeDeadlineSeconds"] == 1
        })
}

#[test]
fn a_pod_that_stays_pending_trips_it_with_its_reason_and_the_started_ones_are_stopped() {
    let env = Env::new();
    spawn_run(&env, "st", &["-w", "2"]);
    running(&env, "st-worker-0");
    unschedulable(&env, "st-worker-1", SELECTOR);
    let out = env.run(&["wait", "-t", "st", "--start-timeout", "1s"]);
    failed_with_logs(&out, 5);
    out.stderr_has(&format!(
        "error: run 'st' did not start within 1s of its creation (--start-timeout): worker-1: Unschedulable: {SELECTOR}"
    ))
    .stdout_has("stopped 1 pod still running after the verdict: st-worker-0")
    .stdout_has("deleted 1 task that never started: worker-1");
    assert!(stopped(&env, "st"), "{:#?}", env.list("pods", NS));
}

/// Counted from the run's creation, not from the command: a run created an hour ago and
/// still pending fails a 30m start timeout at once (a clock from the command's start
/// would time out after 60s with exit 4 instead).
#[test]
fn it_counts_from_the_runs_creation() {
    let env = Env::new();
    spawn_run(&env, "old", &["-w", "2"]);
    let hour_ago = rfc3339_ago(3600);
    for pod in ["old-worker-0", "old-worker-1"] {
        env.server.set_pod_created(NS, pod, &hour_ago);
    }
    let out = env.run(&[
        "wait",
        "-t",
        "old",
        "--start-timeout",
        "30m",
        "--timeout",
        "60s",
        "--keep-running",
    ]);
    failed_with_logs(&out, 5);
    out.stderr_has(
        "error: run 'old' did not start within 30m of its creation (--start-timeout): \
         worker-0, worker-1: Pending: not scheduled yet",
    );
    assert!(!stopped(&env, "old"), "--keep-running keeps them");
}

/// A run that starts before its start timeout goes on to its verdict past it.
#[test]
fn a_run_that_starts_in_time_is_unaffected() {
    let env = Env::new();
    spawn_run(&env, "ok", &["-w", "2"]);
    let mut child = crate::watched::Watched::start(
        &env,
        &[
            "wait",
            "-t",
            "ok",
            "--start-timeout",
            "2s",
            "--heartbeat",
            "2s",
        ],
    );
    running(&env, "ok-worker-0");
    running(&env, "ok-worker-1");
    // Seen started: the start timer is off for good.
    child.await_stdout("worker    2/2 running\n");
    // And the wait goes on past the start timeout (counted from the creation, before
    // the pods ran): its heartbeat, 2 s after they ran.
    child.await_stdout("still     Running; nothing new for 2s; the API server last answered ");
    exited(&env, "ok-worker-0", 0);
    let out = child.finish();
    out.success().stdout_has("run ok: Succeeded");
}

#[test]
fn with_cleanup_the_run_is_removed() {
    let env = Env::new();
    spawn_run(&env, "gone", &["-w", "1"]);
    unschedulable(&env, "gone-worker-0", SELECTOR);
    let out = env.run(&["wait", "-t", "gone", "--start-timeout", "1s", "--cleanup"]);
    failed_with_logs(&out, 5);
    out.stderr_has("error: run 'gone' did not start within 1s of its creation (--start-timeout): worker-0: Unschedulable")
        .stdout_has("deleted 3 objects of run gone");
    assert_eq!(env.names(NS), Vec::<String>::new());
}

/// `spawn --wait --start-timeout`, and the defaults file's `start_timeout`, which
/// `config` shows.
#[test]
fn spawn_wait_and_the_defaults_file_use_it() {
    let env = Env::new();
    let config = env.write("config.yaml", "start_timeout: 1s\n");
    let out = crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args(["config"]));
    out.success();
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("start_timeout"))
        .unwrap_or_else(|| panic!("{out:#?}"));
    assert!(row.contains("1s") && row.contains("config file"), "{row}");

    let script = env.script();
    let out = crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args([
        "-t",
        "sw",
        "-w",
        "1",
        "--wait",
        script.to_str().unwrap(),
    ]));
    failed_with_logs(&out, 5);
    out.stderr_has(
        "error: run 'sw' did not start within 1s of its creation (--start-timeout): \
         worker-0: Pending: not scheduled yet",
    );
    assert!(stopped(&env, "sw"));
}

#[test]
fn bad_start_timeouts_are_refused_in_one_line() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    for (args, message) in [
        (
            vec!["wait", "-t", "x", "--start-timeout", "soon"],
            "error: --start-timeout \"soon\": ",
        ),
        (
            vec!["wait", "-t", "x", "--start-timeout", "0"],
            "error: --start-timeout \"0\": must be at least 1s",
        ),
        (
            vec!["--start-timeout", "5m", script],
            "error: the following required arguments were not provided: --wait",
        ),
        (
            vec!["--local", "--wait", "--start-timeout", "5m", script],
            "error: --start-timeout applies to pods on a cluster; --local runs processes",
        ),
    ] {
        let out = env.run(&args);
        out.failure(2).stderr_has(message);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:#?}");
    }
    let config = env.write("bad.yaml", "start_timeout: 0\n");
    let out = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["wait", "-t", "x"]),
    );
    out.failure(2)
        .stderr_has("key 'start_timeout': \"0\": must be at least 1s");
    assert_eq!(env.names(NS), Vec::<String>::new(), "nothing created");
}

/// `secs` seconds ago in RFC 3339 (UTC).
fn rfc3339_ago(secs: i64) -> String {
    use k8s_openapi::jiff::Timestamp;
    Timestamp::from_second(Timestamp::now().as_second() - secs)
        .expect("a time")
        .to_string()
}
