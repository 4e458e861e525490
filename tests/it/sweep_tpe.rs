//! `sweep --method tpe` (docs/experiments.md, "Choosing the next points"): the first
//! runs at the random search's points, each later one proposed from the runs that
//! ended, written into the experiment's record before its run is created; a sweep
//! killed and taken up with `--resume` proposes the points an uninterrupted one does;
//! `--method tpe` without `--objective` refused in one line, nothing created.

use std::time::Duration;

use kube_testserver::Fault;
use serde_json::Value;

use crate::follow::{exited, running};
use crate::support::{Env, await_while_running};
use crate::sweep::{await_pod, script_args};
use crate::watched::Watched;

const NS: &str = "default";
/// Runs of each sweep; the first 3 random (a quarter of 5, at least 3).
const RUNS: usize = 5;
const STARTUP: usize = 3;

/// `sweep -t TAG`: 5 runs of one worker, one at a time, over x in [0, 1].
fn args(tag: &str, script: &str) -> Vec<String> {
    let line = format!(
        "sweep -t {tag} -w 1 --param x=0..1 --samples {RUNS} --seed 11 --method tpe --objective val_loss --parallel 1"
    );
    let mut args: Vec<String> = line.split(' ').map(String::from).collect();
    args.extend([script, "--", "--x", "{x}"].map(String::from));
    args
}

fn start(env: &Env, args: &[String]) -> Watched {
    Watched::start(env, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn record(env: &Env, tag: &str) -> Value {
    env.server
        .get("configmaps", NS, &format!("{tag}-experiment"))
        .expect("the experiment's record")
}

/// The points the record holds, in order: each run's x.
fn recorded_points(env: &Env, tag: &str) -> Vec<String> {
    let text = record(env, tag)["data"]["experiment.json"]
        .as_str()
        .unwrap()
        .to_string();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["params"]["x"].as_str().unwrap().to_string())
        .collect()
}

/// Run `run` (`TAG-K`) is created: its x as its pod got it, which the record held
/// before; it trains one epoch to val_loss (x − 0.3)² and succeeds.
fn train(env: &Env, child: &mut Watched, run: &str) -> String {
    let x = created(env, child, run);
    trained(env, run, &x);
    x
}

/// Run `run` is created and running: its x, as its pod got it and the record holds.
fn created(env: &Env, child: &mut Watched, run: &str) -> String {
    let pod = format!("{run}-worker-0");
    await_pod(env, &pod, child.child());
    let args = script_args(&env.server.get("pods", NS, &pod).unwrap());
    assert_eq!(args[0], "--x", "{args:?}");
    let x = args[1].clone();
    let (tag, k) = run.rsplit_once('-').unwrap();
    let k: usize = k.parse().unwrap();
    assert_eq!(recorded_points(env, tag).get(k - 1), Some(&x), "{run}");
    running(env, &pod);
    x
}

/// Run `run` at `x` trains one epoch to val_loss (x − 0.3)² and succeeds.
fn trained(env: &Env, run: &str, x: &str) {
    let pod = format!("{run}-worker-0");
    let loss = (x.parse::<f64>().unwrap() - 0.3).powi(2);
    let line = format!("Epoch 1/1\n1/1 - 0s 5ms/step - loss: 0.7 - val_loss: {loss}\n");
    env.server.append_log(NS, &pod, &line);
    exited(env, &pod, 0);
}

/// Blocks until the `n`-th PATCH of `tag`'s record is under way (its answer not sent).
fn await_patch_in_flight(env: &Env, child: &mut Watched, tag: &str, n: usize) {
    let path = format!("/configmaps/{tag}-experiment");
    await_while_running(child.child(), "the point's write in flight", || {
        let patches: Vec<u16> = (env.server.requests().iter())
            .filter(|r| r.method == "PATCH" && r.path.ends_with(&path))
            .map(|r| r.status)
            .collect();
        match patches.get(n - 1) {
            Some(0) => Ok(()),
            _ => Err(format!("{patches:?}")),
        }
    });
}

/// The random search's first points of seed 11, as `--dry-run` prints them.
fn random_points(env: &Env, script: &str) -> Vec<String> {
    let out = env.run(&[
        "sweep",
        "-t",
        "rr",
        "--param",
        "x=0..1",
        "--samples",
        "3",
        "--seed",
        "11",
        "--dry-run",
        script,
    ]);
    assert_eq!(out.code, 0, "{out:#?}");
    (1..=STARTUP)
        .map(|k| {
            let row = (out.stdout.lines())
                .find(|l| l.starts_with(&format!("rr-{k} ")))
                .unwrap_or_else(|| panic!("rr-{k} in {}", out.stdout));
            row.split_whitespace().nth(1).unwrap().to_string()
        })
        .collect()
}

#[test]
fn a_tpe_sweep_records_each_point_before_its_run_and_models_the_later_ones() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    // The 4th run's point is written in the record (the record's 4th PATCH, after the
    // verdicts of runs 1–3) slowly: its run is made after.
    env.server.add_fault(
        Fault::on("PATCH", "/configmaps/tp-experiment")
            .nth(4)
            .hang(Duration::from_secs(2)),
    );
    let mut child = start(&env, &args("tp", script));
    child.await_stdout("tpe search: 5 runs, the first 3 random");
    let mut xs = Vec::new();
    for k in 1..=RUNS {
        if k == 4 {
            await_patch_in_flight(&env, &mut child, "tp", 4);
            assert!(
                env.server.get("pods", NS, "tp-4-worker-0").is_none(),
                "tp-4 was created before its point was recorded"
            );
            assert_eq!(recorded_points(&env, "tp").len(), 3);
        }
        xs.push(train(&env, &mut child, &format!("tp-{k}")));
    }
    let out = child.finish();
    out.success()
        .stdout_has(&format!(
            "run tp-4: x={} proposed by tpe from 3 ended and 0 running runs\n",
            xs[3]
        ))
        .stdout_has(&format!(
            "run tp-5: x={} proposed by tpe from 4 ended and 0 running runs\n",
            xs[4]
        ))
        .stdout_has("experiment tp: all 5 runs succeeded");
    assert!(!out.stdout.contains("run tp-3: x="), "{}", out.stdout);
    // The first runs are the random search's of the same seed.
    assert_eq!(xs[..STARTUP], random_points(&env, script)[..]);
    assert_eq!(recorded_points(&env, "tp"), xs);
    // Each run's value with its verdict, as the search took it.
    let data = &record(&env, "tp")["data"];
    for (k, x) in xs.iter().enumerate() {
        let loss = (x.parse::<f64>().unwrap() - 0.3).powi(2);
        let kept: f64 = data[format!("value.tp-{}", k + 1)]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((kept - loss).abs() < 1e-9, "tp-{}: {kept} vs {loss}", k + 1);
        assert_eq!(data[format!("ended.tp-{}", k + 1)], "Succeeded");
    }
}

