//! `compare` of an adaptive sweep (issue 60, item 3): a run stopped early shows as
//! `StoppedEarly` (table, `-o json`, `-o csv`); `--no-stopped` leaves such runs out of
//! the table, the chart, the best run and the documents, names them in one line, and
//! says so in one line when that leaves nothing.

use serde_json::Value;

use crate::follow::exited;
use crate::support::Env;
use crate::sweep_early::{await_key, epoch, start_running, two_runs_at_once};
use crate::watched::Watched;

const STOP: &str = "ea-2 stopped at epoch 1 (rung 1 of 4): val_loss 0.9, worse than 0.5, the 1st best of 2 runs at epoch 1";

/// Experiment `ea` (ASHA, η 2), its two runs at once: `ea-2` stopped at its first
/// epoch (val_loss 0.9 against `ea-1`'s 0.5), `ea-1` still running.
fn until_stopped(env: &Env) -> Watched {
    let script = env.script();
    let extra = [
        "--objective",
        "val_loss",
        "--early-stop",
        "asha",
        "--eta",
        "2",
    ];
    let mut child = Watched::start(env, &two_runs_at_once("ea", &extra, &script));
    for tag in ["ea-1", "ea-2"] {
        start_running(env, &mut child, tag);
    }
    epoch(env, "ea-1", 1, 0.5);
    await_key(env, &mut child, "observed.ea-1.1");
    epoch(env, "ea-2", 1, 0.9);
    child.await_stdout(&format!("{STOP}\n"));
    child
}

/// `ea-1` trains to its end: the sweep is done.
fn to_the_end(env: &Env, child: Watched) {
    epoch(env, "ea-1", 2, 0.3);
    exited(env, "ea-1-worker-0", 0);
    child
        .finish()
        .success()
        .stdout_has("experiment ea: all 2 runs done: 1 succeeded, 1 stopped early");
}

/// The lines of `text` that name run `tag`.
fn lines_of<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(tag)).collect()
}

fn json_of(env: &Env, args: &[&str]) -> Value {
    let out = env.run(args);
    serde_json::from_str(&out.success().stdout).unwrap()
}

#[test]
fn no_stopped_leaves_the_runs_stopped_early_out_of_the_table_chart_and_best() {
    let env = Env::new();
    let child = until_stopped(&env);
    // Mid-sweep, sorted highest first: the stopped run is the best shown…
    let out = env.run(&["compare", "ea", "--sort", "-val_loss", "--no-chart"]);
    out.success().stdout_has("best: ea-2 (*)\n");
    // …unless left out: the running run is then the best.
    let out = env.run(&["compare", "ea", "--sort", "-val_loss", "--no-stopped"]);
    out.success()
        .stdout_has("best: ea-1 (*)\n")
        .stdout_has("left out, stopped early: ea-2\n");
    to_the_end(&env, child);

    let out = env.run(&["compare", "ea"]);
    out.success()
        .stdout_has("best: ea-1 (*)\n\nval_loss per epoch");
    let row = lines_of(&out.stdout, "ea-2");
    assert!(
        row[0].starts_with("    ea-2   2    StoppedEarly "),
        "{out:#?}"
    );
    assert!(
        row[1].ends_with(" ea-2 (lr=2)"),
        "the chart's legend: {out:#?}"
    );
    out.stdout_lacks("left out");

    let out = env.run(&["compare", "ea", "--no-stopped"]);
    out.success()
        .stdout_has("*   ea-1   1    Succeeded ")
        .stdout_has("best: ea-1 (*)\nleft out, stopped early: ea-2\n\nval_loss per epoch\n")
        .stdout_has(" ea-1 (lr=1)\n");
    assert_eq!(
        lines_of(&out.stdout, "ea-2"),
        ["left out, stopped early: ea-2"],
        "neither a row nor a curve: {out:#?}"
    );
}

#[test]
fn json_and_csv_carry_the_stop_and_no_stopped_leaves_it_out() {
    let env = Env::new();
    let child = until_stopped(&env);
    to_the_end(&env, child);

    let all = json_of(&env, &["compare", "ea", "-o", "json"]);
    let tags: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["ea-1", "ea-2"], "{all:#}");
    assert_eq!(all["runs"][1]["verdict"], format!("StoppedEarly: {STOP}"));
    assert_eq!(all["runs"][1]["epochs_done"], 1);
    assert!(all.get("left_out").is_none(), "{all:#}");

    let kept = json_of(&env, &["compare", "ea", "-o", "json", "--no-stopped"]);
    assert_eq!(kept["runs"].as_array().unwrap().len(), 1, "{kept:#}");
    assert_eq!(kept["runs"][0]["tag"], "ea-1");
    assert_eq!(kept["best"], "ea-1");
    assert_eq!(kept["left_out"], serde_json::json!(["ea-2"]));

    let out = env.run(&["compare", "ea", "-o", "csv"]);
    out.success()
        .stdout_has(&format!("\nea-2,2,\"StoppedEarly: {STOP}\","));
    let out = env.run(&["compare", "ea", "-o", "csv", "--no-stopped"]);
    out.success().stdout_lacks("ea-2");
    assert_eq!(out.stdout.lines().count(), 2, "{out:#?}");
}

#[test]
fn no_stopped_that_leaves_nothing_is_one_line_and_exit_1() {
    let env = Env::new();
    let child = until_stopped(&env);
    to_the_end(&env, child);
    let said =
        "error: every run compared was stopped early (ea-2); compare them without --no-stopped\n";
    let out = env.run(&["compare", "ea-2", "--no-stopped"]);
    out.failure(1);
    assert_eq!(out.stderr, said);
    assert_eq!(out.stdout, "");
    let out = env.run(&["compare", "-t", "ea-2", "--no-stopped", "-o", "json"]);
    out.failure(1);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["error"], said["error: ".len()..].trim_end());
    assert_eq!(json["exit_code"], 1);
    // The run itself is still there to compare.
    env.run(&["compare", "ea-2", "--no-chart"])
        .success()
        .stdout_has("*   ea-2   2    StoppedEarly ");
}

/// The decision is in the experiment's record before the run's own record says it (a
/// Ctrl-C between the two; `--resume` carries it out): its pods still run, and `compare`
/// shows it stopped early all the same.
#[test]
fn a_stop_decided_and_not_yet_carried_out_is_stopped_early() {
    let env = Env::new();
    let child = until_stopped(&env);
    to_the_end(&env, child);
    let mut cm = env
        .server
        .get("configmaps", "default", "ea-2-script")
        .expect("ea-2's ConfigMap");
    let annotations = cm["metadata"]["annotations"].as_object_mut().unwrap();
    assert!(annotations.remove("tf-spawner/verdict").is_some(), "{cm:#}");
    env.server.insert("configmaps", "default", cm);

    let out = env.run(&["compare", "ea", "--no-chart"]);
    let row = lines_of(&out.success().stdout, "ea-2");
    assert!(row[0].contains(" StoppedEarly "), "{out:#?}");
    let kept = json_of(&env, &["compare", "ea", "-o", "json", "--no-stopped"]);
    assert_eq!(kept["left_out"], serde_json::json!(["ea-2"]), "{kept:#}");
}
