//! Running the binary as a user would, against a test server, in a temp dir.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube_testserver::{Options, RecordedRequest, TestServer};
use serde_json::Value;
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
pub const SCRIPT: &str = "import os\nprint(os.environ['TF_CONFIG'])\n";

/// A test server, a temp dir as HOME and working directory, and a kubeconfig in it.
pub struct Env {
    pub server: TestServer,
    pub dir: TempDir,
    pub kubeconfig: PathBuf,
}

#[path = "../common/output.rs"]
mod output;

#[path = "../common/env_expansion.rs"]
mod env_expansion;
pub use env_expansion::expand;
pub use output::Output;

impl Env {
    pub fn new() -> Env {
        Env::with(Options::default())
    }

    pub fn with(options: Options) -> Env {
        let server = TestServer::start_with(options);
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = server.write_kubeconfig(dir.path(), "admin", None);
        Env {
            server,
            dir,
            kubeconfig,
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a file in the temp dir and returns its path.
    pub fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, content).expect("write test file");
        path
    }

    /// `train.py` in the temp dir.
    pub fn script(&self) -> PathBuf {
        self.write("train.py", SCRIPT)
    }

    /// The binary with a clean environment: HOME and the working directory in the temp
    /// dir, KUBECONFIG pointing at the test server, no colour.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        run(self.cmd().args(args))
    }

    /// Runs with the given kubeconfig instead of the admin one.
    pub fn run_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        run(self.cmd().env("KUBECONFIG", kubeconfig).args(args))
    }

    pub fn spawn(&self, args: &[&str]) -> Output {
        let script = self.script();
        let mut all: Vec<&str> = args.to_vec();
        all.push(script.to_str().unwrap());
        self.run(&all)
    }

    pub fn list(&self, resource: &str, namespace: &str) -> Vec<Value> {
        self.server.list(resource, namespace)
    }

    /// [`Env::names`] without the pods a delete marked (`deletionTimestamp`): pods on a
    /// node linger for their grace period, as on a real cluster.
    pub fn names_not_terminating(&self, namespace: &str) -> Vec<String> {
        let terminating: Vec<String> = self
            .server
            .list("pods", namespace)
            .iter()
            .filter(|p| p["metadata"].get("deletionTimestamp").is_some())
            .map(|p| format!("pod/{}", name(p)))
            .collect();
        let mut names = self.names(namespace);
        names.retain(|n| !terminating.contains(n));
        names
    }

    /// Names of every pod, service, config map, secret and PodGroup (of either gang) in
    /// `namespace`, as `kind/name`.
    pub fn names(&self, namespace: &str) -> Vec<String> {
        let mut names = vec![];
        for (resource, kind) in [
            ("pods", "pod"),
            ("services", "service"),
            ("configmaps", "configmap"),
            ("secrets", "secret"),
            (kube_testserver::VOLCANO_PODGROUPS, "podgroup"),
            (kube_testserver::COSCHEDULING_PODGROUPS, "podgroup"),
            (kube_testserver::NETWORK_POLICIES, "networkpolicy"),
            (kube_testserver::JOBS, "job"),
        ] {
            for obj in self.server.list(resource, namespace) {
                names.push(format!(
                    "{kind}/{}",
                    obj["metadata"]["name"].as_str().unwrap()
                ));
            }
        }
        names.sort();
        names
    }
}

/// Runs with stdout a pipe whose reader is gone already, as under `| head` once `head`
/// has exited: every write to stdout fails (EPIPE). `closed_stderr` does the same to
/// stderr. What the other stream got is returned.
pub fn run_into_closed_pipe(cmd: &mut Command, closed_stderr: bool) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    if closed_stderr {
        cmd.stderr(writer).stdout(Stdio::piped());
    } else {
        cmd.stdout(writer).stderr(Stdio::piped());
    }
    run(cmd)
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run tf-spawner");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The env var `name` of the TF container of a stored pod.
pub fn env_var(pod: &Value, name: &str) -> Option<String> {
    pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "tensorflow")
        .or_else(|| pod["spec"]["containers"].get(0))?["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(String::from))
}

