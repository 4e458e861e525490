//! `wait --restarts` on running pods (issue 25): a worker deleted in the middle of a
//! real TensorFlow training costs one restart and the epochs since the last backup,
//! and the run still succeeds; a task that keeps exiting with a retryable code ends the
//! run with exit 3 once the restarts are used.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};

use crate::after::{Claim, TF_IMAGE, node_has};
use crate::support::{Cluster, mnist_entrypoint, restart_lines, tag};

/// Enough epochs that a worker can be deleted in the middle, each one backed up in the
/// run's volume, and that the first attempt does not finish while its pods wait out
/// their grace period either (measured: TensorFlow trained on for the 30 s after the
/// pods' SIGTERM, about 40 epochs of the example's batch; about 6 of the first attempt's).
const EPOCHS: u32 = 40;

/// Every file under `dir`, for a failure's message.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

/// Whether the node has the TensorFlow image; a visible SKIPPED line for `test` if not.
async fn has_tf_image(c: &Cluster, test: &str) -> bool {
    let has = node_has(c, TF_IMAGE).await;
    if !has {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: the node has no {TF_IMAGE} (tools/tensorflow builds it)"
        );
    }
    has
}

/// Spawns run `t` of `script` with `extra`, follows it with `wait --restarts 1`, deletes
/// worker 1 once worker 0 has begun epoch 3 (two epochs done and backed up), and returns
/// what the wait printed, to its end.
async fn delete_worker_1_in_epoch_3(
    c: &Cluster,
    t: &str,
    script: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    c.spawn(t, script, extra).await;
    let child = c.start_restarting_once(t, "600s");
    let third = format!("Epoch 3/{EPOCHS}");
    c.eventually(
        "epoch 3 of the first attempt",
        Duration::from_secs(300),
        || async {
            log_of(c, t, "worker-0")
                .await
                .contains(&third)
                .then_some(())
        },
    )
    .await;
    Api::<Pod>::namespaced(c.client.clone(), &c.namespace)
        .delete(&format!("{t}-worker-1"), &DeleteParams::default())
        .await
        .expect("delete worker 1");
    child.wait_with_output().await.expect("wait ends")
}

async fn log_of(c: &Cluster, t: &str, task: &str) -> String {
    c.run(&["logs", "-t", t, "--task", task]).await.stdout
}

#[tokio::test]
async fn a_worker_deleted_mid_training_costs_one_restart_and_the_run_resumes() {
    let Some(c) = Cluster::new("restart-mnist").await else {
        return;
    };
    if !has_tf_image(
        &c,
        "a_worker_deleted_mid_training_costs_one_restart_and_the_run_resumes",
    )
    .await
    {
        return;
    }
    let claim = Claim::new(&c).await;
    let t = tag("resume");
    let script = crate::support::repo_file("examples/mnist.py");
    let entry = c.write("entrypoint.sh", &mnist_entrypoint(EPOCHS));
    let extra = [
        "-w",
        "2",
        "--volume",
        "out",
        "-i",
        TF_IMAGE,
        "-c",
        entry.to_str().unwrap(),
    ];
    let out = delete_worker_1_in_epoch_3(&c, &t, &script, &extra).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = log_of(&c, &t, "worker-0").await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\nworker-0:\n{log}"
    );
    let restarts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": restart "))
        .collect();
    assert_eq!(restarts.len(), 1, "{stdout}");
    assert!(
        restarts[0].contains(&format!(
            "restart 1/1 in 1s: pod {t}-worker-1 (worker-1) was deleted while it ran; re-creating its 2 pods (attempt 1)"
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("run {t}: Succeeded")), "{stdout}");
    // The second attempt's log: attempt 1, resumed from a later epoch than the first.
    assert!(log.contains("attempt 1\n"), "{log}");
    let resumed = log
        .lines()
        .find_map(|l| l.split_once("worker-0: resuming from epoch ").map(|(_, rest)| rest))
        .unwrap_or_else(|| {
            panic!(
                "no resume line in the second attempt's log:\n{log}\nwait said:\n{stdout}\n{stderr}\nthe volume holds: {:?}",
                files(claim.dir.path())
            )
        });
    let epoch: u32 = resumed
        .split(' ')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("{resumed}"));
    assert!(epoch >= 3, "resumed from epoch {epoch}: {log}");
    assert!(log.contains("Epoch 40/40"), "{log}");
    // For the docs (with --nocapture): how far the first attempt got.
    eprintln!("restart: the second attempt resumed from epoch {epoch} of {EPOCHS}");
}

