//! A sweep's plan and its end (docs/experiments.md): `--dry-run`'s table of the runs,
//! the runs at a time without a quota, the winner named at the end and in the notice,
//! and what the live view shows of each run.

use serde_json::{Value, json};

use crate::follow::{exited, finish, running, start};
use crate::notify::ran;
use crate::support::Env;
use crate::sweep::await_pod;

const NS: &str = "default";

/// `--dry-run` prints a table of the runs and their parameters (not every object of
/// every run: a 4-sample search was ~950 lines of YAML); `-o yaml|json` the objects.
#[test]
fn dry_run_prints_a_table_of_the_runs_and_their_parameters() {
    let env = Env::new();
    let script = env.script();
    let out = env.run(&[
        "sweep",
        "--dry-run",
        "-t",
        "dt",
        "--param",
        "lr=0.1,0.01",
        "--param",
        "bs=8,16",
        script.to_str().unwrap(),
        "--",
        "--lr",
        "{lr}",
        "--bs={bs}",
    ]);
    out.success();
    assert_eq!(
        out.stdout,
        "RUN    lr     bs   ARGS\n\
         dt-1   0.1    8    --lr 0.1 --bs=8\n\
         dt-2   0.1    16   --lr 0.1 --bs=16\n\
         dt-3   0.01   8    --lr 0.01 --bs=8\n\
         dt-4   0.01   16   --lr 0.01 --bs=16\n\
         experiment dt: 4 runs planned; nothing created (--dry-run; their objects: -o yaml or -o json)\n"
    );
    assert!(env.names(NS).is_empty());
    assert!(
        env.server.requests().is_empty(),
        "a dry run asks the cluster nothing"
    );
    let yaml = env.run(&[
        "sweep",
        "--dry-run",
        "-o",
        "yaml",
        "-t",
        "dt",
        "--param",
        "lr=1,2",
        script.to_str().unwrap(),
    ]);
    yaml.success().stdout_has("name: dt-2-script");
}

/// Without a quota, a queue or `--parallel`, at most 4 runs at a time (not every run at
/// once): the fifth starts when one has ended; the plan line says so.
#[test]
fn without_a_quota_a_sweep_runs_at_most_four_at_a_time() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "nq",
            "-w",
            "1",
            "--param",
            "k=1,2,3,4,5",
            script.to_str().unwrap(),
        ],
    );
    await_pod(&env, "nq-4-worker-0", &mut child);
    exited(&env, "nq-1-worker-0", 0);
    await_pod(&env, "nq-5-worker-0", &mut child);
    for k in 2..=5 {
        exited(&env, &format!("nq-{k}-worker-0"), 0);
    }
    let out = finish(child);
    out.success().stdout_has(
        "experiment nq: 5 runs, 4 at a time: no quota bounds the runs, so at most 4 (--parallel N for another bound)\n",
    );
    let at = |line: &str| {
        out.stdout
            .find(line)
            .unwrap_or_else(|| panic!("no {line:?}: {out:#?}"))
    };
    // Every run's start is printed before it is created: the fifth after the first's end.
    assert!(
        at("run nq-5 (k=5): starting") > at("nq-1  Succeeded"),
        "{}",
        out.stdout
    );
}

/// A settings file's `parallel` bounds the runs at a time as `--parallel` does, and the
/// plan line says where the bound came from.
#[test]
fn a_config_files_parallel_bounds_the_runs_at_a_time() {
    let env = Env::new();
    env.defaults_file("parallel: 1\n");
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "cp",
            "-w",
            "1",
            "--param",
            "k=1,2",
            script.to_str().unwrap(),
        ],
    );
    await_pod(&env, "cp-1-worker-0", &mut child);
    exited(&env, "cp-1-worker-0", 0);
    await_pod(&env, "cp-2-worker-0", &mut child);
    exited(&env, "cp-2-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("experiment cp: 2 runs, 1 at a time: the config file's parallel\n");
    let at = |line: &str| {
        out.stdout
            .find(line)
            .unwrap_or_else(|| panic!("no {line:?}: {out:#?}"))
    };
    assert!(at("run cp-2 (k=2): starting") > at("cp-1  Succeeded"));
    env.run(&["config"]).success().stdout_has("parallel");
}

