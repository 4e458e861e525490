//! The runs' metrics (issue 47): recorded on each run's ConfigMap at its verdict (`wait`)
//! or on a later `status`, read back by `list` and `compare` from the records alone.

use serde_json::{Value, json};

use crate::follow::{await_watches, exited, finish, running, spawn_run, start};
use crate::support::Env;

const NS: &str = "default";

/// Keras' lines (verbose=2) for `epochs` epochs whose loss is `first / k`.
pub fn keras(epochs: u32, first: f64) -> String {
    (1..=epochs)
        .map(|k| {
            let loss = first / f64::from(k);
            format!("Epoch {k}/{epochs}\n100/100 - 12s - loss: {loss:.4} - accuracy: 0.{k}0 - 12s/epoch - 120ms/step\n")
        })
        .collect()
}

/// Labels run `tag`'s ConfigMap as a sweep's run does (experiment, parameters).
pub fn as_sweep_run(env: &Env, tag: &str, experiment: &str, params: Value) {
    let name = format!("{tag}-script");
    let mut cm = env
        .server
        .get("configmaps", NS, &name)
        .expect("the run's ConfigMap");
    cm["metadata"]["labels"]["tf-spawner/experiment"] = json!(experiment);
    cm["metadata"]["annotations"]["tf-spawner/params"] = json!(params.to_string());
    env.server.insert("configmaps", NS, cm);
}

fn recorded(env: &Env, tag: &str) -> Value {
    let cm = env
        .server
        .get("configmaps", NS, &format!("{tag}-script"))
        .unwrap();
    let text = cm["metadata"]["annotations"]["tf-spawner/metrics"]
        .as_str()
        .unwrap_or_else(|| panic!("no metrics on {tag}'s ConfigMap: {cm:#}"));
    serde_json::from_str(text).unwrap()
}

/// Run `tag` (one worker) printing `keras(3, first)` and ending with exit `code`.
pub fn trained_run(env: &Env, tag: &str, first: f64, code: i32) {
    spawn_run(env, tag, &["-w", "1"]);
    let pod = format!("{tag}-worker-0");
    running(env, &pod);
    env.server.append_log(NS, &pod, &keras(3, first));
    exited(env, &pod, code);
    env.server.close_log(NS, &pod);
}

