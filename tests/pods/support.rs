//! Plumbing of the running-pods suite: the one-node cluster named by
//! `TF_SPAWNER_PODS_KUBECONFIG` (its admin kubeconfig, as `tools/one-node/start.sh`
//! prints it), the binary run as a user would run it, and an admin client to read what
//! the cluster did.
//!
//! Every test gets its own namespace, deleted (with whatever still runs there) when the
//! [`Cluster`] is dropped, also when the test panics.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use tempfile::TempDir;

/// The entrypoint of the tests that stop a run in the middle of its training: synthetic
/// MNIST in the pod, then the example (its backup in the run's volume when the test
/// gives one) for `epochs` epochs of 8 steps. Only the first attempt must outlast what
/// the test does to it (a deleted pod, a lost node), so only it computes on batches of
/// 1,024 a replica (about 5 s an epoch on 2 cores, ~10 times the example's 64); a later
/// attempt, resumed from the backup, trains its remaining epochs at the example's pace.
/// (The batch may change across a resume; the steps of an epoch may not: Keras then
/// resumes into an empty epoch and fails.)
pub fn mnist_entrypoint(epochs: u32) -> String {
    format!(
        r#"set -e
python -c "
import numpy as np
r = np.random.default_rng(0)
x = lambda n: r.integers(0, 255, (n, 28, 28), dtype=np.uint8)
y = lambda n: r.integers(0, 10, n, dtype=np.int64)
np.savez('/tmp/mnist.npz', x_train=x(512), y_train=y(512), x_test=x(128), y_test=y(128))
"
echo "attempt $TF_SPAWNER_ATTEMPT"
export MNIST_NPZ=/tmp/mnist.npz TF_USE_LEGACY_KERAS=1 EPOCHS={epochs} STEPS_PER_EPOCH=8
[ "$TF_SPAWNER_ATTEMPT" != 0 ] || export BATCH_PER_REPLICA=1024
exec python /script/training-script.py
"#
    )
}

/// The longest any one command of a test may take (the longest runs' `--timeout` is 900 s).
const COMMAND_BOUND: Duration = Duration::from_secs(1200);

pub const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
/// The admin kubeconfig of the one-node cluster.
pub const VAR: &str = "TF_SPAWNER_PODS_KUBECONFIG";
/// Optional: the pod template (default: `tools/one-node/pod.yaml`, the locally built
/// Python image with small requests).
pub const TEMPLATE_VAR: &str = "TF_SPAWNER_PODS_TEMPLATE";
/// How long any run of this suite may take to reach its verdict.
pub const RUN_TIMEOUT: &str = "180s";

#[path = "../common/output.rs"]
mod output;

#[path = "../common/env_expansion.rs"]
mod env_expansion;
pub use env_expansion::expand;
pub use output::Output;

/// The cluster as admin, one namespace of this test's, and a temp dir used as the
/// binary's HOME and working directory.
pub struct Cluster {
    pub kubeconfig: PathBuf,
    pub client: Client,
    pub namespace: String,
    pub dir: TempDir,
    config: Config,
    /// The test's name and start: its seconds are written at its end (to
    /// `TF_SPAWNER_PODS_TIMES`, which `.ci/run` sorts into a table of the slowest tests).
    test: String,
    started: std::time::Instant,
}

