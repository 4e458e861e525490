//! Spawn and delete against the API test server with a fixed added latency per request.
//!
//! Run with `cargo bench --bench spawn_delete` (a plain binary, `harness = false`; `cargo
//! test` does not run it). For N = 1, 10, 100 and 1,000 workers and 2 ms and 10 ms of
//! latency it runs the release binary to spawn (default `--max-in-flight`) and then
//! delete (`-d -y`) a run, and prints wall times, the requests the server saw, the mean
//! number of requests in flight, the bytes the spawn sent (request bodies), the child's peak RSS, and two references measured or
//! computed in the same run:
//!
//! - the raw client: the same requests in the same stages, 32 at a time, from a minimal
//!   client in a process of its own (kube's `Client` on one thread, bodies taken from the
//!   binary's `--dry-run -o json`, answers not parsed: [`floor_client`]), taking turns
//!   with the binary: what any client built on kube-rs pays on this machine;
//! - the sequential floor: the same spawn with `--max-in-flight 1`;
//! - the ideal: Σ over the spawn's sequential stages of ⌈requests / in-flight⌉ × latency
//!   (stages: the 4 lists that check the tag is free, the config map, the services, the
//!   pods), as if the client and the server cost no time. Both share this machine's
//!   cores here, so the CPU columns say how much of a spawn above its ideal is theirs.
//!
//! It also times `--version` and `--dry-run -w 1000` (min and median of several runs).
//!
//! Peak memory is the child's `ru_maxrss` from `wait4`. On Linux a child's `ru_maxrss`
//! also counts the high-water mark of the process that spawned it (it is carried over
//! across `exec`), and this process holds the test server's store, so the children are
//! started by a small launcher process, itself started before the server; its own peak
//! (printed) is the floor below which the figure means nothing.
//!
//! CPU: the child's user + system time (from `wait4`), and the server's (this process's
//! own `getrusage` over the spawn: the test server's threads), so that a spawn above its
//! ideal can be told apart as the client's CPU, the server's, or waiting.
//!
//! `SPAWN_DELETE_BIN=PATH` measures another build of tf-spawner (say
//! `target/profiling/tf-spawner`, or an older one).
//!
//! `SPAWN_DELETE_QUICK=1` limits the run to N ≤ 100 (a smoke test of the bench itself);
//! `SPAWN_DELETE_SIZES=1000` and `SPAWN_DELETE_LATENCIES=2` (comma-separated) pick the
//! table's rows, `SPAWN_DELETE_REPEAT=5` the runs per row (the median is printed).
//! `SPAWN_DELETE_ARGS="--cpu 2 --memory 2Gi"` adds flags to every spawn (that one makes
//! the spawn read the nodes too, docs/resources.md).
//!
//! `SPAWN_DELETE_BASELINE=PATH` measures another build beside the binary, the two taking
//! turns in every row (so the machine's noise falls on both alike), and prints a second
//! table: each one's median spawn and requests (what a change such as the pre-flight
//! reads costs a spawn: a build without it as the baseline).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use kube_testserver::TestServer;

const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");

/// The binary to measure: `SPAWN_DELETE_BIN`, else the release build of this tree.
fn bin() -> String {
    std::env::var("SPAWN_DELETE_BIN").unwrap_or_else(|_| BIN.to_string())
}
const LAUNCHER_ENV: &str = "SPAWN_DELETE_LAUNCHER";
/// Another build to compare with, run alternately (see the module comment).
const BASELINE_ENV: &str = "SPAWN_DELETE_BASELINE";
/// The launcher runs the next field as the binary when a request's first argument is this.
const BASELINE_ARG: &str = "--baseline-bin";
/// Set in a child that is the floor client, not the launcher (see [`floor_client`]).
const FLOOR_ENV: &str = "SPAWN_DELETE_FLOOR";
/// The launcher runs this process as the floor client when a request's first argument is
/// this.
const FLOOR_ARG: &str = "--floor-client";
/// tf-spawner's default `--max-in-flight`.
const IN_FLIGHT: u64 = 32;
const SCRIPT: &str = "import os\nprint(os.environ['TF_CONFIG'])\n";