/// Exits 143 (a SIGTERM's code) on worker 1 every time; worker 0 would run on.
const EXIT_143: &str = "\
import os, sys, time
print('attempt', os.environ.get('TF_SPAWNER_ATTEMPT'), flush=True)
if os.environ.get('WORKER_NUMBER') == '1':
    time.sleep(1)
    sys.exit(143)
time.sleep(600)
";

#[tokio::test]
async fn a_task_that_keeps_exiting_143_ends_with_exit_3_after_its_restarts() {
    let Some(c) = Cluster::new("restart-143").await else {
        return;
    };
    let t = tag("again");
    let script = c.write("exit143.py", EXIT_143);
    c.spawn(&t, &script, &["-w", "2"]).await;
    let out = c.wait_restarting(&t, "2", &[]).await;
    assert_eq!(out.code, 3, "{out:#?}");
    let restarts = restart_lines(&out);
    assert_eq!(restarts.len(), 2, "{out:#?}");
    assert!(
        restarts[1].contains("exit code 143") && restarts[1].ends_with("(attempt 2)"),
        "{out:#?}"
    );
    out.stderr_has(&format!(
        "error: run '{t}' failed: pod {t}-worker-1 (worker-1) failed: exit code 143"
    ));
    // The last attempt's pod, with its number in its label and its environment.
    let pods = c.pods(&t).await;
    let one = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(&format!("{t}-worker-1")))
        .expect("worker 1");
    assert_eq!(
        one.metadata.labels.as_ref().unwrap()["tf-spawner/attempt"],
        "2"
    );
    let log = log_of(&c, &t, "worker-1").await;
    assert!(log.contains("attempt 2"), "{log}");
}

/// Worker 1 of the first attempt dies at once (exit 143, retryable); every other task
/// sleeps past the run's deadline.
const DIES_THEN_SLEEPS: &str = "\
import os, sys, time
attempt = os.environ.get('TF_SPAWNER_ATTEMPT')
print('attempt', attempt, flush=True)
if attempt == '0' and os.environ.get('WORKER_NUMBER') == '1':
    print('attempt 0 of worker 1 dies here', flush=True)
    time.sleep(2)
    sys.exit(143)
time.sleep(600)
";

/// `--deadline` is the run's (issue 50 items 2, 3): the restart's pods get what is left
/// of it, the kubelet's DeadlineExceeded ends the run without another restart, and the
/// replaced attempt's log stays readable (`logs --attempt 0`, `status`).
#[tokio::test]
async fn the_deadline_counts_once_across_a_restart_and_the_first_attempts_log_is_kept() {
    let Some(c) = Cluster::new("restart-deadline").await else {
        return;
    };
    let t = tag("dl");
    let script = c.write("dies.py", DIES_THEN_SLEEPS);
    c.spawn(&t, &script, &["-w", "2", "--deadline", "40s"])
        .await;
    let out = c.wait_restarting(&t, "3", &[]).await;
    assert_eq!(out.code, 3, "{out:#?}");
    let restarts = restart_lines(&out);
    assert_eq!(restarts.len(), 1, "{out:#?}");
    out.stderr_has("reason DeadlineExceeded")
        .stderr_has("the run's --deadline ended it")
        .stderr_has(&format!("run {t}: not restarted: the run's --deadline"));
    // The run's time covers both attempts. A v1.20 kubelet's deadline kill leaves the
    // container without an end time (seen in CI), so the report has no time line there.
    let both = format!("{}{}", out.stdout, out.stderr);
    if both.contains("took ") {
        assert!(both.contains("every attempt included"), "{out:#?}");
    }
    // The second attempt's pods were given what was left of the 40 s, no more.
    for pod in c.pods(&t).await {
        let spec = pod.spec.as_ref().unwrap();
        let left = spec.active_deadline_seconds.unwrap();
        assert!(left < 40, "{:?}: {left}", pod.metadata.name);
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["tf-spawner/attempt"], "1");
    }
    // The first attempt's log, kept when the restart deleted its pods.
    let old = c
        .run(&["logs", "-t", &t, "--attempt", "0", "--task", "worker-1"])
        .await;
    assert_eq!(old.code, 0, "{old:#?}");
    old.stdout_has("worker-1 | attempt 0 of worker 1 dies here");
    let now = c.run(&["logs", "-t", &t, "--task", "worker-1"]).await;
    assert!(!now.stdout.contains("dies here"), "{now:#?}");
    assert!(now.stdout.contains("attempt 1"), "{now:#?}");
    let status = c.run(&["status", "-t", &t]).await;
    status.stdout_has(&format!(
        "attempt 0 ended: pod {t}-worker-1 (worker-1) failed: exit code 143"
    ));
}

