//! `--local`: the tasks as processes on this machine (python3 required).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Env, Output, run};

const WIRING_CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/wiring_check.py");

/// Each task prints what it was given as one JSON line, then exits 0; the deciding
/// task (chief, else worker 0) waits until the others have printed, so every line is
/// there before the run's verdict stops anyone.
const REPORT: &str = r#"
import json, os, sys, time
cfg = json.loads(os.environ["TF_CONFIG"])
me = "%s-%s" % (cfg["task"]["type"], cfg["task"]["index"])
d = os.environ.get("TF_SPAWNER_SCRIPT_DIR")
print(json.dumps({
    "tf_config": cfg,
    "worker_number": os.environ.get("WORKER_NUMBER"),
    "tot_workers": os.environ.get("TOT_WORKERS"),
    "from_env_file": os.environ.get("FROM_ENV_FILE"),
    "script_dir": d,
    "script_there": d is not None and os.path.isfile(os.path.join(d, "training-script.py")),
}), flush=True)
marks = os.environ["MARKS"]
open(os.path.join(marks, me), "w").close()
deciding = "chief-0" if "chief" in cfg["cluster"] else "worker-0"
if me == deciding:
    expected = sum(len(v) for v in cfg["cluster"].values()) + int(os.environ["EXTRA"])
    end = time.time() + 60
    while len(os.listdir(marks)) < expected and time.time() < end:
        time.sleep(0.05)
"#;

/// Every task writes `PID CHILD_PID` to PIDS/TASK (the child: a sleeping process in
/// the task's group). Once all have, MODE decides: `ok` worker 0 exits 0, `fail`
/// worker 1 exits 1; the others sleep, worker 2 deaf to SIGTERM. `hang`: all sleep.
const PIDS: &str = r#"
import json, os, signal, subprocess, sys, time
cfg = json.loads(os.environ["TF_CONFIG"])
me = "%s-%s" % (cfg["task"]["type"], cfg["task"]["index"])
child = subprocess.Popen(["sleep", "600"])
d = os.environ["PIDS"]
with open(os.path.join(d, me + ".tmp"), "w") as f:
    f.write("%d %d" % (os.getpid(), child.pid))
os.rename(os.path.join(d, me + ".tmp"), os.path.join(d, me))
print("%s started" % me, flush=True)
mode = os.environ["MODE"]
if me == "worker-2":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
end = time.time() + 60
while len([n for n in os.listdir(d) if "." not in n]) < int(os.environ["TASKS"]) and time.time() < end:
    time.sleep(0.05)
if mode == "ok" and me == "worker-0":
    sys.exit(0)
if mode == "fail" and me == "worker-1":
    sys.exit(1)
time.sleep(600)
"#;

/// `task id -> its lines`, from `task | line` output; other lines are left out.
fn lines_by_task(stdout: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in stdout.lines() {
        if let Some((prefix, text)) = line.split_once(" | ") {
            out.entry(prefix.trim().to_string())
                .or_default()
                .push(text.to_string());
        }
    }
    out
}

#[test]
fn wiring_check_agrees_with_three_and_five_tasks() {
    let env = Env::new();
    for n in [3u32, 5] {
        let out = run(env.cmd().env("WIRING_LINGER", "3").args([
            "--local",
            "-w",
            &n.to_string(),
            WIRING_CHECK,
        ]));
        out.success();
        let by_task = lines_by_task(&out.stdout);
        assert_eq!(by_task.len(), n as usize, "{out:#?}");
        let mut sums = vec![];
        for i in 0..n {
            let id = format!("worker-{i}");
            let lines = &by_task[&id];
            let want = format!("{id}: cluster of {n} tasks agrees on ");
            let line = lines
                .iter()
                .find(|l| l.starts_with(&want))
                .unwrap_or_else(|| panic!("{id} did not agree: {out:#?}"));
            sums.push(line[want.len()..].to_string());
        }
        sums.dedup();
        assert_eq!(sums.len(), 1, "{out:#?}");
        out.stdout_has("run tf-spawner (local): Succeeded");
    }
}

