//! The training's progress, read from the deciding task's log as the test server serves
//! it: `wait`'s live line and report, `status`'s column and `progress` object.

use serde_json::Value;

use crate::follow::{await_watches, exited, finish, running, spawn_run, start};
use crate::support::Env;
use crate::watched::Watched;

const NS: &str = "default";

/// Keras' lines with verbose=2 (tf-keras 2.21's form), for epochs `from..=to` of `of`.
pub(crate) fn keras_epochs(from: u32, to: u32, of: u32) -> String {
    (from..=to)
        .map(|k| {
            let loss = 1.0 / f64::from(k + 1);
            format!(
                "Epoch {k}/{of}\n100/100 - 12s - loss: {loss:.4} - accuracy: 0.9{k} - 12s/epoch - 120ms/step\n"
            )
        })
        .collect()
}

fn log_requests(env: &Env, pod: &str) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/pods/{pod}/log")))
        .count()
}

/// Blocks until the binary has asked for `pod`'s log (60 s at most).
fn await_log_request(env: &Env, pod: &str) {
    let start = std::time::Instant::now();
    while log_requests(env, pod) == 0 {
        assert!(start.elapsed().as_secs() < 60, "no log request for {pod}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn wait_shows_the_epochs_and_reports_the_final_metrics() {
    let env = Env::new();
    spawn_run(&env, "tr", &["-w", "2"]);
    running(&env, "tr-worker-0");
    running(&env, "tr-worker-1");
    let child = start(&env, &["wait", "-t", "tr"]);
    await_watches(&env, 1);
    // The deciding task's log is followed while the run is.
    await_log_request(&env, "tr-worker-0");
    env.server
        .append_log(NS, "tr-worker-0", "tr-worker-0: 2 replicas in sync\n");
    env.server
        .append_log(NS, "tr-worker-0", &keras_epochs(1, 3, 3));
    env.server
        .append_log(NS, "tr-worker-0", "tr-worker-0: model saved\n");
    // Worker 1 prints too; only the deciding task's log is read.
    env.server
        .append_log(NS, "tr-worker-1", &keras_epochs(1, 1, 3));
    exited(&env, "tr-worker-0", 0);
    env.server.close_log(NS, "tr-worker-0");
    let out = finish(child);
    out.success()
        .stdout_has(
            "training  epoch 3/3, step 100/100, loss 0.25, accuracy 0.93, 8.33 steps/s, done",
        )
        .stdout_has("run tr: Succeeded")
        .stdout_has("training: 3 of 3 epochs seen to end")
        .stdout_has("; final loss 0.25, accuracy 0.93\n");
    // One stream of the deciding task's log at a time, none of the others'. (A stream
    // that ends before the pod's status says its container did is opened again, from
    // its last line: at most twice here.)
    assert!((1..=2).contains(&log_requests(&env, "tr-worker-0")));
    assert_eq!(log_requests(&env, "tr-worker-1"), 0);
}

#[test]
fn a_run_printing_no_progress_shows_what_it_always_showed() {
    let env = Env::new();
    spawn_run(&env, "quiet", &["-w", "1"]);
    running(&env, "quiet-worker-0");
    env.server
        .append_log(NS, "quiet-worker-0", "hello\n3/5 files\n");
    let status = env.run(&["status", "-t", "quiet", "-o", "json"]);
    status.success();
    let json: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(json["progress"], Value::Null);
    let table = env.run(&["status", "-t", "quiet"]);
    table.success();
    assert!(!table.stdout.contains("PROGRESS"), "{table:#?}");
    assert!(!table.stdout.contains("progress:"), "{table:#?}");
    let child = start(&env, &["wait", "-t", "quiet"]);
    await_watches(&env, 1);
    exited(&env, "quiet-worker-0", 0);
    let out = finish(child);
    out.success();
    assert!(!out.stdout.contains("training"), "{out:#?}");
}

#[test]
fn status_reads_the_progress_from_the_log_tail_once() {
    let env = Env::new();
    spawn_run(&env, "st", &["-w", "2"]);
    running(&env, "st-worker-0");
    running(&env, "st-worker-1");
    env.server
        .append_log(NS, "st-worker-0", &keras_epochs(1, 6, 20));
    env.server.append_log(NS, "st-worker-0", "Epoch 7/20\n");
    let out = env.run(&["status", "-t", "st", "-o", "json"]);
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &json["progress"];
    assert_eq!(p["epoch"], 7, "{json:#}");
    assert_eq!(p["epochs"], 20);
    assert_eq!(p["epochs_done"], 6);
    assert_eq!(p["metrics"]["loss"], 0.1429);
    assert_eq!(p["epoch_metrics"]["accuracy"], 0.96);
    assert_eq!(p["steps_per_second"], 8.333);
    assert_eq!(p["stalled"], false);
    assert!(p["last_progress_at"].as_str().unwrap().ends_with('Z'));
    let mut keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "epoch",
            "epoch_metrics",
            "epochs",
            "epochs_done",
            "last_progress_at",
            "metrics",
            "seconds_left",
            "seconds_per_epoch",
            "stalled",
            "step",
            "steps",
            "steps_per_second"
        ]
    );
    assert_eq!(log_requests(&env, "st-worker-0"), 1);
    let log = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/pods/st-worker-0/log"))
        .unwrap();
    assert_eq!(log.param("tailLines").as_deref(), Some("500"));
    let table = env.run(&["status", "-t", "st"]);
    table
        .success()
        .stdout_has("PROGRESS")
        .stdout_has("epoch 7/20\n")
        .stdout_has("progress: epoch 7/20, loss 0.1429, accuracy 0.96, 8.33 steps/s, about ");
    assert_eq!(log_requests(&env, "st-worker-1"), 0);
}

