//! `sweep --detach` (docs/experiments.md, "Overnight"): the experiment's record, its
//! first run and its supervisor (a Job running `tf-spawner supervise --experiment NAME`,
//! a Secret of the sweep's settings) made at once; that supervisor, run here as a
//! process beside the test server as its pod would run it, takes the sweep up from the
//! record and runs it to its end while a laptop's `sweep --resume` shows it; `-d
//! --experiment` stops it first; bad input refused with nothing created.

use base64::Engine;
use serde_json::Value;

use crate::follow::{exited, finish, start};
use crate::support::{Env, eventually};
use crate::sweep::{await_pod, pods_of};

const NS: &str = "default";
const IMAGE: &str = "registry.example.com/tf-spawner:0.1";

/// `sweep -t NAME -w 1 --param lr=… --parallel 1 SCRIPT -- --lr {lr}`, with `more`
/// before the script.
fn sweep_args(script: &str, name: &str, more: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "sweep",
        "-t",
        name,
        "-w",
        "1",
        "--param",
        "lr=0.1,0.01,0.001",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["--parallel", "1"].map(String::from));
    args.extend(more.iter().map(|s| s.to_string()));
    args.extend([script, "--", "--lr", "{lr}"].map(String::from));
    args
}

fn detach(env: &Env, name: &str, more: &[&str]) {
    let script = env.script();
    let mut all = vec!["--detach", "--supervisor-image", IMAGE];
    all.extend_from_slice(more);
    let args = sweep_args(script.to_str().unwrap(), name, &all);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(&args)
        .success()
        .stdout_has(&format!(
            "experiment {name}: followed from the cluster by job/{name}-sweeper"
        ))
        .stdout_has(&format!("kubectl delete job {name}-sweeper -n default"));
}

/// The sweep's settings the supervisor reads, as stored.
fn sweep_settings(env: &Env, name: &str) -> Value {
    let secret = env
        .server
        .get("secrets", NS, &format!("{name}-sweeper"))
        .expect("the supervisor's secret");
    let b64 = secret["data"]["sweep.json"].as_str().unwrap();
    let json = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    serde_json::from_slice(&json).unwrap()
}

/// Run `tag`'s one worker exits 0.
fn succeed(env: &Env, tag: &str) {
    exited(env, &format!("{tag}-worker-0"), 0);
}

