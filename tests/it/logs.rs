//! `logs`: one merged stream with task prefixes; -f with pods that start or appear
//! later; --since/--tail/--timestamps; Ctrl-C and a closed pipe end it quietly.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::json;

use crate::follow::{await_watches, exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// The lines of `out` that carry `prefix`, without it.
fn lines_of<'a>(stdout: &'a str, prefix: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect()
}

#[test]
fn logs_of_every_pod_in_task_order_with_padded_prefixes() {
    let env = Env::new();
    spawn_run(&env, "lg", &["--chief", "--ps", "1", "-w", "2"]);
    for (pod, text) in [
        ("lg-chief-0", "chief says 1\nchief says 2\n"),
        ("lg-ps-0", "ps ready\n"),
        ("lg-worker-0", "w0 a\nw0 b\nw0 c\n"),
    ] {
        running(&env, pod);
        env.server.append_log(NS, pod, text);
    }
    // worker-1 is still being created (no node has taken it: its log request would
    // answer 204, like an empty log): skipped with a note, known from its status.
    let out = env.run(&["logs", "-t", "lg"]);
    out.success();
    assert_eq!(
        out.stdout,
        "chief-0  | chief says 1\nchief-0  | chief says 2\nps-0     | ps ready\nworker-0 | w0 a\nworker-0 | w0 b\nworker-0 | w0 c\n"
    );
    assert!(
        out.stderr
            .contains("note: pod lg-worker-1 has not started yet"),
        "{out:#?}"
    );
    assert!(!out.stdout.contains('\x1b'));
    // The TF container is named in every request; none for the pod that has not started.
    let log_requests: Vec<_> = env
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/log"))
        .collect();
    assert_eq!(log_requests.len(), 3);
    assert!(!log_requests.iter().any(|r| r.path.contains("lg-worker-1")));
    assert!(
        log_requests
            .iter()
            .all(|r| r.param("container").as_deref() == Some("tensorflow"))
    );
}

#[test]
fn since_tail_and_timestamps_reach_the_log_api() {
    let env = Env::new();
    spawn_run(&env, "opt", &["-w", "1"]);
    running(&env, "opt-worker-0");
    env.server
        .append_log(NS, "opt-worker-0", "one\ntwo\nthree\n");
    let out = env.run(&[
        "logs",
        "-t",
        "opt",
        "--since",
        "10m",
        "--tail",
        "2",
        "--timestamps",
    ]);
    out.success();
    let lines = lines_of(&out.stdout, "worker-0 | ");
    assert_eq!(lines.len(), 2, "{out:#?}");
    for (line, text) in lines.iter().zip(["two", "three"]) {
        let (stamp, rest) = line.split_once(' ').unwrap();
        assert_eq!(rest, text);
        assert!(stamp.ends_with('Z') && stamp.contains('T'), "{line}");
    }
    let r = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/log"))
        .unwrap();
    assert_eq!(r.param("sinceSeconds").as_deref(), Some("600"));
    assert_eq!(r.param("tailLines").as_deref(), Some("2"));
    assert_eq!(r.param("timestamps").as_deref(), Some("true"));
}

#[test]
fn follow_merges_streams_and_picks_up_pods_that_start_or_appear_later() {
    let env = Env::new();
    spawn_run(&env, "fl", &["-w", "2"]);
    running(&env, "fl-worker-0");
    env.server.append_log(NS, "fl-worker-0", "w0 line 1\n");
    // worker-1 is still Pending: its log is not there yet.
    let child = start(&env, &["logs", "-f", "-t", "fl"]);
    await_watches(&env, 1);
    env.server.append_log(NS, "fl-worker-0", "w0 line 2\n");

    // worker-1 starts late.
    running(&env, "fl-worker-1");
    env.server
        .append_log(NS, "fl-worker-1", "w1 line 1\nw1 line 2\n");

    // An evaluator pod appears after the follow began.
    let mut extra = env.server.get("pods", NS, "fl-worker-1").unwrap();
    extra["metadata"] = json!({
        "name": "fl-evaluator-0",
        "labels": {
            "training_attempt": "fl", "app.kubernetes.io/managed-by": "tf-spawner",
            "tf-spawner/replica-type": "evaluator", "tf-spawner/replica-index": "0"
        }
    });
    extra["status"] = json!({"phase": "Running"});
    env.server.insert("pods", NS, extra);
    env.server
        .append_log(NS, "fl-evaluator-0", "eval 1\neval 2\n");
    env.server.close_log(NS, "fl-evaluator-0");
    exited(&env, "fl-evaluator-0", 0);

    env.server.append_log(NS, "fl-worker-1", "w1 line 3\n");
    env.server.append_log(NS, "fl-worker-0", "w0 line 3\n");
    for pod in ["fl-worker-0", "fl-worker-1"] {
        env.server.close_log(NS, pod);
        exited(&env, pod, 0);
    }
    let out = finish(child);
    out.success();
    assert_eq!(
        lines_of(&out.stdout, "worker-0 | "),
        ["w0 line 1", "w0 line 2", "w0 line 3"],
        "{out:#?}"
    );
    assert_eq!(
        lines_of(&out.stdout, "worker-1 | "),
        ["w1 line 1", "w1 line 2", "w1 line 3"],
        "{out:#?}"
    );
    assert_eq!(
        lines_of(&out.stdout, "evaluator-0 | "),
        ["eval 1", "eval 2"],
        "{out:#?}"
    );
    assert_eq!(out.stdout.lines().count(), 8, "{out:#?}");
}