#[test]
fn each_task_gets_its_tf_config_env_file_and_script_dir() {
    let env = Env::new();
    let script = env.write("report.py", REPORT);
    let envfile = env.write("vars.env", "FROM_ENV_FILE='hello world'\n");
    for (flags, extra) in [
        (vec!["-w", "3"], "0"),
        (vec!["--chief", "--ps", "2", "-w", "2", "--evaluator"], "1"),
    ] {
        let marks = tempfile::tempdir().unwrap();
        let mut args = vec!["--local", "-t", "mine", "-e", envfile.to_str().unwrap()];
        args.extend(&flags);
        args.push(script.to_str().unwrap());
        let out = run(env
            .cmd()
            // Nothing talks to a cluster: a missing kubeconfig does not matter.
            .env("KUBECONFIG", env.path("no-such-kubeconfig"))
            .env("MARKS", marks.path())
            .env("EXTRA", extra)
            .args(&args));
        out.success();
        let seen: BTreeMap<String, Value> = lines_by_task(&out.stdout)
            .into_iter()
            .map(|(id, lines)| {
                assert_eq!(lines.len(), 1, "{id}: {out:#?}");
                (id, serde_json::from_str(&lines[0]).expect("one JSON line"))
            })
            .collect();
        let ids: Vec<&str> = seen.keys().map(String::as_str).collect();
        let workers = if extra == "1" { 2 } else { 3 };
        if extra == "1" {
            assert_eq!(
                ids,
                [
                    "chief-0",
                    "evaluator-0",
                    "ps-0",
                    "ps-1",
                    "worker-0",
                    "worker-1"
                ]
            );
        } else {
            assert_eq!(ids, ["worker-0", "worker-1", "worker-2"]);
        }
        let cluster = &seen["worker-0"]["tf_config"]["cluster"];
        let mut ports = vec![];
        for (role, hosts) in cluster.as_object().unwrap() {
            assert_ne!(role, "evaluator", "the evaluator is outside the cluster");
            for host in hosts.as_array().unwrap() {
                let port = host.as_str().unwrap().strip_prefix("127.0.0.1:").unwrap();
                ports.push(port.parse::<u16>().unwrap());
            }
        }
        let count = ports.len();
        ports.sort();
        ports.dedup();
        assert_eq!(ports.len(), count, "a port per task: {cluster}");
        assert_eq!(count, ids.len() - usize::from(extra == "1"));
        assert_eq!(cluster["worker"].as_array().unwrap().len(), workers);

        let dirs: Vec<&Value> = seen.values().map(|v| &v["script_dir"]).collect();
        for (id, report) in &seen {
            let (role, index) = id.rsplit_once('-').unwrap();
            let tf_config = &report["tf_config"];
            assert_eq!(&tf_config["cluster"], cluster, "{id}");
            assert_eq!(tf_config["task"]["type"], role, "{id}");
            assert_eq!(tf_config["task"]["index"].to_string(), index, "{id}");
            let number = (role == "worker").then(|| index.to_string());
            assert_eq!(report["worker_number"].as_str(), number.as_deref(), "{id}");
            assert_eq!(report["tot_workers"], workers.to_string(), "{id}");
            assert_eq!(report["from_env_file"], "hello world", "{id}");
            assert_eq!(report["script_there"], true, "{id}");
            assert_eq!(&report["script_dir"], dirs[0], "{id}");
        }
        // The private dir is removed at the end.
        assert!(!Path::new(dirs[0].as_str().unwrap()).exists());
    }
}

#[test]
fn an_entrypoint_runs_and_nothing_it_started_remains() {
    let env = Env::new();
    let pids = tempfile::tempdir().unwrap();
    let script = env.write("train.py", "print('training here')\n");
    let entry = env.write(
        "entry.sh",
        "echo \"entry in ${TF_SPAWNER_SCRIPT_DIR:-/script}\"\n\
         sleep 600 &\n\
         echo $! > \"$PIDS/$WORKER_NUMBER\"\n\
         exec python3 \"${TF_SPAWNER_SCRIPT_DIR:-/script}/training-script.py\"\n",
    );
    let out = run(env.cmd().env("PIDS", pids.path()).args([
        "--local",
        "-w",
        "2",
        "-c",
        entry.to_str().unwrap(),
        script.to_str().unwrap(),
    ]));
    out.success();
    let by_task = lines_by_task(&out.stdout);
    assert!(by_task["worker-0"].contains(&"training here".to_string()));
    assert!(by_task["worker-0"][0].starts_with("entry in /"), "{out:#?}");
    let left = read_pids(pids.path());
    assert!(!left.is_empty());
    assert_all_gone(&left);
}

