//! Nothing from a pod drives the user's terminal: a log, a termination message or an
//! annotation carrying clipboard-write (OSC 52), title, clear-screen and hyperlink
//! sequences reaches `wait`, `status`, `list` and `logs` shown escaped (`\u{1b}`);
//! `logs --raw` passes it through as the pod wrote it.

use serde_json::json;

use crate::follow::{NODE, await_watches, container, exited, finish, running, spawn_run, start};
use crate::support::{Env, Output};

const NS: &str = "default";

/// Every sequence a hostile log might carry.
const HOSTILE: &str = "copy\x1b]52;c;aGVsbG8=\x07 title\x1b]0;pwned\x07 clear\x1b[2J\x1bc link\x1b]8;;http://evil/\x1b\\here\x1b]8;;\x1b\\ bidi\u{202e}txt \u{9b}31m";

/// Nothing in `out` that a terminal would act on.
#[track_caller]
fn inert(out: &Output) {
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| (c.is_control() && *c != '\n') || ('\u{202a}'..='\u{202e}').contains(c))
            .collect();
        assert!(bad.is_empty(), "{name} carries {bad:?}: {out:#?}");
    }
}

fn terminated_with_message(env: &Env, pod: &str, message: &str) {
    env.server.bind_pod(NS, pod, NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": "Failed", "containerStatuses": container(false, json!({
            "terminated": {"exitCode": 3, "reason": "Error", "message": message}
        }))}),
    );
}

#[test]
fn a_pods_log_and_termination_message_reach_the_terminal_escaped() {
    let env = Env::new();
    spawn_run(&env, "esc", &["-w", "2"]);
    running(&env, "esc-worker-0");
    running(&env, "esc-worker-1");
    env.server
        .append_log(NS, "esc-worker-1", &format!("{HOSTILE}\n"));
    let child = start(&env, &["wait", "-t", "esc"]);
    await_watches(&env, 1);
    terminated_with_message(&env, "esc-worker-1", HOSTILE);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("last log lines of pod esc-worker-1:")
        .stderr_has("copy\\u{1b}]52;c;aGVsbG8=\\u{7} title\\u{1b}]0;pwned\\u{7}");
    inert(&out);

    let out = env.run(&["status", "-t", "esc"]);
    out.stdout_has("clear\\u{1b}[2J\\u{1b}c link\\u{1b}]8;;http://evil/");
    inert(&out);
    inert(&env.run(&["status", "-t", "esc", "--all-workers"]));
    // JSON stays JSON (a C1 control or a bidi override as a JSON escape) and inert.
    let out = env.run(&["status", "-t", "esc", "-o", "json"]);
    inert(&out);
    let json: serde_json::Value =
        serde_json::from_str(&out.stdout).expect("status -o json is JSON");
    assert!(
        json.to_string().contains("\\u001b]52;c;aGVsbG8="),
        "{json:#}"
    );
    inert(&env.run(&["list", "-o", "json"]));
    inert(&env.run(&["list"]));

    let out = env.run(&["logs", "-t", "esc"]);
    out.success()
        .stdout_has("worker-1 | copy\\u{1b}]52;c;aGVsbG8=\\u{7}")
        .stdout_has("bidi\\u{202e}txt \\u{9b}31m");
    inert(&out);
    // --raw: the bytes as the pod wrote them.
    env.run(&["logs", "-t", "esc", "--raw"])
        .success()
        .stdout_has(&format!("worker-1 | {HOSTILE}\n"));
}

#[test]
fn an_annotation_from_the_cluster_reaches_status_escaped() {
    let env = Env::new();
    spawn_run(&env, "ann", &["-w", "1"]);
    let mut pod = env.server.get("pods", NS, "ann-worker-0").unwrap();
    pod["metadata"]["labels"]["tf-spawner/attempt"] = json!("1");
    pod["metadata"]["annotations"]["tf-spawner/restarted-for"] = json!(HOSTILE);
    env.server.insert("pods", NS, pod);
    exited(&env, "ann-worker-0", 0);
    let out = env.run(&["status", "-t", "ann"]);
    out.success()
        .stdout_has("attempt: 1 (copy\\u{1b}]52;c;aGVsbG8=");
    inert(&out);
}

/// The progress reader reads `loss: 0.3` before a clipboard write as 0.3, not as 0.352.
#[test]
fn an_escape_string_in_a_progress_line_is_no_part_of_its_metrics() {
    let env = Env::new();
    spawn_run(&env, "prog", &["-w", "1"]);
    running(&env, "prog-worker-0");
    env.server.append_log(
        NS,
        "prog-worker-0",
        "Epoch 1/2\n3/3 - 1s - 20ms/step - loss: 0.3\x1b]52;c;aGk=\x07 - accuracy: 0.5\n",
    );
    let out = env.run(&["status", "-t", "prog"]);
    out.success().stdout_has("loss 0.3");
    assert!(!out.stdout.contains("0.352"), "{out:#?}");
    inert(&out);
}
