//! What a pipeline branches on (issue 51 item 5, issue 48 item 3): a cancelled `wait`
//! (SIGTERM, SIGINT) does what it was asked before it exits (`--cleanup`,
//! `--on-cancel`); `wait -o json|yaml` and `spawn --wait -o json` print one verdict
//! document; a run that could not start exits 6, not 3; an unwritable `--save-logs` is
//! a usage error found before any call; `--notify` tells an error before the report.

use std::process::Child;

use serde_json::Value;

use crate::follow::{await_watches, exited, finish, running, spawn_run, start, waiting};
use crate::support::{Env, Output};

const NS: &str = "default";

/// `signal` to the child, then what it printed.
fn signalled(child: Child, signal: i32) -> Output {
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    finish(child)
}

/// The run's pods not being deleted.
fn live_pods(env: &Env, tag: &str) -> Vec<String> {
    env.names_not_terminating(NS)
        .into_iter()
        .filter(|n| n.starts_with(&format!("pod/{tag}-")))
        .collect()
}

#[test]
fn a_cancelled_wait_with_cleanup_saves_the_logs_and_deletes_the_run() {
    let env = Env::new();
    spawn_run(&env, "cc", &["-w", "2"]);
    running(&env, "cc-worker-0");
    running(&env, "cc-worker-1");
    env.server.append_log(NS, "cc-worker-0", "Epoch 1/5\n");
    let logs = env.path("logs");
    let child = start(
        &env,
        &[
            "wait",
            "-t",
            "cc",
            "--save-logs",
            logs.to_str().unwrap(),
            "--cleanup",
        ],
    );
    await_watches(&env, 1);
    let out = signalled(child, libc::SIGTERM);
    assert_eq!(out.code, 143, "{out:#?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert_eq!(last, "error: SIGTERM: run 'cc' was deleted", "{out:#?}");
    out.stdout_has("saved 2 pod logs in ");
    let saved = std::fs::read_to_string(logs.join("cc-worker-0.log")).unwrap();
    assert!(saved.contains("Epoch 1/5"), "{saved}");
    assert!(live_pods(&env, "cc").is_empty(), "{:?}", env.names(NS));
    assert!(
        env.server.list("configmaps", NS).is_empty(),
        "{:?}",
        env.names(NS)
    );
}

#[test]
fn a_cancelled_wait_leaves_the_run_or_stops_it_as_on_cancel_says() {
    let env = Env::new();
    spawn_run(&env, "cl", &["-w", "2"]);
    exited(&env, "cl-worker-1", 0);
    running(&env, "cl-worker-0");
    // The default: only the watching stops (a person at a terminal), said in one line.
    let child = start(&env, &["wait", "-t", "cl"]);
    await_watches(&env, 1);
    let out = signalled(child, libc::SIGINT);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has("error: Ctrl-C: run 'cl' was left as it is")
        .stderr_has("stop it: tf-spawner -d -t cl -n default");
    assert_eq!(live_pods(&env, "cl").len(), 2, "{:?}", env.names(NS));
    // --on-cancel stop: the unfinished pod stopped, the finished one and the record
    // kept, the cancel recorded.
    let child = start(&env, &["wait", "-t", "cl", "--on-cancel", "stop"]);
    await_watches(&env, 2);
    let out = signalled(child, libc::SIGTERM);
    assert_eq!(out.code, 143, "{out:#?}");
    out.stdout_has("stopped 1 pod still running when the wait was cancelled: cl-worker-0")
        .stderr_has("error: SIGTERM: run 'cl' was stopped: its unfinished pods ended, kept with the finished ones and the logs (see: tf-spawner status -t cl -n default; delete it: tf-spawner -d -t cl -n default)");
    // Stopped as after a verdict: its deadline lowered, for the kubelet to end it.
    let pod = env.server.get("pods", NS, "cl-worker-0").unwrap();
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 1, "{pod:#}");
    let done = env.server.get("pods", NS, "cl-worker-1").unwrap();
    assert!(
        done["spec"].get("activeDeadlineSeconds").is_none(),
        "{done:#}"
    );
    assert_eq!(live_pods(&env, "cl").len(), 2, "{:?}", env.names(NS));
    let cm = &env.server.list("configmaps", NS)[0];
    let verdict = cm["metadata"]["annotations"]["tf-spawner/verdict"]
        .as_str()
        .unwrap_or_default();
    assert!(verdict.starts_with("Cancelled: "), "{cm:#}");
    // A defaults key too; a bad value is a usage error naming the choices.
    env.run(&["wait", "-t", "cl", "--on-cancel", "kill"])
        .failure(2)
        .stderr_has("leave, stop, delete");
    let config = env.write("config.yaml", "on_cancel: delete\n");
    crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args(["config"]))
        .success()
        .stdout_has("delete");
}