#[test]
fn wait_records_the_metrics_and_compare_reads_them_in_one_list() {
    let env = Env::new();
    spawn_run(&env, "lrs-1", &["-w", "1"]);
    as_sweep_run(&env, "lrs-1", "lrs", json!({"lr": "0.1", "bs": "64"}));
    running(&env, "lrs-1-worker-0");
    let child = start(&env, &["wait", "-t", "lrs-1"]);
    await_watches(&env, 1);
    env.server.append_log(NS, "lrs-1-worker-0", &keras(3, 0.9));
    exited(&env, "lrs-1-worker-0", 0);
    env.server.close_log(NS, "lrs-1-worker-0");
    finish(child).success();
    let m = recorded(&env, "lrs-1");
    assert_eq!(m["epochs_done"], 3, "{m:#}");
    assert_eq!(m["final"]["loss"], 0.3);
    assert_eq!(m["best"]["accuracy"], 0.3);
    assert_eq!(m["curve"]["epoch"], json!([1, 2, 3]));
    assert_eq!(m["curve"]["metrics"]["loss"], json!([0.9, 0.45, 0.3]));

    // Two more runs nobody followed: `status` records theirs.
    for (tag, first, lr, last) in [("lrs-2", 0.6, "0.01", 0.2), ("lrs-3", 1.5, "0.001", 0.5)] {
        trained_run(&env, tag, first, 0);
        as_sweep_run(&env, tag, "lrs", json!({"lr": lr, "bs": "64"}));
        env.run(&["status", "-t", tag]).success();
        assert_eq!(recorded(&env, tag)["final"]["loss"], last);
        let cm = env
            .server
            .get("configmaps", NS, &format!("{tag}-script"))
            .unwrap();
        assert_eq!(
            cm["metadata"]["annotations"]["tf-spawner/verdict"],
            "Succeeded"
        );
    }
    spawn_run(&env, "other", &["-w", "1"]);

    env.server.clear_requests();
    let out = env.run(&["compare", "lrs"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("    TAG     lr      VERDICT"),
        "{out:#?}"
    );
    assert!(
        lines[1].starts_with("*   lrs-2   0.01    Succeeded"),
        "{out:#?}"
    );
    assert!(lines[2].starts_with("    lrs-1   0.1 "), "{out:#?}");
    assert!(lines[3].starts_with("    lrs-3   0.001 "), "{out:#?}");
    assert!(!out.stdout.contains("other"), "{out:#?}");
    out.stdout_has("best: lrs-2 (*)")
        .stdout_has("loss per epoch\n")
        .stdout_has("  * lrs-2 (lr=0.01)\n");
    // The records alone: one list of ConfigMaps' metadata and the experiment's record
    // (for its runs deleted since or never started), no pod, no log (every run has its
    // verdict recorded).
    let requests = env.server.requests();
    let api: Vec<&str> = requests
        .iter()
        .filter(|r| r.path.contains("/namespaces/"))
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(
        api,
        [
            "/api/v1/namespaces/default/configmaps",
            "/api/v1/namespaces/default/configmaps/lrs-experiment"
        ],
        "{requests:#?}"
    );

    let out = env.run(&["list"]);
    out.success();
    let lrs2 = out.stdout.lines().find(|l| l.starts_with("lrs-2")).unwrap();
    assert!(
        lrs2.contains("   lrs          loss 0.2, 3 epochs   "),
        "{out:#?}"
    );

    let out = env.run(&["compare", "lrs", "--sort", "-loss", "-o", "csv"]);
    out.success();
    let csv: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        csv[0],
        "tag,param.bs,param.lr,verdict,seconds,restarts,epochs,final_accuracy,final_loss,best_accuracy,best_loss,task_seconds,gpu_seconds,best"
    );
    assert!(csv[1].starts_with("lrs-3,64,0.001,Succeeded,"), "{out:#?}");

    let out = env.run(&["compare", "lrs-3", "lrs-1", "-o", "json"]);
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["best"], "lrs-1");
    assert_eq!(
        json["sort"],
        json!({"metric": "loss", "order": "ascending"})
    );
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn compare_says_what_it_cannot_find_or_read() {
    let env = Env::new();
    trained_run(&env, "a", 0.5, 1);
    env.run(&["status", "-t", "a"]).success();
    let out = env.run(&["compare", "a", "--no-chart"]);
    out.success().stdout_has("*   a     Failed ");
    env.run(&["compare", "nope", "a"])
        .failure(1)
        .stderr_has("error: no run or experiment named 'nope' in namespace 'default'");
    env.run(&["compare", "a", "--sort", "a b"])
        .failure(2)
        .stderr_has("--sort \"a b\" is not a metric name");
    let out = env.run(&["compare", "a", "--chart", "val_loss"]);
    out.success()
        .stdout_has("no run recorded val_loss per epoch");
}

/// A misspelt `--sort` metric is a usage error naming the metrics recorded, not a
/// column of `-`.
#[test]
fn an_unknown_sort_metric_is_a_usage_error_naming_the_metrics() {
    let env = Env::new();
    trained_run(&env, "s-1", 0.5, 0);
    as_sweep_run(&env, "s-1", "s", json!({"lr": "0.1"}));
    env.run(&["status", "-t", "s-1"]).success();
    let out = env.run(&["compare", "s", "--sort", "acc"]);
    out.failure(2);
    assert_eq!(
        out.stderr,
        "error: --sort no run recorded a metric 'acc' (the metrics recorded: accuracy, loss)\n",
        "{out:#?}"
    );
    assert!(out.stdout.is_empty(), "{out:#?}");
    env.run(&["compare", "s", "--sort", "-accuracy", "--no-chart"])
        .success()
        .stdout_has("BEST accuracy");
}

