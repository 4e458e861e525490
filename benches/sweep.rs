//! A sweep's wall time against the ideal: (runs ÷ parallel) × one run's. The API test
//! server plays the cluster, and a thread of this bench its kubelet: every pod exits 0
//! `SWEEP_RUN_SECS` (default 3) after its creation, so every run lasts that long once
//! created. The bench times a sweep of one run, then of `SWEEP_RUNS` (default 8) runs
//! `SWEEP_PARALLEL` (default 2) at a time, and prints the ratio of the second to
//! (runs ÷ parallel) × the first: what the sweep adds between runs (its creates, its
//! follows, starting the next run) is the ratio's excess over 1.
//!
//! Run with `cargo bench --bench sweep` (a plain binary, `harness = false`).

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube_testserver::TestServer;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
const NS: &str = "default";

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every pod exits 0 `run` after this thread first saw it.
fn kubelet(server: Arc<TestServer>, run: Duration, stop: Arc<AtomicBool>) {
    let mut seen: HashMap<String, Instant> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        for pod in server.list("pods", NS) {
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let uid = pod["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let first = *seen.entry(uid).or_insert_with(Instant::now);
            let done = pod["status"]["phase"] == "Succeeded";
            if !done && first.elapsed() >= run {
                server.bind_pod(NS, &name, "node-a");
                server.set_pod_status(
                    NS,
                    &name,
                    json!({"phase": "Succeeded", "containerStatuses": [{
                        "name": "tensorflow", "ready": false, "restartCount": 0,
                        "image": "tensorflow/tensorflow:2.15.0", "imageID": "",
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                    }]}),
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sweep(
    kubeconfig: &str,
    dir: &std::path::Path,
    name: &str,
    runs: u64,
    parallel: u64,
) -> Duration {
    let values: Vec<String> = (1..=runs).map(|i| i.to_string()).collect();
    let start = Instant::now();
    let out = Command::new(BIN)
        .current_dir(dir)
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .args([
            "sweep",
            "-t",
            name,
            "-w",
            "2",
            "--parallel",
            &parallel.to_string(),
        ])
        .args(["--param", &format!("x={}", values.join(","))])
        .arg("train.py")
        .output()
        .expect("run tf-spawner");
    let wall = start.elapsed();
    assert!(
        out.status.success(),
        "sweep {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}

fn main() {
    let run = Duration::from_secs(env_number("SWEEP_RUN_SECS", 3));
    let runs = env_number("SWEEP_RUNS", 8);
    let parallel = env_number("SWEEP_PARALLEL", 2);
    let server = Arc::new(TestServer::start());
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = server.write_kubeconfig(dir.path(), "admin", None);
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path").to_string();
    std::fs::write(dir.path().join("train.py"), "print('hi')\n").expect("script");
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (server, stop) = (server.clone(), stop.clone());
        std::thread::spawn(move || kubelet(server, run, stop))
    };

    let one = sweep(&kubeconfig, dir.path(), "one", 1, 1);
    let many = sweep(&kubeconfig, dir.path(), "many", runs, parallel);
    stop.store(true, Ordering::Relaxed);
    let _ = thread.join();

    let ideal = one.as_secs_f64() * runs.div_ceil(parallel) as f64;
    println!("each run lasts {run:?} once created (2 workers)");
    println!(
        "one run:                       {:>7.2} s",
        one.as_secs_f64()
    );
    println!(
        "{runs} runs, {parallel} at a time:          {:>7.2} s",
        many.as_secs_f64()
    );
    println!("ideal (runs ÷ parallel) × one: {ideal:>7.2} s");
    println!(
        "ratio:                         {:>7.3}",
        many.as_secs_f64() / ideal
    );
}