impl Env {
    /// TF_CONFIG of a stored pod as its process will see it, parsed: `$(VAR)` references
    /// expanded as the kubelet does, from the variables before it (config map keys read
    /// from the server).
    pub fn tf_config(&self, pod: &Value) -> Value {
        let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
        let container = pod["spec"]["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "tensorflow").or(cs.first()))
            .expect("a container");
        let mut defined: Vec<(String, String)> = Vec::new();
        for var in container["env"].as_array().into_iter().flatten() {
            let value = if let Some(v) = var["value"].as_str() {
                expand(v, &defined)
            } else if let Some(r) = var["valueFrom"]["configMapKeyRef"].as_object() {
                let cm = self
                    .server
                    .get("configmaps", namespace, r["name"].as_str().unwrap())
                    .expect("the referenced config map");
                cm["data"][r["key"].as_str().unwrap()]
                    .as_str()
                    .expect("the referenced key")
                    .to_string()
            } else {
                continue;
            };
            defined.push((var["name"].as_str().unwrap().to_string(), value));
        }
        let raw = defined
            .iter()
            .rev()
            .find(|(k, _)| k == "TF_CONFIG")
            .map(|(_, v)| v.clone())
            .expect("TF_CONFIG set");
        serde_json::from_str(&raw).expect("TF_CONFIG is JSON")
    }
}

pub fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

impl Env {
    /// Writes the user's defaults file (`$HOME/.config/tf-spawner/config.yaml`, HOME
    /// being the temp dir) and returns its path.
    pub fn defaults_file(&self, yaml: &str) -> PathBuf {
        let dir = self.path(".config/tf-spawner");
        std::fs::create_dir_all(&dir).expect("config dir");
        let path = dir.join("config.yaml");
        std::fs::write(&path, yaml).expect("write the defaults file");
        path
    }

    /// How many of the requests the server recorded `matching` selects.
    pub fn count_requests(&self, matching: impl Fn(&RecordedRequest) -> bool) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| matching(r))
            .count()
    }

    /// The first watch request the server recorded (a test that had one).
    pub fn first_watch(&self) -> RecordedRequest {
        self.server
            .requests()
            .into_iter()
            .find(|r| r.param("watch").as_deref() == Some("true"))
            .expect("a watch")
    }

    /// Blocks until the server has recorded `n` requests `matching` selects (60 s at
    /// most: a hang fails, naming `what`).
    pub fn await_requests(
        &self,
        n: usize,
        what: &str,
        matching: impl Fn(&RecordedRequest) -> bool,
    ) {
        let start = Instant::now();
        while self.count_requests(&matching) < n {
            assert!(start.elapsed() < Duration::from_secs(60), "no {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Blocks until `check` says `Ok` (polled every 20 ms, 60 s at most: a hang fails,
/// naming `what` and `check`'s last `Err`, what there is instead).
pub fn eventually<E: std::fmt::Debug>(what: &str, mut check: impl FnMut() -> Result<(), E>) {
    let start = Instant::now();
    loop {
        let Err(state) = check() else { return };
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {what} after 60s: {state:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long a test's binary may run before [`Watchdog`] kills it: longer than any run
/// a test starts (their `--timeout`s are 60 s at most), short of hanging the suite.
pub const BINARY_BOUND: Duration = Duration::from_secs(180);

/// Kills a process still running after a bound, so that a test whose binary never ends
/// fails with what it printed instead of hanging the suite (a test that waits for an
/// end waits under one).
pub struct Watchdog {
    ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    pub fn arm(pid: u32, bound: Duration) -> Watchdog {
        use std::sync::atomic::Ordering;
        let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (e, f) = (ended.clone(), fired.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !e.load(Ordering::SeqCst) {
                if start.elapsed() >= bound {
                    f.store(true, Ordering::SeqCst);
                    // SAFETY: kill(2) on our own child, not yet reaped (`ended` unset).
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Watchdog { ended, fired }
    }

    /// The process ended (it is reaped): whether the watchdog had to kill it.
    pub fn disarm(self) -> bool {
        use std::sync::atomic::Ordering;
        self.ended.store(true, Ordering::SeqCst);
        self.fired.load(Ordering::SeqCst)
    }
}

/// Blocks until `check` says `Ok` (polled every 20 ms, 60 s at most), failing at once
/// when `child` (tf-spawner) ended first; `what` names what is awaited, `check`'s `Err`
/// what there is instead (both for the failure).
pub fn await_while_running(
    child: &mut Child,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
) {
    let start = Instant::now();
    loop {
        let Err(state) = check() else { return };
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("tf-spawner ended ({status}) before {what}: {state}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {what} after 60s: {state}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `tag`'s pods in namespace `default` by name: (uid, attempt label, being deleted).
pub fn run_pods(env: &Env, tag: &str) -> BTreeMap<String, (String, String, bool)> {
    env.list("pods", "default")
        .iter()
        .filter(|p| p["metadata"]["labels"]["training_attempt"] == tag)
        .map(|p: &Value| {
            (
                name(p).to_string(),
                (
                    p["metadata"]["uid"].as_str().unwrap_or("").to_string(),
                    p["metadata"]["labels"]["tf-spawner/attempt"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    p["metadata"].get("deletionTimestamp").is_some(),
                ),
            )
        })
        .collect()
}

/// Blocks until `names` are there, not being deleted, with attempt `attempt` (a restart
/// by `wait --restarts`, which `child` runs).
pub fn await_attempt(env: &Env, tag: &str, names: &[&str], attempt: &str, child: &mut Child) {
    await_while_running(child, &format!("attempt {attempt}"), || {
        let now = run_pods(env, tag);
        let there = names
            .iter()
            .all(|n| now.get(*n).is_some_and(|p| p.1 == attempt && !p.2));
        if there {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    });
}