#[test]
fn success_stops_the_others_and_leaves_no_process() {
    let (out, pids) = pid_run("ok", 3, None);
    out.success();
    out.stdout_has("worker-0 exited 0: Succeeded; stopping worker-1, worker-2");
    assert_eq!(pids.len(), 6);
    assert_all_gone(&pids);
}

#[test]
fn a_failed_task_exits_3_and_stops_the_others_even_deaf_ones() {
    let started = Instant::now();
    let (out, pids) = pid_run("fail", 3, None);
    out.failure(3).stderr_has(
        "local run 'tf-spawner' failed: worker-1 exited with code 1; stopped worker-0, worker-2",
    );
    // worker-2 ignores SIGTERM: SIGKILL follows after the grace period.
    out.stdout_has("worker-2 still running 5s after SIGTERM: sending SIGKILL");
    assert!(started.elapsed() < Duration::from_secs(50));
    assert_eq!(pids.len(), 6);
    assert_all_gone(&pids);
}

#[test]
fn the_wiring_check_failure_is_reported_and_bounded() {
    let env = Env::new();
    let started = Instant::now();
    let out = run(env.cmd().env("TF_SPAWNER_FAIL_TASK", "worker-1").args([
        "--local",
        "-w",
        "3",
        WIRING_CHECK,
    ]));
    out.failure(3).stderr_has("worker-1 exited with code 1");
    out.stdout_has("worker-1 | worker-1: failing on purpose");
    // The others would wait 60 s for worker 1.
    assert!(started.elapsed() < Duration::from_secs(40));
}

#[test]
fn timeout_exits_4() {
    let (out, pids) = pid_run("hang", 2, Some("1s"));
    out.failure(4)
        .stderr_has("timed out after 1s waiting for local run 'tf-spawner' to end");
    assert_all_gone(&pids);
}

#[test]
fn sigint_stops_every_task_with_exit_130() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let script = env.write("pids.py", PIDS);
    let child = env
        .cmd()
        .env("PIDS", dir.path())
        .env("MODE", "hang")
        .env("TASKS", "3")
        .args(["--local", "--chief", "-w", "2", script.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while read_pids(dir.path()).len() < 6 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let pids = read_pids(dir.path());
    assert_eq!(pids.len(), 6);
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let out = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    out.failure(130).stderr_has("interrupted");
    assert_all_gone(&pids);
}

#[test]
fn bad_local_flags() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    env.run(&["--local", "--python", "no-such-python-here", script])
        .failure(2)
        .stderr_has("cannot run no-such-python-here: not found");
    let out = env.run(&["--python", "python3", script]);
    assert_eq!(out.code, 2, "{out:#?}");
    let out = env.run(&["--local", "--dry-run", script]);
    assert_eq!(out.code, 2, "{out:#?}");
    env.run(&["--local", "-w", "0", script])
        .failure(2)
        .stderr_has("--workers must be at least 1");
    env.run(&["--local", "-t", "Bad_Tag", script]).failure(2);
}

/// Runs PIDS with `MODE` and `workers` workers; returns the output and every PID.
fn pid_run(mode: &str, workers: u32, timeout: Option<&str>) -> (Output, Vec<i32>) {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let script = env.write("pids.py", PIDS);
    let workers = workers.to_string();
    let mut args = vec!["--local", "-w", &workers];
    if let Some(t) = timeout {
        args.extend(["--timeout", t]);
    }
    args.push(script.to_str().unwrap());
    let out = run(env
        .cmd()
        .env("PIDS", dir.path())
        .env("MODE", mode)
        .env("TASKS", &workers)
        .args(&args));
    (out, read_pids(dir.path()))
}

fn read_pids(dir: &Path) -> Vec<i32> {
    let mut pids = vec![];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some() {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        pids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    pids
}

/// Gone, or a zombie waiting for init to reap it.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            !matches!(state, Some(Some('Z' | 'X')))
        }
        Err(_) => false,
    }
}

