//! `sweep --objective … --early-stop asha` (docs/experiments.md, "Stopping losing runs
//! early"): the losing runs stopped at their rungs with a line that says why, their pods
//! stopped and kept, each observation and decision in the experiment's record before it
//! is carried out; the freed slot starts the next run; the best run survives; `--resume`
//! judges no run twice.

use serde_json::Value;

use crate::follow::{exited, running};
use crate::support::{Env, await_while_running};
use crate::sweep::{await_pod, pods_of};
use crate::watched::Watched;

const NS: &str = "default";

/// The sweep: 4 runs of one worker, 3 at a time, ASHA with η 2 (rungs at epochs 1, 2,
/// 4, 8 of 10).
fn args(script: &str) -> Vec<String> {
    [
        "sweep",
        "-t",
        "ea",
        "-w",
        "1",
        "--param",
        "lr=1,2,3,4",
        "--parallel",
        "3",
        "--objective",
        "val_loss",
        "--early-stop",
        "asha",
        "--eta",
        "2",
        script,
    ]
    .map(String::from)
    .to_vec()
}

/// Run `tag`'s worker prints epoch `epoch`'s end with `val_loss`.
pub(crate) fn epoch(env: &Env, tag: &str, epoch: u32, val_loss: f64) {
    let line = format!("Epoch {epoch}/10\n1/1 - 0s 5ms/step - loss: 0.7 - val_loss: {val_loss}\n");
    env.server.append_log(NS, &format!("{tag}-worker-0"), &line);
}

pub(crate) fn record(env: &Env) -> Value {
    env.server
        .get("configmaps", NS, "ea-experiment")
        .expect("the experiment's record")
}

/// Blocks until the record holds `key`.
pub(crate) fn await_key(env: &Env, child: &mut Watched, key: &str) {
    await_while_running(
        child.child(),
        &format!("the record's {key}"),
        || match record(env)["data"][key].as_str() {
            Some(_) => Ok(()),
            None => Err(format!("{}", record(env)["data"])),
        },
    );
}

pub(crate) fn start_running(env: &Env, child: &mut Watched, tag: &str) {
    await_pod(env, &format!("{tag}-worker-0"), child.child());
    running(env, &format!("{tag}-worker-0"));
}

const EA2: &str = "ea-2 stopped at epoch 1 (rung 1 of 4): val_loss 0.9, worse than 0.5, the 1st best of 2 runs at epoch 1";
const EA1: &str = "ea-1 stopped at epoch 2 (rung 2 of 4): val_loss 0.6, worse than 0.3, the 1st best of 2 runs at epoch 2";

