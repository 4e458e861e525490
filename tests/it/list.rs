//! `list`: the runs of a namespace, or of all namespaces with -A.

use kube_testserver::{Options, User};
use serde_json::Value;

use crate::follow::{exited, running, spawn_run};
use crate::support::Env;

#[test]
fn lists_two_runs_with_counts_per_role_and_verdicts() {
    let env = Env::new();
    spawn_run(&env, "alpha", &["-w", "2"]);
    spawn_run(&env, "beta", &["--chief", "-w", "1"]);
    running(&env, "alpha-worker-0");
    exited(&env, "beta-chief-0", 0);
    running(&env, "beta-worker-0");

    let out = env.run(&["list"]);
    out.success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out:#?}");
    assert!(lines[0].starts_with("TAG     VERDICT     AGE"), "{out:#?}");
    assert!(lines[1].starts_with("alpha   Pending "), "{out:#?}");
    assert!(
        lines[1].ends_with("worker 1/2 running, 1 pending"),
        "{out:#?}"
    );
    assert!(lines[2].starts_with("beta    Succeeded "), "{out:#?}");
    assert!(
        lines[2].ends_with("chief 0/1 running, 1 succeeded; worker 1/1 running"),
        "{out:#?}"
    );

    let out = env.run(&["list", "-o", "json"]);
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["tag"], "alpha");
    assert_eq!(runs[0]["namespace"], "default");
    assert_eq!(runs[0]["verdict"], "Pending");
    assert!(runs[0]["age_seconds"].is_u64());
    assert_eq!(
        runs[0]["roles"]["worker"],
        serde_json::json!({"total": 2, "pending": 1, "queued": 0, "running": 1, "lost": 0, "succeeded": 0, "failed": 0, "stopped": 0})
    );
    assert_eq!(runs[1]["roles"]["chief"]["succeeded"], 1);
}

#[test]
fn all_namespaces_and_a_clear_403() {
    let env = Env::with(Options {
        namespaces: vec!["default".into(), "team".into()],
        users: vec![User::namespaced("alice", "team")],
        ..Options::default()
    });
    spawn_run(&env, "one", &["-w", "1"]);
    spawn_run(&env, "two", &["-w", "1", "-n", "team"]);
    let out = env.run(&["list", "-A"]);
    out.success();
    assert!(out.stdout.starts_with("NAMESPACE   TAG"), "{out:#?}");
    out.stdout_has("default     one")
        .stdout_has("team        two");
    // Only "one" in the default namespace.
    let out = env.run(&["list"]);
    out.success();
    assert!(!out.stdout.contains("two"), "{out:#?}");

    let alice = env
        .server
        .write_kubeconfig(env.dir.path(), "alice", Some("team"));
    let out = env.run_as(&alice, &["list"]);
    out.success().stdout_has("two");
    env.run_as(&alice, &["list", "-A"])
        .failure(1)
        .stderr_has("listing pods in all namespaces is forbidden for these credentials")
        .stderr_has("-n NAMESPACE instead of -A");
}

#[test]
fn an_empty_namespace_has_no_runs() {
    let env = Env::new();
    env.run(&["list"])
        .success()
        .stdout_has("no tf-spawner runs in namespace default");
}