/// A custom training loop printing tf-spawner's own line (docs/progress.md); worker 1
/// prints other numbers, which are not the deciding task's.
const OWN_LINES: &str = r#"
import json, os, time
cfg = json.loads(os.environ["TF_CONFIG"])
me = cfg["task"]["index"]
for epoch in range(1, 3):
    for step in (50, 100):
        print(f"tf-spawner: epoch={epoch}/2 step={step}/100 loss={0.5 / epoch + me:.3f}", flush=True)
        time.sleep(0.05)
"#;

#[test]
fn a_local_run_reports_what_the_deciding_task_printed() {
    let env = Env::new();
    let script = env.write("own.py", OWN_LINES);
    let out = crate::support::run(
        env.cmd()
            .args(["--local", "-w", "2", script.to_str().unwrap()]),
    );
    out.success()
        .stdout_has("run tf-spawner (local): Succeeded\ntraining: 2 of 2 epochs seen to end, ")
        .stdout_has("; final loss 0.25\n");
}

/// Worker 0 printed epoch 1 and began epoch 2, then nothing: a run stuck on a dead peer.
pub(crate) fn stuck_run(env: &Env, tag: &str) {
    spawn_run(env, tag, &["-w", "2"]);
    for i in 0..2 {
        running(env, &format!("{tag}-worker-{i}"));
    }
    let log = format!("{}Epoch 2/3\n", keras_epochs(1, 1, 3));
    env.server.append_log(NS, &format!("{tag}-worker-0"), &log);
}

#[test]
fn a_stall_fails_the_run_when_asked_and_its_pods_are_stopped() {
    let env = Env::new();
    stuck_run(&env, "hang");
    let out = env.run(&[
        "wait",
        "-t",
        "hang",
        "--stall-after",
        "2s",
        "--on-stall",
        "fail",
    ]);
    crate::follow::failed_with_logs(&out, 3);
    out.stderr_has("error: run 'hang' made no progress: no progress from worker-0 since ")
        .stderr_has(" (--stall-after 2s) (--on-stall fail); the last: epoch 2/3, loss 0.5");
    out.stdout_has(
        "stopped 2 pods still running after the verdict: hang-worker-0, hang-worker-1 (kept with their logs until -d",
    );

    // Both end as the kubelet ends a stopped pod; a later `wait` tells the stall, as the
    // first did, not "stopped by tf-spawner after the verdict".
    for i in 0..2 {
        let pod = format!("hang-worker-{i}");
        crate::follow::deadline_ended(&env, &pod, crate::follow::killed_after_the_stop());
    }
    let again = env.run(&["wait", "-t", "hang"]);
    assert_eq!(again.code, 3, "{again:#?}");
    again.stderr_has("error: run 'hang' made no progress: no progress from worker-0 since ");
    assert!(
        !again.stderr.contains("stopped by tf-spawner"),
        "{again:#?}"
    );
}

