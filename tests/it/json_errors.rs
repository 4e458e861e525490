//! `-o json` is always JSON, in one vocabulary (issue 64, item 4): every error of every
//! verb that takes `-o json` is also a JSON object on stdout, `{"error": LINE,
//! "exit_code": N}`, the same line stderr has and the process's own exit code; usage
//! errors included, once `-o json` is on the command line. A deadline's end is the
//! failure kind `deadline`; a cancelled run is `Cancelled` in `status` and `list`.

use kube_testserver::Fault;
use serde_json::{Value, json};

use crate::support::{Env, Output};

/// stdout is one JSON object: stderr's `error:` line and the exit code.
#[track_caller]
fn error_object(out: &Output, code: i32) {
    out.failure(code);
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is no JSON ({e}): {out:#?}"));
    let line = out.stderr.trim_end().strip_prefix("error: ").unwrap();
    assert_eq!(doc["error"], line, "{out:#?}");
    assert_eq!(doc["exit_code"], code, "{out:#?}");
    assert_eq!(doc.as_object().map(|o| o.len()), Some(2), "{out:#?}");
}

#[test]
fn every_verb_with_o_json_says_its_error_in_json_on_stdout() {
    let env = Env::new();
    env.spawn(&["-t", "taken"]).success();
    let script = env.script();
    let script = script.to_str().unwrap();
    let cases: [(&[&str], i32); 5] = [
        (&["status", "-t", "gone", "-o", "json"], 1),
        (&["compare", "gone-1", "gone-2", "-o", "json"], 1),
        (&["-d", "-t", "gone", "-o", "json"], 1),
        (&["-t", "taken", "-o", "json", script], 7),
        (
            &[
                "wait",
                "-t",
                "taken",
                "-o",
                "json",
                "--for",
                "start",
                "--cleanup",
            ],
            2,
        ),
    ];
    for (args, code) in cases {
        let out = env.run(args);
        error_object(&out, code);
    }
}

#[test]
fn list_with_o_json_says_an_api_error_in_json() {
    let env = Env::new();
    env.server
        .add_fault(Fault::on("GET", "").status(403).always());
    let out = env.run(&["list", "-o", "json"]);
    error_object(&out, 1);
}

#[test]
fn a_usage_error_with_o_json_is_json_too() {
    let env = Env::new();
    // Refused by clap (an unknown flag, a bad tag), and by our own checks after it.
    for args in [
        &["status", "-o", "json", "--no-such-flag"][..],
        &["status", "--output=json", "-t", "Bad_Tag"],
        &["-d", "-r", "-o", "json"],
    ] {
        let out = env.run(args);
        error_object(&out, 2);
    }
    // Without -o json, stdout stays empty.
    let out = env.run(&["status", "--no-such-flag"]);
    out.failure(2);
    assert_eq!(out.stdout, "");
}

/// A run the kubelet ended at its `--deadline` (the pod `DeadlineExceeded`, not stopped
/// by tf-spawner): `wait -o json`'s failure kind is `deadline`, not `exited`.
#[test]
fn a_run_ended_by_its_deadline_is_failure_deadline_in_wait_json() {
    let env = Env::new();
    crate::follow::spawn_run(&env, "dl", &["-w", "1", "--deadline", "1h"]);
    crate::follow::running(&env, "dl-worker-0");
    let ended = json!({"exitCode": 137, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T01:00:00Z"});
    crate::follow::deadline_ended(&env, "dl-worker-0", ended);
    let out = env.run(&["wait", "-t", "dl", "-o", "json"]);
    assert_eq!(out.code, 3, "{out:#?}");
    let doc: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(doc["verdict"], "Failed", "{doc:#}");
    assert_eq!(doc["failure"], "deadline", "{doc:#}");
}

/// A wait cancelled with `--on-cancel stop` recorded `Cancelled: …`: `status` and `list`
/// say `Cancelled`, not `Failed`.
#[test]
fn a_run_whose_wait_was_cancelled_is_cancelled_in_status_and_list() {
    let env = Env::new();
    crate::follow::spawn_run(&env, "cx", &["-w", "1"]);
    crate::follow::running(&env, "cx-worker-0");
    let child = crate::follow::start(&env, &["wait", "-t", "cx", "--on-cancel", "stop"]);
    crate::follow::await_watches(&env, 1);
    crate::follow::send(&child, "-TERM");
    let out = crate::follow::finish(child);
    assert_eq!(out.code, 143, "{out:#?}");
    let status: Value =
        serde_json::from_str(&env.run(&["status", "cx", "-o", "json"]).success().stdout).unwrap();
    assert_eq!(status["verdict"], "Cancelled", "{status:#}");
    let list: Value =
        serde_json::from_str(&env.run(&["list", "-o", "json"]).success().stdout).unwrap();
    assert_eq!(list["runs"][0]["verdict"], "Cancelled", "{list:#}");
}