/// `-o csv` keeps a parameter called `epochs` apart from the results' `epochs`
/// (`param.epochs`), and a value a spreadsheet would run is neutralised (OWASP).
#[test]
fn csv_keeps_parameters_apart_and_neutralises_formulas() {
    let env = Env::new();
    trained_run(&env, "c-1", 0.5, 0);
    let params =
        json!({"epochs": "3", "note": "=HYPERLINK(\"http://evil/\",\"x\")", "at": "@SUM(A1)"});
    as_sweep_run(&env, "c-1", "c", params);
    env.run(&["status", "-t", "c-1"]).success();
    let out = env.run(&["compare", "c", "-o", "csv"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "tag,param.at,param.epochs,param.note,verdict,seconds,restarts,epochs,final_accuracy,final_loss,best_accuracy,best_loss,task_seconds,gpu_seconds,best",
        "{out:#?}"
    );
    assert!(
        lines[1].starts_with(
            "c-1,'@SUM(A1),3,\"'=HYPERLINK(\"\"http://evil/\"\",\"\"x\"\")\",Succeeded,"
        ),
        "{out:#?}"
    );
    let header: Vec<&str> = lines[0].split(',').collect();
    let unique: std::collections::BTreeSet<&&str> = header.iter().collect();
    assert_eq!(unique.len(), header.len(), "a column twice: {header:?}");
    // JSON: the parameters in `params`, the results in `final` and `best`.
    let out = env.run(&["compare", "c", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["runs"][0]["params"]["epochs"], "3");
    assert_eq!(json["runs"][0]["epochs_done"], 3);
}

/// Labels every object of run `tag` with experiment `name`, as the sweep does.
pub fn label_all(env: &Env, tag: &str, name: &str) {
    for kind in ["pods", "services", "configmaps"] {
        for mut obj in env.server.list(kind, NS) {
            if obj["metadata"]["labels"]["training_attempt"] == tag {
                obj["metadata"]["labels"]["tf-spawner/experiment"] = json!(name);
                env.server.insert(kind, NS, obj);
            }
        }
    }
}

#[test]
fn delete_an_experiment_deletes_its_runs_and_nothing_else() {
    let env = Env::new();
    for tag in ["lrs-1", "lrs-2", "keep"] {
        spawn_run(&env, tag, &["-w", "2"]);
    }
    label_all(&env, "lrs-1", "lrs");
    label_all(&env, "lrs-2", "lrs");
    env.server.clear_requests();
    let out = env.run(&["-d", "--experiment", "lrs"]);
    out.success()
        .stdout_has("deleted pod/lrs-1-worker-0\n")
        .stdout_has("deleted pod/lrs-2-worker-1\n")
        .stdout_has("deleted configmap/lrs-2-script\n");
    assert!(!out.stdout.contains("keep"), "{out:#?}");
    let left = env.names(NS);
    assert!(
        left.iter()
            .all(|n| n.contains("/keep") || n.contains("kube-root")),
        "{left:?}"
    );
    assert!(left.iter().any(|n| n == "pod/keep-worker-1"), "{left:?}");
    // One collection DELETE of the config maps for both runs.
    let cm_deletes = env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with("/configmaps"))
        .count();
    assert_eq!(cm_deletes, 1);

    env.run(&["-d", "--experiment", "lrs"])
        .failure(1)
        .stderr_has("nothing labelled tf-spawner/experiment=lrs in namespace default: no experiment 'lrs' there");
    env.run(&["-d", "--experiment", "lrs", "--ignore-not-found"])
        .success()
        .stdout_has("nothing labelled tf-spawner/experiment=lrs in namespace default");
    env.run(&["-d", "--experiment", "a,b=c"])
        .failure(2)
        .stderr_has("--experiment \"a,b=c\" is not a valid name");
    env.run(&["-d", "--experiment", "x", "-t", "y"]).failure(2);
}

/// `-d --finished --older-than`: the finished runs made long enough ago, nothing else.
#[test]
fn delete_the_finished_runs_older_than_an_age() {
    let env = Env::new();
    trained_run(&env, "old-ok", 0.5, 0);
    trained_run(&env, "old-failed", 0.5, 1);
    trained_run(&env, "new-ok", 0.5, 0);
    spawn_run(&env, "old-running", &["-w", "1"]);
    running(&env, "old-running-worker-0");
    for tag in ["old-ok", "old-failed", "old-running"] {
        let created = "2026-01-01T00:00:00Z";
        env.server
            .set_created("configmaps", NS, &format!("{tag}-script"), created);
    }
    let out = env.run(&["-d", "--finished", "--older-than", "7d"]);
    out.success()
        .stdout_has("deleted pod/old-ok-worker-0\n")
        .stdout_has("deleted pod/old-failed-worker-0\n");
    // Bound pods linger for their grace period, being deleted.
    let left = env.names_not_terminating(NS);
    assert!(
        left.contains(&"pod/new-ok-worker-0".to_string()),
        "{left:?}"
    );
    assert!(
        left.contains(&"pod/old-running-worker-0".to_string()),
        "{left:?}"
    );
    assert!(
        !left
            .iter()
            .any(|n| n.contains("old-ok") || n.contains("old-failed")),
        "{left:?}"
    );
    env.run(&["-d", "--finished", "--older-than", "7d"])
        .success()
        .stdout_has("no finished run older than 7d in namespace default");
    env.run(&["-d", "--finished"]).failure(2);
}

/// Prints Keras' verbose=2 lines for 3 epochs, the loss scaled by $SCALE.
const KERAS_LINES: &str = r#"
import os
s = float(os.environ["SCALE"])
for k in range(1, 4):
    print("Epoch %d/3" % k, flush=True)
    print("10/10 - 1s - loss: %.4f - accuracy: 0.%d0 - 1s/epoch - 100ms/step" % (s / k, k), flush=True)
"#;

/// A `--local` run writes `metrics.json` beside the sweep's `params.json`, and
/// `compare --local` reads them.
#[test]
fn local_runs_keep_their_metrics_and_compare_local_reads_them() {
    let env = Env::new();
    let script = env.write("keras.py", KERAS_LINES);
    for (tag, scale, lr) in [("lr-1", "0.9", "0.1"), ("lr-2", "0.3", "0.01")] {
        let out = crate::support::run(env.cmd().env("SCALE", scale).args([
            "--local",
            "-t",
            tag,
            "-w",
            "1",
            script.to_str().unwrap(),
        ]));
        out.success();
        let dir = env.path("tf-spawner-output").join(tag);
        let text = std::fs::read_to_string(dir.join("metrics.json")).expect("metrics.json");
        let m: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(m["verdict"], "Succeeded", "{m:#}");
        assert_eq!(m["epochs_done"], 3);
        assert_eq!(m["curve"]["epoch"], json!([1, 2, 3]));
        std::fs::write(dir.join("params.json"), json!({"lr": lr}).to_string()).unwrap();
    }
    let out = env.run(&["compare", "--local", "lr", "--no-chart"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("    TAG    lr     VERDICT"),
        "{out:#?}"
    );
    assert!(
        lines[1].starts_with("*   lr-2   0.01   Succeeded"),
        "{out:#?}"
    );
    assert!(
        lines[2].starts_with("    lr-1   0.1    Succeeded"),
        "{out:#?}"
    );
    env.run(&["compare", "--local", "nope"])
        .failure(1)
        .stderr_has("no local run or experiment named 'nope'");
}

/// A `sweep --local` keeps each run's metrics as a `--local` run does, says each run's
/// training under its verdict, and `compare --local NAME` shows its runs, not the
/// experiment's own folder (its record) as one more.
#[test]
fn a_local_sweeps_runs_keep_their_metrics_for_compare_local() {
    let env = Env::new();
    let script = env.write(
        "keras.py",
        KERAS_LINES.replace(
            r#"os.environ["SCALE"]"#,
            r#"os.environ["TF_SPAWNER_PARAM_SCALE"]"#,
        ),
    );
    let out = env.run(&[
        "sweep",
        "--local",
        "-t",
        "ls",
        "-w",
        "1",
        "--param",
        "scale=0.9,0.3",
        script.to_str().unwrap(),
    ]);
    out.success()
        .stdout_has("run ls-1 (local): Succeeded\ntraining: 3 of 3 epochs seen to end")
        .stdout_has("run ls-2 (local): Succeeded\ntraining: 3 of 3 epochs seen to end");
    let out = env.run(&["compare", "--local", "ls", "--no-chart"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[1].starts_with("*   ls-2   0.3     Succeeded"),
        "{out:#?}"
    );
    assert!(
        lines[2].starts_with("    ls-1   0.9     Succeeded"),
        "{out:#?}"
    );
    assert_eq!(lines.len(), 4, "two runs and the best: {out:#?}");
}