#[test]
fn a_stall_is_named_and_the_wait_goes_on() {
    let env = Env::new();
    stuck_run(&env, "slow");
    let mut child = Watched::start(&env, &["wait", "-t", "slow", "--stall-after", "1s"]);
    // Past the bound the stall is named, and the run goes on.
    child.await_stdout(" — no progress from worker-0 since ");
    exited(&env, "slow-worker-0", 0);
    let out = child.finish();
    out.success()
        .stdout_has("training  epoch 2/3, loss 0.5, accuracy 0.91, 8.33 steps/s, about ")
        .stdout_has(" — no progress from worker-0 since ")
        .stdout_has("(--stall-after 1s)\n")
        .stdout_has("run slow: Succeeded");
}

#[test]
fn status_names_a_stall_by_the_defaults_files_bound() {
    let env = Env::new();
    stuck_run(&env, "st");
    let config = env.write("config.yaml", "stall_after: 1\n");
    let status = || {
        crate::support::run(
            env.cmd()
                .env("TF_SPAWNER_CONFIG", &config)
                .args(["status", "-t", "st", "-o", "json"]),
        )
    };
    // The built-in bound (30m): no stall, however slow the machine.
    let out = env.run(&["status", "-t", "st", "-o", "json"]);
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["progress"]["stalled"], false, "{json:#}");
    // The defaults file's, 1 s: stalled once a second has passed since the last line.
    crate::support::eventually("status to name the stall", || {
        let out = status();
        let json: Value = serde_json::from_str(&out.stdout).unwrap();
        (json["progress"]["stalled"] == true)
            .then_some(())
            .ok_or(json)
    });
    let table = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["status", "-t", "st"]),
    );
    table
        .success()
        .stdout_has("progress: epoch 2/3, loss 0.5, accuracy 0.91, ")
        .stdout_has("; no progress from worker-0 since ")
        .stdout_has(" (--stall-after 1s)\n");
}

#[test]
fn a_bad_stall_bound_is_one_line() {
    let env = Env::new();
    let out = env.run(&["wait", "-t", "x", "--stall-after", "0s"]);
    out.failure(2)
        .stderr_has("--stall-after \"0s\": must be at least 1s");
    let out = env.run(&[
        "wait",
        "-t",
        "x",
        "--stall-after",
        "1s",
        "--on-stall",
        "panic",
    ]);
    out.failure(2).stderr_has("--on-stall");
    let config = env.write("bad.yaml", "stall_after: soon\n");
    let out = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["wait", "-t", "x"]),
    );
    out.failure(2).stderr_has("key 'stall_after': ");
}

/// A failed run has no time left to guess: status's progress line drops the estimate it
/// shows while the run trains.
#[test]
fn a_failed_run_shows_no_time_left() {
    let env = Env::new();
    spawn_run(&env, "fl", &["-w", "1"]);
    running(&env, "fl-worker-0");
    env.server
        .append_log(NS, "fl-worker-0", &keras_epochs(1, 3, 20));
    env.run(&["status", "fl"])
        .success()
        .stdout_has("progress: epoch 3/20")
        .stdout_has(" left (last progress ");
    exited(&env, "fl-worker-0", 1);
    let out = env.run(&["status", "fl"]);
    out.success().stdout_has("progress: epoch 3/20");
    assert!(!out.stdout.contains(" left"), "{out:#?}");
}