fn main() {
    if std::env::var_os(FLOOR_ENV).is_some() {
        floor_client();
        return;
    }
    if std::env::var_os(LAUNCHER_ENV).is_some() {
        launcher();
        return;
    }
    // First, while this process is small: see the module comment.
    let mut launcher = Launcher::start();
    let quick = std::env::var_os("SPAWN_DELETE_QUICK").is_some();

    let server = TestServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = server.write_kubeconfig(dir.path(), "admin", None);
    let script = dir.path().join("train.py");
    std::fs::write(&script, SCRIPT).expect("write script");
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path").to_string();
    let script = script.to_str().expect("utf-8 path").to_string();

    println!("# tf-spawner spawn/delete benchmark");
    println!("machine: {}", machine());
    println!("binary: {}", bin());
    println!(
        "launcher peak RSS (floor of the RSS figures): {:.1} MB",
        launcher.own_peak_kb() as f64 / 1024.0
    );
    println!();

    // Planning and start-up.
    let version = repeat(&mut launcher, dir.path(), &["--version"], 21);
    let dry_args = ["--dry-run", "-w", "1000", script.as_str()];
    let dry = repeat(&mut launcher, dir.path(), &dry_args, 11);
    println!("| command | runs | min | median | peak RSS |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, r) in [("--version", &version), ("--dry-run -w 1000", &dry)] {
        println!(
            "| `{name}` | {} | {} | {} | {} |",
            r.runs,
            ms(r.min),
            ms(r.median),
            mb(r.peak_kb)
        );
    }
    println!();

    println!(
        "| N | latency | spawn | ideal | ×ideal | raw client | ×raw | seq. floor | in flight | spawn req. | sent | CPU | raw CPU | server CPU | spawn RSS | delete | delete req. | delete RSS |"
    );
    println!(
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let sizes = list_env("SPAWN_DELETE_SIZES").unwrap_or(if quick {
        vec![1, 10, 100]
    } else {
        vec![1, 10, 100, 1000]
    });
    let latencies = list_env("SPAWN_DELETE_LATENCIES").unwrap_or(vec![2, 10]);
    let repeat = list_env("SPAWN_DELETE_REPEAT").map_or(5, |r| r[0].max(1) as usize);
    let mut compared = vec![];
    for latency_ms in latencies {
        let latency = Duration::from_millis(latency_ms);
        server.set_latency(latency);
        for &n in &sizes {
            let workers = n.to_string();
            let tag = format!("b{latency_ms}-{n}");
            let k = ["--kubeconfig", kubeconfig.as_str()];
            let extra = std::env::var("SPAWN_DELETE_ARGS").unwrap_or_default();
            let extra: Vec<&str> = extra.split_whitespace().collect();
            let spawn_args = [&k[..], &["-t", &tag, "-w", &workers], &extra, &[&script]].concat();
            let delete_args = [&k[..], &["-d", "-y", "-t", &tag]].concat();

            // The same objects, for the raw client.
            let plan = dir.path().join(format!("plan-{tag}.json"));
            let planned = Command::new(bin())
                .args([&spawn_args[..], &["--dry-run", "-o", "json"]].concat())
                .output()
                .expect("tf-spawner --dry-run");
            assert!(planned.status.success(), "dry run failed");
            std::fs::write(&plan, &planned.stdout).expect("write the plan");
            let raw_args = [FLOOR_ARG, &kubeconfig, plan.to_str().expect("utf-8"), &tag];

            // Concurrent spawn and delete, and the raw client's spawn, taking turns: the
            // median of `repeat` runs each.
            let mut spawns = vec![];
            let mut deletes = vec![];
            let mut raws = vec![];
            let mut baselines = vec![];
            for _ in 0..repeat {
                server.clear_requests();
                let server_cpu = own_cpu();
                let s = launcher.run(dir.path(), &spawn_args);
                let server_cpu = own_cpu() - server_cpu;
                s.check("spawn");
                let requests = server.requests();
                let busy: Duration = requests.iter().map(|r| r.duration).sum();
                let sent: usize = requests.iter().map(|r| r.body_bytes).sum();
                spawns.push((s, requests.len(), busy, sent, server_cpu));
                assert_eq!(server.object_count(), 1 + 2 * n as usize, "spawned run");

                server.clear_requests();
                let d = launcher.run(dir.path(), &delete_args);
                d.check("delete");
                deletes.push((d, server.requests().len()));
                assert_eq!(server.object_count(), 0, "deleted run");

                let raw = launcher.run(dir.path(), &raw_args);
                raw.check("raw client");
                assert_eq!(
                    server.object_count(),
                    1 + 2 * n as usize,
                    "raw client's run"
                );
                launcher.run(dir.path(), &delete_args).check("delete");
                raws.push(raw);
                if let Some(b) = baseline_run(&mut launcher, &server, dir.path(), &spawn_args) {
                    assert_eq!(server.object_count(), 1 + 2 * n as usize, "baseline's run");
                    launcher.run(dir.path(), &delete_args).check("delete");
                    baselines.push(b);
                }
            }
            if !baselines.is_empty() {
                baselines.sort_by_key(|(b, _)| b.wall);
                let mut by_wall: Vec<_> = spawns.iter().map(|(s, r, ..)| (s.wall, *r)).collect();
                by_wall.sort();
                let (wall, requests) = by_wall[repeat / 2];
                let (b, b_requests) = &baselines[repeat / 2];
                compared.push(format!(
                    "| {n} | {latency_ms} ms | {} | {requests} | {} | {b_requests} | {:+.1} ms |",
                    ms(wall),
                    ms(b.wall),
                    (wall.as_secs_f64() - b.wall.as_secs_f64()) * 1000.0
                ));
            }
            spawns.sort_by_key(|(s, ..)| s.wall);
            deletes.sort_by_key(|(d, _)| d.wall);
            raws.sort_by_key(|r| r.wall);
            let (spawn, spawn_requests, busy, sent, server_cpu) = &spawns[repeat / 2];
            let (delete, delete_requests) = &deletes[repeat / 2];
            let raw = &raws[repeat / 2];
            let spawn_peak = spawns.iter().map(|(s, ..)| s.peak_kb).max().unwrap_or(0);
            let delete_peak = deletes.iter().map(|(d, _)| d.peak_kb).max().unwrap_or(0);

            // The sequential floor: the same spawn one request at a time.
            let floor_args = [&spawn_args[..], &["--max-in-flight", "1"]].concat();
            let floor = launcher.run(dir.path(), &floor_args);
            floor.check("spawn --max-in-flight 1");
            launcher.run(dir.path(), &delete_args).check("delete");

            let rounds = 1 + 1 + 2 * n.div_ceil(IN_FLIGHT);
            let ideal = latency * rounds as u32;
            println!(
                "| {n} | {latency_ms} ms | {} | {} | {:.2} | {} | {:.2} | {} | {:.1} | {spawn_requests} | {} | {} | {} | {} | {} | {} | {delete_requests} | {} |",
                ms(spawn.wall),
                ms(ideal),
                spawn.wall.as_secs_f64() / ideal.as_secs_f64(),
                ms(raw.wall),
                spawn.wall.as_secs_f64() / raw.wall.as_secs_f64(),
                ms(floor.wall),
                busy.as_secs_f64() / spawn.wall.as_secs_f64(),
                bytes(*sent),
                ms(spawn.cpu),
                ms(raw.cpu),
                ms(*server_cpu),
                mb(spawn_peak),
                ms(delete.wall),
                mb(delete_peak),
            );
        }
    }
    println!();
    if !compared.is_empty() {
        println!(
            "| N | latency | spawn | spawn req. | baseline spawn | baseline req. | difference |"
        );
        println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for row in &compared {
            println!("{row}");
        }
        println!();
        println!(
            "baseline: {}, its spawns taking turns with the binary's; medians of {repeat}.",
            std::env::var(BASELINE_ENV).unwrap_or_default()
        );
        println!();
    }
    println!(
        "spawn, delete: median of {repeat}; peak RSS: the highest of them. ideal = Σ stages ⌈requests/{IN_FLIGHT}⌉ × latency = (1 + 1 + 2⌈N/{IN_FLIGHT}⌉) × latency. raw client: the same requests from a minimal kube client (see the bench's floor_client). in flight = Σ request durations at the server ÷ spawn wall time. CPU: the binary's user + system time; raw CPU: the raw client's; server CPU: the test server's (this process's) during the spawn."
    );
}

/// One spawn by the baseline build (`SPAWN_DELETE_BASELINE`), if one is named, and the
/// requests the server saw.
fn baseline_run(
    launcher: &mut Launcher,
    server: &TestServer,
    dir: &Path,
    spawn_args: &[&str],
) -> Option<(Run, usize)> {
    let path = std::env::var(BASELINE_ENV).ok()?;
    server.clear_requests();
    let b = launcher.run(dir, &[&[BASELINE_ARG, path.as_str()], spawn_args].concat());
    b.check("baseline spawn");
    Some((b, server.requests().len()))
}

/// One run of the binary, as the launcher reports it.
#[derive(Debug)]
struct Run {
    code: i32,
    wall: Duration,
    peak_kb: u64,
    /// The child's user + system CPU time.
    cpu: Duration,
    stderr: String,
}

impl Run {
    fn check(&self, what: &str) {
        assert_eq!(self.code, 0, "{what} failed: {}", self.stderr);
    }
}

struct Summary {
    runs: usize,
    min: Duration,
    median: Duration,
    peak_kb: u64,
}

fn repeat(launcher: &mut Launcher, dir: &Path, args: &[&str], runs: usize) -> Summary {
    let mut all: Vec<Run> = (0..runs).map(|_| launcher.run(dir, args)).collect();
    for r in &all {
        r.check(&args.join(" "));
    }
    all.sort_by_key(|r| r.wall);
    Summary {
        runs,
        min: all[0].wall,
        median: all[runs / 2].wall,
        peak_kb: all.iter().map(|r| r.peak_kb).max().unwrap_or(0),
    }
}

/// The launcher process: reads `dir \t arg \t arg …` lines, runs the binary with stdout
/// to /dev/null, and answers `code \t wall-ns \t maxrss-kB \t stderr-with-escapes`.
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
        let code = next().parse().expect("code");
        let wall = Duration::from_nanos(next().parse().expect("wall"));
        let peak_kb = next().parse().expect("maxrss");
        let cpu = Duration::from_nanos(next().parse().expect("cpu"));
        let stderr = next().replace("\\n", "\n");
        Run {
            code,
            wall,
            peak_kb,
            cpu,
            stderr,
        }
    }

    /// The launcher's own peak RSS (an empty line asks for it).
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
        let mut fields = line.split('\t').peekable();
        let dir = fields.next().expect("dir");
        let floor = fields.next_if_eq(&FLOOR_ARG).is_some();
        let baseline = fields.next_if_eq(&BASELINE_ARG).is_some();
        let mut command = if floor {
            let mut c = Command::new(std::env::current_exe().expect("current exe"));
            c.env(FLOOR_ENV, "1").env_remove(LAUNCHER_ENV);
            c
        } else if baseline {
            Command::new(fields.next().expect("the baseline binary"))
        } else {
            Command::new(bin())
        };
        let start = Instant::now();
        let mut child = command
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