#[test]
fn asha_stops_the_losing_runs_at_their_rungs_and_the_best_survives() {
    let env = Env::new();
    let script = env.script();
    let mut child = Watched::start(
        &env,
        &args(script.to_str().unwrap())
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    for tag in ["ea-1", "ea-2", "ea-3"] {
        start_running(&env, &mut child, tag);
    }
    child.await_stdout("early stopping: asha, rungs at epochs 1, 2, 4, …");
    epoch(&env, "ea-1", 1, 0.5);
    await_key(&env, &mut child, "observed.ea-1.1");
    epoch(&env, "ea-2", 1, 0.9);
    child.await_stdout(&format!("{EA2}\n"));
    // Recorded before it was carried out, with the observation it rests on.
    let data = &record(&env)["data"];
    assert_eq!(data["observed.ea-2.1"], "0.9");
    assert_eq!(data["ended.ea-2"], format!("StoppedEarly: {EA2}"));
    // Its freed slot starts the 4th run.
    start_running(&env, &mut child, "ea-4");
    epoch(&env, "ea-3", 1, 0.4);
    await_key(&env, &mut child, "observed.ea-3.1");
    epoch(&env, "ea-4", 1, 0.45);
    await_key(&env, &mut child, "observed.ea-4.1");
    epoch(&env, "ea-3", 2, 0.3);
    await_key(&env, &mut child, "observed.ea-3.2");
    epoch(&env, "ea-1", 2, 0.6);
    child.await_stdout(&format!("{EA1}\n"));
    // 0.35 ties the 2nd best of 3 (⌈3/2⌉): it survives.
    epoch(&env, "ea-4", 2, 0.35);
    await_key(&env, &mut child, "observed.ea-4.2");
    exited(&env, "ea-3-worker-0", 0);
    exited(&env, "ea-4-worker-0", 0);
    let out = child.finish();
    out.success()
        .stdout_has("ea-2  stopped early")
        .stdout_has("ea-1  stopped early")
        .stdout_has("ea-3  Succeeded\n")
        .stdout_has("experiment ea: all 4 runs done: 2 succeeded, 2 stopped early");
    assert_eq!(
        out.stdout.matches("stopped at epoch").count(),
        2,
        "{}",
        out.stdout
    );
    // The stopped runs' pods were stopped (kept, with a deadline), the others not.
    for (tag, stopped) in [("ea-1", true), ("ea-2", true), ("ea-3", false)] {
        let pod = &pods_of(&env, tag)[0];
        let deadline = pod["spec"]["activeDeadlineSeconds"].as_i64();
        assert_eq!(deadline == Some(1), stopped, "{tag}: {pod}");
    }
    // The run's own record says it, as list, status and compare read it.
    let cm = env
        .list("configmaps", NS)
        .into_iter()
        .find(|c| c["metadata"]["labels"]["training_attempt"] == "ea-1")
        .expect("ea-1's ConfigMap");
    let verdict = cm["metadata"]["annotations"].to_string();
    assert!(
        verdict.contains("StoppedEarly: ea-1 stopped at epoch 2"),
        "{verdict}"
    );
    let data = &record(&env)["data"];
    assert_eq!(data["observed.ea-4.2"], "0.35");
    assert_eq!(data["ended.ea-3"], "Succeeded");
    let list = env.run(&["list", "--experiment", "ea"]);
    list.success().stdout_has("StoppedEarly");
    let status = env.run(&["status", "ea-2"]);
    status.stdout_has("StoppedEarly").stdout_has(EA2);
    let experiments = env.run(&["list", "--experiments", "-o", "json"]);
    let json: Value = serde_json::from_str(&experiments.success().stdout).unwrap();
    let ea = &json["experiments"][0];
    assert_eq!(
        (ea["succeeded"].as_u64(), ea["stopped_early"].as_u64()),
        (Some(2), Some(2)),
        "{json}"
    );
    env.run(&["list", "--experiments"])
        .success()
        .stdout_has("STOPPED EARLY");
    // Its pod ended at the lowered deadline, a later wait tells the recorded end: done.
    let killed = crate::follow::killed_after_the_stop();
    crate::follow::deadline_ended(&env, "ea-2-worker-0", killed);
    env.run(&["wait", "-t", "ea-2"])
        .success()
        .stdout_has(&format!("run ea-2: stopped early: {EA2}\n"));
}

#[test]
fn resume_after_a_decision_judges_no_run_again() {
    let env = Env::new();
    let script = env.script();
    let argv = args(script.to_str().unwrap());
    let mut child = Watched::start(&env, &argv.iter().map(String::as_str).collect::<Vec<_>>());
    for tag in ["ea-1", "ea-2", "ea-3"] {
        start_running(&env, &mut child, tag);
    }
    epoch(&env, "ea-1", 1, 0.5);
    await_key(&env, &mut child, "observed.ea-1.1");
    epoch(&env, "ea-2", 1, 0.9);
    child.await_stdout(&format!("{EA2}\n"));
    start_running(&env, &mut child, "ea-4");
    crate::follow::await_followed(&env, "ea-4");
    crate::follow::send(child.child(), "-INT");
    let out = child.finish();
    assert_eq!(out.code, 130, "{out:#?}");
    let before = record(&env)["data"].clone();

    // The same command with --resume: ea-2 stays stopped, ea-1's epoch 1 (read again
    // from its log) is not judged again.
    let mut resumed = argv.clone();
    resumed.splice(1..3, ["--resume".to_string(), "ea".to_string()]);
    let mut child = Watched::start(
        &env,
        &resumed.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    child.await_stdout("ea-2  stopped early");
    epoch(&env, "ea-3", 1, 0.4);
    await_key(&env, &mut child, "observed.ea-3.1");
    for tag in ["ea-1", "ea-3", "ea-4"] {
        exited(&env, &format!("{tag}-worker-0"), 0);
    }
    let out = child.finish();
    out.success()
        .stdout_has("experiment ea: taking it up (4 runs planned)")
        .stdout_has("all 4 runs done: 3 succeeded, 1 stopped early");
    assert!(!out.stdout.contains("stopped at epoch"), "{}", out.stdout);
    let after = &record(&env)["data"];
    assert_eq!(after["observed.ea-1.1"], before["observed.ea-1.1"]);
    assert_eq!(after["ended.ea-2"], before["ended.ea-2"]);
    assert!(pods_of(&env, "ea-2").len() == 1, "not started again");
}

/// `sweep -t NAME -w 1 --param lr=1,2 --parallel 2 EXTRA.. SCRIPT`: two one-worker runs
/// at once.
pub(crate) fn two_runs_at_once<'a>(
    name: &'a str,
    extra: &[&'a str],
    script: &'a std::path::Path,
) -> Vec<&'a str> {
    let mut argv = vec![
        "sweep",
        "-t",
        name,
        "-w",
        "1",
        "--param",
        "lr=1,2",
        "--parallel",
        "2",
    ];
    argv.extend_from_slice(extra);
    argv.push(script.to_str().unwrap());
    argv
}

#[test]
fn compare_sorts_by_the_experiments_objective_by_default() {
    let env = Env::new();
    let script = env.script();
    let argv = two_runs_at_once("ob", &["--objective", "val_acc"], &script);
    let mut child = Watched::start(&env, &argv);
    for (tag, acc) in [("ob-1", 0.6), ("ob-2", 0.9)] {
        start_running(&env, &mut child, tag);
        let line = format!("Epoch 1/1\n1/1 - 0s 5ms/step - val_loss: 0.1 - val_acc: {acc}\n");
        env.server.append_log(NS, &format!("{tag}-worker-0"), &line);
    }
    for tag in ["ob-1", "ob-2"] {
        exited(&env, &format!("{tag}-worker-0"), 0);
    }
    // The sweep's last line names the best by its objective too.
    child
        .finish()
        .success()
        .stdout_has("experiment ob: all 2 runs succeeded; best ob-2 (lr=2): val_acc 0.9");
    let out = env.run(&["compare", "ob", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.success().stdout).unwrap();
    // Not val_loss, compare's own default: the sweep's objective, highest first.
    assert_eq!(json["sort"]["metric"], "val_acc", "{json}");
    assert_eq!(json["sort"]["order"], "descending");
    assert_eq!(json["best"], "ob-2");
    assert_eq!(json["runs"][0]["tag"], "ob-2");
}

/// A `--local` sweep (python3) whose script prints Keras' epoch lines: the losing run,
/// which waits after its first epoch, is stopped there; the others train to their end.
#[test]
fn a_local_sweep_stops_its_losing_run_at_its_rung() {
    let env = Env::new();
    let script = env.write(
        "curve.py",
        "import os, time\n\
         lr = float(os.environ['TF_SPAWNER_PARAM_LR'])\n\
         for e in range(1, 6):\n\
         \x20   print(f'Epoch {e}/5', flush=True)\n\
         \x20   print(f'1/1 - 0s 5ms/step - loss: {lr / e:.4f} - val_loss: {lr / e:.4f}', flush=True)\n\
         \x20   if lr > 0.2:\n\
         \x20       time.sleep(120)\n",
    );
    let out = env.run(&[
        "sweep",
        "--local",
        "-t",
        "lx",
        "--param",
        "lr=0.1,0.3,0.05",
        "--objective",
        "val_loss",
        "--early-stop",
        "asha",
        "--eta",
        "2",
        script.to_str().unwrap(),
    ]);
    out.success()
        .stdout_has("lx-2 stopped at epoch 1 (rung 1 of 3): val_loss 0.3, worse than 0.1, the 1st best of 2 runs at epoch 1\n")
        .stdout_has("run lx-2 (local): stopped early")
        .stdout_has("run lx-3 (local): Succeeded")
        .stdout_has("local experiment lx: all 3 runs done: 2 succeeded, 1 stopped early; best lx-3");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("tf-spawner-output/lx/experiment.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["observed"]["lx-1"]["4"], 0.025, "{record}");
    assert_eq!(record["observed"]["lx-2"]["1"], 0.3);
    assert!(record["observed"]["lx-2"].get("2").is_none());
    let verdict = record["ended"]["lx-2"].as_str().unwrap();
    assert!(
        verdict.starts_with("StoppedEarly: lx-2 stopped at epoch 1"),
        "{verdict}"
    );
    let compare = env.run(&["compare", "--local", "lx"]);
    compare.success().stdout_has("StoppedEarly");
    let kept = env.run(&["compare", "--local", "lx", "--no-stopped", "--no-chart"]);
    kept.success()
        .stdout_lacks("StoppedEarly")
        .stdout_has("left out, stopped early: lx-2\n");
    assert_eq!(kept.stdout.matches("lx-2").count(), 1, "{kept:#?}");
}

#[test]
fn bad_early_stopping_input_is_one_line_exit_2_and_nothing_is_created() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--early-stop", "asha"],
            "error: --early-stop asha compares the runs by the sweep's objective: add --objective METRIC (e.g. --objective val_loss, --objective accuracy:max), or --early-stop off\n",
        ),
        (
            &["--objective", "val_loss:down"],
            "the direction after ':' is min or max, not \"down\" (e.g. val_loss:min)",
        ),
        (
            &["--eta", "1"],
            "is not a reduction factor: a whole number from 2 to 100",
        ),
        (&["--early-stop", "hyperband"], "hyperband"),
    ];
    for (flags, said) in cases {
        let mut argv = vec!["sweep", "-t", "bx", "--param", "lr=1,2"];
        argv.extend(flags);
        argv.push(script);
        let out = env.run(&argv);
        assert_eq!(out.code, 2, "{flags:?}: {out:#?}");
        assert!(out.stderr.contains(said), "{flags:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
    assert!(
        env.server.requests().is_empty(),
        "nothing asked, nothing created"
    );
}

#[test]
fn runs_without_epoch_lines_are_never_stopped_and_the_sweep_says_so_once() {
    let env = Env::new();
    let script = env.script();
    let argv = two_runs_at_once(
        "nx",
        &["--objective", "val_loss", "--early-stop", "median"],
        &script,
    );
    let mut child = Watched::start(&env, &argv);
    for tag in ["nx-1", "nx-2"] {
        start_running(&env, &mut child, tag);
        env.server
            .append_log(NS, &format!("{tag}-worker-0"), "training without epochs\n");
    }
    for tag in ["nx-1", "nx-2"] {
        exited(&env, &format!("{tag}-worker-0"), 0);
    }
    let out = child.finish();
    out.success()
        .stdout_has("experiment nx: all 2 runs succeeded");
    let said = "printed no epoch lines (Keras' Epoch k/N and its end, or tf-spawner's own: docs/progress.md): early stopping never stops a run it cannot judge by val_loss (said once)";
    assert_eq!(out.stderr.matches(said).count(), 1, "{}", out.stderr);
}