/// The sweep's last line and its notice name the best run (by compare's default sort:
/// the lowest val_loss), with its metrics, time and cost; the notice's JSON has the
/// best run's metrics, the sweep's time and what every run held.
#[test]
fn the_end_names_the_best_run_in_the_last_line_and_the_notice() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(
        &env,
        &[
            "sweep",
            "-t",
            "wn",
            "-w",
            "1",
            "--param",
            "lr=0.1,0.01",
            "--notify",
            "cat > notice.json",
            script.to_str().unwrap(),
        ],
    );
    await_pod(&env, "wn-2-worker-0", &mut child);
    for (k, loss, val_loss, end) in [(1, "0.5", "0.6", "10:30"), (2, "0.2", "0.3", "11:00")] {
        let pod = format!("wn-{k}-worker-0");
        env.server.append_log(
            NS,
            &pod,
            &format!("Epoch 1/1\n3/3 - 1s - loss: {loss} - val_loss: {val_loss}\n"),
        );
        let (held, end) = ("2026-01-01T10:00:00Z", format!("2026-01-01T{end}:00Z"));
        ran(&env, &pod, (held, held, &end), 0);
    }
    let out = finish(child);
    out.success().stdout_has(
        "experiment wn: all 2 runs succeeded; best wn-2 (lr=0.01): val_loss 0.3, loss 0.2, 1h, held 1.0 task-hours (compare them: tf-spawner compare wn -n default)\n",
    );
    let text = std::fs::read_to_string(env.path("notice.json")).unwrap();
    let notice: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(notice["kind"], "experiment", "{notice:#}");
    assert_eq!(notice["best"]["tag"], "wn-2", "{notice:#}");
    assert_eq!(notice["best"]["params"], json!({"lr": "0.01"}));
    assert_eq!(notice["best"]["metric"], "val_loss");
    assert_eq!(notice["best"]["value"], 0.3);
    assert_eq!(notice["best"]["duration_seconds"], 3600);
    assert_eq!(notice["metrics"], json!({"loss": 0.2, "val_loss": 0.3}));
    assert_eq!(notice["epochs_done"], 1);
    assert!(notice["duration_seconds"].is_u64(), "{notice:#}");
    // What both runs held: half an hour and an hour of one task.
    assert_eq!(notice["cost"]["total"]["task_seconds"], 5400, "{notice:#}");
    assert!(
        notice["text"]
            .as_str()
            .unwrap()
            .contains("; best wn-2 (lr=0.01): val_loss 0.3, loss 0.2, 1h, held 1.0 task-hours; the runs held 1.5 task-hours"),
        "{notice:#}"
    );
}

/// On a terminal, the live table shows each run's metrics with the one the experiment
/// is judged by (val_loss) first, says when they are the last epoch's (Keras'
/// `verbose=2` prints an epoch's metrics at its end), and ends with the last epoch's.
#[test]
fn the_live_view_shows_the_objective_and_the_current_epochs_metrics_on_a_terminal() {
    let env = Env::new();
    let script = env.script();
    let mut cmd = env.cmd();
    cmd.args(["sweep", "-t", "lv", "-w", "1", "--param", "lr=0.1"])
        .arg(&script);
    cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    let mut term = crate::pty::start_sized(cmd, 160, 30);
    await_pod(&env, "lv-1-worker-0", term.child());
    running(&env, "lv-1-worker-0");
    env.server.append_log(
        NS,
        "lv-1-worker-0",
        "Epoch 1/2\n3/3 - 1s - loss: 0.5 - accuracy: 0.7 - val_loss: 0.6 - val_accuracy: 0.65\nEpoch 2/2\n",
    );
    term.await_text("2/2     val_loss 0.6, loss 0.5 (epoch 1)");
    env.server.append_log(
        NS,
        "lv-1-worker-0",
        "3/3 - 1s - loss: 0.3 - accuracy: 0.8 - val_loss: 0.4 - val_accuracy: 0.75\n",
    );
    exited(&env, "lv-1-worker-0", 0);
    let (code, screen) = term.finish();
    let screen = format!("{}\n", screen.text());
    assert_eq!(code, 0, "{screen}");
    let row = screen
        .lines()
        .find(|l| l.starts_with("lv-1 ") && l.contains("Succeeded   2/2"))
        .unwrap_or_else(|| panic!("no row of lv-1 at its end:\n{screen}"));
    assert!(
        row.ends_with("val_loss 0.4, loss 0.3"),
        "the last epoch's metrics, val_loss first: {row:?}\n{screen}"
    );
    assert!(
        screen.ends_with("experiment lv: its one run succeeded; best lv-1 (lr=0.1): val_loss 0.4, accuracy 0.8, loss 0.3 (compare them: tf-spawner compare lv -n default)\n"),
        "{screen}"
    );
    assert!(
        !screen.contains("\\u{1b}"),
        "our own escapes reach the terminal: {screen}"
    );
}
