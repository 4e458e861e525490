//! `--notify` (a command, a URL: the notice's JSON and variables; a failure only
//! warns) and what a run cost (the report, `status -o json`, `list -o json`,
//! `compare -o json`), issue 48 items 3 and 4.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use serde_json::{Value, json};

use crate::follow::{NODE, await_watches, container, exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// Pod `pod` taken by the kubelet at `held` (`status.startTime`), its container up from
/// `up` and ended at `end` with `code` (RFC 3339 times).
pub fn ran(env: &Env, pod: &str, (held, up, end): (&str, &str, &str), code: i32) {
    let phase = if code == 0 { "Succeeded" } else { "Failed" };
    env.server.bind_pod(NS, pod, NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({"phase": phase, "startTime": held, "containerStatuses": container(false, json!({
            "terminated": {"exitCode": code, "reason": if code == 0 {"Completed"} else {"Error"},
                "startedAt": up, "finishedAt": end}
        }))}),
    );
}

/// A run of two workers with 2 GPUs each: worker-0 held from 10:00:00, up at 10:00:00;
/// worker-1 held from 10:00:00, up at 10:06:00 (its image pulled); both end at 11:00:00.
/// 2 task-hours, 4 GPU-hours; 0.2 task-hours (0.4 GPU-hours) waiting: both tasks, the
/// first 6 minutes.
fn a_costly_run(env: &Env, tag: &str) {
    spawn_run(env, tag, &["-w", "2", "--gpus", "2"]);
    let w = |i: u32| format!("{tag}-worker-{i}");
    ran(
        env,
        &w(1),
        (
            "2026-01-01T10:00:00Z",
            "2026-01-01T10:06:00Z",
            "2026-01-01T11:00:00Z",
        ),
        0,
    );
    ran(
        env,
        &w(0),
        (
            "2026-01-01T10:00:00Z",
            "2026-01-01T10:00:00Z",
            "2026-01-01T11:00:00Z",
        ),
        0,
    );
}

fn read_json(env: &Env, name: &str) -> Value {
    let text = std::fs::read_to_string(env.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"))
}

#[test]
fn wait_tells_a_command_the_verdict_and_what_the_run_cost() {
    let env = Env::new();
    a_costly_run(&env, "nc");
    let out = env.run(&[
        "wait",
        "-t",
        "nc",
        "--notify",
        "echo \"$TF_SPAWNER_TAG $TF_SPAWNER_VERDICT $TF_SPAWNER_EXIT_CODE\" > env.txt; cat > notice.json",
    ]);
    out.success()
        .stdout_has("run nc: Succeeded")
        .stdout_has("held 2.0 task-hours, 4.0 GPU-hours: 0.40 waiting for the last task to start, 3.6 training\n");
    assert_eq!(
        std::fs::read_to_string(env.path("env.txt")).unwrap(),
        "nc Succeeded 0\n"
    );
    let notice = read_json(&env, "notice.json");
    assert_eq!(notice["kind"], "run");
    assert_eq!(notice["tag"], "nc");
    assert_eq!(notice["namespace"], NS);
    assert_eq!(notice["verdict"], "Succeeded");
    assert_eq!(notice["exit_code"], 0);
    assert_eq!(notice["duration_seconds"], 3600);
    assert_eq!(notice["restarts"], 0);
    assert_eq!(notice["cost"]["total"]["task_seconds"], 7200);
    assert_eq!(notice["cost"]["total"]["gpu_seconds"], 14400);
    assert_eq!(notice["cost"]["waiting"]["gpu_seconds"], 1440);
    assert!(
        notice["text"]
            .as_str()
            .unwrap()
            .starts_with("run nc: Succeeded after 1h"),
        "{notice}"
    );
    // Told once.
    assert_eq!(
        std::fs::read_to_string(env.path("env.txt"))
            .unwrap()
            .lines()
            .count(),
        1
    );
}

/// A one-request HTTP server on a port of its own: the request's head and body, then a
/// `status` answer.
fn one_request_server(status: &'static str) -> (String, mpsc::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/hooks/secret-part",
        listener.local_addr().unwrap()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        let answer =
            format!("HTTP/1.1 {status}\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno");
        stream.write_all(answer.as_bytes()).unwrap();
        tx.send((head, String::from_utf8(body).unwrap())).unwrap();
    });
    (url, rx)
}

