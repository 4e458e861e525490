//! `tf-spawner sweep` (docs/experiments.md): a run per point of the parameters, each an
//! ordinary run `NAME-K` labelled with the experiment and carrying its parameters, so
//! many at a time as the quota holds; Ctrl-C and `--resume`; bad input refused in one
//! line with nothing created; `--local` sweeps.

use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::follow::{exited, finish, start};
use crate::support::{Env, Output, env_var};

const NS: &str = "default";

/// Blocks until `pod` exists (60 s at most), feeding nothing.
fn await_pod(env: &Env, pod: &str, child: &mut Child) {
    let start = Instant::now();
    while env.server.get("pods", NS, pod).is_none() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("tf-spawner ended ({status}) before {pod} was created");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{pod} never created"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pods_of(env: &Env, tag: &str) -> Vec<Value> {
    env.list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["training_attempt"] == tag)
        .collect()
}

fn script_args(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"][0]["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// Both workers of run `tag` exit 0 (worker 0 decides).
fn succeed(env: &Env, tag: &str) {
    exited(env, &format!("{tag}-worker-1"), 0);
    exited(env, &format!("{tag}-worker-0"), 0);
}

fn posts_of(env: &Env, path_end: &str) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(path_end))
        .count()
}

#[test]
fn a_grid_sweep_runs_as_many_at_a_time_as_the_quota_holds() {
    let env = Env::new();
    env.server.insert(
        "resourcequotas",
        NS,
        json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "4" } } }),
    );
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "ex",
            "-w",
            "2",
            "--param",
            "lr=0.1,0.01,0.001",
            script.to_str().unwrap(),
            "--",
            "--lr",
            "{lr}",
        ],
    );
    await_pod(&env, "ex-2-worker-1", &mut child);
    std::thread::sleep(Duration::from_millis(300));
    assert!(pods_of(&env, "ex-3").is_empty(), "a third run does not fit");
    succeed(&env, "ex-1");
    await_pod(&env, "ex-3-worker-1", &mut child);
    succeed(&env, "ex-2");
    succeed(&env, "ex-3");
    let out = finish(child);
    out.success()
        .stdout_has(
            "experiment ex: 3 runs, 2 at a time: the quota 'q' leaves 4 pods, a run needs 2\n",
        )
        .stdout_has("run ex-2 (lr=0.01): starting\n")
        .stdout_has("experiment ex: all 3 runs succeeded");

    // What the server stored: each run labelled with the experiment, its parameters on
    // its ConfigMap, in its script's arguments and its variables.
    for (k, lr) in [(1, "0.1"), (2, "0.01"), (3, "0.001")] {
        let tag = format!("ex-{k}");
        let cm = env
            .server
            .get("configmaps", NS, &format!("{tag}-script"))
            .unwrap();
        assert_eq!(cm["metadata"]["labels"]["tf-spawner/experiment"], "ex");
        assert_eq!(
            cm["metadata"]["annotations"]["tf-spawner/params"],
            format!("{{\"lr\":\"{lr}\"}}")
        );
        for pod in pods_of(&env, &tag) {
            assert_eq!(pod["metadata"]["labels"]["tf-spawner/experiment"], "ex");
            assert_eq!(script_args(&pod), ["--lr", lr]);
            assert_eq!(env_var(&pod, "TF_SPAWNER_PARAM_LR").as_deref(), Some(lr));
        }
        let services = env.list("services", NS);
        assert!(
            services
                .iter()
                .any(|s| s["metadata"]["name"] == format!("{tag}-worker-0")
                    && s["metadata"]["labels"]["tf-spawner/experiment"] == "ex")
        );
    }
    let record = env.server.get("configmaps", NS, "ex-experiment").unwrap();
    assert_eq!(record["metadata"]["labels"]["tf-spawner/experiment"], "ex");
    assert!(
        record["metadata"]["labels"]
            .get("training_attempt")
            .is_none()
    );
    let plan: Value =
        serde_json::from_str(record["data"]["experiment.json"].as_str().unwrap()).unwrap();
    assert_eq!(plan["runs"][2]["tag"], "ex-3");
    assert_eq!(plan["runs"][2]["params"]["lr"], "0.001");
    // Every verb works on a run of it.
    env.run(&["status", "ex-2"])
        .success()
        .stdout_has("Succeeded");
}