#[track_caller]
fn assert_all_gone(pids: &[i32]) {
    // The kernel may take a moment to finish off a killed process.
    let end = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// Worker 0 detaches two processes from its group, then exits 0: `setsid sleep`, and a
/// daemon made by a double fork (its own session, its parent gone at once). Both hold
/// the task's stdout open. Their PIDs go to PIDS/detached.
const DETACH: &str = r#"
import os, subprocess, time
d = os.environ["PIDS"]
p = subprocess.Popen(["setsid", "sleep", "600"])
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    os.write(w, b"%d" % pid)
    os._exit(0)
os.close(w)
daemon = int(os.read(r, 32))
with open(os.path.join(d, "detached.tmp"), "w") as f:
    f.write("%d %d" % (p.pid, daemon))
os.rename(os.path.join(d, "detached.tmp"), os.path.join(d, "detached"))
print("detached", p.pid, daemon, flush=True)
"#;

#[test]
fn processes_a_task_detached_are_stopped_too() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let script = env.write("detach.py", DETACH);
    let mut child = crate::watched::Watched::start_with(env.cmd().env("PIDS", dir.path()).args([
        "--local",
        "-w",
        "1",
        script.to_str().unwrap(),
    ]));
    // The task's last line, then its end: from there, killed at once, not after the 5 s
    // the run gives a held output to end (the slowness of a loaded machine is before).
    child.await_stdout("worker-0 | detached ");
    let ended = Instant::now();
    let out = child.finish();
    let took = ended.elapsed();
    out.success();
    let pids = read_pids(dir.path());
    assert_eq!(pids.len(), 2, "{out:#?}");
    assert_all_gone(&pids);
    assert!(took < Duration::from_secs(5), "{took:?} {out:#?}");
}

#[test]
fn progress_lines_show_their_final_state_in_a_pipe_and_long_lines_come_in_pieces() {
    let env = Env::new();
    let script = env.write(
        "progress.py",
        "import sys\n\
         for i in range(5):\n    sys.stderr.write('\\r%d%%' % (i * 25)); sys.stderr.flush()\n\
         sys.stderr.write('\\n')\n\
         sys.stdout.write('x' * 40000 + 'end\\n')\n\
         sys.stdout.write('no newline at the end'); sys.stdout.flush()\n",
    );
    let out = env.run(&["--local", "-w", "1", script.to_str().unwrap()]);
    out.success();
    let lines = &lines_by_task(&out.stdout)["worker-0"];
    assert_eq!(lines[0], "100%", "{lines:?}");
    assert!(!out.stdout.contains('\r'));
    let sizes: Vec<usize> = lines[1..4].iter().map(String::len).collect();
    assert_eq!(sizes, [16384, 16384, 40003 - 2 * 16384]);
    assert!(lines[3].ends_with("xend"));
    assert_eq!(lines[4], "no newline at the end");
}

/// The peak memory (VmHWM, kB) of a running process, polled until it ends.
fn peak_kb_until_exit(child: &mut std::process::Child) -> u64 {
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            let hwm = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    peak
}

#[test]
fn memory_stays_bounded_whatever_a_task_writes() {
    let env = Env::new();
    // 200 MiB without a newline: the old reader held it all (and more) in memory.
    let script = env.write(
        "flood.py",
        "import sys\nb = b'y' * (1 << 20)\nfor _ in range(200): sys.stdout.buffer.write(b)\n",
    );
    let mut child = env
        .cmd()
        .args(["--local", "-w", "1", script.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = std::io::Read::read(&mut stdout, &mut buf) {
            if n == 0 {
                break;
            }
            lines += buf[..n].iter().filter(|b| **b == b'\n').count();
        }
        lines
    });
    let peak = peak_kb_until_exit(&mut child);
    let lines = reader.join().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(lines > 200 * 64, "{lines} lines");
    assert!(peak < 100 * 1024, "peak {peak} kB for 200 MiB of output");
}

/// Blocks until process `pid` reads its input (its `read-input` thread waits on the FIFO)
/// and catches SIGINT and SIGTERM (`SigCgt` in /proc/PID/status): from then on, a
/// signal is its to answer, not the default's to kill it.
fn await_reading_and_catching(pid: u32) {
    let catching = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
        let mask = u64::from_str_radix(mask.trim(), 16).ok()?;
        let bit = |signal: i32| 1u64 << (signal - 1);
        Some(mask & bit(libc::SIGINT) != 0 && mask & bit(libc::SIGTERM) != 0)
    };
    let reading = || {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        let names = tasks.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok());
        Some(names.into_iter().any(|n| n.trim() == "read-input"))
    };
    crate::support::eventually("the FIFO read, signals caught", || {
        match (reading(), catching()) {
            (Some(true), Some(true)) => Ok(()),
            state => Err(state),
        }
    });
}