#[test]
fn a_sweep_killed_mid_proposal_and_resumed_proposes_what_an_uninterrupted_one_does() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    // Uninterrupted.
    let mut child = start(&env, &args("ua", script));
    let whole: Vec<String> = (1..=RUNS)
        .map(|k| train(&env, &mut child, &format!("ua-{k}")))
        .collect();
    child.finish().success();
    // Killed (SIGKILL) while the 4th point is being written, before its run exists.
    env.server.add_fault(
        Fault::on("PATCH", "/configmaps/ub-experiment")
            .nth(4)
            .hang(Duration::from_secs(2)),
    );
    let first = args("ub", script);
    let mut child = start(&env, &first);
    for k in 1..=STARTUP {
        train(&env, &mut child, &format!("ub-{k}"));
    }
    await_patch_in_flight(&env, &mut child, "ub", 4);
    child.child().kill().unwrap();
    let out = child.finish();
    assert_ne!(out.code, 0, "{out:#?}");
    assert!(env.server.get("pods", NS, "ub-4-worker-0").is_none());
    // Taken up: the 4th run made at its point (proposed again if its write was lost),
    // then Ctrl-C while it runs.
    let mut resume = first.clone();
    resume.splice(1..3, ["--resume".to_string(), "ub".to_string()]);
    let mut child = start(&env, &resume);
    let fourth = created(&env, &mut child, "ub-4");
    child.await_stdout("run ub-4 (x=");
    crate::follow::await_followed(&env, "ub-4");
    crate::follow::send(child.child(), "-INT");
    let out = child.finish();
    assert_eq!(out.code, 130, "{out:#?}");
    assert_eq!(recorded_points(&env, "ub").len(), 4);
    // Taken up again: the 4th run followed, its point not proposed again; the 5th
    // proposed from the four.
    let mut child = start(&env, &resume);
    trained(&env, "ub-4", &fourth);
    let fifth = train(&env, &mut child, "ub-5");
    let out = child.finish();
    out.success()
        .stdout_has("experiment ub: taking it up (4 runs planned)")
        .stdout_has(&format!(
            "run ub-5: x={fifth} proposed by tpe from 4 ended and 0 running runs\n"
        ))
        .stdout_has("experiment ub: all 5 runs succeeded");
    assert!(!out.stdout.contains("run ub-4: x="), "{}", out.stdout);
    assert_eq!(
        recorded_points(&env, "ub"),
        whole,
        "the resumed sweep's points"
    );
}

