//! Issue 24, "After the training": `--volume`, `cp`, `tensorboard` and the run report,
//! against the test server (what it stored, what the user saw). Exec and port-forward
//! need a kubelet: the running-pods suite covers them (tests/pods/after.rs).

use serde_json::{Value, json};

use crate::support::{Env, env_var, name};

const NS: &str = "default";

/// A claim in `default`, as a provisioner would leave it (Bound).
fn claim(env: &Env, name: &str, modes: &[&str]) {
    env.server.insert(
        "persistentvolumeclaims",
        NS,
        json!({
            "metadata": {"name": name},
            "spec": {"accessModes": modes, "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "accessModes": modes}
        }),
    );
}

fn pod(env: &Env, name: &str) -> Value {
    env.server.get("pods", NS, name).expect("pod stored")
}

#[test]
fn a_volume_is_mounted_in_every_task_and_recorded_on_the_run() {
    let env = Env::new();
    claim(&env, "results", &["ReadWriteMany"]);
    let out = env.spawn(&[
        "-t",
        "vol",
        "-w",
        "2",
        "--chief",
        "--volume",
        "results:/data/out",
    ]);
    out.success();
    assert!(!out.stderr.contains("note:"), "no note for RWX: {out:#?}");
    for name in ["vol-chief-0", "vol-worker-0", "vol-worker-1"] {
        let pod = pod(&env, name);
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        let volume = volumes
            .iter()
            .find(|v| v["name"] == "tf-spawner-output")
            .unwrap_or_else(|| panic!("{name} has the volume: {pod:#}"));
        assert_eq!(volume["persistentVolumeClaim"]["claimName"], "results");
        let mounts = pod["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap();
        assert!(
            mounts
                .iter()
                .any(|m| m["name"] == "tf-spawner-output" && m["mountPath"] == "/data/out"),
            "{pod:#}"
        );
        assert_eq!(
            env_var(&pod, "TF_SPAWNER_OUTPUT_DIR").as_deref(),
            Some("/data/out/vol")
        );
    }
    let cm = env.server.get("configmaps", NS, "vol-script").unwrap();
    assert_eq!(
        cm["metadata"]["annotations"]["tf-spawner/volume"],
        "results:/data/out"
    );
}

#[test]
fn a_missing_claim_is_named_and_nothing_is_created() {
    let env = Env::new();
    env.server.create_namespace(NS);
    let out = env.spawn(&["-t", "nov", "--volume", "nope"]);
    out.failure(1).stderr_has(
        "error: --volume: persistentvolumeclaim 'nope' does not exist in namespace 'default'",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn a_read_write_once_claim_is_a_note_and_read_write_once_pod_an_error() {
    let env = Env::new();
    claim(&env, "rwo", &["ReadWriteOnce"]);
    claim(&env, "rwop", &["ReadWriteOncePod"]);
    env.spawn(&["-t", "one", "-w", "1", "--volume", "rwo"])
        .success();
    let out = env.spawn(&["-t", "two", "-w", "2", "--volume", "rwo"]);
    out.success().stderr_has(
        "note: persistentvolumeclaim 'rwo' is ReadWriteOnce: the run's 2 pods can all mount it only if they land on one node",
    );
    // -q silences notes: only the tag.
    let quiet = env.spawn(&["-q", "-t", "three", "-w", "2", "--volume", "rwo"]);
    quiet.success();
    assert_eq!(
        (quiet.stdout.as_str(), quiet.stderr.as_str()),
        ("three\n", "")
    );
    env.spawn(&["-t", "single", "-w", "1", "--volume", "rwop"])
        .success();
    let out = env.spawn(&["-t", "pair", "-w", "2", "--volume", "rwop"]);
    out.failure(1)
        .stderr_has("error: --volume: persistentvolumeclaim 'rwop' is ReadWriteOncePod");
    assert!(
        !env.names(NS).iter().any(|n| n.contains("pair")),
        "{:?}",
        env.names(NS)
    );
}

#[test]
fn a_bad_volume_is_a_usage_error_before_any_request() {
    let env = Env::new();
    for (value, says) in [
        (
            "Bad_Claim",
            "--volume \"Bad_Claim\": the claim \"Bad_Claim\" is not a valid name",
        ),
        ("out:relative", "must be an absolute directory"),
        ("out:/", "must be an absolute directory"),
        ("out:/a/../b", "must be an absolute directory"),
        (
            "out:/script",
            "/script is where tf-spawner mounts the script",
        ),
        (
            "out:/script/sub/",
            "/script is where tf-spawner mounts the script",
        ),
        (
            "out:/tf-spawner-work",
            "/tf-spawner-work is where tf-spawner mounts the --dir directory",
        ),
        (
            "out:/tf-spawner-work/out",
            "/tf-spawner-work is where tf-spawner mounts the --dir directory",
        ),
        // Compared as the runtime resolves them (in a real run `/./script` hid the
        // script, `//tf-spawner-work` unpacked --dir into the claim).
        (
            "out://tf-spawner-work",
            "/tf-spawner-work is where tf-spawner mounts",
        ),
        (
            "out:/./tf-spawner-work",
            "/tf-spawner-work is where tf-spawner mounts",
        ),
        (
            "out://script",
            "/script is where tf-spawner mounts the script",
        ),
        (
            "out:/./script",
            "/script is where tf-spawner mounts the script",
        ),
        (
            "out:/script//",
            "/script is where tf-spawner mounts the script",
        ),
        ("out:/data/../script", "must be an absolute directory"),
    ] {
        let out = env.spawn(&["--volume", value]);
        out.failure(2).stderr_has(says);
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.server.requests().is_empty());
}

#[test]
fn the_defaults_file_may_name_the_volume() {
    let env = Env::new();
    claim(&env, "team-out", &["ReadWriteMany"]);
    let config = env.write("config.yaml", "volume: team-out:/results\n");
    let out = crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args([
        "-t",
        "cfg",
        "-w",
        "1",
        env.script().to_str().unwrap(),
    ]));
    out.success();
    assert_eq!(
        env_var(&pod(&env, "cfg-worker-0"), "TF_SPAWNER_OUTPUT_DIR").as_deref(),
        Some("/results/cfg")
    );
    let shown = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["config", "-o", "json"]),
    );
    let json: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(json["settings"]["volume"]["value"], "team-out:/results");
    assert_eq!(json["settings"]["volume"]["source"], "file");
}

#[test]
fn cp_and_tensorboard_need_a_run_with_a_volume() {
    let env = Env::new();
    env.server.create_namespace(NS);
    env.run(&["cp", "-t", "ghost", "model", "out"])
        .failure(1)
        .stderr_has("error: no run 'ghost' in namespace 'default'");
    // The tag as a positional, as wait, logs and status take it.
    env.run(&["cp", "ghost", "model", "out"])
        .failure(1)
        .stderr_has("error: no run 'ghost' in namespace 'default'");
    env.run(&["cp", "-t", "other", "ghost", "model", "out"])
        .failure(2)
        .stderr_has("`cp` was given two runs (other and ghost)");
    assert_eq!(env.run(&["cp", "ghost", "a", "model", "out"]).code, 2);
    env.spawn(&["-t", "plain", "-w", "1"]).success();
    env.run(&["cp", "-t", "plain", "model", "out"])
        .failure(1)
        .stderr_has("error: run 'plain' has no volume: spawn it with --volume CLAIM[:PATH]");
    env.run(&["tensorboard", "-t", "plain"])
        .failure(1)
        .stderr_has("error: run 'plain' has no volume");
    assert!(!env.path("out").exists());
}

#[test]
fn cp_refuses_paths_outside_the_volume_and_existing_destinations() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteOnce"]);
    env.spawn(&["-t", "c", "-w", "1", "--volume", "out"])
        .success();
    env.run(&["cp", "-t", "c", "/etc/passwd", "x"])
        .failure(1)
        .stderr_has("/etc/passwd is not in the run's volume, which is mounted at /output");
    env.run(&["cp", "-t", "c", "model/../../etc", "x"])
        .failure(1)
        .stderr_has("'..' is not allowed");
    // An empty REMOTE is a mistake (a variable that was not set), not the whole volume.
    let out = env.run(&["cp", "-t", "c", "", "x"]);
    out.failure(2).stderr_has("error: REMOTE is empty");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    env.write("taken", "mine");
    env.run(&["cp", "-t", "c", "model", "taken"])
        .failure(1)
        .stderr_has("taken already exists; choose a new path");
    assert_eq!(std::fs::read_to_string(env.path("taken")).unwrap(), "mine");
    // No helper pod was made for any of them.
    assert!(
        !env.names(NS).iter().any(|n| n.contains("-cp-")),
        "{:?}",
        env.names(NS)
    );
}