#[test]
fn a_failed_run_makes_the_sweep_exit_3_naming_it() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "fx",
            "-w",
            "1",
            "--param",
            "bs=32,64",
            "--parallel",
            "2",
            script.to_str().unwrap(),
        ],
    );
    await_pod(&env, "fx-1-worker-0", &mut child);
    await_pod(&env, "fx-2-worker-0", &mut child);
    exited(&env, "fx-1-worker-0", 0);
    exited(&env, "fx-2-worker-0", 1);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has("experiment fx: 2 runs, 2 at a time: --parallel")
        .stdout_has("fx-1  Succeeded\n")
        .stdout_has("fx-2  Failed: run 'fx-2' failed: pod fx-2-worker-0 (worker-0) failed: exit code 1, reason Error\n")
        .stderr_has("error: experiment 'fx': 1 of 2 runs failed: fx-2 (see: tf-spawner status fx-2 -n default)");
    // No placeholder: the parameter reaches the script as its variable alone.
    let pod = env.server.get("pods", NS, "fx-2-worker-0").unwrap();
    assert_eq!(env_var(&pod, "TF_SPAWNER_PARAM_BS").as_deref(), Some("64"));
    assert_eq!(
        env_var(&pod, "TF_SPAWNER_EXPERIMENT").as_deref(),
        Some("fx")
    );
}

#[test]
fn ctrl_c_leaves_an_experiment_that_resume_takes_up_starting_only_the_rest() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "rx",
            "-w",
            "1",
            "--param",
            "lr=0.1,0.2,0.3",
            "--parallel",
            "1",
            script.to_str().unwrap(),
            "--",
            "--lr={lr}",
        ],
    );
    await_pod(&env, "rx-1-worker-0", &mut child);
    crate::follow::await_watches(&env, 1);
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has("take it up with: tf-spawner sweep --resume rx -n default");
    assert!(pods_of(&env, "rx-2").is_empty());
    let first = env.server.get("pods", NS, "rx-1-worker-0").unwrap();

    // From elsewhere: the record says where the files are.
    let mut child = crate::follow::start(&env, &["sweep", "--resume", "rx"]);
    crate::follow::await_watches(&env, 2);
    exited(&env, "rx-1-worker-0", 0);
    await_pod(&env, "rx-2-worker-0", &mut child);
    exited(&env, "rx-2-worker-0", 0);
    await_pod(&env, "rx-3-worker-0", &mut child);
    exited(&env, "rx-3-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("experiment rx: taking it up (3 runs planned)")
        .stdout_has("experiment rx: all 3 runs succeeded");
    let again = env.server.get("pods", NS, "rx-1-worker-0").unwrap();
    assert_eq!(
        first["metadata"]["uid"], again["metadata"]["uid"],
        "not re-created"
    );
    assert_eq!(
        posts_of(&env, "/configmaps"),
        4,
        "the record and 3 runs, once each"
    );
    let pod = env.server.get("pods", NS, "rx-3-worker-0").unwrap();
    assert_eq!(script_args(&pod), ["--lr=0.3"]);
}

