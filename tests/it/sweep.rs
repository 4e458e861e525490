//! `tf-spawner sweep` (docs/experiments.md): a run per point of the parameters, each an
//! ordinary run `NAME-K` labelled with the experiment and carrying its parameters, so
//! many at a time as the quota holds; Ctrl-C and `--resume`; bad input refused in one
//! line with nothing created; `--local` sweeps.

use std::path::Path;
use std::process::Child;

use serde_json::{Value, json};

use crate::follow::{exited, finish, start};
use crate::support::{Env, Output, await_while_running, env_var};
use crate::watched::Watched;

const NS: &str = "default";

/// Blocks until `pod` exists (60 s at most), feeding nothing.
pub(crate) fn await_pod(env: &Env, pod: &str, child: &mut Child) {
    await_while_running(child, &format!("{pod} was created"), || {
        match env.server.get("pods", NS, pod) {
            Some(_) => Ok(()),
            None => Err("not yet".into()),
        }
    });
}

pub(crate) fn pods_of(env: &Env, tag: &str) -> Vec<Value> {
    env.list("pods", NS)
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["training_attempt"] == tag)
        .collect()
}

pub(crate) fn script_args(pod: &Value) -> Vec<String> {
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

/// Starts `sweep -t TAG -w 1 --param PARAM --parallel N SCRIPT` and `then`: a run of
/// one worker per value.
fn start_one_worker_each(
    env: &Env,
    script: &Path,
    tag: &str,
    param: &str,
    parallel: &str,
    then: &[&str],
) -> Child {
    let line = format!("sweep -t {tag} -w 1 --param {param} --parallel {parallel}");
    let mut args: Vec<&str> = line.split(' ').collect();
    args.push(script.to_str().unwrap());
    args.extend(then);
    start(env, &args)
}

pub(crate) fn posts_of(env: &Env, path_end: &str) -> usize {
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
    let mut child = Watched::start(
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
    await_pod(&env, "ex-2-worker-1", child.child());
    // The runs that fit start together ("starting" printed, then created): a line the
    // follow of run 2 prints, after its creation, comes after a third run's "starting".
    child.await_stdout("ex-2  ");
    assert!(
        !child.stdout().contains("run ex-3"),
        "a third run does not fit: {}",
        child.stdout()
    );
    assert!(pods_of(&env, "ex-3").is_empty(), "a third run does not fit");
    succeed(&env, "ex-1");
    await_pod(&env, "ex-3-worker-1", child.child());
    succeed(&env, "ex-2");
    succeed(&env, "ex-3");
    let out = child.finish();
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
    let mut child = start_one_worker_each(&env, &script, "fx", "bs=32,64", "2", &[]);
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
    let mut child = start_one_worker_each(
        &env,
        &script,
        "rx",
        "lr=0.1,0.2,0.3",
        "1",
        &["--", "--lr={lr}"],
    );
    await_pod(&env, "rx-1-worker-0", &mut child);
    crate::follow::await_watches(&env, 1);
    crate::follow::send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has(&format!("experiment 'rx' was left as it is (0 succeeded, 0 failed, 1 left running, 2 not started); take it up with: tf-spawner sweep --resume rx -t rx -w 1 --param lr=0.1,0.2,0.3 --parallel 1 {} -- '--lr={{lr}}'\n", script.display()));
    assert!(pods_of(&env, "rx-2").is_empty());
    let first = env.server.get("pods", NS, "rx-1-worker-0").unwrap();

    // The same command, with --resume.
    let resume = [
        "sweep",
        "--resume",
        "rx",
        "-w",
        "1",
        "--param",
        "lr=0.1,0.2,0.3",
        script.to_str().unwrap(),
        "--",
        "--lr={lr}",
    ];
    let mut child = crate::follow::start(&env, &resume);
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
        "-o",
        "yaml",
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
    // Counts past what a sweep or a u64 holds, and an age past 100 years.
    let param = ["--param", "lr=1..2"];
    for (flag, value, line) in [
        (
            "--samples",
            "99999999999",
            "--samples 99999999999: more than the 100000 runs a sweep may have",
        ),
        ("--samples", "0", "--samples 0: must be at least 1"),
        (
            "--parallel",
            "18446744073709551616",
            "--parallel 18446744073709551616: more than the 100000 runs a sweep may have",
        ),
    ] {
        refused(sweep(&[&param[..], &[flag, value, script]].concat()), line);
    }
    refused(
        sweep(&[
            "--param",
            "lr=1..2",
            "--samples",
            "2",
            "--seed",
            "18446744073709551616",
            script,
        ]),
        "--seed 18446744073709551616: more than 18446744073709551615 (a 64-bit seed)",
    );
    refused(
        env.run(&["-d", "--finished", "--older-than", "99999999999999999999d"]),
        "--older-than \"99999999999999999999d\": longer than 100 years",
    );
    // The spawn's flags go after `sweep`.
    refused(
        env.run(&["-w", "2", "sweep", "-t", "bx", "--param", "lr=1", script]),
        "--workers goes after `sweep`, with the sweep's other flags: tf-spawner sweep --workers … --param NAME=V1,V2 SCRIPT",
    );
    assert!(env.server.requests().is_empty(), "no request for bad input");

    // A name in use: a run, then an experiment.
    // A name in use exits 7, as a taken tag does.
    env.spawn(&["-t", "bx-2"]).success();
    let before = env.names(NS);
    let out = sweep(&["--param", "lr=1,2", script]);
    out.failure(7).stderr_has(
        "error: run 'bx-2' exists already in namespace 'default': the sweep's runs are bx-1 … bx-2; pick another name with -t, or delete it (tf-spawner -d -t bx-2 -n default); nothing was created\n",
    );
    env.server.insert(
        "configmaps",
        NS,
        json!({ "metadata": { "name": "by-experiment", "labels": { "tf-spawner/experiment": "by" } }, "data": {} }),
    );
    let out = env.run(&["sweep", "-t", "by", "--param", "lr=1,2", script]);
    out.failure(7).stderr_has(&format!(
        "error: experiment 'by' exists already in namespace 'default': take it up with tf-spawner sweep --resume by -t by --param lr=1,2 {script}, or pick another name with -t; nothing was created\n"
    ));
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

/// Into a pipe, the sweep prints a line per change of a run (its state, its epoch and
/// last metrics), never a step's, and no escape code.
#[test]
fn a_pipe_gets_a_line_per_change_of_a_run() {
    let env = Env::new();
    let script = env.script();
    let mut child = Watched::start(
        &env,
        &[
            "sweep",
            "-t",
            "px",
            "-w",
            "1",
            "--param",
            "lr=0.1",
            script.to_str().unwrap(),
        ],
    );
    await_pod(&env, "px-1-worker-0", child.child());
    crate::follow::running(&env, "px-1-worker-0");
    let mut log = String::from("Epoch 1/2\n");
    for step in 1..=3 {
        log.push_str(&format!(
            "{step}/3 - 1s 63ms/step - loss: 0.{} - accuracy: 0.8\n",
            9 - step
        ));
    }
    env.server.append_log(NS, "px-1-worker-0", &log);
    // The progress reader shows epoch 1's last step before the run ends.
    child.await_stdout("px-1  Running  epoch 1/2, loss 0.6, accuracy 0.8\n");
    exited(&env, "px-1-worker-0", 0);
    let out = child.finish();
    out.success()
        .stdout_has("px-1  Running\n")
        .stdout_has("px-1  Running  epoch 1/2, loss 0.6, accuracy 0.8\n")
        .stdout_has("px-1  Succeeded\n")
        .stdout_has("experiment px: its one run succeeded");
    assert!(
        out.stdout.matches("px-1  Running  epoch").count() <= 2,
        "a line at the epoch's start and end, not one per step: {}",
        out.stdout
    );
    assert!(!out.stdout.contains('\x1b'), "{}", out.stdout);
}

/// Ctrl-C while a run waits for quota: that run was never created and is counted as not
/// started, beside the one left running.
#[test]
fn ctrl_c_while_a_run_waits_for_quota_counts_it_as_not_started() {
    let env = Env::new();
    env.server.insert(
        "resourcequotas",
        NS,
        json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "1" } } }),
    );
    let script = env.script();
    let args = ["sweep", "-t", "qw", "-w", "1", "--param", "lr=1,2,3"];
    let mut args = args.to_vec();
    args.extend(["--parallel", "2", script.to_str().unwrap()]);
    let mut child = start(&env, &args);
    await_pod(&env, "qw-1-worker-0", &mut child);
    // qw-2 refused for want of quota, then tried again: the quota read a third time.
    env.await_requests(3, "retry for want of quota", |r| {
        r.path.ends_with("/resourcequotas")
    });
    crate::follow::send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has("(0 succeeded, 0 failed, 1 left running, 2 not started)");
    assert!(pods_of(&env, "qw-2").is_empty());
}