#[test]
fn wait_json_is_one_verdict_document_also_after_the_cleanup() {
    let env = Env::new();
    spawn_run(&env, "wj", &["-w", "2"]);
    exited(&env, "wj-worker-1", 0);
    exited(&env, "wj-worker-0", 0);
    let out = env.run(&["wait", "-t", "wj", "-o", "json"]);
    out.success();
    let doc: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_eq!(doc["verdict"], "Succeeded");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["tag"], "wj");
    assert_eq!(doc["failure"], Value::Null);
    out.stderr_has("run wj: Succeeded");
    // A failure, the run deleted by --cleanup: the document all the same.
    spawn_run(&env, "wf", &["-w", "2"]);
    running(&env, "wf-worker-1");
    exited(&env, "wf-worker-0", 1);
    let out = env.run(&["wait", "-t", "wf", "-o", "yaml", "--cleanup"]);
    assert_eq!(out.code, 3, "{out:#?}");
    assert!(out.stdout.starts_with("text: "), "{out:#?}");
    out.stdout_has("verdict: Failed\n")
        .stdout_has("exit_code: 3\n")
        .stdout_has("failure: exited\n")
        .stdout_has("failed_task: worker-0");
    assert!(live_pods(&env, "wf").is_empty(), "{:?}", env.names(NS));
    // spawn --wait -o json: the verdict document alone on stdout.
    let env = Env::new();
    let script = env.script();
    let child = start(
        &env,
        &[
            "-t",
            "sj",
            "-w",
            "1",
            "--wait",
            "-o",
            "json",
            script.to_str().unwrap(),
        ],
    );
    await_watches(&env, 1);
    waiting(
        &env,
        "sj-worker-0",
        "CreateContainerConfigError",
        "configmap \"cfg\" not found",
    );
    let out = finish(child);
    assert_eq!(out.code, 6, "{out:#?}");
    let doc: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_eq!(doc["verdict"], "Failed");
    assert_eq!(doc["exit_code"], 6);
    assert_eq!(doc["failure"], "cannot_start");
    assert_eq!(doc["failed_task"], "worker-0");
}

#[test]
fn an_unwritable_save_logs_is_a_usage_error_before_any_call() {
    let env = Env::new();
    let file = env.write("a-file", "not a directory");
    let under = file.join("logs");
    env.server.clear_requests();
    let out = env.run(&["wait", "-t", "x", "--save-logs", under.to_str().unwrap()]);
    out.failure(2)
        .stderr_has("--save-logs: cannot write in the directory ")
        .stderr_has("name a directory you can write");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.server.requests().is_empty());
}

#[test]
fn notify_tells_a_wait_that_gave_up_before_its_report() {
    let env = Env::new();
    spawn_run(&env, "ng", &["-w", "1"]);
    let child = start(
        &env,
        &[
            "wait",
            "-t",
            "ng",
            "--retries",
            "0",
            "--give-up-after",
            "2s",
            "--notify",
            "cat > notice.json",
        ],
    );
    await_watches(&env, 1);
    env.server.stop();
    let out = finish(child);
    env.server.resume();
    assert_eq!(out.code, 1, "{out:#?}");
    let text = std::fs::read_to_string(env.path("notice.json"))
        .unwrap_or_else(|e| panic!("no notice: {e}: {out:#?}"));
    let notice: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(notice["verdict"], "Error");
    assert_eq!(notice["exit_code"], 1);
    assert_eq!(notice["failure"], "error");
    assert!(
        notice["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("gave up after 2s"),
        "{notice}"
    );
}
