//! A closed stdout (`| head` that has exited) ends what a command prints, never its
//! work: the command finishes, exits 0, and neither panics nor complains. Every
//! command that prints a list, with stdout a pipe nobody reads any more.

use serde_json::json;

use crate::follow::{running, spawn_run};
use crate::support::{Env, Output, run_into_closed_pipe};

const NS: &str = "default";

fn closed(env: &Env, args: &[&str]) -> Output {
    run_into_closed_pipe(env.cmd().args(args), false)
}

/// Exit 0 and an empty stderr: no panic, no error about the pipe.
#[track_caller]
fn quietly_done(out: &Output) {
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out:#?}");
}

#[test]
fn spawn_creates_the_whole_run() {
    let env = Env::new();
    let script = env.script();
    for (tag, format) in [("text", None), ("json", Some("json"))] {
        let mut args = vec!["-t", tag, "-w", "3"];
        if let Some(f) = format {
            args.extend(["-o", f]);
        }
        args.push(script.to_str().unwrap());
        quietly_done(&closed(&env, &args));
        let made: Vec<String> = env
            .names(NS)
            .into_iter()
            .filter(|n| n.contains(&format!("/{tag}-")))
            .collect();
        // Not rolled back: the config map, 3 services, 3 pods.
        assert_eq!(made.len(), 7, "{tag}: {made:?}");
    }
}

#[test]
fn delete_removes_the_whole_run() {
    let env = Env::new();
    spawn_run(&env, "many", &["-w", "60"]);
    quietly_done(&closed(&env, &["-d", "-y", "-t", "many"]));
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    // -o json and nothing to delete print through the same pipe.
    spawn_run(&env, "js", &["-w", "2"]);
    quietly_done(&closed(&env, &["-d", "-y", "-t", "js", "-o", "json"]));
    quietly_done(&closed(
        &env,
        &["-d", "-y", "-t", "js", "--ignore-not-found"],
    ));
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn delete_wait_still_waits_for_the_pods() {
    let env = Env::new();
    for i in 0..2 {
        env.server.insert(
            "pods",
            NS,
            json!({"metadata": {"name": format!("slow-worker-{i}"),
                                "labels": {"training_attempt": "slow"}},
                   "spec": {"nodeName": "node-1",
                            "containers": [{"name": "tensorflow", "image": "busybox"}]}}),
        );
    }
    let out = closed(&env, &["-d", "-y", "--wait", "-t", "slow"]);
    assert_eq!(out.code, 0, "{out:#?}");
    // Only the progress note, on stderr; the pods are gone when it returns.
    assert_eq!(out.stderr, "waiting for 2 pods to terminate…\n", "{out:#?}");
    assert!(env.list("pods", NS).is_empty());
}

#[test]
fn status_and_list() {
    let env = Env::new();
    spawn_run(&env, "st", &["-w", "3"]);
    for args in [
        &["status", "-t", "st"][..],
        &["status", "-t", "st", "-o", "json"],
        &["list"],
        &["list", "-A", "-o", "json"],
    ] {
        quietly_done(&closed(&env, args));
    }
}

#[test]
fn logs_with_and_without_follow() {
    let env = Env::new();
    spawn_run(&env, "lg", &["-w", "1"]);
    running(&env, "lg-worker-0");
    env.server.append_log(NS, "lg-worker-0", "one\ntwo\n");
    quietly_done(&closed(&env, &["logs", "-t", "lg"]));
    // A follow stops at its first line it cannot print, although the run goes on.
    quietly_done(&closed(&env, &["logs", "-f", "-t", "lg"]));
}

#[test]
fn dry_run_yaml_and_json() {
    let env = Env::new();
    let script = env.script();
    for format in ["yaml", "json"] {
        let out = closed(
            &env,
            &[
                "--dry-run",
                "-w",
                "50",
                "-o",
                format,
                script.to_str().unwrap(),
            ],
        );
        quietly_done(&out);
    }
}

#[test]
fn an_error_into_a_closed_stderr_still_exits_1() {
    let env = Env::new();
    let out = run_into_closed_pipe(env.cmd().args(["logs", "-t", "nope"]), true);
    assert_eq!(out.code, 1, "{out:#?}");
    assert_eq!(out.stdout, "");
}