#[test]
fn tpe_without_an_objective_or_a_budget_is_one_line_and_nothing_is_created() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--samples", "4", "--method", "tpe"],
            "--method tpe chooses each next point by the runs' objective: add --objective METRIC (e.g. --objective val_loss, --objective accuracy:max), or use --method random",
        ),
        (
            &["--method", "tpe", "--objective", "val_loss"],
            "--method tpe chooses --samples K points, its budget of runs: add --samples K (e.g. --samples 20)",
        ),
        (
            &["--samples", "4", "--method", "grid"],
            "--method grid takes every combination of the values: leave --samples 4 out, or use --method random or tpe",
        ),
        (
            &["--samples", "4", "--method", "tpe", "--local"],
            "--method tpe chooses each next point by the runs' objective: add --objective METRIC (e.g. --objective val_loss, --objective accuracy:max), or use --method random",
        ),
        (
            &["--method", "random"],
            "--method random draws --samples K points: add --samples K (e.g. --samples 20)",
        ),
    ];
    for (more, line) in cases {
        let mut args = vec!["sweep", "-t", "tn", "--param", "x=0..1"];
        args.extend_from_slice(more);
        args.push(script);
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{more:?}: {out:#?}");
        assert_eq!(out.stderr, format!("error: {line}\n"), "{more:?}");
        assert_eq!(out.stdout, "", "{more:?}");
    }
    // --dry-run: the random points, and how many come later.
    let mut dry: Vec<&str> = vec!["sweep", "-t", "tn", "--param", "x=0..1", "--samples", "5"];
    dry.extend([
        "--method",
        "tpe",
        "--objective",
        "val_loss",
        "--dry-run",
        script,
    ]);
    let out = env.run(&dry);
    out.success().stdout_has(
        "experiment tn: 3 runs planned, 2 more chosen by tpe as runs end; nothing created",
    );
    assert!(
        out.stdout.contains("tn-3 ") && !out.stdout.contains("tn-4 "),
        "{}",
        out.stdout
    );
    assert!(env.list("configmaps", NS).is_empty());
    assert!(env.list("pods", NS).is_empty());
    assert!(!env.path("tf-spawner-output").exists());
}

/// The script of a `--local` sweep: one epoch to val_loss (x − 0.3)², x from `--x`.
const LOCAL_SCRIPT: &str = "import sys\n\
x = float(sys.argv[sys.argv.index('--x') + 1])\n\
d = x - 0.3\n\
print('Epoch 1/1', flush=True)\n\
print('1/1 - 0s 5ms/step - loss: 0.7 - val_loss: %r' % (d * d), flush=True)\n";

#[test]
fn a_local_tpe_sweep_proposes_as_the_clusters_does_and_keeps_its_points_and_values() {
    let env = Env::new();
    let script = env.script();
    let mut child = start(&env, &args("tc", script.to_str().unwrap()));
    let cluster: Vec<String> = (1..=RUNS)
        .map(|k| train(&env, &mut child, &format!("tc-{k}")))
        .collect();
    child.finish().success();
    let local = env.write("fx.py", LOCAL_SCRIPT);
    let mut line = args("tl", local.to_str().unwrap());
    line.insert(1, "--local".to_string());
    let out = env.run(&line.iter().map(String::as_str).collect::<Vec<_>>());
    out.success()
        .stdout_has("tpe search: 5 runs, the first 3 random")
        .stdout_has(&format!(
            "run tl-4: x={} proposed by tpe from 3 ended and 0 running runs\n",
            cluster[3]
        ))
        .stdout_has(&format!(
            "run tl-5: x={} proposed by tpe from 4 ended and 0 running runs\n",
            cluster[4]
        ))
        .stdout_has("local experiment tl: all 5 runs succeeded");
    let text = std::fs::read_to_string(env.path("tf-spawner-output/tl/experiment.json")).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    let points: Vec<&str> = (record["runs"].as_array().unwrap().iter())
        .map(|r| r["params"]["x"].as_str().unwrap())
        .collect();
    assert_eq!(points, cluster);
    for (k, x) in cluster.iter().enumerate() {
        let d = x.parse::<f64>().unwrap() - 0.3;
        assert_eq!(
            record["values"][format!("tl-{}", k + 1)].as_f64(),
            Some(d * d),
            "{text}"
        );
    }
}
