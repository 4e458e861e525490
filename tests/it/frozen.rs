//! Connections that freeze without breaking (issue 50 item 5): the test server answers a
//! watch or a log request with 200 and then never a byte (`Fault::silent`). Every
//! watch and followed log has an idle bound (the defaults-file key `idle_timeout`, 2s
//! here): past it the watch is
//! dropped and the pods listed again, the log opened again from its last line, so the
//! verdict comes, `--give-up-after` holds, and the report's metrics are the log's. A
//! log the kubelet could not serve is said, not saved.

use std::time::Duration;

use kube_testserver::{Fault, RecordedRequest};

use crate::follow::{exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// A run `tag` of one worker, running, under an idle bound of 2 s (the defaults file's
/// `idle_timeout`; `wait --idle-timeout` is tests/it/idle.rs').
fn frozen_env(tag: &str) -> Env {
    let env = Env::new();
    env.defaults_file("idle_timeout: 2s\n");
    spawn_run(&env, tag, &["-w", "1"]);
    running(&env, &format!("{tag}-worker-0"));
    env
}

fn pod_requests(env: &Env, watch: bool) -> usize {
    env.count_requests(|r| is_pod_list(r, watch))
}

fn is_pod_list(r: &RecordedRequest, watch: bool) -> bool {
    r.path.ends_with("/pods")
        && r.method == "GET"
        && (r.param("watch").as_deref() == Some("true")) == watch
}

/// Blocks until the binary has asked for the log of `pod` twice: the frozen first read,
/// and the one that opened it again.
fn await_second_log_request(env: &Env, pod: &str) {
    let path = format!("/pods/{pod}/log");
    env.await_requests(2, "second log request", |r| r.path.ends_with(&path));
}

#[test]
fn a_watch_that_never_answers_is_dropped_and_the_verdict_still_comes() {
    let env = frozen_env("fz");
    // Every watch is accepted and then says nothing, bookmarks included.
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    env.server.clear_requests();
    let child = start(
        &env,
        // --timeout: without the idle bound the wait would hang; with it, exit 4.
        &["wait", "-t", "fz", "--keep-running", "--timeout", "60s"],
    );
    env.await_requests(1, "pod watch", |r| is_pod_list(r, true));
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
    let watch = env.first_watch();
    assert_eq!(watch.param("timeoutSeconds").as_deref(), Some("1"));
    assert_eq!(watch.param("allowWatchBookmarks").as_deref(), Some("true"));
}

#[test]
fn a_frozen_watch_then_a_server_that_answers_nothing_gives_up_at_the_bound() {
    let env = frozen_env("gz");
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
    let env = frozen_env("lz");
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
    await_second_log_request(&env, "lz-worker-0");
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
    let env = frozen_env("lf");
    env.server.append_log(NS, "lf-worker-0", "line 1\nline 2\n");
    // `logs --idle-timeout`, the flag of the defaults file's key (3s over its 2s).
    env.server
        .add_fault(Fault::on("GET", "/pods/lf-worker-0/log").silent());
    env.server.clear_requests();
    let child = start(&env, &["logs", "-f", "-t", "lf", "--idle-timeout", "3s"]);
    await_second_log_request(&env, "lf-worker-0");
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
    env.defaults_file("idle_timeout: 2s\n");
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