/// `--resume` under a quota: the runs that ended hold no share of it, only those still
/// running count toward the runs at a time.
#[test]
fn resume_counts_only_the_runs_still_running_toward_the_runs_at_a_time() {
    let env = Env::new();
    env.server.insert(
        "resourcequotas",
        NS,
        json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "2" } } }),
    );
    let script = env.script();
    let args = [
        "sweep",
        "-t",
        "qx",
        "-w",
        "1",
        "--param",
        "lr=1,2,3,4",
        script.to_str().unwrap(),
    ];
    let mut child = start(&env, &args);
    await_pod(&env, "qx-2-worker-0", &mut child);
    exited(&env, "qx-1-worker-0", 0);
    await_pod(&env, "qx-3-worker-0", &mut child);
    // qx-3 made whole and followed (a Ctrl-C during its create would take it back).
    crate::follow::await_run_watches(&env, "qx-3", 1);
    crate::follow::send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stdout_has(
        "experiment qx: 4 runs, 2 at a time: the quota 'q' leaves 2 pods, a run needs 1\n",
    )
    .stderr_has("(1 succeeded, 0 failed, 2 left running, 1 not started)");

    // qx-1 ended, qx-2 and qx-3 run: 2 at a time, not 3.
    let before = ["qx-2", "qx-3"].map(|tag| crate::follow::run_watches(&env, tag));
    let mut again = vec!["sweep", "--resume", "qx"];
    again.extend_from_slice(&args[1..]);
    let mut child = start(&env, &again);
    // Once it follows qx-2 and qx-3: it has counted them and read the quota (a pod that
    // ends while the quota is read would change what the quota leaves).
    crate::follow::await_run_watches(&env, "qx-2", before[0] + 1);
    crate::follow::await_run_watches(&env, "qx-3", before[1] + 1);
    exited(&env, "qx-2-worker-0", 0);
    await_pod(&env, "qx-4-worker-0", &mut child);
    exited(&env, "qx-3-worker-0", 0);
    exited(&env, "qx-4-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("experiment qx: 4 runs, 2 at a time: 2 still running, and the quota 'q' leaves 0 pods, a run needs 1\n")
        .stdout_has("experiment qx: all 4 runs succeeded");
    assert_eq!(posts_of(&env, "/pods"), 4, "each run's pod made once");
}

