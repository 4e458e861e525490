//! `tf-spawner tensorboard --local`: the venv's own `tensorboard` (tools/tensorflow pins it)
//! serves the summaries a `--local` mnist run's chief wrote under `tf-spawner-output/TAG`,
//! as TensorBoard's HTTP API lists them, until Ctrl-C.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{BIN, Tf, repo_file};

/// One HTTP/1.0 GET of `path` on 127.0.0.1:`port`: the body as JSON, if the answer was a
/// 200 with a JSON body.
fn get_json(port: u16, path: &str) -> Option<serde_json::Value> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .ok()?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    if !head.lines().next()?.contains(" 200 ") {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// The runs and the logs/train run's scalar tags TensorBoard serves on `port`, once it has
/// loaded them (within two minutes).
fn served_summaries(port: u16) -> (serde_json::Value, Vec<String>) {
    let start = Instant::now();
    loop {
        let runs = get_json(port, "/data/runs");
        let tags = get_json(port, "/data/plugin/scalars/tags");
        let train = tags.as_ref().and_then(|t| t.get("logs/train")?.as_object());
        if let (Some(runs), Some(train)) = (runs.clone(), train) {
            return (runs, train.keys().cloned().collect());
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "TensorBoard did not list logs/train within 120 s: runs {runs:?}, tags {tags:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Starts `tf-spawner tensorboard --local -t tb` in the test's dir, with the venv's `bin/`
/// first on PATH (its `tensorboard`); the child and the port of the URL it printed.
fn start_tensorboard_local(tf: &Tf) -> (Child, u16) {
    // `tensorboard` from PATH: the venv's bin/ first.
    let bin = tf.python.parent().expect("the venv's bin/");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["tensorboard", "--local", "-t", "tb"])
        .env_clear()
        .env("PATH", path)
        .env("HOME", tf.dir.path())
        .current_dir(tf.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tf-spawner tensorboard --local");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .strip_prefix("TensorBoard: http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the URL line: {line:?}"));
    assert!(
        line.contains("tf-spawner-output/tb; Ctrl-C to stop"),
        "{line}"
    );
    (child, port)
}

#[test]
fn tensorboard_local_serves_the_summaries_of_a_local_mnist_run() {
    let Some(tf) = Tf::new("tensorboard_local") else {
        return;
    };
    let npz = tf.mnist_npz();
    let env = tf.env_file(
        "mnist.env",
        &[
            ("MNIST_NPZ", npz.to_str().unwrap()),
            ("EPOCHS", "2"),
            ("STEPS_PER_EPOCH", "4"),
        ],
    );
    let mnist = repo_file("examples/mnist.py");
    let out = tf.local(&["-t", "tb", "-w", "1", "-e", env.to_str().unwrap(), &mnist]);
    out.success().stdout_has("run tb (local): Succeeded");
    let train = tf.path("tf-spawner-output/tb/logs/train");
    assert!(
        train.is_dir(),
        "the chief's summaries in {}",
        train.display()
    );

    let (mut child, port) = start_tensorboard_local(&tf);

    let (runs, tags) = served_summaries(port);
    assert_eq!(
        runs,
        serde_json::json!(["logs/train"]),
        "the chief's one run"
    );
    for tag in ["epoch_loss", "epoch_accuracy"] {
        assert!(tags.iter().any(|t| t == tag), "{tag} in {tags:?}");
    }

    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "tensorboard stopped with tf-spawner"
    );
}
