//! Issue 45: the scripts `tf-spawner init` writes train as written, in the project it
//! makes (its tf-spawner.yaml ships the directory with `dir: .`), and the custom loop's
//! run stopped by SIGTERM resumes at its step.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Command;

use crate::support::{BIN, Output, Tf, epochs, is_keras_file, task_lines};

/// `tf-spawner init ARGS` in the test's temp dir (its HOME too).
fn init(tf: &Tf, args: &[&str]) {
    let out = Command::new(BIN)
        .arg("init")
        .args(args)
        .current_dir(tf.dir.path())
        .env_clear()
        .env("HOME", tf.dir.path())
        .output()
        .expect("run tf-spawner init");
    assert!(out.status.success(), "{out:?}");
}

/// The model the chief saved in the local run's output directory (`--local`'s
/// `$TF_SPAWNER_OUTPUT_DIR`, tf-spawner-output/TAG).
fn saved_model(tf: &Tf, tag: &str) -> std::path::PathBuf {
    tf.path(&format!("tf-spawner-output/{tag}/model/model.keras"))
}

#[test]
fn the_generated_keras_script_trains_on_two_workers() {
    let Some(tf) = Tf::new("init keras") else {
        return;
    };
    init(&tf, &[]);
    // Its own arguments after `--`, as the README's quick start passes them (3 epochs
    // without).
    let args = [
        "-t", "keras", "-w", "2", "train.py", "--", "--epochs", "2", "--lr", "0.01",
    ];
    let out = tf.local(&args);
    out.success().stdout_has("run keras (local): Succeeded");
    for worker in ["worker-0", "worker-1"] {
        let lines = task_lines(&out.stdout, worker);
        assert_eq!(epochs(&lines).len(), 2, "{worker}: {out:#?}");
    }
    let model = saved_model(&tf, "keras");
    out.stdout_has(&format!(
        "worker-0 | train.py: model saved to {}",
        model.display()
    ));
    assert!(is_keras_file(&model), "{}", model.display());
    // Keras deleted the backup once training completed: a new run starts over.
    assert!(!tf.path("tf-spawner-output/keras/backup/chief").exists());
}