#[test]
fn sigint_while_reading_a_fifo_script_exits_130() {
    let env = Env::new();
    let fifo = env.path("script.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (args, signal, code) in [
        (vec!["--local", "-w", "1"], libc::SIGINT, 130),
        (vec!["--local", "-w", "1", "-e"], libc::SIGTERM, 143),
        (vec!["-w", "1"], libc::SIGINT, 130),
    ] {
        let mut all = args.clone();
        if all.last() == Some(&"-e") {
            all.push(fifo.to_str().unwrap());
            all.push("train.py");
            env.script();
        } else {
            all.push(fifo.to_str().unwrap());
        }
        let child = env
            .cmd()
            .args(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        await_reading_and_catching(child.id());
        // SAFETY: signals our own child.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let out = child.wait_with_output().unwrap();
        let out = Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        out.failure(code).stderr_has(&format!(
            "error: interrupted while reading {} {}",
            if args.contains(&"-e") {
                "env file (-e)"
            } else {
                "training script"
            },
            fifo.display()
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.names("default").is_empty());
}

/// `--local` passes the arguments after `--` as argv, unchanged (spaces, quotes, `$`),
/// to the script and, with `-c`, to the entrypoint as "$@".
#[test]
fn arguments_after_double_dash_reach_the_script_unchanged() {
    let env = Env::new();
    let script = env.write(
        "train.py",
        "import json, sys\nprint(json.dumps(sys.argv[1:]), flush=True)\n",
    );
    let odd = "it's \"quoted\" $HOME `x` \\n";
    let want = serde_json::json!(["--epochs", "3", odd, ""]);
    let argv = |out: &crate::support::Output| -> serde_json::Value {
        let lines = &lines_by_task(&out.stdout)["worker-0"];
        assert_eq!(lines.len(), 1, "{out:#?}");
        serde_json::from_str(&lines[0]).unwrap()
    };
    let s = script.to_str().unwrap();
    let out = env.run(&["--local", "-w", "1", s, "--", "--epochs", "3", odd, ""]);
    out.success();
    assert_eq!(argv(&out), want);

    let entry = env.write(
        "entry.sh",
        "exec python3 \"$TF_SPAWNER_SCRIPT_DIR/training-script.py\" \"$@\"\n",
    );
    let e = entry.to_str().unwrap();
    let out = env.run(&[
        "--local", "-w", "1", "-c", e, s, "--", "--epochs", "3", odd, "",
    ]);
    out.success();
    assert_eq!(argv(&out), want);
}

/// `--dir`: the script imports a module next to it, reads a file by a relative path,
/// and an excluded file is not there.
#[test]
fn dir_makes_the_scripts_modules_importable() {
    let env = Env::new();
    let code = env.path("code");
    std::fs::create_dir_all(code.join("ckpt")).unwrap();
    std::fs::write(
        code.join("train.py"),
        "import os, helpers\nprint(helpers.GREETING, open('conf.txt').read().strip(), os.path.exists('ckpt'), flush=True)\n",
    )
    .unwrap();
    std::fs::write(code.join("helpers.py"), "GREETING = 'hello from helpers'\n").unwrap();
    std::fs::write(code.join("conf.txt"), "conf\n").unwrap();
    std::fs::write(code.join("ckpt/model.h5"), "weights").unwrap();
    std::fs::write(code.join(".gitignore"), "ckpt/\n").unwrap();
    let script = code.join("train.py");
    let out = env.run(&[
        "--local",
        "-w",
        "1",
        "--dir",
        code.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    out.success();
    assert_eq!(
        lines_by_task(&out.stdout)["worker-0"],
        ["hello from helpers conf False"],
        "{out:#?}"
    );
    // One line says what stayed home (the ignored `ckpt/`; `.gitignore` goes without a
    // word).
    assert_eq!(
        out.stderr,
        format!(
            "note: --dir {}: 1 file or directory left out (ignored by git or .tfspawnerignore, hidden, or --local output); -v lists them\n",
            code.display()
        ),
        "{out:#?}"
    );
    // Without --dir, the module is missing, as the issue reported: a note said so first.
    let out = env.run(&["--local", "-w", "1", script.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("ModuleNotFoundError").stderr_has(&format!(
        "note: train.py imports helpers from beside it (helpers.py), but only the script is shipped: add --dir {} to ship its directory\nerror: ",
        code.display()
    ));
}

/// `--local -q`: tf-spawner's own lines go, the training's stay (CI keeps them as the
/// training log).
#[test]
fn quiet_keeps_the_tasks_own_output() {
    let env = Env::new();
    let script = env.write(
        "hello.py",
        "print('epoch 1/1 from the script', flush=True)\n",
    );
    let out = env.run(&["--local", "-q", "-w", "1", script.to_str().unwrap()]);
    out.success();
    assert_eq!(
        out.stdout, "worker-0 | epoch 1/1 from the script\n",
        "{out:#?}"
    );
    assert!(
        !out.stdout.contains("local run") && !out.stdout.contains("Succeeded"),
        "{out:#?}"
    );
    assert_eq!(out.stderr, "", "{out:#?}");
}

/// Each task prints the GPU variables it got, marks itself done, and the deciding task
/// waits for every mark, so each line is there before the verdict.
const GPUS: &str = r#"
import json, os, time
cfg = json.loads(os.environ["TF_CONFIG"])
me = "%s-%s" % (cfg["task"]["type"], cfg["task"]["index"])
print("%s %s" % (os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
                 os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "unset")), flush=True)
open(os.path.join(os.environ["MARKS"], me), "w").close()
if me == ("chief-0" if "chief" in cfg["cluster"] else "worker-0"):
    end = time.time() + 60
    while len(os.listdir(os.environ["MARKS"])) < int(os.environ["TASKS"]) and time.time() < end:
        time.sleep(0.05)
"#;

/// What each task saw of `CUDA_VISIBLE_DEVICES` and `TF_FORCE_GPU_ALLOW_GROWTH`, with
/// tf-spawner's own `CUDA_VISIBLE_DEVICES` set to `visible`, and the run's stderr.
fn gpus_seen(visible: &str, flags: &[&str], tasks: usize) -> (BTreeMap<String, String>, String) {
    let env = Env::new();
    let script = env.write("gpus.py", GPUS);
    let marks = tempfile::tempdir().unwrap();
    let mut args = vec!["--local", "-t", "gpus"];
    args.extend(flags);
    args.push(script.to_str().unwrap());
    let out = run(env
        .cmd()
        .env("KUBECONFIG", env.path("no-such-kubeconfig"))
        .env("CUDA_VISIBLE_DEVICES", visible)
        .env_remove("TF_FORCE_GPU_ALLOW_GROWTH")
        .env("MARKS", marks.path())
        .env("TASKS", tasks.to_string())
        .args(&args));
    out.success();
    let seen = lines_by_task(&out.stdout)
        .into_iter()
        .map(|(id, lines)| (id, lines.join("\n")))
        .collect();
    (seen, out.stderr)
}

#[test]
fn the_machines_gpus_are_shared_out_among_the_tasks() {
    // Three GPUs (by the ids tf-spawner itself may use), a chief, two workers and a
    // parameter server: a GPU each, none for the parameter server, no growth needed.
    let (seen, stderr) = gpus_seen("3,5,7", &["--chief", "-w", "2", "--ps", "1"], 4);
    let expected: BTreeMap<String, String> = [
        ("chief-0", "3 unset"),
        ("ps-0", " unset"),
        ("worker-0", "5 unset"),
        ("worker-1", "7 unset"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    assert_eq!(seen, expected, "{stderr}");
    assert!(
        stderr.contains("note: 3 GPUs here: 1 for each of the 3 training tasks"),
        "{stderr}"
    );
    // One GPU, two workers: both see it and grow their memory as they need it.
    let (seen, stderr) = gpus_seen("0", &["-w", "2"], 2);
    assert_eq!(seen["worker-0"], "0 true", "{stderr}");
    assert_eq!(seen["worker-1"], "0 true", "{stderr}");
    assert!(stderr.contains("they share it"), "{stderr}");
    // No GPU: nothing set, nothing said.
    let (seen, stderr) = gpus_seen("", &["-w", "2"], 2);
    assert_eq!(seen["worker-1"], " unset", "{stderr}");
    assert!(!stderr.contains("GPU"), "{stderr}");
}
