//! A task lost mid-training: one worker's process SIGKILLed under `tf-spawner --local`,
//! as a pod's container is killed or its node lost. The run fails at once, naming the
//! killed worker, and the survivor is stopped, not left to the abort its framework
//! would come to by itself (JAX's: exit 134 a heartbeat timeout later, ~100 s).

use std::io::{BufRead, BufReader, Read};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::{Output, Tf, repo_file};

/// Longer than the run can take once the worker is killed: past it the test fails (a
/// hang), it measures nothing.
const BOUND: Duration = Duration::from_secs(120);

/// The process of `child` (tf-spawner) that runs with `var` in its environment: the task
/// started with it.
fn task_process(child: &Child, var: &str) -> i32 {
    let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).expect("/proc");
    let children: Vec<i32> = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    children
        .into_iter()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == var.as_bytes()))
        })
        .unwrap_or_else(|| panic!("no task of tf-spawner with {var}"))
}

/// `child`'s end, within [`BOUND`] (else it is killed and the test fails), with what it
/// printed: `stdout` read so far, then the rest of `lines`.
fn ended<L>(mut child: Child, mut stdout: String, lines: L) -> Output
where
    L: Iterator<Item = std::io::Result<String>> + Send + 'static,
{
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let since = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if since.elapsed() > BOUND {
            let _ = child.kill();
            panic!("tf-spawner still running {BOUND:?} after the kill: {stdout}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for line in rest.join().expect("the reader") {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// Keras 3 on JAX, two workers; worker 1's process SIGKILLed in its 3rd epoch: the run
/// fails (exit 3) naming worker 1 and its signal, and worker 0 is stopped by tf-spawner
/// before JAX aborts it (by the SIGKILL 5 s after its SIGTERM: XLA's preemption notifier
/// catches SIGTERM).
#[test]
fn a_killed_keras_worker_fails_the_run_naming_it_and_the_survivor_is_stopped() {
    let Some(tf) = Tf::new("killed_keras_worker") else {
        return;
    };
    let script = repo_file("examples/keras_jax.py");
    let args = ["-t", "kk", "--framework", "keras", "-w", "2", &script];
    let mut child = tf.start_local(&[&args[..], &["--", "--epochs", "100000"]].concat());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("the run ended before worker 1's third epoch: {stdout}");
        };
        stdout.push_str(&line);
        stdout.push('\n');
        if line == "worker-1 | Epoch 3/100000" {
            break;
        }
    }
    let worker_1 = task_process(&child, "KERAS_DISTRIBUTION_PROCESS_ID=1");
    // SAFETY: kill(2) on a process tf-spawner started for this test; no memory is touched.
    assert_eq!(unsafe { libc::kill(worker_1, libc::SIGKILL) }, 0);
    let out = ended(child, stdout, lines);
    out.failure(3)
        .stderr_has("error: local run 'kk' failed: worker-1 was killed by signal 9 (SIGKILL); stopped worker-0")
        .stdout_has("local run kk: worker-1 was killed by signal 9 (SIGKILL): Failed; stopping worker-0")
        .stdout_has("local run kk: worker-0 still running 5s after SIGTERM: sending SIGKILL")
        .stdout_lacks("JAX distributed service detected fatal errors");
}