/// What would refuse every run refuses the sweep at its first: Pod Security
/// `restricted` without `--run-as-user`, a quota on limits without `--cpu` and
/// `--memory`: the spawn's one line, and nothing left (not the experiment's record).
#[test]
fn a_sweep_refused_at_its_first_run_leaves_nothing() {
    let env = Env::new();
    crate::hardened::enforcing(&env, "strict", "restricted");
    let script = env.script();
    let script = script.to_str().unwrap();
    let out = env.run(&[
        "sweep", "-n", "strict", "-t", "ps", "--param", "lr=1,2", script,
    ]);
    out.failure(1).stderr_has(
        "namespace 'strict' enforces Pod Security \"restricted\": runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true); run the tasks as a non-root user with --run-as-user UID (defaults key run_as_user)",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.names("strict").is_empty(), "{:?}", env.names("strict"));

    env.server.insert(
        "resourcequotas",
        NS,
        json!({ "metadata": { "name": "lim" }, "spec": { "hard": { "limits.cpu": "2", "limits.memory": "4Gi" } } }),
    );
    let before = env.names(NS);
    let out = env.run(&["sweep", "-t", "lq", "--param", "lr=1,2", script]);
    out.failure(1).stderr_has(
        "error: resource quota 'lim' in namespace 'default' requires limits.cpu and limits.memory on every container, and the worker pods' container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert_eq!(env.names(NS), before, "nothing created");
}

/// `-d --experiment` while the sweep runs elsewhere: the sweep starts no run of it
/// again, and says so.
#[test]
fn a_sweep_whose_experiment_is_deleted_starts_no_more_runs() {
    let env = Env::new();
    let script = env.script();
    let args = [
        "sweep",
        "-t",
        "dx",
        "-w",
        "1",
        "--param",
        "lr=1,2,3",
        "--parallel",
        "1",
        script.to_str().unwrap(),
    ];
    let mut child = start(&env, &args);
    await_pod(&env, "dx-1-worker-0", &mut child);
    crate::follow::await_watches(&env, 1);
    env.run(&["-d", "-y", "--experiment", "dx"]).success();
    let out = finish(child);
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has(
        "error: experiment 'dx' was deleted while the sweep ran (its record dx-experiment is gone)",
    );
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}