/// Runs `tf-spawner --local ARGS` until a line of its output starts with `until`, then
/// sends it SIGTERM (as a deleted pod's tasks get) and returns what it printed to its end.
fn sigterm_after(tf: &Tf, args: &[&str], until: &str) -> Output {
    let mut child = tf.start_local(args);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    loop {
        let Some(line) = lines.next() else {
            panic!("the run ended before {until:?}: {stdout}");
        };
        let line = line.expect("a line");
        stdout += &line;
        stdout.push('\n');
        if line.starts_with(until) {
            break;
        }
    }
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    for line in lines {
        stdout += &line.expect("a line");
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
    Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// The `tf-spawner:` progress lines of `task`: (epoch, step) of each.
fn progress(stdout: &str, task: &str) -> Vec<(u32, u32)> {
    task_lines(stdout, task)
        .iter()
        .filter_map(|l| l.strip_prefix("tf-spawner: epoch="))
        .map(|rest| {
            let mut words = rest.split(' ');
            let epoch = words.next().and_then(|e| e.split('/').next()?.parse().ok());
            let step = words
                .next()
                .and_then(|s| s.strip_prefix("step=")?.split('/').next()?.parse().ok());
            (epoch.unwrap_or(0), step.unwrap_or(0))
        })
        .collect()
}

/// `--custom-loop`: trains, prints the progress line `wait` and `status` read; SIGTERM
/// (as a deleted pod gets) makes every worker checkpoint at the same step and exit 42,
/// and the same command again resumes at that step and saves the model.
#[test]
fn the_generated_custom_loop_checkpoints_on_sigterm_and_resumes_at_its_step() {
    let Some(tf) = Tf::new("init custom loop") else {
        return;
    };
    init(&tf, &["--custom-loop"]);
    let long = tf.env_file("long.env", &[("EPOCHS", "30")]);
    let args = [
        "-t",
        "cl",
        "-w",
        "2",
        "-e",
        long.to_str().unwrap(),
        "train.py",
    ];
    let first = sigterm_after(&tf, &args, "worker-0 | tf-spawner: epoch=2/30 step=10/20");
    assert_ne!(first.code, 0, "{first:#?}");
    // Both ended on their own (exit 42 after the checkpoint), not by the SIGKILL that
    // follows 5 s later.
    first.stdout_lacks("sending SIGKILL");
    let checkpoint = tf.path("tf-spawner-output/cl/checkpoint/chief/checkpoint");
    assert!(checkpoint.is_file(), "{first:#?}");
    let (epoch, step) = *progress(&first.stdout, "worker-0").last().unwrap();
    let reached = (epoch - 1) * 20 + step;

    // The same command, with fewer epochs to go: it goes on from the step saved.
    let short = tf.env_file("long.env", &[("EPOCHS", "4")]);
    assert_eq!(short, long);
    let second = tf.local(&args);
    second.success().stdout_has("run cl (local): Succeeded");
    let resumed = task_lines(&second.stdout, "worker-0")
        .iter()
        .find_map(|l| l.strip_prefix("train.py: resuming at step "))
        .and_then(|rest| rest.split(' ').next()?.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("no resume line: {second:#?}"));
    assert!(
        (reached..reached + 10).contains(&resumed),
        "resumed at step {resumed}; the first run had printed step {reached}: {second:#?}"
    );
    second.stdout_has(&format!(
        "worker-1 | train.py: resuming at step {resumed} of 80"
    ));
    let seen = progress(&second.stdout, "worker-0");
    let first_seen = (seen[0].0 - 1) * 20 + seen[0].1;
    assert!(
        first_seen > resumed && first_seen <= resumed + 5,
        "{seen:?} after {resumed}"
    );
    assert_eq!(seen.last(), Some(&(4, 20)), "{second:#?}");
    assert!(is_keras_file(&saved_model(&tf, "cl")));
    assert!(
        !Path::new(&tf.path("tf-spawner-output/cl/checkpoint")).exists(),
        "the finished run removed its checkpoint"
    );
}

/// `init --framework keras` (issue 62): the project's settings say `framework: keras`, so
/// `tf-spawner --local -w 2 train.py` in it trains Keras 3 on JAX on two processes, which
/// agree; SIGTERM (as a deleted pod gets) ends both at once (JAX alone would train on),
/// and the same command again resumes from the epoch the backup kept and saves the model.
#[test]
fn the_generated_keras_3_script_trains_on_jax_and_resumes_after_sigterm() {
    let Some(tf) = Tf::new("init --framework keras") else {
        return;
    };
    init(&tf, &["--framework", "keras"]);
    let long = tf.env_file("long.env", &[("EPOCHS", "40"), ("STEPS_PER_EPOCH", "20")]);
    let args = [
        "-t",
        "k3",
        "-w",
        "2",
        "-e",
        long.to_str().unwrap(),
        "train.py",
    ];
    let first = sigterm_after(&tf, &args, "worker-0 | Epoch 3/40");
    assert_ne!(first.code, 0, "{first:#?}");
    let stdout = first.stdout;
    assert!(
        stdout.contains("worker-0 | train.py: SIGTERM: stopping"),
        "{stdout}"
    );
    assert!(!stdout.contains("sending SIGKILL"), "{stdout}");
    let backup = tf.path("tf-spawner-output/k3/backup/worker-0");
    assert!(backup.is_dir(), "{stdout}");

    // The same command with fewer epochs to go: it starts after the epochs kept.
    let short = tf.env_file("long.env", &[("EPOCHS", "5"), ("STEPS_PER_EPOCH", "20")]);
    assert_eq!(short, long);
    let second = tf.local(&args);
    second.success().stdout_has("run k3 (local): Succeeded");
    let first_epoch = |w: &str| {
        task_lines(&second.stdout, w)
            .iter()
            .find_map(|l| {
                l.strip_prefix("Epoch ")?
                    .split('/')
                    .next()?
                    .parse::<u32>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{w} began no epoch: {second:#?}"))
    };
    let resumed = first_epoch("worker-0");
    assert!(resumed >= 3, "resumed at epoch {resumed}: {second:#?}");
    assert_eq!(first_epoch("worker-1"), resumed, "{second:#?}");
    let losses = |w: &str| -> Vec<String> {
        task_lines(&second.stdout, w)
            .iter()
            .filter_map(|l| l.split_once(" - loss: ").map(|(_, v)| v.to_string()))
            .collect()
    };
    assert_eq!(losses("worker-0"), losses("worker-1"), "{second:#?}");
    let model = saved_model(&tf, "k3");
    second.stdout_has(&format!(
        "worker-0 | train.py: model saved to {}",
        model.display()
    ));
    assert!(is_keras_file(&model), "{}", model.display());
}
