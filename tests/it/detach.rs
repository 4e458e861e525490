//! `spawn --detach` (docs/reference.md, "Detached runs"): the run and its supervisor (a
//! Job, and a Secret of the follow's settings) made at once; `tf-spawner supervise`,
//! what the Job's pod runs, follows the run from those settings as `wait` would (here
//! run as a process beside the test server, as the pod would run it); `-d` stops the
//! supervisor before it deletes the run.

use base64::Engine;
use serde_json::Value;

use crate::follow::{await_watches, exited, finish, running, start};
use crate::support::{Env, await_attempt, eventually, run_pods};

const NS: &str = "default";
const IMAGE: &str = "registry.example.com/tf-spawner:0.1";

/// The paths the test server was asked to DELETE, in order.
pub(crate) fn deletes(env: &Env) -> Vec<String> {
    env.server
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path)
        .collect()
}

fn job(env: &Env, tag: &str) -> Option<Value> {
    env.server
        .get(kube_testserver::JOBS, NS, &format!("{tag}-supervisor"))
}

/// The follow's settings the supervisor reads, as stored.
fn follow_settings(env: &Env, tag: &str) -> Value {
    let secret = env
        .server
        .get("secrets", NS, &format!("{tag}-supervisor"))
        .expect("the supervisor's secret");
    let b64 = secret["data"]["follow.json"].as_str().unwrap();
    let json = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    serde_json::from_slice(&json).unwrap()
}

fn detach(env: &Env, tag: &str, more: &[&str]) {
    let mut args = vec![
        "-t",
        tag,
        "-w",
        "2",
        "--detach",
        "--supervisor-image",
        IMAGE,
    ];
    args.extend_from_slice(more);
    env.spawn(&args)
        .success()
        .stdout_has(&format!(
            "run {tag}: followed from the cluster by job/{tag}-supervisor"
        ))
        .stdout_has(&format!("kubectl delete job {tag}-supervisor -n default"));
}

#[test]
fn a_detached_spawn_makes_the_run_and_its_supervisor_and_returns() {
    let env = Env::new();
    detach(
        &env,
        "dt",
        &[
            "--restarts",
            "2",
            "--notify",
            "https://hooks.example.com/T0/secret",
        ],
    );
    let job = job(&env, "dt").expect("the supervisor's job");
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels["training_attempt"], "dt");
    assert_eq!(labels["tf-spawner/helper"], "supervisor");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "tf-spawner-supervisor");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["image"], IMAGE);
    assert_eq!(
        c["command"],
        serde_json::json!(["tf-spawner", "supervise", "-t", "dt"])
    );
    // No setting in its arguments or environment: the URL's token is in the Secret alone.
    assert!(!job.to_string().contains("hooks.example.com"), "{job}");
    let follow = follow_settings(&env, "dt");
    assert_eq!(follow["restarts"], 2);
    assert_eq!(follow["notify"], "https://hooks.example.com/T0/secret");
    assert_eq!(run_pods(&env, "dt").len(), 2);
}