#[test]
fn follow_reads_a_late_pod_from_its_first_line() {
    let env = Env::new();
    spawn_run(&env, "late", &["-w", "2"]);
    running(&env, "late-worker-0");
    env.server.append_log(NS, "late-worker-0", "w0 a\n");
    // worker-1 has no node yet: its log request would answer 204, like an empty log.
    let child = start(&env, &["logs", "-f", "-t", "late"]);
    await_watches(&env, 1);
    // It prints before the follow hears that it started: nothing of it may be lost.
    env.server.append_log(NS, "late-worker-1", "w1 first\n");
    running(&env, "late-worker-1");
    env.server.append_log(NS, "late-worker-1", "w1 second\n");
    for pod in ["late-worker-0", "late-worker-1"] {
        env.server.close_log(NS, pod);
        exited(&env, pod, 0);
    }
    let out = finish(child);
    out.success();
    assert_eq!(
        lines_of(&out.stdout, "worker-1 | "),
        ["w1 first", "w1 second"],
        "{out:#?}"
    );
    assert_eq!(lines_of(&out.stdout, "worker-0 | "), ["w0 a"], "{out:#?}");
}

#[test]
fn a_run_that_has_not_started_gets_a_note_per_pod_and_no_log_request() {
    let env = Env::new();
    spawn_run(&env, "idle", &["--chief", "-w", "1"]);
    crate::follow::unschedulable(&env, "idle-chief-0", "0/3 nodes are available");
    env.server.clear_requests();
    let out = env.run(&["logs", "-t", "idle"]);
    out.success();
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "note: pod idle-chief-0 has not started yet (Unschedulable); no log\n\
         note: pod idle-worker-0 has not started yet; no log\n",
        "{out:#?}"
    );
    assert!(
        !env.server
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/log")),
        "{:?}",
        env.server.requests()
    );
}

#[test]
fn a_closed_pipe_ends_logs_quietly() {
    let env = Env::new();
    spawn_run(&env, "pipe", &["-w", "1"]);
    running(&env, "pipe-worker-0");
    let text: String = (0..20_000)
        .map(|i| format!("a fairly long log line number {i}\n"))
        .collect();
    env.server.append_log(NS, "pipe-worker-0", &text);
    let mut child = env
        .cmd()
        .args(["logs", "-t", "pipe"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "worker-0 | a fairly long log line number 0\n");
    // The reader is gone (as with `| head -1`).
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.stderr, "", "{out:#?}");
}

#[test]
fn ctrl_c_ends_a_follow_with_exit_0() {
    let env = Env::new();
    spawn_run(&env, "int", &["-w", "1"]);
    running(&env, "int-worker-0");
    env.server.append_log(NS, "int-worker-0", "hello\n");
    let child = start(&env, &["logs", "-f", "-t", "int"]);
    await_watches(&env, 1);
    crate::follow::send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.stderr, "", "{out:#?}");
}

#[test]
fn logs_of_an_unknown_tag_is_an_error() {
    let env = Env::new();
    env.run(&["logs", "-t", "nope"])
        .failure(1)
        .stderr_has("no pods labelled training_attempt=nope");
}

/// Log requests of `pod` the server saw so far.
fn log_requests(env: &Env, pod: &str) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/pods/{pod}/log")))
        .count()
}

fn await_log_request(env: &Env, pod: &str) {
    let start = std::time::Instant::now();
    while log_requests(env, pod) == 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "{pod}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `--max-log-requests 1`: one stream at a time, the deciding task's first; the
/// others wait their turn, and a note says which and how to see them.
#[test]
fn follow_holds_at_most_max_log_requests_streams() {
    let env = Env::new();
    spawn_run(&env, "mx", &["-w", "3"]);
    for i in 0..3 {
        let pod = format!("mx-worker-{i}");
        running(&env, &pod);
        env.server.append_log(NS, &pod, &format!("w{i} a\n"));
    }
    let child = start(&env, &["logs", "-f", "-t", "mx", "--max-log-requests", "1"]);
    await_watches(&env, 1);
    await_log_request(&env, "mx-worker-0");
    // worker-0 decides the run: it is followed, the others are not (yet).
    assert_eq!(
        (
            log_requests(&env, "mx-worker-1"),
            log_requests(&env, "mx-worker-2")
        ),
        (0, 0)
    );
    env.server.close_log(NS, "mx-worker-0");
    exited(&env, "mx-worker-0", 0);
    // Its stream ended: the next in task order takes its place, from its first line.
    await_log_request(&env, "mx-worker-1");
    assert_eq!(log_requests(&env, "mx-worker-2"), 0);
    for pod in ["mx-worker-1", "mx-worker-2"] {
        env.server.close_log(NS, pod);
        exited(&env, pod, 0);
    }
    let out = finish(child);
    out.success()
        .stdout_has("worker-0 | w0 a")
        .stdout_has("worker-1 | w1 a")
        .stderr_has("note: following 1 pods at once (--max-log-requests 1;")
        .stderr_has("not following 2 (worker-1, worker-2) until a followed one ends; see one with: tf-spawner logs -t mx --task worker-1");
    env.run(&["logs", "-t", "mx", "--task", "worker-2"])
        .success()
        .stdout_has("worker-2 | w2 a");
    assert_eq!(
        env.run(&["logs", "-t", "mx", "--max-log-requests", "0"])
            .code,
        2
    );
}