/// Attempt 0 prints one progress line and then nothing (a hang); attempt 1 trains to
/// its end.
const HANGS_THEN_TRAINS: &str = "\
import os, time
attempt = os.environ.get('TF_SPAWNER_ATTEMPT')
print('attempt', attempt, flush=True)
if attempt == '0':
    print('tf-spawner: epoch=1/2 step=5/10 loss=0.9', flush=True)
    time.sleep(600)
for epoch in (1, 2):
    print(f'tf-spawner: epoch={epoch}/2 step=10/10 loss=0.5', flush=True)
";

/// `--on-stall restart` (issue 48 item 2) with the derived bound at a small floor: a
/// script that stops printing is restarted, counted against `--restarts`, its cause
/// recorded and its log kept, and the next attempt succeeds.
#[tokio::test]
async fn a_run_that_stops_printing_is_restarted_on_stall_and_succeeds() {
    let Some(c) = Cluster::new("restart-stall").await else {
        return;
    };
    let t = tag("hang");
    let script = c.write("hang.py", HANGS_THEN_TRAINS);
    c.spawn(&t, &script, &["-w", "2"]).await;
    let out = c
        .wait_restarting(&t, "1", &["--stall-floor", "5s", "--on-stall", "restart"])
        .await;
    assert_eq!(out.code, 0, "{out:#?}");
    let restarts = restart_lines(&out);
    assert_eq!(restarts.len(), 1, "{out:#?}");
    assert!(
        restarts[0].starts_with(&format!(
            "run {t}: restart 1/1 in 1s: stalled at epoch 1, step 5, for "
        )),
        "{out:#?}"
    );
    let status = c.run(&["status", "-t", &t, "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(&status.stdout).expect("JSON");
    let why = json["restarted_for"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("stalled at epoch 1, step 5, for "),
        "{json:#}"
    );
    let old = c
        .run(&["logs", "-t", &t, "--attempt", "0", "--task", "worker-0"])
        .await;
    assert!(old.stdout.contains("attempt 0"), "{old:#?}");
    assert!(log_of(&c, &t, "worker-0").await.contains("attempt 1"));
}

/// Attempt 0 sleeps (its pods are deleted under it); attempt 1 prints and ends.
const SLEEPS_THEN_ENDS: &str = "\
import os, time
attempt = os.environ.get('TF_SPAWNER_ATTEMPT')
print('attempt', attempt, flush=True)
if attempt == '0':
    time.sleep(600)
";

/// A restart taken up after the pods vanished (issue 50 items 4 and 7): a two-worker
/// run's pods force-deleted (`kubectl delete pod --force --grace-period=0`) before any
/// `wait` read them; `wait --restarts 1` re-creates both from the pods the spawn
/// recorded in the run's ConfigMap, and the run succeeds.
#[tokio::test]
async fn a_run_whose_pods_vanished_before_any_wait_is_restarted_from_its_record() {
    let Some(c) = Cluster::new("restart-vanished").await else {
        return;
    };
    let t = tag("gone");
    let script = c.write("sleeps.py", SLEEPS_THEN_ENDS);
    c.spawn(&t, &script, &["-w", "2"]).await;
    c.pods_in_phase(&t, "Running", Duration::from_secs(120))
        .await;
    let api = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    for i in 0..2 {
        api.delete(&format!("{t}-worker-{i}"), &force)
            .await
            .expect("force delete");
    }
    c.eventually("the pods gone", Duration::from_secs(60), || async {
        c.pods(&t).await.is_empty().then_some(())
    })
    .await;
    let out = c.wait_restarting(&t, "1", &[]).await;
    assert_eq!(out.code, 0, "{out:#?}");
    out.stdout_has(&format!(
        "run {t}: restart 1/1 in 0s: every pod of the run was gone when this wait began; re-creating its 2 pods from its record (attempt 1)"
    ))
    .stdout_has(&format!("run {t}: Succeeded"));
    for pod in c.pods(&t).await {
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["tf-spawner/attempt"], "1", "{:?}", pod.metadata.name);
    }
    // Worker 0's exit decided the run, so it ran; worker 1 may have been stopped before
    // its container started (seen on v1.20: `has not started yet (ContainerCreating)`).
    let log = c.run(&["logs", "-t", &t, "--task", "worker-0"]).await;
    assert!(log.stdout.contains("attempt 1"), "{log:#?}");
}

/// Issue 62's "done when" on pods: the project `init --framework keras` writes trains
/// Keras 3 on JAX on two pods of the TensorFlow image (which carries the pinned keras and
/// jax), its progress read from Keras 3's lines; a worker deleted mid-training costs one
/// restart, and the new attempt resumes after the epochs its backup kept on the volume.
#[tokio::test]
async fn a_keras_3_run_on_jax_restarted_after_a_deleted_worker_resumes() {
    let Some(c) = Cluster::new("restart-keras").await else {
        return;
    };
    if !has_tf_image(
        &c,
        "a_keras_3_run_on_jax_restarted_after_a_deleted_worker_resumes",
    )
    .await
    {
        return;
    }
    // Keras and JAX ask nothing of the cluster's version, and a restart on a v1.20 node is
    // the mnist test's above: on v1.36 only, to keep CI's budget.
    let minor = c.client.apiserver_version().await.expect("version").minor;
    if minor.trim_end_matches('+').parse::<u32>().unwrap_or(0) < 36 {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED a_keras_3_run_on_jax_restarted_after_a_deleted_worker_resumes on 1.{minor}: run on v1.36"
        );
        return;
    }
    let _claim = Claim::new(&c).await;
    c.run(&["init", "--framework", "keras", "proj"])
        .await
        .success();
    let script = c.dir.path().join("proj/train.py");
    let env = c.write("epochs.env", &format!("EPOCHS={EPOCHS}\n"));
    let t = tag("keras");
    let extra = [
        "--framework",
        "keras",
        "-w",
        "2",
        "--volume",
        "out",
        "-i",
        TF_IMAGE,
        "-e",
        env.to_str().unwrap(),
    ];
    let out = delete_worker_1_in_epoch_3(&c, &t, &script, &extra).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs = [
        log_of(&c, &t, "worker-0").await,
        log_of(&c, &t, "worker-1").await,
    ];
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\nworker-0:\n{}",
        logs[0]
    );
    let restarts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": restart "))
        .collect();
    assert_eq!(restarts.len(), 1, "{stdout}");
    assert!(stdout.contains(&format!("run {t}: Succeeded")), "{stdout}");
    // Progress from Keras 3's own lines: the epochs the second attempt trained.
    assert!(
        stdout.contains(&format!(" of {EPOCHS} epochs seen to end")),
        "{stdout}"
    );
    // The second attempt began after the epochs the first one's backup kept, on both
    // workers, and both trained the same model.
    let first_epoch = |log: &str| {
        log.lines().find_map(|l| {
            let text = l.split_once(" | ").map_or(l, |(_, text)| text);
            text.strip_prefix("Epoch ")?
                .split('/')
                .next()?
                .parse::<u32>()
                .ok()
        })
    };
    let resumed = first_epoch(&logs[0]).unwrap_or_else(|| panic!("no epoch: {}", logs[0]));
    assert!(resumed >= 3, "resumed at epoch {resumed}:\n{}", logs[0]);
    assert_eq!(first_epoch(&logs[1]), Some(resumed), "{}", logs[1]);
    let losses = |log: &str| -> Vec<String> {
        log.lines()
            .filter_map(|l| l.split_once(" - loss: ").map(|(_, v)| v.to_string()))
            .collect()
    };
    assert_eq!(losses(&logs[0]), losses(&logs[1]));
    assert!(logs[0].contains("train.py: model saved to "), "{}", logs[0]);
}