#[test]
fn detach_refuses_what_a_supervisor_cannot_do_and_creates_nothing() {
    let env = Env::new();
    env.spawn(&["-t", "dn", "--detach"])
        .failure(2)
        .stderr_has("--detach needs the supervisor's image: --supervisor-image IMAGE");
    let args = ["-t", "dn", "--detach", "--supervisor-image", IMAGE];
    env.spawn(&[&args[..], &["--notify", "./tell.sh"]].concat())
        .failure(2)
        .stderr_has("--notify with --detach takes an http:// or https:// URL");
    env.spawn(&[&args[..], &["--wait"]].concat()).failure(2);
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn a_dry_run_shows_the_supervisor_with_its_settings_hidden() {
    let env = Env::new();
    let out = env.spawn(&[
        "-t",
        "dd",
        "--dry-run",
        "--detach",
        "--supervisor-image",
        IMAGE,
        "--notify",
        "https://hooks.example.com/T0/secret",
    ]);
    out.success()
        .stdout_has("kind: Job")
        .stdout_has("name: dd-supervisor")
        .stdout_lacks("hooks.example.com");
    assert!(env.names(NS).is_empty());
}

#[test]
fn the_supervisor_restarts_a_lost_worker_and_ends_with_the_verdict() {
    let env = Env::new();
    detach(&env, "ds", &["--restarts", "2", "--restart-backoff", "0s"]);
    let names = ["ds-worker-0", "ds-worker-1"];
    for n in names {
        running(&env, n);
    }
    let mut supervisor = start(&env, &["supervise", "-t", "ds"]);
    await_watches(&env, 1);
    // A laptop's wait meanwhile shows the run and acts on nothing.
    let laptop = start(&env, &["wait", "ds"]);
    await_watches(&env, 2);
    env.server.delete_pod(NS, "ds-worker-1");
    await_attempt(&env, "ds", &names, "1", &mut supervisor);
    for n in names {
        running(&env, n);
    }
    exited(&env, "ds-worker-0", 0);
    let out = finish(supervisor);
    out.success()
        .stdout_has("supervising run ds in namespace default: 2 restarts at most")
        .stdout_has(
            "run ds: restart 1/2 in 0s: pod ds-worker-1 (worker-1) was deleted while it ran",
        )
        .stdout_has("run ds: Succeeded");
    finish(laptop)
        .success()
        .stdout_has("run ds is followed by tf-spawner on ")
        .stdout_has("run ds: Succeeded (recorded by tf-spawner on ");
    assert!(run_pods(&env, "ds").values().all(|p| p.1 == "1"));
    let status = env.run(&["status", "ds"]);
    status
        .success()
        .stdout_has("attempt: 1 (pod ds-worker-1 (worker-1) was deleted while it ran");
}

#[test]
fn a_failed_run_ends_the_supervisor_with_0_and_its_cleanup_deletes_itself_last() {
    let env = Env::new();
    detach(&env, "dc", &["--cleanup"]);
    for n in ["dc-worker-0", "dc-worker-1"] {
        running(&env, n);
    }
    let supervisor = start(&env, &["supervise", "-t", "dc"]);
    await_watches(&env, 1);
    exited(&env, "dc-worker-1", 1);
    let out = finish(supervisor);
    out.success()
        .stdout_has("supervisor of run dc: done: run 'dc' failed: pod dc-worker-1 (worker-1)")
        .stdout_has("deleted ");
    eventually("the run deleted", || {
        let left = env.names_not_terminating(NS);
        if left.is_empty() { Ok(()) } else { Err(left) }
    });
    // Its own objects last: its Job's DELETE after every other one.
    let deletes = deletes(&env);
    assert!(
        deletes
            .last()
            .is_some_and(|p| p.ends_with("/jobs/dc-supervisor")),
        "{deletes:#?}"
    );
}

#[test]
fn delete_stops_the_supervisor_before_the_run() {
    let env = Env::new();
    detach(&env, "dx", &[]);
    // The Job's pod, as its controller would make it.
    let job = job(&env, "dx").unwrap();
    let mut pod = serde_json::json!({
        "metadata": {"name": "dx-supervisor-abcde", "labels": job["metadata"]["labels"]},
        "spec": job["spec"]["template"]["spec"],
    });
    pod["spec"]["nodeName"] = Value::Null;
    env.server.insert("pods", NS, pod);
    env.server.clear_requests();
    env.run(&["-d", "-t", "dx", "--yes"]).success();
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    let deletes = deletes(&env);
    let at = |what: &str| deletes.iter().position(|p| p.contains(what)).unwrap();
    assert!(at("/jobs") < at("/configmaps"), "{deletes:#?}");
    assert!(
        at("/pods/dx-supervisor-abcde") < at("/configmaps"),
        "{deletes:#?}"
    );
}

#[test]
fn status_shows_the_supervisors_pod_and_how_to_stop_it() {
    let env = Env::new();
    detach(&env, "dp", &[]);
    let job = job(&env, "dp").unwrap();
    let pod = serde_json::json!({
        "metadata": {"name": "dp-supervisor-x1", "labels": job["metadata"]["labels"]},
        "spec": job["spec"]["template"]["spec"],
    });
    env.server.insert("pods", NS, pod);
    env.run(&["status", "dp"]).success().stdout_has(
        "helper pod/dp-supervisor-x1 (supervisor): Pending",
    ).stdout_has("the run's supervisor (--detach): it ends at the run's verdict; kubectl delete job dp-supervisor stops it");
}
