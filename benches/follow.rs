//! Following large runs: `status -o json`, `list` and `wait --timeout 3s` of runs of
//! 1,000 and 10,000 pods on the API test server (no added latency, pods Pending as the
//! binary's own `--dry-run -o json` plans them, defaults filled in as a create would).
//!
//! Run with `cargo bench --bench follow` (a plain binary, `harness = false`). For each
//! size it prints the median wall time, the child's CPU time (user + system) and its
//! peak RSS (`ru_maxrss` from `wait4`), and the ratio of each to the smallest size's:
//! following a run should cost about N times more for N times the pods.
//!
//! As in `spawn_delete`, the children are started by a small launcher process started
//! before the test server (a child's `ru_maxrss` carries over its parent's high-water
//! mark across `exec`); the launcher's own peak is printed: the floor below which a
//! figure means nothing.
//!
//! Then `logs -f` of a run of 1,000 running pods, each with a log line: the test
//! server's open connections at their peak (sampled every 20 ms), the client's wall
//! time, CPU and peak RSS; after 3 s the pods end and the follow with them.
//!
//! `FOLLOW_BIN=PATH` measures another build (an older one, to compare);
//! `FOLLOW_SIZES=1000,10000` and `FOLLOW_REPEAT=3` pick the rows and the runs per row.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use kube_testserver::TestServer;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
const LAUNCHER_ENV: &str = "FOLLOW_BENCH_LAUNCHER";

fn bin() -> String {
    std::env::var("FOLLOW_BIN").unwrap_or_else(|_| BIN.to_string())
}

fn main() {
    if std::env::var_os(LAUNCHER_ENV).is_some() {
        launcher();
        return;
    }
    let mut launcher = Launcher::start();
    let sizes = list_env("FOLLOW_SIZES").unwrap_or_else(|| vec![1_000, 10_000]);
    let repeat = list_env("FOLLOW_REPEAT")
        .map_or(3, |r| r[0] as usize)
        .max(1);

    let server = TestServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = server.write_kubeconfig(dir.path(), "admin", None);
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path").to_string();
    std::fs::write(dir.path().join("train.py"), "print('hi')\n").expect("script");

    println!("binary: {}", bin());
    println!("machine: {}", machine());
    println!("runs per row: {repeat} (median wall, median CPU, max peak RSS)\n");
    println!(
        "{:>7}  {:<22} {:>9} {:>9} {:>9}   {:>7} {:>7} {:>7}",
        "pods", "command", "wall", "CPU", "peak RSS", "×wall", "×CPU", "×RSS"
    );
    let mut first: Vec<Summary> = Vec::new();
    for (row, &n) in sizes.iter().enumerate() {
        let tag = format!("b{n}");
        // Each run in a namespace of its own: `list` reads only that one.
        let ns = format!("n{n}");
        seed(&server, dir.path(), &kubeconfig, &tag, &ns, n);
        let commands: [(&str, Vec<&str>); 3] = [
            ("status -o json", vec!["status", "-t", &tag, "-o", "json"]),
            ("list", vec!["list"]),
            (
                "wait --timeout 3s",
                vec!["wait", "-t", &tag, "--timeout", "3s"],
            ),
        ];
        for (i, (name, args)) in commands.iter().enumerate() {
            let mut all = vec!["--kubeconfig", kubeconfig.as_str(), "-n", ns.as_str()];
            all.extend(args.iter().copied());
            let s = repeat_runs(&mut launcher, dir.path(), &all, repeat, name);
            if row == 0 {
                first.push(s);
            }
            let base = &first[i];
            println!(
                "{n:>7}  {name:<22} {:>9} {:>9} {:>9}   {:>7} {:>7} {:>7}",
                secs(s.wall),
                secs(s.cpu),
                mb(s.peak_kb),
                ratio(s.wall.as_secs_f64(), base.wall.as_secs_f64()),
                ratio(s.cpu.as_secs_f64(), base.cpu.as_secs_f64()),
                ratio(s.peak_kb as f64, base.peak_kb as f64),
            );
        }
    }
    logs_follow(&server, &mut launcher, dir.path(), &kubeconfig, 1_000);
    println!(
        "\nlauncher's own peak RSS (the floor): {}",
        mb(launcher.own_peak_kb())
    );
}

/// `logs -f` of `n` running pods: peak connections, wall, CPU, peak RSS.
fn logs_follow(server: &TestServer, launcher: &mut Launcher, dir: &Path, kubeconfig: &str, n: u64) {
    let (tag, ns) = ("lf", "logs");
    seed(server, dir, kubeconfig, tag, ns, n);
    let pods: Vec<String> = (0..n).map(|i| format!("{tag}-worker-{i}")).collect();
    for pod in &pods {
        server.bind_pod(ns, pod, "node-1");
        server.set_pod_status(ns, pod, serde_json::json!({"phase": "Running"}));
        server.append_log(ns, pod, &format!("{pod} says hello\n"));
    }
    let before = server.open_connections();
    let peak = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let start = Instant::now();
            let mut peak = 0;
            while start.elapsed() < Duration::from_secs(3) {
                peak = peak.max(server.open_connections());
                std::thread::sleep(Duration::from_millis(20));
            }
            for pod in &pods {
                server.close_log(ns, pod);
                server.set_pod_status(ns, pod, serde_json::json!({"phase": "Succeeded"}));
            }
            peak
        });
        let args = [
            "--kubeconfig",
            kubeconfig,
            "-n",
            ns,
            "logs",
            "-f",
            "-t",
            tag,
        ];
        let run = launcher.run(dir, &args);
        assert_eq!(run.code, 0, "logs -f: {}", run.stderr);
        let peak = sampler.join().expect("sampler");
        println!(
            "\n{n:>7}  {:<22} {:>9} {:>9} {:>9}   peak connections: {} (before: {before})",
            "logs -f",
            secs(run.wall),
            secs(run.cpu),
            mb(run.peak_kb),
            peak - before.min(peak),
        );
        peak
    });
    let _ = peak;
}

