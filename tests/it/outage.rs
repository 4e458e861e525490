//! The control plane's bad moments. A lost API server (`TestServer::stop`: the port refuses connections, open watches
//! are cut; `resume`: it answers again with its store as it was): `wait` keeps going
//! with a note, resumes its watch where it stopped (or lists again when the version
//! is gone), and gives up only past `--give-up-after`, or at `--timeout`. A pod taken
//! away (preempted, evicted) is named as such.

use std::time::Duration;

use crate::follow::{await_watches, exited, finish, running, spawn_run, start};
use crate::support::Env;
use crate::watched::Watched;

fn pod_lists(env: &Env) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods") && r.method == "GET" && r.param("watch").is_none())
        .count()
}

#[test]
fn wait_goes_on_through_an_outage_and_resumes_its_watch() {
    let env = Env::new();
    spawn_run(&env, "o", &["-w", "2"]);
    running(&env, "o-worker-0");
    running(&env, "o-worker-1");
    env.server.clear_requests();
    // No retries of a request: the first refused connection is the outage.
    // --keep-running: the stop after the verdict would list once more.
    let mut child = Watched::start(
        &env,
        &["wait", "-t", "o", "--retries", "0", "--keep-running"],
    );
    await_watches(&env, 1);
    env.server.stop();
    // The run ends while nobody can watch it.
    exited(&env, "o-worker-0", 0);
    // Down until it has seen the server gone.
    child.await_stderr("note: lost the Kubernetes API server");
    env.server.resume();
    let out = child.finish();
    out.success()
        .stdout_has("run o: Succeeded")
        .stderr_has("note: lost the Kubernetes API server (watching pods: ")
        .stderr_has("note: the Kubernetes API server answers again (after ");
    // The watch went on from the version it had: no second list.
    assert_eq!(pod_lists(&env), 1, "{:#?}", env.server.requests());
}

#[test]
fn a_watch_whose_version_was_compacted_meanwhile_lists_again() {
    let env = Env::new();
    spawn_run(&env, "c", &["-w", "2"]);
    running(&env, "c-worker-0");
    running(&env, "c-worker-1");
    env.server.clear_requests();
    // --keep-running: the stop after the verdict would list once more.
    let mut child = Watched::start(
        &env,
        &["wait", "-t", "c", "--retries", "0", "--keep-running"],
    );
    await_watches(&env, 1);
    env.server.stop();
    exited(&env, "c-worker-1", 3);
    env.server.compact();
    // Down until it has seen the server gone.
    child.await_stderr("note: lost the Kubernetes API server");
    env.server.resume();
    let out = child.finish();
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("pod c-worker-1 (worker-1) failed: exit code 3");
    assert_eq!(pod_lists(&env), 2, "{:#?}", env.server.requests());
}

#[test]
fn wait_gives_up_past_the_bound_saying_since_when() {
    let env = Env::new();
    spawn_run(&env, "g", &["-w", "1"]);
    let child = start(
        &env,
        &["wait", "-t", "g", "--retries", "0", "--give-up-after", "2s"],
    );
    await_watches(&env, 1);
    env.server.stop();
    let out = finish(child);
    env.server.resume();
    assert_eq!(out.code, 1, "{out:#?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: watching pods: cannot reach the Kubernetes API server at ")
            && last.contains(" UTC (")
            && last.contains("gave up after 2s, see --give-up-after"),
        "{out:#?}"
    );
}

#[test]
fn the_timeout_is_kept_while_the_server_is_away() {
    let env = Env::new();
    spawn_run(&env, "t", &["-w", "1"]);
    let child = start(
        &env,
        &["wait", "-t", "t", "--retries", "0", "--timeout", "2s"],
    );
    await_watches(&env, 1);
    env.server.stop();
    let out = finish(child);
    env.server.resume();
    assert_eq!(out.code, 4, "{out:#?}");
    out.stderr_has("timed out after 2s");
}