#[test]
fn a_helper_pod_that_cannot_start_is_deleted_and_nothing_is_copied() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteOnce"]);
    env.spawn(&["-t", "h", "-w", "1", "--volume", "out"])
        .success();
    env.server.bind_pod(NS, "h-worker-0", "node-a");
    let child = env
        .cmd()
        .args(["cp", "-t", "h", "model", "got", "--timeout", "1s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The helper pod as stored while the copy waits for it to start.
    let mut seen = None;
    for _ in 0..200 {
        seen = env
            .list("pods", NS)
            .into_iter()
            .find(|p| name(p).starts_with("h-cp-"));
        if seen.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let done = child.wait_with_output().unwrap();
    let out = crate::support::Output {
        code: done.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
    };
    out.failure(1).stderr_has("did not start within 1s");
    assert!(!env.path("got").exists());
    let left: Vec<String> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tf-spawner-cp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The helper asked for the run's node (a ReadWriteOnce claim), read-only, then went.
    let helper = &seen.expect("a helper pod was created");
    assert_eq!(helper["metadata"]["labels"]["training_attempt"], "h");
    assert_eq!(helper["metadata"]["labels"]["tf-spawner/helper"], "cp");
    assert_eq!(
        helper["spec"]["volumes"][0]["persistentVolumeClaim"]["readOnly"],
        true
    );
    // Small requests and limits of its own (a quota on limits admits it).
    let resources = &helper["spec"]["containers"][0]["resources"];
    assert_eq!(resources["limits"]["memory"], "256Mi", "{helper:#}");
    assert_eq!(resources["requests"]["cpu"], "50m", "{helper:#}");
    assert_eq!(
        helper["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
        "node-a"
    );
    assert!(
        env.server.get("pods", NS, name(helper)).is_none(),
        "the helper pod was deleted"
    );
}

#[test]
fn status_and_wait_report_each_task_s_times_and_the_run_s() {
    let env = Env::new();
    env.spawn(&["-t", "rt", "-w", "2"]).success();
    let ended = |pod: &str, start: &str, end: &str| {
        env.server.bind_pod(NS, pod, "node-a");
        env.server.set_pod_status(
            NS,
            pod,
            json!({"phase": "Succeeded", "containerStatuses": [{
                "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
                "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                    "startedAt": start, "finishedAt": end}}}]}),
        );
    };
    ended(
        "rt-worker-1",
        "2026-01-01T10:00:02Z",
        "2026-01-01T10:03:00Z",
    );
    ended(
        "rt-worker-0",
        "2026-01-01T10:00:04Z",
        "2026-01-01T10:01:14Z",
    );
    env.run(&["wait", "-t", "rt"])
        .success()
        .stdout_has("run rt: Succeeded\ntook 1m 12s: from the first task's start (2026-01-01 10:00:02 UTC) to worker-0's end (2026-01-01 10:01:14 UTC)\n");
    let out = env.run(&["status", "-t", "rt", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.success().stdout).unwrap();
    assert_eq!(json["duration_seconds"], 72);
    assert_eq!(json["pods"][0]["started_at"], "2026-01-01T10:00:04Z");
    assert_eq!(json["pods"][0]["finished_at"], "2026-01-01T10:01:14Z");
    assert_eq!(json["pods"][0]["duration_seconds"], 70);
    assert_eq!(json["pods"][1]["duration_seconds"], 178);
    env.run(&["status", "-t", "rt"])
        .success()
        .stdout_has("STARTED")
        .stdout_has("2026-01-01 10:00:04 UTC   2026-01-01 10:01:14 UTC   70s")
        .stdout_has("took 1m 12s");
}

/// Helper pods are no task of the run (not in its pods, its counts or its verdict), but
/// `status` shows each (kind, phase, age, how it ends) and `list` counts them, so nothing
/// the tool started runs on unseen (issue 35, item 5); `-d` deletes them with the run.
#[test]
fn helper_pods_are_no_task_of_the_run_but_shown_and_go_with_it() {
    let env = Env::new();
    env.spawn(&["-t", "hp", "-w", "1"]).success();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {"name": "hp-tensorboard", "labels": {
            "training_attempt": "hp", "tf-spawner/helper": "tensorboard",
            "app.kubernetes.io/managed-by": "tf-spawner"},
            "annotations": {"tf-spawner/sessions": format!("{{\"a1\":{now}}}")}},
            "spec": {"containers": [{"name": "tensorboard", "image": "tb"}]},
            "status": {"phase": "Running"}}),
    );
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {"name": "hp-cp-x1y2z", "labels": {
            "training_attempt": "hp", "tf-spawner/helper": "cp",
            "app.kubernetes.io/managed-by": "tf-spawner"}},
            "spec": {"containers": [{"name": "cp", "image": "tb"}],
                "activeDeadlineSeconds": 3600},
            "status": {"phase": "Running", "startTime": "2026-01-01T10:00:00Z"}}),
    );
    let out = env.run(&["status", "-t", "hp", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.success().stdout).unwrap();
    let names: Vec<&str> = json["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hp-worker-0"]);
    let helpers = json["helpers"].as_array().unwrap();
    assert_eq!(helpers.len(), 2, "{json:#}");
    assert_eq!(helpers[0]["name"], "hp-cp-x1y2z");
    assert_eq!(helpers[0]["kind"], "cp");
    assert_eq!(helpers[1]["kind"], "tensorboard");
    assert_eq!(helpers[1]["phase"], "Running");
    assert_eq!(helpers[1]["keep"], false);
    env.run(&["status", "-t", "hp"])
        .success()
        .stdout_has("helper pod/hp-cp-x1y2z (cp): Running, ")
        .stdout_has(
            "s; the cp that made it deletes it when its copy ends; if that cp was killed, its deadline ends it by 2026-01-01 11:00:00 UTC (tf-spawner -d -t hp deletes it sooner)\n",
        )
        .stdout_has("helper pod/hp-tensorboard (tensorboard): Running, ")
        .stdout_has("s; deleted when the last tensorboard session using it ends (1 now)\n");
    // `list` counts the run's tasks as its pods, and its helper pods apart.
    let out = env.run(&["list", "-o", "json"]);
    let list: Value = serde_json::from_str(&out.success().stdout).unwrap();
    assert_eq!(list["runs"][0]["roles"]["worker"]["total"], 1, "{list:#}");
    assert_eq!(list["runs"][0]["pods"], 1, "{list:#}");
    assert_eq!(list["runs"].as_array().unwrap().len(), 1, "{list:#}");
    assert!(list["runs"][0]["roles"].get("other").is_none(), "{list:#}");
    assert_eq!(
        list["runs"][0]["helpers"],
        json!({"cp": 1, "tensorboard": 1})
    );
    env.run(&["list"])
        .success()
        .stdout_has("worker 0/1 running, 1 pending; helper pods: tensorboard, cp\n");
    // Its task pods gone, the run is still known by its record and its helpers.
    env.server.delete_pod(NS, "hp-worker-0");
    env.server.delete_pod(NS, "hp-cp-x1y2z");
    env.run(&["list"]).success().stdout_has(
        "no task pods left (its ConfigMap and services remain: tf-spawner -d -t hp removes them); helper pod: tensorboard\n",
    );
    env.run(&["status", "-t", "hp"])
        .success()
        .stdout_has("no task pods left; the run's ConfigMap remains")
        .stdout_has("helper pod/hp-tensorboard (tensorboard): Running");
    env.run(&["-d", "-t", "hp", "-y"])
        .success()
        .stdout_has("deleted pod/hp-tensorboard");
}

#[test]
fn a_local_run_writes_under_its_output_dir_and_tensorboard_local_reads_it() {
    let env = Env::new();
    let script = env.write(
        "out.py",
        "import os\nopen(os.path.join(os.environ['TF_SPAWNER_OUTPUT_DIR'], 'model.txt'), 'w').write('m')\n",
    );
    env.run(&["--local", "-w", "1", "-t", "loc", script.to_str().unwrap()])
        .success();
    let dir = env.path("tf-spawner-output/loc");
    assert_eq!(std::fs::read_to_string(dir.join("model.txt")).unwrap(), "m");

    // `tensorboard --local` runs `tensorboard` from PATH on that directory.
    let bin = env.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("tensorboard");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = crate::support::run(env.cmd().env("PATH", &path).args([
        "tensorboard",
        "--local",
        "-t",
        "loc",
        "--port",
        "6123",
    ]));
    out.success()
        .stdout_has("TensorBoard: http://127.0.0.1:6123/ (reading ");
    let args = std::fs::read_to_string(bin.join("args")).unwrap();
    assert_eq!(
        args.trim(),
        format!(
            "--logdir {} --port 6123 --host 127.0.0.1",
            std::fs::canonicalize(&dir).unwrap().display()
        )
    );
    env.run(&["tensorboard", "--local", "-t", "none"])
        .failure(1)
        .stderr_has("tf-spawner-output/none does not exist");
}

/// A `tensorboard` session started as a user would, its stdout read line by line.
struct Session {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Session {
    fn start(env: &Env, args: &[&str]) -> Session {
        let mut child = env
            .cmd()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        Session { child, lines }
    }

    /// Waits for the line starting with `prefix`.
    fn line(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no line {prefix:?} within 30 s"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Ctrl-C, then what it printed.
    fn interrupt(self) -> crate::support::Output {
        // SAFETY: signals our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let out = self.child.wait_with_output().unwrap();
        crate::support::Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Polls until pod `name` is stored reading the whole claim (`/output`).
fn whole_volume_pod(env: &Env, name: &str) {
    for _ in 0..500 {
        let pod = env.server.get("pods", NS, name);
        if pod.is_some_and(|p| p["spec"]["containers"][0]["command"][2] == "/output") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("pod/{name} reading the whole claim was never created")
}

/// Polls until pod `name` is stored and returns it.
fn stored(env: &Env, name: &str) -> Value {
    for _ in 0..500 {
        if let Some(p) = env.server.get("pods", NS, name) {
            return p;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("pod/{name} was never created")
}

/// What a kubelet writes once the TensorBoard container passed its startup probe.
fn serving(env: &Env, name: &str) {
    env.server.bind_pod(NS, name, "node-a");
    env.server.set_pod_status(
        NS,
        name,
        json!({"phase": "Running", "containerStatuses": [{"name": "tensorboard",
            "ready": true, "started": true, "restartCount": 0, "image": "tb", "imageID": "",
            "state": {"running": {"startedAt": "2026-01-01T10:00:00Z"}}}]}),
    );
}

/// The TensorBoard pod: the run's image by default, small requests and limits,
/// TensorBoard on the pod's loopback (an exec startup probe, no port), and gone when the
/// last session using it ends: a second session shares it, and the first one's Ctrl-C
/// leaves it to the second (issue 41, items 1 and 6).
#[test]
fn tensorboard_sessions_share_the_pod_and_the_last_one_deletes_it() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteMany"]);
    env.spawn(&[
        "-t",
        "tb",
        "-w",
        "1",
        "--volume",
        "out",
        "-i",
        "team/tf:2.21",
    ])
    .success();
    let first = Session::start(&env, &["tensorboard", "-t", "tb"]);
    let pod = stored(&env, "tb-tensorboard");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["image"], "team/tf:2.21", "the run's image");
    assert_eq!(c["resources"]["limits"]["cpu"], "1");
    assert_eq!(c["resources"]["requests"]["memory"], "256Mi");
    let command = c["command"].to_string();
    assert!(command.contains(r#""--host","127.0.0.1""#) && !command.contains("bind_all"));
    assert!(
        c.get("ports").is_none() && c["startupProbe"]["exec"].is_object(),
        "{c:#}"
    );
    serving(&env, "tb-tensorboard");
    first.line("TensorBoard: http://127.0.0.1:");

    let second = Session::start(&env, &["tensorboard", "-t", "tb"]);
    second.line("TensorBoard: http://127.0.0.1:");
    let sessions = |env: &Env| -> usize {
        let pod = env.server.get("pods", NS, "tb-tensorboard").unwrap();
        let text = pod["metadata"]["annotations"]["tf-spawner/sessions"]
            .as_str()
            .unwrap_or("{}")
            .to_string();
        serde_json::from_str::<serde_json::Map<String, Value>>(&text)
            .unwrap()
            .len()
    };
    assert_eq!(sessions(&env), 2);
    let out = first.interrupt();
    // Ctrl-C is how a session ends (as for `kubectl port-forward`): exit 0, said so,
    // and no exit code of a signal in the words.
    out.success()
        .stderr_has("tensorboard ended by Ctrl-C")
        .stderr_has("pod/tb-tensorboard stays: 1 other tensorboard session uses it");
    assert!(!out.stderr.contains("exit code"), "{}", out.stderr);
    assert_eq!(sessions(&env), 1);
    let out = second.interrupt();
    out.success()
        .stderr_has("deleted pod/tb-tensorboard (tensorboard --keep keeps it)");
    assert!(env.server.get("pods", NS, "tb-tensorboard").is_none());

    // --keep: the pod stays for the next session, and -d removes it.
    let kept = Session::start(&env, &["tensorboard", "-t", "tb", "--keep"]);
    stored(&env, "tb-tensorboard");
    serving(&env, "tb-tensorboard");
    kept.line("TensorBoard: ");
    kept.interrupt()
        .success()
        .stderr_has("pod/tb-tensorboard stays (--keep)");
    assert!(env.server.get("pods", NS, "tb-tensorboard").is_some());
}

/// A pod named like the run's TensorBoard pod that does not carry the run's labels is
/// someone else's: refused in one line, neither used nor deleted nor changed.
#[test]
fn tensorboard_refuses_a_pod_of_its_name_that_is_not_the_runs() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteMany"]);
    env.spawn(&["-t", "fo", "-w", "1", "--volume", "out"])
        .success();
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {"name": "fo-tensorboard", "labels": {"app": "theirs"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            "status": {"phase": "Succeeded"}}),
    );
    let before = env.server.get("pods", NS, "fo-tensorboard").unwrap();
    let out = env.run(&["tensorboard", "-t", "fo", "--timeout", "5s"]);
    out.failure(1).stderr_has(
        "error: pod/fo-tensorboard exists in namespace 'default' but is not the tensorboard pod of run 'fo'",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert_eq!(
        env.server.get("pods", NS, "fo-tensorboard").unwrap(),
        before
    );
}

/// An image that cannot be pulled: the error names `--image`, and the pod goes.
#[test]
fn a_tensorboard_image_that_cannot_be_pulled_names_the_image_flag() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteMany"]);
    env.spawn(&["-t", "pi", "-w", "1", "--volume", "out"])
        .success();
    let session = Session::start(&env, &["tensorboard", "-t", "pi", "--image", "no/such:1"]);
    stored(&env, "pi-tensorboard");
    env.server.bind_pod(NS, "pi-tensorboard", "node-a");
    env.server.set_pod_status(
        NS,
        "pi-tensorboard",
        json!({"phase": "Pending", "containerStatuses": [{"name": "tensorboard",
            "ready": false, "restartCount": 0, "image": "no/such:1", "imageID": "",
            "state": {"waiting": {"reason": "ErrImagePull", "message": "pull access denied"}}}]}),
    );
    let out = session.child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot start") && stderr.contains("choose another image with --image"),
        "{stderr}"
    );
    assert!(env.server.get("pods", NS, "pi-tensorboard").is_none());
}

/// A pod template whose TF container mounts a volume inside a directory tf-spawner
/// mounts (`/script/…`, `/tf-spawner-work/…`) is refused before any request: the mount
/// would land in the script's read-only volume, or the `--dir` unpacking would write into
/// the user's volume.
#[test]
fn a_template_mount_inside_what_tf_spawner_mounts_is_refused() {
    let env = Env::new();
    for path in [
        "/tf-spawner-work/data",
        "/script/extra",
        "//script/sub",
        "/./tf-spawner-work/x",
        "/data/../script/sub",
    ] {
        let template = env.write(
            "inside.yaml",
            format!(
                "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    image: tf\n    volumeMounts:\n    - {{name: data, mountPath: {path}}}\n  volumes:\n  - {{name: data, emptyDir: {{}}}}\n"
            ),
        );
        let out = env.spawn(&["--pod-file", template.to_str().unwrap(), "-w", "1"]);
        out.failure(2).stderr_has(&format!(
            "the pod template for worker: spec.containers[0].volumeMounts: {path} is inside"
        ));
        out.stderr_has("choose another mountPath");
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.server.requests().is_empty());
}

/// `--run-as-user` mounts a writable HOME at /home/tf-spawner: a claim asked there
/// once gave way to it without a word (the run Succeeded and `cp` found nothing). Now
/// a usage error names both, before any request; a path written otherwise is the same
/// path. A claim elsewhere is stored at its resolved path.
#[test]
fn a_claim_where_tf_spawner_mounts_the_writable_home_is_refused_naming_both() {
    let env = Env::new();
    for path in [
        "/home/tf-spawner",
        "//home/tf-spawner/",
        "/home/./tf-spawner",
    ] {
        let volume = format!("out:{path}");
        let out = env.spawn(&["-w", "1", "--run-as-user", "1000", "--volume", &volume]);
        out.failure(2)
            .stderr_has("the --volume claim (/home/tf-spawner) and the writable HOME of --run-as-user (/home/tf-spawner) would both be mounted at /home/tf-spawner");
        assert!(env.server.requests().is_empty(), "{path}");
    }
    claim(&env, "out", &["ReadWriteMany"]);
    env.spawn(&["-t", "res", "-w", "1", "--volume", "out://data/./out/"])
        .success();
    let pod = pod(&env, "res-worker-0");
    let mounts = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap();
    assert!(
        mounts
            .iter()
            .any(|m| m["name"] == "tf-spawner-output" && m["mountPath"] == "/data/out"),
        "{pod:#}"
    );
}

/// `tensorboard NAME` (issue 47): one pod over an experiment's runs, each run's own
/// folder under its tag (`--logdir_spec`); `tensorboard -t T` reads the run's folder.
#[test]
fn tensorboard_of_an_experiment_serves_each_run_under_its_tag() {
    let env = Env::new();
    claim(&env, "out", &["ReadWriteMany"]);
    for tag in ["lrs-1", "lrs-2", "solo"] {
        env.spawn(&["-t", tag, "-w", "1", "--volume", "out"])
            .success();
    }
    for tag in ["lrs-1", "lrs-2"] {
        let mut cm = env
            .server
            .get("configmaps", NS, &format!("{tag}-script"))
            .unwrap();
        cm["metadata"]["labels"]["tf-spawner/experiment"] = json!("lrs");
        env.server.insert("configmaps", NS, cm);
    }
    let session = Session::start(&env, &["tensorboard", "lrs"]);
    let started = session.line("started pod/lrs-1-tensorboard-");
    assert!(
        started.ends_with("reading the folders of lrs-1, lrs-2 of claim 'out'"),
        "{started}"
    );
    let pod = env
        .server
        .list("pods", NS)
        .into_iter()
        .find(|p| name(p).starts_with("lrs-1-tensorboard-"))
        .unwrap();
    let command = &pod["spec"]["containers"][0]["command"];
    assert_eq!(command[1], "--logdir_spec", "{command}");
    assert_eq!(command[2], "lrs-1:/output/lrs-1,lrs-2:/output/lrs-2");
    session.interrupt();

    let solo = Session::start(&env, &["tensorboard", "-t", "solo"]);
    let pod = stored(&env, "solo-tensorboard");
    assert_eq!(pod["spec"]["containers"][0]["command"][2], "/output/solo");
    solo.interrupt();
    let whole = Session::start(&env, &["tensorboard", "-t", "solo", "--whole-volume"]);
    // Its pod made (so it listens for Ctrl-C): a SIGINT before that is ignored where the
    // suite runs with SIGINT ignored (a background job of a non-interactive shell, as a
    // CI runner may start it), and the session then waits out its 5 min --timeout.
    whole_volume_pod(&env, "solo-tensorboard");
    whole.interrupt();
    env.run(&["tensorboard", "nope"])
        .failure(1)
        .stderr_has("no run or experiment named 'nope'");
}