/// The floor client: the spawn's requests, in the same stages and with the same
/// in-flight limit, from a minimal client in a process of its own (started by the
/// launcher, like the binary): kube's `Client` on one thread, the objects the binary's own
/// `--dry-run -o json` planned, each answer read as text and never parsed. Arguments:
/// KUBECONFIG PLAN.json TAG. What tf-spawner takes above it is its own: planning, typed
/// objects, the rollback ledger, retries.
fn floor_client() {
    use futures::{StreamExt, TryStreamExt};
    let mut args = std::env::args().skip(1);
    let (Some(kubeconfig), Some(plan), Some(tag)) = (args.next(), args.next(), args.next()) else {
        panic!("usage: {FLOOR_ENV}=1 spawn_delete KUBECONFIG PLAN.json TAG");
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let file = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .expect("client config");
        let client = kube::Client::try_from(config).expect("client");
        let plan: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&plan).expect("read the plan")).expect("JSON");
        let items = plan["items"].as_array().expect("a List");
        let path = |plural: &str| format!("/api/v1/namespaces/default/{plural}");
        let lists = ["pods", "services", "configmaps", "secrets"].map(|plural| {
            let uri = format!("{}?labelSelector=training_attempt%3D{tag}", path(plural));
            client.request_text(http::Request::get(uri).body(Vec::new()).expect("request"))
        });
        futures::future::try_join_all(lists).await.expect("lists");
        for (kind, plural) in [
            ("ConfigMap", "configmaps"),
            ("Service", "services"),
            ("Pod", "pods"),
        ] {
            let bodies = items
                .iter()
                .filter(|o| o["kind"] == kind)
                .map(|o| serde_json::to_vec(o).expect("body"));
            futures::stream::iter(bodies)
                .map(|body| {
                    let request = http::Request::post(path(plural))
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(body)
                        .expect("request");
                    client.request_text(request)
                })
                .buffer_unordered(IN_FLIGHT as usize)
                .try_collect::<Vec<String>>()
                .await
                .expect("creates");
        }
    });
}

/// Reaps the child: its exit code (128 + signal when killed), peak RSS in kB and CPU time.
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
    (code, usage.ru_maxrss.max(0) as u64, cpu_time(&usage))
}

fn cpu_time(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// This process's CPU time so far (the test server's threads, in the spawn's window).
fn own_cpu() -> Duration {
    // SAFETY: a plain out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(got, 0, "getrusage: {}", std::io::Error::last_os_error());
    cpu_time(&usage)
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A comma-separated list of numbers from the environment.
fn list_env(name: &str) -> Option<Vec<u64>> {
    let text = std::env::var(name).ok()?;
    let list = text
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}: {n:?} is not a number"))
        })
        .collect();
    Some(list)
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".to_string());
    format!("{cpus} CPUs available, {model}, {}", std::env::consts::OS)
}

/// Request body bytes, in kB or MB.
fn bytes(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.2} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} kB", n as f64 / 1e3)
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}
