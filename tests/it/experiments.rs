//! Experiments known to every verb (issue 58 items 5 and 10): `compare` of an
//! experiment whose sweep was killed shows the runs in flight (`Running`, the curve so
//! far), the runs that ended unrecorded (their verdict from their pods) and the runs
//! never started; `status NAME` says NAME is an experiment; `list --experiment NAME` and
//! `list --experiments`; completion offers experiments where one is taken.

use serde_json::{Value, json};

use crate::compare::{as_sweep_run, keras, label_all, trained_run};
use crate::completion::tab;
use crate::follow::{running, spawn_run};
use crate::support::Env;

const NS: &str = "default";

/// Experiment `g` as a killed sweep leaves it: its record plans g-1, g-2, g-3; g-1 is
/// at epoch 2 of 3, g-2 ended (Succeeded) with nobody to record it, g-3 never started.
/// And `other`, a run of no experiment.
fn killed_sweep(env: &Env) {
    spawn_run(env, "g-1", &["-w", "1"]);
    running(env, "g-1-worker-0");
    let two_epochs: String = keras(3, 0.9)
        .lines()
        .take(4)
        .map(|l| format!("{l}\n"))
        .collect();
    env.server.append_log(NS, "g-1-worker-0", &two_epochs);
    trained_run(env, "g-2", 0.6, 0);
    for (tag, lr) in [("g-1", "0.1"), ("g-2", "0.01")] {
        as_sweep_run(env, tag, "g", json!({ "lr": lr }));
        label_all(env, tag, "g");
    }
    let runs: Vec<Value> = [("g-1", "0.1"), ("g-2", "0.01"), ("g-3", "0.001")]
        .iter()
        .map(|(tag, lr)| json!({"tag": tag, "params": {"lr": lr}}))
        .collect();
    let record = json!({"name": "g", "runs": runs});
    env.server.insert(
        "configmaps",
        NS,
        json!({
            "metadata": {"name": "g-experiment", "labels": {
                "tf-spawner/experiment": "g", "app.kubernetes.io/managed-by": "tf-spawner"}},
            "data": {"experiment.json": record.to_string()}
        }),
    );
    spawn_run(env, "other", &["-w", "1"]);
}

#[test]
fn compare_shows_runs_in_flight_ended_unrecorded_and_never_started() {
    let env = Env::new();
    killed_sweep(&env);
    let out = env.run(&["compare", "g"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[1].starts_with("*   g-2   0.01    Succeeded"),
        "{out:#?}"
    );
    assert!(
        lines[2].starts_with("    g-1   0.1     Running "),
        "{out:#?}"
    );
    assert!(lines[2].contains(" 2/3 "), "the epochs so far: {out:#?}");
    assert!(
        lines[3].starts_with("    g-3   0.001   NotStarted   -"),
        "{out:#?}"
    );
    assert!(!out.stdout.contains("other"), "{out:#?}");
    out.stdout_has("  o g-1 (lr=0.1)\n");
    // The curve so far, and the verdict nobody recorded, now recorded.
    let out = env.run(&["compare", "g", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let run = |tag: &str| {
        json["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tag"] == tag)
            .unwrap_or_else(|| panic!("no {tag}: {json:#}"))
            .clone()
    };
    assert_eq!(run("g-1")["verdict"], "Running");
    assert_eq!(run("g-1")["curve"]["epoch"], json!([1, 2]));
    assert_eq!(run("g-1")["curve"]["metrics"]["loss"], json!([0.9, 0.45]));
    assert_eq!(run("g-3")["verdict"], "NotStarted");
    assert_eq!(run("g-3")["params"]["lr"], "0.001");
    let cm = env.server.get("configmaps", NS, "g-2-script").unwrap();
    assert_eq!(
        cm["metadata"]["annotations"]["tf-spawner/verdict"],
        "Succeeded"
    );
    // The running run's verdict is not recorded: it has none yet.
    let cm = env.server.get("configmaps", NS, "g-1-script").unwrap();
    assert!(
        cm["metadata"]["annotations"]
            .get("tf-spawner/verdict")
            .is_none(),
        "{cm:#}"
    );
}

/// An experiment whose runs are all gone but its record: its runs as never started,
/// not "no run or experiment named".
#[test]
fn compare_of_an_experiment_with_only_its_record_lists_its_runs() {
    let env = Env::new();
    killed_sweep(&env);
    env.run(&["-d", "-t", "g-1"]).success();
    env.run(&["-d", "-t", "g-2"]).success();
    let out = env.run(&["compare", "g", "--no-chart"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{out:#?}");
    assert!(lines[1].contains("g-1   0.1     NotStarted"), "{out:#?}");
}

#[test]
fn status_of_an_experiment_says_what_it_is_and_list_shows_it() {
    let env = Env::new();
    killed_sweep(&env);
    let out = env.run(&["status", "g"]);
    out.failure(1);
    assert_eq!(
        out.stderr,
        "error: 'g' is an experiment, not a run: 3 runs planned, 2 started (g-1, g-2) (its runs: tf-spawner list --experiment g; their metrics: tf-spawner compare g; one run: tf-spawner status g-1)\n",
        "{out:#?}"
    );
    for verb in ["wait", "logs"] {
        env.run(&[verb, "g"])
            .failure(1)
            .stderr_has("error: 'g' is an experiment, not a run: 3 runs planned, 2 started");
    }
    // A name that is neither: as before.
    env.run(&["status", "zz"])
        .failure(1)
        .stderr_has("error: no pods labelled training_attempt=zz");
    // Its runs, and the one never started.
    let out = env.run(&["list", "--experiment", "g"]);
    out.success().stdout_has("never started: g-3\n");
    let tags: Vec<&str> = out
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(tags, ["g-1", "g-2", "never"], "{out:#?}");
    let out = env.run(&["list", "--experiment", "g", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2, "{json:#}");
    assert_eq!(json["not_started"], json!(["g-3"]));
    // The experiments.
    let out = env.run(&["list", "--experiments"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0], "EXPERIMENT   RUNS   SUCCEEDED   FAILED   UNFINISHED   NOT STARTED   AGE",
        "{out:#?}"
    );
    assert!(
        lines[1].starts_with("g            3      1           0        1            1 "),
        "{out:#?}"
    );
    assert_eq!(lines.len(), 2, "{out:#?}");
    let out = env.run(&["list", "--experiments", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["experiments"][0]["name"], "g");
    assert_eq!(json["experiments"][0]["planned"], 3);
    // Bad names: one line each.
    env.run(&["list", "--experiment", "nope"])
        .failure(1)
        .stderr_has("error: no experiment 'nope' in namespace 'default' (the experiments there: tf-spawner list --experiments -n default)");
    env.run(&["list", "--experiment", "a,b=c"])
        .failure(2)
        .stderr_has("--experiment \"a,b=c\" is not a valid name");
}

#[test]
fn completion_offers_experiments_where_one_is_taken() {
    let env = Env::new();
    killed_sweep(&env);
    assert_eq!(tab(&env, &["list", "--experiment", ""]), ["g"]);
    assert_eq!(tab(&env, &["-d", "--experiment", ""]), ["g"]);
    let served = tab(&env, &["tensorboard", ""]);
    assert!(served.iter().any(|c| c == "g"), "{served:?}");
    assert!(served.iter().any(|c| c == "g-1"), "{served:?}");
}