impl Cluster {
    /// The cluster and a fresh namespace `tfp-NAME-XXXXXX`, or `None` (with a visible
    /// notice) when `TF_SPAWNER_PODS_KUBECONFIG` is not set.
    pub async fn new(test: &str) -> Option<Cluster> {
        let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
            // Straight to the process's stderr: libtest captures `eprintln!` of passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {VAR} not set (the running-pods suite; see tools/one-node and .ci/run)"
            );
            return None;
        };
        let kubeconfig = PathBuf::from(path);
        let file = Kubeconfig::read_from(&kubeconfig)
            .unwrap_or_else(|e| panic!("{VAR}={}: cannot read it: {e}", kubeconfig.display()));
        let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .expect("admin kubeconfig");
        let client = Client::try_from(config.clone()).expect("admin client");
        let namespace =
            format!("tfp-{test}-{:06x}", rand::random::<u32>() & 0xff_ffff).replace('_', "-");
        let object = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.clone()),
                labels: Some(BTreeMap::from([(
                    "tf-spawner-test".to_string(),
                    "pods".to_string(),
                )])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create namespace {namespace}: {e}"));
        Some(Cluster {
            kubeconfig,
            client,
            namespace,
            dir: tempfile::tempdir().expect("temp dir"),
            config,
            test: test.to_string(),
            started: std::time::Instant::now(),
        })
    }

    /// The pod template of this suite.
    pub fn template(&self) -> PathBuf {
        std::env::var_os(TEMPLATE_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_file("tools/one-node/pod.yaml"))
    }

    /// Writes a file in the temp dir and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write test file");
        path
    }

    /// The command line `tf-spawner --kubeconfig K -n NS ARGS...`.
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(BIN);
        let mut full: Vec<OsString> = vec![
            "--kubeconfig".into(),
            self.kubeconfig.clone().into(),
            "-n".into(),
            self.namespace.clone().into(),
        ];
        full.extend(args.iter().map(OsString::from));
        cmd.args(full)
            .env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs the binary to its end; what the user saw. Bounded by [`COMMAND_BOUND`]: a
    /// command that waits on a cluster gone wrong (a pod that never starts, with no
    /// `--timeout`) fails the test with its arguments instead of hanging the suite.
    pub async fn run(&self, args: &[&str]) -> Output {
        let out = tokio::time::timeout(COMMAND_BOUND, self.command(args).output())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "tf-spawner {} still running after {} s (killed)",
                    args.join(" "),
                    COMMAND_BOUND.as_secs()
                )
            })
            .expect("run tf-spawner");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts the binary with piped stdout and stderr, for tests that act while it runs.
    pub fn start(&self, args: &[&str]) -> tokio::process::Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tf-spawner")
    }

    /// `wait -t TAG` with restarts: `restarts` of them, a second's pause before each,
    /// under [`RUN_TIMEOUT`], and `extra` flags; what the user saw.
    pub async fn wait_restarting(&self, tag: &str, restarts: &str, extra: &[&str]) -> Output {
        let mut args = vec!["wait", "-t", tag];
        args.extend_from_slice(&restarting(restarts));
        args.extend_from_slice(extra);
        self.run(&args).await
    }

    /// `wait -t TAG` started, with one restart after a second's pause, giving up after
    /// `timeout`: the running follow.
    pub fn start_restarting_once(&self, tag: &str, timeout: &str) -> tokio::process::Child {
        let [restarts, n, backoff, pause, ..] = restarting("1");
        self.start(&[
            "wait",
            "-t",
            tag,
            restarts,
            n,
            backoff,
            pause,
            "--timeout",
            timeout,
        ])
    }

    /// Spawns run `tag` of `script` with this suite's template and `extra` flags, and
    /// asserts that the spawn itself worked.
    pub async fn spawn(&self, tag: &str, script: &Path, extra: &[&str]) -> Output {
        let template = self.template();
        let mut args = vec!["-t", tag, "--pod-file", template.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(script.to_str().unwrap());
        let out = self.run(&args).await;
        out.success();
        out
    }

    pub async fn pods(&self, tag: &str) -> Vec<Pod> {
        let mut pods = Api::<Pod>::namespaced(self.client.clone(), &self.namespace)
            .list(&ListParams::default().labels(&format!("training_attempt={tag}")))
            .await
            .expect("list pods")
            .items;
        pods.sort_by_key(|p| p.name_any());
        pods
    }

    /// The run's pods once the kubelet has written `phase` on every one of them.
    pub async fn pods_in_phase(&self, tag: &str, want: &str, timeout: Duration) -> Vec<Pod> {
        self.eventually(&format!("every pod of {tag} {want}"), timeout, || async {
            let pods = self.pods(tag).await;
            pods.iter().all(|p| phase(p) == want).then_some(pods)
        })
        .await
    }

    /// Polls `check` every 200 ms until it returns `Some`, or panics after `timeout`.
    pub async fn eventually<T, F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(v) = check().await {
                return v;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out after {timeout:?} waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let config = self.config.clone();
        let namespace = self.namespace.clone();
        // A thread of its own: Drop may run inside the test's runtime, or while unwinding.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            runtime.block_on(async move {
                if let Ok(client) = Client::try_from(config) {
                    let _ = Api::<Namespace>::all(client)
                        .delete(&namespace, &DeleteParams::default())
                        .await;
                }
            });
        });
        let _ = done.join();
        // CI's table of times: a line per test in the file `TF_SPAWNER_PODS_TIMES` names
        // (a file, not stderr, which libtest's own "test NAME ... ok" lines would split).
        if let Some(path) = std::env::var_os("TF_SPAWNER_PODS_TIMES") {
            let line = format!("{:5} {}\n", self.started.elapsed().as_secs(), self.test);
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }
}

/// A file of this repository.
pub fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A random tag `PREFIX-XXXX`.
pub fn tag(prefix: &str) -> String {
    format!("{prefix}-{:04x}", rand::random::<u16>())
}

/// The pod's `containerStatuses[name=tensorflow]` terminated exit code, if it ended.
pub fn exit_code(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == "tensorflow")?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

pub fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

/// The flags of a follow (`wait`, `spawn --wait`) that restarts `n` times, a second's
/// pause before each, under [`RUN_TIMEOUT`].
pub fn restarting(n: &str) -> [&str; 6] {
    [
        "--restarts",
        n,
        "--restart-backoff",
        "1s",
        "--timeout",
        RUN_TIMEOUT,
    ]
}

/// The restart lines a follow printed (`run T: restart 1/2 in 1s: …`).
pub fn restart_lines(out: &Output) -> Vec<&str> {
    out.stdout
        .lines()
        .filter(|l| l.contains(": restart "))
        .collect()
}
