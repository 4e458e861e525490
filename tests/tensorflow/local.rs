//! The examples on real TensorFlow, as local processes: the commands of README.md and docs/tensorflow.md
//! (`tf-spawner --local ... examples/mnist.py`, `... examples/parameter_server.py`) with a
//! small synthetic data set, a few epochs, and the model saved in the test's temp dir.

use crate::support::{BIN, Output, Tf, epochs, is_keras_file, repo_file, series, task_lines};

/// What `worker` printed, and its epochs' loss and accuracy; panics with the whole output
/// unless it trained `epochs` epochs.
fn trained(out: &Output, worker: &str, count: usize) -> (Vec<f64>, Vec<f64>) {
    let lines = task_lines(&out.stdout, worker);
    let done = epochs(&lines);
    assert_eq!(
        done.len(),
        count,
        "{worker} trained {count} epochs: {out:#?}"
    );
    assert!(
        lines.contains(&format!("Epoch {count}/{count}").as_str()),
        "{worker}: {lines:#?}"
    );
    (
        series(&done, "loss", &lines),
        series(&done, "accuracy", &lines),
    )
}

/// mnist.py with MultiWorkerMirroredStrategy on 2 workers: both train the same model (the
/// all-reduce gives both the same loss and accuracy, epoch by epoch), the loss goes down,
/// the chief (worker 0) saves the model and worker 1's temporary copy is removed.
#[test]
fn mnist_trains_on_two_workers_and_the_chief_saves_the_model() {
    let Some(tf) = Tf::new("mnist") else {
        return;
    };
    let npz = tf.mnist_npz();
    let model_dir = tf.path("model");
    let tmp = tf.path("tmp");
    std::fs::create_dir(&tmp).expect("tmp dir");
    let env = tf.env_file(
        "mnist.env",
        &[
            ("MNIST_NPZ", npz.to_str().unwrap()),
            ("MODEL_DIR", model_dir.to_str().unwrap()),
            ("EPOCHS", "3"),
            ("TMPDIR", tmp.to_str().unwrap()),
        ],
    );
    let out = tf.local(&[
        "-t",
        "mnist",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        &repo_file("examples/mnist.py"),
    ]);
    out.success()
        .stdout_has("run mnist (local): Succeeded")
        .stdout_has("worker-0 | worker-0: 2 replicas in sync, global batch 128, chief=True")
        .stdout_has("worker-1 | worker-1: 2 replicas in sync, global batch 128, chief=False");

    let (loss, accuracy) = trained(&out, "worker-0", 3);
    assert_eq!(
        (loss.clone(), accuracy.clone()),
        trained(&out, "worker-1", 3),
        "one model: {out:#?}"
    );
    assert!(loss[2] < loss[0], "the loss went down: {loss:?}: {out:#?}");
    assert!(accuracy[2] > 0.2, "better than chance: {accuracy:?}");
    // The report after the verdict: what the deciding task's Keras lines said.
    let report = out
        .stdout
        .lines()
        .find(|l| l.starts_with("training: "))
        .unwrap_or_else(|| panic!("no training report: {out:#?}"));
    assert!(
        report.starts_with("training: 3 of 3 epochs seen to end, "),
        "{report}"
    );
    let final_metrics = report.split_once("; final ").expect("final metrics").1;
    let metric = |name: &str| -> f64 {
        final_metrics
            .split(", ")
            .find_map(|m| m.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {report}"))
    };
    assert_eq!((metric("loss"), metric("accuracy")), (loss[2], accuracy[2]));
    for worker in ["worker-0", "worker-1"] {
        let prefix = format!("{worker}: test loss ");
        assert!(
            task_lines(&out.stdout, worker)
                .iter()
                .any(|l| l.starts_with(&prefix) && l.contains(", test accuracy ")),
            "{worker} evaluated: {out:#?}"
        );
    }

    let saved = model_dir.join("mnist.keras");
    out.stdout_has(&format!(
        "worker-0 | worker-0: model saved to {}",
        saved.display()
    ))
    .stdout_lacks("worker-1: model saved");
    assert!(
        is_keras_file(&saved),
        "{} is a .keras model",
        saved.display()
    );
    // (TensorFlow's autograph leaves a __pycache__ there too.)
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .expect("tmp dir")
        .map(|e| {
            e.expect("tmp entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with("mnist-"))
        .collect();
    assert!(left.is_empty(), "worker-1's copy is removed: {left:?}");
}

/// parameter_server.py: the chief coordinates 2 workers and 1 parameter server, which
/// holds the variables; it trains, saves the model and exits 0, which decides the run;
/// the workers and the parameter server, which serve until stopped, exit on the SIGTERM
/// tf-spawner then sends. Without MODEL_DIR the model lands in the run's output folder
/// (`$TF_SPAWNER_OUTPUT_DIR/model`), as mnist.py's does.
#[test]
fn parameter_server_strategy_trains_with_a_chief_a_ps_and_two_workers() {
    let Some(tf) = Tf::new("parameter_server") else {
        return;
    };
    let model_dir = tf.path("tf-spawner-output/ps/model");
    let env = tf.env_file("ps.env", &[("EPOCHS", "3"), ("STEPS_PER_EPOCH", "10")]);
    let out = tf.local(&[
        "-t",
        "ps",
        "--strategy",
        "parameter-server",
        "--ps",
        "1",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        &repo_file("examples/parameter_server.py"),
    ]);
    out.success()
        .stdout_has("chief-0 exited 0: Succeeded; stopping ps-0, worker-0, worker-1")
        .stdout_has("run ps (local): Succeeded")
        .stdout_has("chief-0  | chief: variables on /job:ps/replica:0/task:0/device:CPU:0");

    chief_trained_and_saved(&out, &model_dir.join("parameter_server.keras"));
    for task in ["ps-0", "worker-0", "worker-1"] {
        let lines = task_lines(&out.stdout, task);
        let serving = format!("{task}: serving the coordinator at grpc://127.0.0.1:");
        assert!(lines.iter().any(|l| l.starts_with(&serving)), "{lines:#?}");
        assert!(
            lines.contains(&format!("{task}: stopping on SIGTERM").as_str()),
            "{task} stopped on tf-spawner's SIGTERM: {lines:#?}"
        );
    }
}

/// What the coordinator of parameter_server.py printed and wrote: 3 epochs of 10 steps
/// (loss and mae each), the loss going down, its summary line, the model at `saved`.
fn chief_trained_and_saved(out: &Output, saved: &std::path::Path) {
    let chief = task_lines(&out.stdout, "chief-0");
    let done = epochs(&chief);
    assert_eq!(done.len(), 3, "3 epochs: {out:#?}");
    assert!(done.iter().all(|e| e.contains_key("mae")), "{chief:#?}");
    let loss = series(&done, "loss", &chief);
    assert!(loss[2] < loss[0], "the loss went down: {loss:?}");
    let summary = format!(
        "chief: trained 3 epochs of 10 steps with 1 ps; loss {}",
        loss.iter()
            .map(|l| format!("{l:.4}"))
            .collect::<Vec<_>>()
            .join(" -> ")
    );
    assert!(chief.contains(&summary.as_str()), "{summary:?}: {chief:#?}");

    assert!(
        chief.contains(&format!("chief: model saved to {}", saved.display()).as_str()),
        "{chief:#?}"
    );
    assert!(
        is_keras_file(saved),
        "{} is a .keras model",
        saved.display()
    );
}

/// A worker that fails in the middle of training (after its first epoch, through the
/// example's TF_SPAWNER_FAIL_TASK): the run fails with exit 3, naming the worker and its
/// exit code, and its error is in what it printed; no model is saved.
#[test]
fn a_worker_failing_mid_training_fails_the_run() {
    let Some(tf) = Tf::new("failing_worker") else {
        return;
    };
    let npz = tf.mnist_npz();
    let model_dir = tf.path("model");
    let env = tf.env_file(
        "fail.env",
        &[
            ("MNIST_NPZ", npz.to_str().unwrap()),
            ("MODEL_DIR", model_dir.to_str().unwrap()),
            ("EPOCHS", "3"),
            ("TF_SPAWNER_FAIL_TASK", "worker-1"),
        ],
    );
    let out = tf.local(&[
        "-t",
        "failing",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        &repo_file("examples/mnist.py"),
    ]);
    out.failure(3)
        .stderr_has("error: local run 'failing' failed: worker-1 exited with code 1");
    out.stdout_has("local run failing: worker-1 exited with code 1: Failed");
    let lines = task_lines(&out.stdout, "worker-1");
    assert_eq!(epochs(&lines).len(), 1, "one epoch trained: {out:#?}");
    assert!(
        lines.contains(
            &"RequestedFailure: worker-1: failing after epoch 1, as TF_SPAWNER_FAIL_TASK asks"
        ),
        "{out:#?}"
    );
    assert!(!model_dir.join("mnist.keras").exists(), "no model saved");
}

/// The lines Keras printed for `task` that start an epoch (`Epoch K/N`).
fn epoch_starts<'a>(out: &'a Output, task: &str) -> Vec<&'a str> {
    task_lines(&out.stdout, task)
        .into_iter()
        .filter(|l| l.starts_with("Epoch "))
        .collect()
}

/// mnist.py resumes with BackupAndRestore in $TF_SPAWNER_OUTPUT_DIR/backup: a first run
/// whose worker 1 fails after 2 of 4 epochs (exit 42, as TF_SPAWNER_FAIL_CODE asks) leaves
/// the chief's backup on the run's directory; the same command again (same tag, so the same
/// output directory, without the failure) restores it and trains epochs 3 and 4 only, from
/// the trained weights (its first loss is below the first run's first), saves the model,
/// and the backups are deleted. Each start backs up into a folder of its own (`gen-0`, then
/// `gen-1` seeded from it: see docs/preemption.md, "A partitioned node").
#[test]
fn mnist_resumes_from_its_last_epoch_after_a_failed_run() {
    let Some(tf) = Tf::new("resume") else {
        return;
    };
    let npz = tf.mnist_npz();
    let data = ("MNIST_NPZ", npz.to_str().unwrap());
    let failing = tf.env_file(
        "fail.env",
        &[
            data,
            ("EPOCHS", "4"),
            ("TF_SPAWNER_FAIL_TASK", "worker-1"),
            ("TF_SPAWNER_FAIL_AFTER", "2"),
            ("TF_SPAWNER_FAIL_CODE", "42"),
        ],
    );
    let script = repo_file("examples/mnist.py");
    let run = |env: &std::path::Path| {
        tf.local(&[
            "-t",
            "resume",
            "-w",
            "2",
            "-e",
            env.to_str().unwrap(),
            &script,
        ])
    };
    let first = run(&failing);
    first
        .failure(3)
        .stderr_has("error: local run 'resume' failed: worker-1 exited with code 42");
    assert_eq!(
        epoch_starts(&first, "worker-1"),
        ["Epoch 1/4", "Epoch 2/4"],
        "{first:#?}"
    );
    let output = tf.path("tf-spawner-output/resume");
    let backup = output.join("backup");
    assert!(
        backup.join("gen-0/chief/checkpoint").is_file(),
        "the chief's backup is on the run's directory, in the first start's folder: {first:#?}"
    );
    let first_loss = series(
        &epochs(&task_lines(&first.stdout, "worker-0")),
        "loss",
        &task_lines(&first.stdout, "worker-0"),
    );

    let env = tf.env_file("resume.env", &[data, ("EPOCHS", "4")]);
    let second = run(&env);
    second.success().stdout_has("run resume (local): Succeeded");
    // The second start backs up into a folder of its own, seeded from the first's.
    second.stdout_has("worker-0 | worker-0: backup gen-1 seeded from gen-0's last complete backup");
    for worker in ["worker-0", "worker-1"] {
        second.stdout_has(&format!(
            "{worker} | {worker}: resuming from epoch 3 of 4 (backup in {})",
            backup.display()
        ));
        assert_eq!(
            epoch_starts(&second, worker),
            ["Epoch 3/4", "Epoch 4/4"],
            "{worker} trained the last 2 epochs only: {second:#?}"
        );
    }
    let lines = task_lines(&second.stdout, "worker-0");
    let resumed_loss = series(&epochs(&lines), "loss", &lines);
    assert_eq!(resumed_loss.len(), 2, "{second:#?}");
    assert!(
        resumed_loss[0] < first_loss[0],
        "the resumed model is the trained one, not a new one: {resumed_loss:?} vs {first_loss:?}"
    );
    assert!(is_keras_file(&output.join("model").join("mnist.keras")));
    let left: Vec<_> = std::fs::read_dir(&backup)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the backups were deleted when training completed: {left:?}"
    );
}

/// SIGTERM mid-training (to tf-spawner --local, which passes it to every task, as the
/// kubelet does to a deleted or preempted pod): mnist.py ends at once with its own line,
/// despite TensorFlow's SIGTERM handler, so no task needs the SIGKILL that follows 5 s
/// later; the same command again resumes after the last epoch the backup holds (the 2nd
/// at least: the chief had begun the 3rd when the signal was sent) and trains to the end.
#[test]
fn mnist_stopped_by_sigterm_ends_at_once_and_resumes() {
    use std::io::{BufRead, BufReader, Read};
    let Some(tf) = Tf::new("sigterm") else {
        return;
    };
    let npz = tf.mnist_npz();
    let env = tf.env_file(
        "long.env",
        &[("MNIST_NPZ", npz.to_str().unwrap()), ("EPOCHS", "30")],
    );
    let script = repo_file("examples/mnist.py");
    let args = [
        "-t",
        "sigterm",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        &script,
    ];
    let mut child = tf.start_local(&args);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    loop {
        let Some(line) = lines.next() else {
            panic!("the run ended before worker 0's third epoch: {stdout}");
        };
        let line = line.expect("a line");
        stdout.push_str(&line);
        stdout.push('\n');
        if line == "worker-0 | Epoch 3/30" {
            break;
        }
    }
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    for line in lines {
        stdout.push_str(&line.expect("a line"));
        stdout.push('\n');
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    let first = Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    };
    first.failure(143).stdout_lacks("sending SIGKILL");
    for worker in ["worker-0", "worker-1"] {
        assert!(
            task_lines(&first.stdout, worker).contains(
                &"mnist.py: SIGTERM: stopping now; a new run resumes from the last backup"
            ),
            "{worker}: {first:#?}"
        );
    }
    let chief = task_lines(&first.stdout, "worker-0");
    let completed = epochs(&chief).len();

    let second = tf.local(&args);
    second
        .success()
        .stdout_has("run sigterm (local): Succeeded");
    let starts = epoch_starts(&second, "worker-0");
    let resumed: usize = starts[0]
        .strip_prefix("Epoch ")
        .and_then(|s| s.strip_suffix("/30"))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{second:#?}"));
    assert!(
        (3..=completed + 1).contains(&resumed),
        "resumed at epoch {resumed}, after {completed} completed: {second:#?}"
    );
    second.stdout_has(&format!(
        "worker-0 | worker-0: resuming from epoch {resumed} of 30"
    ));
    assert_eq!(starts.len(), 30 - resumed + 1, "{second:#?}");
    assert_eq!(starts.last(), Some(&"Epoch 30/30"));
}

/// Keras 3 (TF_USE_LEGACY_KERAS=0 on TensorFlow >= 2.16), whose Model.fit fails under
/// MultiWorkerMirroredStrategy: every worker refuses at once with one line saying why and
/// what to do, not a traceback.
#[test]
fn mnist_refuses_keras_3_in_one_line() {
    let Some(tf) = Tf::new("keras_3") else {
        return;
    };
    let env = tf.env_file("keras3.env", &[("TF_USE_LEGACY_KERAS", "0")]);
    let out = tf.local(&[
        "-t",
        "keras3",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        &repo_file("examples/mnist.py"),
    ]);
    out.failure(3);
    out.stdout_lacks("Traceback").stdout_lacks("PerReplica");
    // The first worker to refuse ends the run (the other may be stopped before it does).
    let worker = ["worker-0", "worker-1"]
        .into_iter()
        .find(|w| {
            out.stderr
                .contains(&format!("failed: {w} exited with code 1"))
        })
        .unwrap_or_else(|| panic!("a worker exited 1: {out:#?}"));
    let lines = task_lines(&out.stdout, worker);
    let refusal: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("mnist.py: "))
        .collect();
    assert_eq!(refusal.len(), 1, "one line: {out:#?}");
    for needle in [
        "mnist.py: TensorFlow 2.",
        "Model.fit under MultiWorkerMirroredStrategy needs Keras 2, but TF_USE_LEGACY_KERAS=0 selects Keras 3",
        "leave TF_USE_LEGACY_KERAS unset or 1, with pip install tf-keras~=2.",
    ] {
        assert!(refusal[0].contains(needle), "{needle:?} in {refusal:?}");
    }
}

/// `tf-spawner sweep --local` of two learning rates (docs/experiments.md): mnist.py runs
/// once per rate, one after the other, each with `--lr` filled in and its parameters in
/// its own folder.
#[test]
fn a_local_sweep_trains_mnist_once_per_learning_rate() {
    let Some(tf) = Tf::new("sweep") else {
        return;
    };
    let npz = tf.mnist_npz();
    let env = tf.env_file(
        "mnist.env",
        &[("MNIST_NPZ", npz.to_str().unwrap()), ("EPOCHS", "2")],
    );
    let script = repo_file("examples/mnist.py");
    let out = tf.sweep(&[
        "-t",
        "lrs",
        "-w",
        "1",
        "-e",
        env.to_str().unwrap(),
        "--param",
        "lr=0.01,0.0001",
        &script,
        "--",
        "--lr",
        "{lr}",
    ]);
    out.success()
        .stdout_has("local experiment lrs: 2 runs, 1 at a time")
        .stdout_has("local run lrs-1 (lr=0.01)")
        .stdout_has("run lrs-2 (local): Succeeded")
        .stdout_has("local experiment lrs: all 2 runs succeeded");
    for (k, lr) in [(1, "0.01"), (2, "0.0001")] {
        let dir = tf.path(&format!("tf-spawner-output/lrs-{k}"));
        let params = std::fs::read_to_string(dir.join("params.json")).unwrap();
        assert_eq!(params, format!("{{\"lr\":\"{lr}\"}}"));
        assert!(
            is_keras_file(&dir.join("model").join("mnist.keras")),
            "{out:#?}"
        );
    }
}

/// `--framework keras` (src/framework.rs): a Keras 3 script on JAX (the venv's pinned
/// keras and jax) trains data-parallel on two local processes; both print the same losses
/// (the gradients are averaged at every step) and the run's progress is read from Keras
/// 3's own lines.
#[test]
fn keras_3_on_jax_trains_on_two_workers_and_they_agree() {
    let Some(tf) = Tf::new("keras_jax") else {
        return;
    };
    let out = tf.local(&[
        "-t",
        "kj",
        "--framework",
        "keras",
        "-w",
        "2",
        &repo_file("examples/keras_jax.py"),
    ]);
    out.success().stdout_has("3 of 3 epochs seen to end");
    let losses: Vec<&str> = ["worker-0", "worker-1"]
        .into_iter()
        .map(|w| {
            let lines = task_lines(&out.stdout, w);
            let line = lines
                .iter()
                .find(|l| l.starts_with("keras_jax.py: "))
                .unwrap_or_else(|| panic!("{w} printed its losses: {out:#?}"));
            line.split_once("losses ").expect("losses").1
        })
        .collect();
    assert_eq!(losses[0], losses[1], "{out:#?}");
}

/// A Keras 3 sweep (issue 62 item 2): `sweep --local --framework keras` runs the Keras 3
/// script once per batch size, each on two processes, reads Keras 3's progress lines for
/// its metrics, and `compare --local` reads them back: both runs' final losses, the best
/// named.
#[test]
fn a_keras_3_sweep_runs_once_per_batch_size_and_compare_reads_its_losses() {
    let Some(tf) = Tf::new("keras_sweep") else {
        return;
    };
    let out = tf.sweep(&[
        "-t",
        "ks",
        "--framework",
        "keras",
        "-w",
        "2",
        "--param",
        "batch=16,32",
        &repo_file("examples/keras_jax.py"),
        "--",
        "--batch-size",
        "{batch}",
    ]);
    out.success()
        .stdout_has("run ks-2 (local): Succeeded")
        .stdout_has("local experiment ks: all 2 runs succeeded; best ks-");
    let compared = std::process::Command::new(BIN)
        .args(["compare", "ks", "--local", "--no-chart"])
        .env_clear()
        .env("HOME", tf.path(""))
        .current_dir(tf.path(""))
        .output()
        .expect("run compare");
    let table = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.status.success(), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("Succeeded")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    for row in rows {
        // TAG, batch, VERDICT, TIME, RESTARTS, EPOCHS, loss, BEST loss.
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(
            cells.contains(&"Succeeded") && cells.contains(&"3/3"),
            "{table}"
        );
        let loss: f64 = cells[cells.len() - 2].parse().expect(row);
        assert!(loss.is_finite() && loss > 0.0, "{table}");
    }
    assert!(table.contains("best: ks-"), "{table}");
}