/// A pod preempted mid-run: `wait` and `status` say so, not "failed: exit code 137".
#[test]
fn a_preempted_pod_is_named_as_preempted() {
    let env = Env::new();
    spawn_run(&env, "pre", &["-w", "2"]);
    running(&env, "pre-worker-0");
    running(&env, "pre-worker-1");
    let child = start(&env, &["wait", "-t", "pre"]);
    await_watches(&env, 1);
    env.server.set_pod_status(
        "default",
        "pre-worker-1",
        serde_json::json!({"phase": "Failed", "conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": "Preempted in order to admit critical pod"
        }], "containerStatuses": crate::follow::container(false, serde_json::json!({
            "terminated": {"exitCode": 137, "reason": "Error"}
        }))}),
    );
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    let why = "pod pre-worker-1 (worker-1) was preempted before it ended (PreemptionByScheduler: Preempted in order to admit critical pod)";
    out.stderr_has(why);
    assert!(!out.stderr.contains("exit code 137"), "{out:#?}");
    env.run(&["status", "-t", "pre"]).stdout_has(why);
}

/// The kubelet's "unable to retrieve container logs" (its answer for a container it no
/// longer has) is not shown as the failed pod's last log line.
#[test]
fn the_kubelets_notice_is_no_log_line() {
    let env = Env::new();
    spawn_run(&env, "kn", &["-w", "1"]);
    running(&env, "kn-worker-0");
    env.server.append_log(
        "default",
        "kn-worker-0",
        "step 1\nunable to retrieve container logs for containerd://4f1c2a\n",
    );
    exited(&env, "kn-worker-0", 137);
    let out = env.run(&["wait", "-t", "kn"]);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("worker-0 | step 1");
    assert!(!out.stderr.contains("unable to retrieve"), "{out:#?}");
    let logs = env.run(&["logs", "-t", "kn"]);
    logs.success().stdout_has("step 1");
    assert!(!logs.stdout.contains("unable to retrieve"), "{logs:#?}");
}

/// Log requests of `pod` the server saw, and whether each asked for `sinceTime`.
fn log_requests(env: &Env, pod: &str) -> Vec<bool> {
    env.server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/pods/{pod}/log")))
        .map(|r| r.param("sinceTime").is_some())
        .collect()
}

/// Blocks until the binary has asked for `pod`'s log `n` times (a safety net of 60 s
/// turns a hang into a failure).
fn await_log_requests(env: &Env, pod: &str, n: usize) {
    let start = std::time::Instant::now();
    while log_requests(env, pod).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no log request {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `logs -f` through an outage: the stream cut with the server is opened again from
/// its last line (sinceTime), and every line is printed once, in order, those written
/// while the server was away included.
#[test]
fn logs_follow_resumes_a_broken_stream_without_losing_or_repeating_a_line() {
    let env = Env::new();
    spawn_run(&env, "lf", &["-w", "1"]);
    running(&env, "lf-worker-0");
    env.server
        .append_log("default", "lf-worker-0", "line 1\nline 2\n");
    let mut child = Watched::start(&env, &["logs", "-f", "-t", "lf", "--retries", "0"]);
    await_watches(&env, 1);
    await_log_requests(&env, "lf-worker-0", 1);
    env.server.stop();
    env.server.append_log("default", "lf-worker-0", "line 3\n");
    // Down until it has seen the server gone.
    child.await_stderr("note: lost the Kubernetes API server");
    env.server.resume();
    env.server.append_log("default", "lf-worker-0", "line 4\n");
    // Ended only once the stream was opened again.
    await_log_requests(&env, "lf-worker-0", 2);
    env.server.append_log("default", "lf-worker-0", "line 5\n");
    env.server.close_log("default", "lf-worker-0");
    exited(&env, "lf-worker-0", 0);
    let out = child.finish();
    out.success()
        .stderr_has("note: lost the Kubernetes API server")
        .stderr_has("note: the Kubernetes API server answers again");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "worker-0 | line 1",
            "worker-0 | line 2",
            "worker-0 | line 3",
            "worker-0 | line 4",
            "worker-0 | line 5"
        ],
        "{out:#?}"
    );
    let resumed = log_requests(&env, "lf-worker-0");
    assert_eq!(resumed[..2], [false, true], "{resumed:?}");
}