#[test]
fn dry_run_prints_every_runs_objects_and_creates_nothing() {
    let env = Env::new();
    let script = env.script();
    let out = env.run(&[
        "sweep",
        "--dry-run",
        "-o",
        "json",
        "-t",
        "dr",
        "-w",
        "2",
        "--param",
        "lr=1,2",
        "--param",
        "bs=8,16",
        script.to_str().unwrap(),
        "--",
        "{lr}",
        "{bs}",
    ]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    // 4 runs: a ConfigMap, 2 services and 2 pods each.
    assert_eq!(items.len(), 20);
    let pod = items
        .iter()
        .find(|o| o["kind"] == "Pod" && o["metadata"]["name"] == "dr-4-worker-1")
        .unwrap();
    assert_eq!(script_args(pod), ["2", "16"]);
    assert!(env.names(NS).is_empty());
    let yaml = env.run(&[
        "sweep",
        "--dry-run",
        "-t",
        "dr",
        "--param",
        "lr=1,2",
        script.to_str().unwrap(),
    ]);
    yaml.success().stdout_has("name: dr-2-script");
}

fn refused(out: Output, line: &str) {
    assert_eq!(out.code, 2, "{out:#?}");
    assert_eq!(out.stderr, format!("error: {line}\n"));
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_is_created() {
    let env = Env::new();
    let s = env.script();
    let script = s.to_str().unwrap();
    let sweep = |more: &[&str]| {
        let mut args = vec!["sweep", "-t", "bx"];
        args.extend_from_slice(more);
        env.run(&args)
    };
    refused(
        sweep(&["--param", "lr=", script]),
        "--param lr=: no values (give NAME=V1,V2,… or a range NAME=LO..HI)",
    );
    refused(
        sweep(&["--param", "learning-rate=0.1", script]),
        "--param 'learning-rate=0.1': the name 'learning-rate' is not an identifier (letters, digits and _, not starting with a digit): it names the placeholder {NAME} and $TF_SPAWNER_PARAM_NAME",
    );
    let ten = "1,2,3,4,5,6,7,8,9,10";
    let (a, b, c, d) = (
        format!("a={ten}"),
        format!("b={ten}"),
        format!("c={ten}"),
        format!("d={ten}"),
    );
    refused(
        sweep(&[
            "--param", &a, "--param", &b, "--param", &c, "--param", &d, script,
        ]),
        "the sweep makes 10000 runs: add --yes to start that many, or give fewer values (or --samples K)",
    );
    refused(
        sweep(&["--param", "lr=1", script, "--", "--lr", "{lr}", "{bs}"]),
        "the placeholder {bs} in the script's arguments names no parameter (the parameters: lr); add --param bs=… or correct it",
    );
    refused(
        sweep(&["--param", "lr=1", "--param", "bs=2", script, "--", "{lr}"]),
        "--param bs is in no placeholder of the script's arguments: add {bs} after --, or use no placeholder at all to pass every parameter as $TF_SPAWNER_PARAM_NAME alone",
    );
    refused(
        sweep(&["--param", "dropout=0.1..0.5", script]),
        "--param dropout=0.1..0.5 is a range: a grid needs values (dropout=V1,V2,…), or add --samples K for a random search",
    );
    assert!(env.server.requests().is_empty(), "no request for bad input");

    // A name in use: a run, then an experiment.
    env.spawn(&["-t", "bx-2"]).success();
    let before = env.names(NS);
    refused(
        sweep(&["--param", "lr=1,2", script]),
        "run 'bx-2' exists already in namespace 'default': the sweep's runs are bx-1 … bx-2; pick another name with -t, or delete it (tf-spawner -d -t bx-2 -n default); nothing was created",
    );
    env.server.insert(
        "configmaps",
        NS,
        json!({ "metadata": { "name": "by-experiment", "labels": { "tf-spawner/experiment": "by" } }, "data": {} }),
    );
    let out = env.run(&["sweep", "-t", "by", "--param", "lr=1,2", script]);
    refused(
        out,
        "experiment 'by' exists already in namespace 'default': take it up with tf-spawner sweep --resume by -n default, or pick another name with -t; nothing was created",
    );
    let mut after = env.names(NS);
    after.retain(|n| n != "configmap/by-experiment");
    assert_eq!(after, before, "nothing created");
}

#[test]
fn a_local_sweep_runs_one_after_another_and_keeps_each_runs_parameters() {
    let env = Env::new();
    let script = env.write(
        "p.py",
        "import os, sys\nprint('lr', os.environ['TF_SPAWNER_PARAM_LR'], sys.argv[1:])\n",
    );
    let out = env.run(&[
        "sweep",
        "--local",
        "-t",
        "lx",
        "--param",
        "lr=0.1,0.2",
        script.to_str().unwrap(),
        "--",
        "--lr",
        "{lr}",
    ]);
    out.success()
        .stdout_has("local experiment lx: 2 runs, 1 at a time")
        .stdout_has("lr 0.2 ['--lr', '0.2']")
        .stdout_has("run lx-2 (local): Succeeded")
        .stdout_has("local experiment lx: all 2 runs succeeded");
    let params = std::fs::read_to_string(env.path("tf-spawner-output/lx-1/params.json")).unwrap();
    assert_eq!(params, r#"{"lr":"0.1"}"#);
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("tf-spawner-output/lx/experiment.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["runs"][1]["tag"], "lx-2");
    assert!(env.server.requests().is_empty(), "no cluster");
}
