//! Connections that freeze without breaking (issue 50 item 5): the test server answers a
//! watch or a log request with 200 and then never a byte (`Fault::silent`). Every
//! watch and followed log has an idle bound (the defaults-file key `idle_timeout`, 2s
//! here): past it the watch is
//! dropped and the pods listed again, the log opened again from its last line, so the
//! verdict comes, `--give-up-after` holds, and the report's metrics are the log's. A
//! log the kubelet could not serve is said, not saved.

use std::time::{Duration, Instant};

use kube_testserver::Fault;

use crate::follow::{exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// The idle bound of 2 s, in the defaults file (`idle_timeout` has no flag).
fn idle_bound(env: &Env) {
    let dir = env.path(".config/tf-spawner");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "idle_timeout: 2s\n").unwrap();
}

fn pod_requests(env: &Env, watch: bool) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| {
            r.path.ends_with("/pods")
                && r.method == "GET"
                && (r.param("watch").as_deref() == Some("true")) == watch
        })
        .count()
}

/// Blocks until the binary has asked for `n` pod watches (60 s at most: a hang fails).
fn await_watch_requests(env: &Env, n: usize) {
    let start = Instant::now();
    while pod_requests(env, true) < n {
        assert!(start.elapsed() < Duration::from_secs(60), "no pod watch");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_watch_that_never_answers_is_dropped_and_the_verdict_still_comes() {
    let env = Env::new();
    idle_bound(&env);
    spawn_run(&env, "fz", &["-w", "1"]);
    running(&env, "fz-worker-0");
    // Every watch is accepted and then says nothing, bookmarks included.
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    env.server.clear_requests();
    let child = start(
        &env,
        // --timeout: without the idle bound the wait would hang; with it, exit 4.
        &["wait", "-t", "fz", "--keep-running", "--timeout", "60s"],
    );
    await_watch_requests(&env, 1);
    // The run ends while the only watch is frozen.
    exited(&env, "fz-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run fz: Succeeded");
    // The frozen watch was given up and the pods listed again.
    assert!(
        pod_requests(&env, false) >= 2,
        "{:#?}",
        env.server.requests()
    );
    // Each watch asked the server to end it before the bound, with bookmarks.
    let watch = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.param("watch").as_deref() == Some("true"))
        .expect("a watch");
    assert_eq!(watch.param("timeoutSeconds").as_deref(), Some("1"));
    assert_eq!(watch.param("allowWatchBookmarks").as_deref(), Some("true"));
}

#[test]
fn a_frozen_watch_then_a_server_that_answers_nothing_gives_up_at_the_bound() {
    let env = Env::new();
    idle_bound(&env);
    spawn_run(&env, "gz", &["-w", "1"]);
    running(&env, "gz-worker-0");
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    // The first list answers; every later one (the relist after the frozen watch) hangs.
    env.server.add_fault(
        Fault::on("GET", "/pods?")
            .nth(2)
            .hang(Duration::from_secs(120))
            .always(),
    );
    let child = start(
        &env,
        &[
            "wait",
            "-t",
            "gz",
            "--request-timeout",
            "1s",
            "--retries",
            "0",
            "--give-up-after",
            "3s",
            "--timeout",
            "60s",
        ],
    );
    let out = finish(child);
    assert_eq!(out.code, 1, "{out:#?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.contains("cannot reach the Kubernetes API server at ")
            && last.contains("gave up after 3s, see --give-up-after"),
        "{out:#?}"
    );
}

#[test]
fn a_progress_log_that_froze_is_opened_again_and_the_report_has_the_final_metrics() {
    let env = Env::new();
    idle_bound(&env);
    spawn_run(&env, "lz", &["-w", "1"]);
    running(&env, "lz-worker-0");
    env.server.append_log(
        NS,
        "lz-worker-0",
        "Epoch 1/2\n100/100 - 12s - loss: 0.5000 - 12s/epoch - 120ms/step\n\
         Epoch 2/2\n100/100 - 12s - loss: 0.2500 - 12s/epoch - 120ms/step\n",
    );
    // The first read of the deciding task's log is accepted and then says nothing.
    env.server.add_fault(Fault::on("GET", "/log").silent());
    env.server.clear_requests();
    let child = start(&env, &["wait", "-t", "lz", "--timeout", "60s"]);
    let start_at = Instant::now();
    while env
        .server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods/lz-worker-0/log"))
        .count()
        < 2
    {
        assert!(
            start_at.elapsed() < Duration::from_secs(60),
            "no second log request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    exited(&env, "lz-worker-0", 0);
    env.server.close_log(NS, "lz-worker-0");
    let out = finish(child);
    out.success()
        .stdout_has("run lz: Succeeded")
        .stdout_has("training: 2 of 2 epochs seen to end")
        .stdout_has("; final loss 0.25\n");
    assert!(!out.stdout.contains("partial"), "{out:#?}");
}

#[test]
fn logs_follow_opens_a_frozen_log_again_and_prints_every_line_once() {
    let env = Env::new();
    idle_bound(&env);
    spawn_run(&env, "lf", &["-w", "1"]);
    running(&env, "lf-worker-0");
    env.server.append_log(NS, "lf-worker-0", "line 1\nline 2\n");
    // `logs --idle-timeout`, the flag of the defaults file's key (3s over its 2s).
    env.server
        .add_fault(Fault::on("GET", "/pods/lf-worker-0/log").silent());
    env.server.clear_requests();
    let child = start(&env, &["logs", "-f", "-t", "lf", "--idle-timeout", "3s"]);
    let start_at = Instant::now();
    while env
        .server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods/lf-worker-0/log"))
        .count()
        < 2
    {
        assert!(
            start_at.elapsed() < Duration::from_secs(60),
            "no second log request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    env.server.append_log(NS, "lf-worker-0", "line 3\n");
    exited(&env, "lf-worker-0", 0);
    env.server.close_log(NS, "lf-worker-0");
    let out = finish(child);
    out.success();
    assert_eq!(out.stdout.matches("line 1").count(), 1, "{out:#?}");
    assert_eq!(out.stdout.matches("line 3").count(), 1, "{out:#?}");
}

#[test]
fn a_log_the_kubelet_could_not_serve_is_said_and_not_saved() {
    let env = Env::new();
    idle_bound(&env);
    spawn_run(&env, "kz", &["-w", "2"]);
    running(&env, "kz-worker-0");
    running(&env, "kz-worker-1");
    env.server.append_log(NS, "kz-worker-0", "trained\n");
    env.server.append_log(
        NS,
        "kz-worker-1",
        "unable to retrieve container logs for containerd://4f1c2a9e\n",
    );
    exited(&env, "kz-worker-0", 0);
    exited(&env, "kz-worker-1", 0);
    let out = env.run(&["wait", "-t", "kz", "--save-logs", "out"]);
    out.success()
        .stdout_has("saved 1 pod logs in out")
        .stderr_has(
            "pod kz-worker-1: its log was not saved: the kubelet could not serve it (unable to retrieve container logs for containerd://4f1c2a9e)",
        );
    assert!(env.path("out/kz-worker-0.log").exists());
    assert!(!env.path("out/kz-worker-1.log").exists());
}