/// Stores the pods of a run of `n` workers as the binary plans them.
fn seed(server: &TestServer, dir: &Path, kubeconfig: &str, tag: &str, ns: &str, n: u64) {
    let out = Command::new(bin())
        .current_dir(dir)
        .args([
            "--kubeconfig",
            kubeconfig,
            "-n",
            ns,
            "--dry-run",
            "-o",
            "json",
            "-t",
            tag,
        ])
        .args(["-w", &n.to_string(), "train.py"])
        .output()
        .expect("run --dry-run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    for item in list["items"].as_array().expect("items") {
        if item["kind"] == "Pod" {
            server.insert("pods", ns, item.clone());
        }
    }
}

#[derive(Clone, Copy)]
struct Summary {
    wall: Duration,
    cpu: Duration,
    peak_kb: u64,
}

fn repeat_runs(
    launcher: &mut Launcher,
    dir: &Path,
    args: &[&str],
    runs: usize,
    name: &str,
) -> Summary {
    let mut all: Vec<Run> = (0..runs).map(|_| launcher.run(dir, args)).collect();
    for r in &all {
        // `wait --timeout` ends with 4 (the pods stay Pending).
        let expected = if name.starts_with("wait") { 4 } else { 0 };
        assert_eq!(r.code, expected, "{name}: {}", r.stderr);
    }
    let peak_kb = all.iter().map(|r| r.peak_kb).max().unwrap_or(0);
    all.sort_by_key(|r| r.cpu);
    let cpu = all[runs / 2].cpu;
    all.sort_by_key(|r| r.wall);
    Summary {
        wall: all[runs / 2].wall,
        cpu,
        peak_kb,
    }
}

struct Run {
    code: i32,
    wall: Duration,
    peak_kb: u64,
    cpu: Duration,
    stderr: String,
}

/// The launcher process: reads `dir \t arg \t arg …` lines, runs the binary with stdout
/// to /dev/null, and answers `code \t wall-ns \t maxrss-kB \t cpu-ns \t stderr`.
struct Launcher {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

impl Launcher {
    fn start() -> Launcher {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .env(LAUNCHER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the launcher");
        let to = child.stdin.take().expect("launcher stdin");
        let from = BufReader::new(child.stdout.take().expect("launcher stdout"));
        Launcher { child, to, from }
    }

    fn run(&mut self, dir: &Path, args: &[&str]) -> Run {
        let mut line = dir.to_str().expect("utf-8 path").to_string();
        for a in args {
            line.push('\t');
            line.push_str(a);
        }
        writeln!(self.to, "{line}").expect("to launcher");
        self.to.flush().expect("to launcher");
        let mut answer = String::new();
        self.from.read_line(&mut answer).expect("from launcher");
        let mut parts = answer.trim_end_matches('\n').splitn(5, '\t');
        let mut next = || parts.next().expect("launcher answer").to_string();
        Run {
            code: next().parse().expect("code"),
            wall: Duration::from_nanos(next().parse().expect("wall")),
            peak_kb: next().parse().expect("maxrss"),
            cpu: Duration::from_nanos(next().parse().expect("cpu")),
            stderr: next().replace("\\n", "\n"),
        }
    }

    fn own_peak_kb(&mut self) -> u64 {
        writeln!(self.to).expect("to launcher");
        self.to.flush().expect("to launcher");
        let mut answer = String::new();
        self.from.read_line(&mut answer).expect("from launcher");
        answer.trim().parse().expect("launcher peak")
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// The child is reaped by `wait4`, not `Child::wait`, to read its rusage.
#[allow(clippy::zombie_processes)]
fn launcher() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("read request");
        if line.is_empty() {
            writeln!(out, "{}", vm_hwm_kb()).expect("answer");
            out.flush().expect("answer");
            continue;
        }
        let mut fields = line.split('\t');
        let dir = fields.next().expect("dir");
        let start = Instant::now();
        let mut child = Command::new(bin())
            .args(fields)
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tf-spawner");
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("read stderr");
        let (code, peak_kb, cpu) = wait4(&child);
        let wall = start.elapsed();
        writeln!(
            out,
            "{code}\t{}\t{peak_kb}\t{}\t{}",
            wall.as_nanos(),
            cpu.as_nanos(),
            stderr.replace('\n', "\\n").replace('\t', " ")
        )
        .expect("answer");
        out.flush().expect("answer");
    }
}

fn wait4(child: &Child) -> (i32, u64, Duration) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain out-parameters; `pid` is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (code, usage.ru_maxrss.max(0) as u64, cpu)
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn list_env(name: &str) -> Option<Vec<u64>> {
    let text = std::env::var(name).ok()?;
    Some(
        text.split(',')
            .map(|s| s.trim().parse().expect("a number"))
            .collect(),
    )
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_default();
    format!("{cpus} CPUs, {model}")
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mb(kb: u64) -> String {
    format!("{:.0} MB", kb as f64 / 1024.0)
}

fn ratio(x: f64, base: f64) -> String {
    if base > 0.0 {
        format!("{:.1}×", x / base)
    } else {
        "-".into()
    }
}