#[test]
fn a_detached_sweep_makes_its_record_first_run_and_supervisor_and_returns() {
    let env = Env::new();
    detach(
        &env,
        "sd",
        &[
            "--restarts",
            "2",
            "--notify",
            "https://hooks.example.com/T0/secret",
        ],
    );
    assert!(env.server.get("configmaps", NS, "sd-experiment").is_some());
    assert_eq!(pods_of(&env, "sd-1").len(), 1);
    assert!(
        pods_of(&env, "sd-2").is_empty(),
        "one at a time: the supervisor starts the rest"
    );
    let job = env
        .server
        .get(kube_testserver::JOBS, NS, "sd-sweeper")
        .expect("the supervisor's job");
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels["tf-spawner/experiment"], "sd");
    assert_eq!(labels["tf-spawner/helper"], "supervisor");
    assert!(labels.get("training_attempt").is_none(), "{labels}");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["containers"][0]["command"],
        serde_json::json!(["tf-spawner", "supervise", "--experiment", "sd"])
    );
    // The URL's token is in the Secret alone; the script travels in it too.
    assert!(!job.to_string().contains("hooks.example.com"), "{job}");
    let settings = sweep_settings(&env, "sd");
    assert_eq!(settings["params"], serde_json::json!(["lr=0.1,0.01,0.001"]));
    assert_eq!(settings["follow"]["restarts"], 2);
    assert_eq!(
        settings["follow"]["notify"],
        "https://hooks.example.com/T0/secret"
    );
    assert_eq!(settings["parallel"], 1);
    assert!(
        settings["base"]["script"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
}

#[test]
fn the_supervisor_runs_the_sweep_to_its_end_and_a_laptop_resume_shows_it_acting_on_nothing() {
    let env = Env::new();
    detach(&env, "sv", &[]);
    let mut supervisor = start(&env, &["supervise", "--experiment", "sv"]);
    // It follows the first run, which the laptop made, and starts the next at its end.
    succeed(&env, "sv-1");
    await_pod(&env, "sv-2-worker-0", &mut supervisor);
    env.run(&["compare", "sv"])
        .success()
        .stdout_has("followed now: experiment sv by ")
        .stdout_has("(checked in ");
    // The laptop's `sweep --resume` meanwhile shows the experiment and acts on nothing.
    let script = env.script();
    let again = sweep_args(script.to_str().unwrap(), "sv", &["--resume", "sv"]);
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let mut laptop = crate::watched::Watched::start(&env, &again);
    // Attached before the runs end (else, the supervisor gone, it would take the
    // experiment over, as it should).
    laptop.await_stdout("this sweep shows it and acts on nothing");
    succeed(&env, "sv-2");
    await_pod(&env, "sv-3-worker-0", &mut supervisor);
    succeed(&env, "sv-3");
    finish(supervisor)
        .success()
        .stdout_has("supervising experiment sv in namespace default: 3 runs")
        .stdout_has("experiment sv: all 3 runs succeeded")
        .stdout_has("supervisor of experiment sv: done");
    laptop
        .finish()
        .success()
        .stdout_has("experiment sv is followed by ")
        .stdout_has("this sweep shows it and acts on nothing (to run it from here instead, stop that sweeper: Ctrl-C where it runs)")
        .stdout_has("run sv-3: Succeeded\n")
        .stdout_has("experiment sv: all 3 runs succeeded")
        .stdout_lacks("starting");
    // Every run made once, by the laptop's first spawn or the supervisor: no second create.
    let creates = env
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods") && r.status == 409)
        .count();
    assert_eq!(creates, 0);
    // It let go at its end: nobody follows the experiment now.
    env.run(&["compare", "sv"])
        .success()
        .stdout_has("sv-3")
        .stdout_lacks("followed now: experiment");
}

#[test]
fn a_laptop_sweep_has_the_experiment_and_a_resume_with_detach_is_refused_meanwhile() {
    let env = Env::new();
    let script = env.script();
    let args = sweep_args(script.to_str().unwrap(), "sl", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut laptop = start(&env, &args);
    await_pod(&env, "sl-1-worker-0", &mut laptop);
    let detached = sweep_args(
        script.to_str().unwrap(),
        "sl",
        &["--resume", "sl", "--detach", "--supervisor-image", IMAGE],
    );
    let detached: Vec<&str> = detached.iter().map(String::as_str).collect();
    eventually("the laptop sweep has the experiment", || {
        let cm = env.server.get("configmaps", NS, "sl-experiment");
        match cm.and_then(|c| {
            c["metadata"]["annotations"]["tf-spawner/follower"]
                .as_str()
                .map(String::from)
        }) {
            Some(_) => Ok(()),
            None => Err("not yet".to_string()),
        }
    });
    env.run(&detached)
        .failure(2)
        .stderr_has("error: experiment 'sl' is followed by ")
        .stderr_has("to hand it to a supervisor, stop that sweeper first (Ctrl-C where it runs)");
    assert!(
        env.server
            .get(kube_testserver::JOBS, NS, "sl-sweeper")
            .is_none()
    );
    for k in 1..=3 {
        let pod = format!("sl-{k}-worker-0");
        await_pod(&env, &pod, &mut laptop);
        succeed(&env, &format!("sl-{k}"));
    }
    finish(laptop)
        .success()
        .stdout_has("experiment sl: all 3 runs succeeded");
}

#[test]
fn delete_of_the_experiment_stops_its_supervisor_first() {
    let env = Env::new();
    detach(&env, "sx", &[]);
    env.server.clear_requests();
    env.run(&["-d", "--experiment", "sx", "--yes"]).success();
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    let deletes = crate::detach::deletes(&env);
    let at = |what: &str| deletes.iter().position(|p| p.contains(what)).unwrap();
    assert!(at("/jobs") < at("/configmaps"), "{deletes:#?}");
}

#[test]
fn a_detached_sweep_refuses_what_it_cannot_do_and_creates_nothing() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    let refused = |more: &[&str], line: &str| {
        let args = sweep_args(script, "sn", more);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.run(&args).failure(2).stderr_has(line);
    };
    refused(&["--detach"], "--detach needs the supervisor's image");
    refused(
        &["--detach", "--supervisor-image", IMAGE, "--local"],
        "the argument '--detach' cannot be used with '--local'",
    );
    refused(
        &["--detach", "--supervisor-image", IMAGE, "--cleanup"],
        "a sweep keeps its runs for compare",
    );
    refused(
        &[
            "--detach",
            "--supervisor-image",
            IMAGE,
            "--notify",
            "./tell.sh",
        ],
        "--notify with --detach takes an http:// or https:// URL",
    );
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn a_forged_record_or_settings_stop_the_supervisor_in_one_line_and_it_starts_nothing() {
    let env = Env::new();
    detach(&env, "sf", &[]);
    // A record that is not the sweep's: its parameters changed by someone else.
    let mut record = env.server.get("configmaps", NS, "sf-experiment").unwrap();
    let text = record["data"]["experiment.json"].as_str().unwrap();
    assert!(text.contains("0.01"), "{text}");
    record["data"]["experiment.json"] = text.replace("0.01", "0.5").into();
    env.server.insert("configmaps", NS, record);
    env.run(&["supervise", "--experiment", "sf"])
        .failure(2)
        .stderr_has("error: experiment 'sf' was started with ");
    // Settings that are no sweep's.
    let mut secret = env.server.get("secrets", NS, "sf-sweeper").unwrap();
    secret["data"]["sweep.json"] = base64::engine::general_purpose::STANDARD
        .encode(b"{\"base\": 1}")
        .into();
    env.server.insert("secrets", NS, secret);
    env.run(&["supervise", "--experiment", "sf"])
        .failure(1)
        .stderr_has("error: secret/sf-sweeper: its sweep.json cannot be read: ");
    assert!(pods_of(&env, "sf-2").is_empty());
}

#[test]
fn resume_with_detach_beside_a_supervisor_that_ended_says_how_to_remove_it_and_makes_nothing() {
    let env = Env::new();
    detach(&env, "sr", &[]);
    let script = env.script();
    let args = sweep_args(
        script.to_str().unwrap(),
        "sr",
        &["--resume", "sr", "--detach", "--supervisor-image", IMAGE],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let before = env.names(NS);
    env.run(&args)
        .failure(2)
        .stderr_has("error: experiment 'sr' has a supervisor already (job/sr-sweeper, which ended or was stopped): remove it with kubectl delete job,secret sr-sweeper -n default");
    assert_eq!(env.names(NS), before);
}

#[test]
fn ctrl_c_ends_an_attached_sweep_and_leaves_the_experiment_to_its_sweeper() {
    let env = Env::new();
    detach(&env, "sc", &[]);
    let supervisor = start(&env, &["supervise", "--experiment", "sc"]);
    crate::follow::await_run_watches(&env, "sc-1", 1);
    let script = env.script();
    let again = sweep_args(script.to_str().unwrap(), "sc", &["--resume", "sc"]);
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let mut laptop = crate::watched::Watched::start(&env, &again);
    laptop.await_stdout("this sweep shows it and acts on nothing");
    crate::follow::send(laptop.child(), "-INT");
    let out = laptop.finish();
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has(
        "error: interrupted; experiment 'sc' goes on with its sweeper, which acts for it",
    );
    // The sweeper still has it, and goes on.
    env.run(&["compare", "sc"])
        .success()
        .stdout_has("followed now: experiment sc by ");
    crate::follow::send(&supervisor, "-INT");
    let _ = finish(supervisor);
}

#[test]
fn a_sweep_too_big_for_its_supervisors_secret_is_refused_before_anything_is_made() {
    let env = Env::new();
    // 800 KB that gzip cannot shrink: within a ConfigMap's 1 MiB, over the Secret's once
    // written as base64 in the settings.
    let dir = tempfile::tempdir().unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..800_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.path().join("data.bin"), bytes).unwrap();
    let script = dir.path().join("train.py");
    std::fs::write(&script, "print('hi')\n").unwrap();
    let args = sweep_args(
        script.to_str().unwrap(),
        "sb",
        &[
            "--detach",
            "--supervisor-image",
            IMAGE,
            "--dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(&args)
        .failure(2)
        .stderr_has("error: --detach keeps the sweep's script, files and pod templates in its supervisor's Secret, which holds at most 1048576 bytes");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}