#[test]
fn a_failed_run_is_posted_to_a_url_with_its_last_lines() {
    let env = Env::new();
    spawn_run(&env, "nu", &["-w", "1"]);
    running(&env, "nu-worker-0");
    let (url, got) = one_request_server("200 OK");
    let child = start(&env, &["wait", "-t", "nu", "--notify", &url]);
    await_watches(&env, 1);
    env.server
        .append_log(NS, "nu-worker-0", "loading\nValueError: bad shape\n");
    exited(&env, "nu-worker-0", 1);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    let (head, body) = got
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert!(
        head.starts_with("POST /hooks/secret-part HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let notice: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(notice["verdict"], "Failed");
    assert_eq!(notice["exit_code"], 3);
    assert_eq!(notice["failed_task"], "worker-0");
    assert_eq!(
        notice["last_lines"],
        json!(["loading", "ValueError: bad shape"])
    );
    let text = notice["text"].as_str().unwrap();
    assert!(text.starts_with("run nu: Failed (exit 3)"), "{text}");
    assert!(
        notice["reason"]
            .as_str()
            .unwrap()
            .contains("run 'nu' failed"),
        "{notice}"
    );
}

#[test]
fn a_notice_that_fails_only_warns() {
    let env = Env::new();
    spawn_run(&env, "nf", &["-w", "1"]);
    exited(&env, "nf-worker-0", 0);
    let out = env.run(&["wait", "-t", "nf", "--notify", "echo no way >&2; exit 7"]);
    out.success().stderr_has("warning: --notify echo no way >&2; exit 7: the command exited 7: no way (the run's outcome stands)");
    // A server that says no: its answer in the warning, the URL's path (a webhook's
    // secret) left out.
    let (url, got) = one_request_server("403 Forbidden");
    let out = env.run(&["wait", "-t", "nf", "--notify", &url]);
    out.success();
    got.recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    out.stderr_has("the server answered 403 Forbidden no (the run's outcome stands)");
    assert!(!out.stderr.contains("secret-part"), "{}", out.stderr);
    // Nobody listening: the failed run's exit code stands.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    spawn_run(&env, "ng", &["-w", "1"]);
    exited(&env, "ng-worker-0", 1);
    let out = env.run(&["wait", "-t", "ng", "--notify", &dead]);
    assert_eq!(out.code, 3, "{out:#?}");
    assert!(
        out.stderr.contains("warning: --notify http://127.0.0.1:"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("cannot send it"), "{}", out.stderr);
}

#[test]
fn notify_is_a_defaults_key_and_a_spawn_without_wait_is_refused() {
    let env = Env::new();
    let config = env.write("config.yaml", "notify: cat > told.json\n");
    spawn_run(&env, "nd", &["-w", "1"]);
    exited(&env, "nd-worker-0", 0);
    let out = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["wait", "-t", "nd"]),
    );
    out.success();
    assert_eq!(read_json(&env, "told.json")["verdict"], "Succeeded");
    let config = env.write(
        "url.yaml",
        "notify: https://hooks.example.com/services/T0/secret\n",
    );
    let out = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["config", "-o", "json"]),
    );
    out.success();
    assert!(
        out.stdout.contains("https://hooks.example.com/…"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
    let script = env.script();
    let out = env.run(&["--notify", "true", script.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(
        out.stderr
            .contains("--notify tells the verdict of a run that is followed: add --wait"),
        "{}",
        out.stderr
    );
    let out = env.run(&["wait", "-t", "nd", "--notify", "https://"]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(
        out.stderr
            .contains("--notify \"https://\" is not a valid URL"),
        "{}",
        out.stderr
    );
}

#[test]
fn status_list_and_compare_say_what_the_run_cost() {
    let env = Env::new();
    a_costly_run(&env, "nk");
    let status: Value = serde_json::from_str(
        &env.run(&["status", "-t", "nk", "-o", "json"])
            .success()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        status["cost"]["total"],
        json!({"task_seconds": 7200, "gpu_seconds": 14400})
    );
    assert_eq!(
        status["cost"]["training"],
        json!({"task_seconds": 6480, "gpu_seconds": 12960})
    );
    assert_eq!(
        status["cost"]["restarts"],
        json!({"task_seconds": 0, "gpu_seconds": 0})
    );
    env.run(&["status", "-t", "nk"])
        .success()
        .stdout_has("held 2.0 task-hours, 4.0 GPU-hours: 0.40 waiting");
    let list: Value =
        serde_json::from_str(&env.run(&["list", "-o", "json"]).success().stdout).unwrap();
    let run = list["runs"]
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["tag"] == "nk"))
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(run["cost"]["total"]["gpu_seconds"], 14400);
    // wait records it; compare reads the record.
    env.run(&["wait", "-t", "nk"]).success();
    let compared: Value =
        serde_json::from_str(&env.run(&["compare", "nk", "-o", "json"]).success().stdout).unwrap();
    assert_eq!(
        compared["runs"][0]["cost"]["total"]["gpu_seconds"], 14400,
        "{compared}"
    );
    env.run(&["compare", "nk"])
        .success()
        .stdout_has("GPU-H")
        .stdout_has("4.00");
}

#[test]
fn a_local_sweep_tells_each_run_and_its_end() {
    let env = Env::new();
    let script = env.write(
        "p.py",
        "import os, sys\nsys.exit(1 if os.environ['TF_SPAWNER_PARAM_LR'] == '0.2' else 0)\n",
    );
    let out = env.run(&[
        "sweep",
        "--local",
        "-t",
        "lz",
        "--param",
        "lr=0.1,0.2",
        "--notify",
        "cat >> told.jsonl && echo >> told.jsonl",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 3, "{out:#?}");
    let text = std::fs::read_to_string(env.path("told.jsonl")).unwrap();
    let told: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said: Vec<(&str, &str, &str)> = told
        .iter()
        .map(|n| {
            let s = |k: &str| n[k].as_str().unwrap_or_default();
            (s("kind"), s("tag"), s("verdict"))
        })
        .collect();
    assert_eq!(
        said,
        [
            ("run", "lz-1", "Succeeded"),
            ("run", "lz-2", "Failed"),
            ("experiment", "lz", "Failed")
        ],
        "{text}"
    );
    assert_eq!(told[2]["runs"], json!({"Failed": 1, "Succeeded": 1}));
    assert_eq!(told[0]["local"], true);
    assert!(
        told[1]["reason"]
            .as_str()
            .unwrap()
            // Both workers exit 1; either may be the first to end.
            .contains("exited with code 1"),
        "{text}"
    );
    // A local run of its own is told too.
    let ok = env.write("ok.py", "print('fine')\n");
    let out = env.run(&[
        "--local",
        "-t",
        "lone",
        "--notify",
        "cat > lone.json",
        ok.to_str().unwrap(),
    ]);
    out.success();
    let n = read_json(&env, "lone.json");
    assert_eq!(
        (n["tag"].as_str(), n["verdict"].as_str()),
        (Some("lone"), Some("Succeeded"))
    );
    assert!(env.server.requests().is_empty(), "no cluster");
}

/// A `--local` sweep's run ends as a `--local` run of its own does (one lifecycle,
/// `ops/local_run.rs`): the same line in its notice and in the experiment's record,
/// with how long it ran and what was stopped (issue 61 item 1).
#[test]
fn a_local_sweeps_run_ends_with_the_line_of_a_local_run_of_its_own() {
    let env = Env::new();
    let hang = env.write("hang.py", "import time\ntime.sleep(60)\n");
    let hang = hang.to_str().unwrap();
    let lone = env.run(&["--local", "-t", "lt-1", "-w", "1", "--timeout", "1s", hang]);
    let line = "timed out after 1s waiting for local run 'lt-1' to end; stopped worker-0";
    lone.failure(4).stderr_has(&format!("error: {line}\n"));
    std::fs::remove_dir_all(env.path("tf-spawner-output")).unwrap();
    let words = ["sweep", "--local", "-t", "lt", "-w", "1", "--timeout", "1s"];
    let mut words = words.to_vec();
    let tell = "cat >> told.jsonl && echo >> told.jsonl";
    words.extend(["--param", "n=1", "--notify", tell, hang]);
    env.run(&words)
        .failure(3)
        .stderr_has("error: local experiment 'lt': 1 of 1 runs failed: lt-1\n");
    let told = std::fs::read_to_string(env.path("told.jsonl")).unwrap();
    let run: Value = serde_json::from_str(told.lines().next().unwrap()).unwrap();
    assert_eq!(
        (run["tag"].as_str(), run["reason"].as_str()),
        (Some("lt-1"), Some(line))
    );
    let record = read_json(&env, "tf-spawner-output/lt/experiment.json");
    assert_eq!(record["ended"]["lt-1"], format!("Failed: {line}"));
}

/// `--notify URL` through the proxy the environment names, as curl: HTTP_PROXY gets an
/// http URL's POST whole, HTTPS_PROXY a CONNECT to an https URL's host, NO_PROXY's
/// hosts are reached directly (issue 48 item 3).
#[test]
fn a_url_notice_goes_through_the_proxy_the_environment_names() {
    let env = Env::new();
    spawn_run(&env, "np", &["-w", "1"]);
    exited(&env, "np-worker-0", 0);
    let wait = |url: &str, vars: &[(&str, &str)]| {
        let mut cmd = env.cmd();
        cmd.envs(vars.iter().copied())
            .args(["wait", "-t", "np", "--notify", url]);
        crate::support::run(&mut cmd)
    };
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = closed.local_addr().unwrap();
    drop(closed);
    // The proxy (a one-request server that answers itself) gets the POST, its URL whole;
    // nobody listens at the URL's own address.
    let (proxy, seen) = one_request_server("200 OK");
    let proxy = proxy.trim_end_matches("/hooks/secret-part").to_string();
    let hook = format!("http://{nobody}/hook");
    let out = wait(&hook, &[("HTTP_PROXY", &proxy)]);
    out.success();
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let (head, body) = seen
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert!(
        head.starts_with(&format!("POST {hook} HTTP/1.1\r\n")),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("host: {nobody}")),
        "{head}"
    );
    let notice: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(notice["verdict"], "Succeeded");
    // NO_PROXY names the server's host: straight there, the (dead) proxy unused.
    let dead_proxy = format!("http://{nobody}");
    let (url, got) = one_request_server("200 OK");
    let out = wait(
        &url,
        &[("http_proxy", &dead_proxy), ("NO_PROXY", "127.0.0.1")],
    );
    out.success();
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let (head, _) = got
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert!(
        head.starts_with("POST /hooks/secret-part HTTP/1.1\r\n"),
        "{head}"
    );
    // Without NO_PROXY the dead proxy is tried, and the warning names it.
    let out = wait(&url, &[("HTTP_PROXY", &dead_proxy)]);
    out.success()
        .stderr_has(&format!("cannot send it through the proxy {dead_proxy}: "));
    // An https URL: a CONNECT to its host, asked of HTTPS_PROXY (which says no here).
    let (proxy, seen) = one_request_server("403 Forbidden");
    let proxy = proxy.trim_end_matches("/hooks/secret-part").to_string();
    let out = wait(
        "https://hooks.example.invalid/services/x",
        &[("HTTPS_PROXY", &proxy), ("HTTP_PROXY", &dead_proxy)],
    );
    out.success().stderr_has(&format!(
        "cannot send it through the proxy {proxy}: the proxy refused the tunnel (CONNECT) (the run's outcome stands)"
    ));
    let (head, _) = seen
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert!(
        head.starts_with("CONNECT hooks.example.invalid:443 HTTP/1.1\r\n"),
        "{head}"
    );
}
