//! Chief, parameter servers and evaluator: TF_CONFIG by TensorFlow's rules, per-role
//! templates, refused combinations, deletion of every role.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{Env, env_var, name};

/// Checks every pod's TF_CONFIG against what tf.distribute requires, and returns the
/// pods by `role-index`.
fn check_cluster(env: &Env, tag: &str, expected: &[(&str, usize)]) -> BTreeMap<String, Value> {
    let pods: BTreeMap<String, Value> = env
        .list("pods", "default")
        .into_iter()
        .map(|p| {
            (
                name(&p).trim_start_matches(&format!("{tag}-")).to_string(),
                p,
            )
        })
        .collect();
    let mut training_cluster: Option<Value> = None;
    for (&(role, count), _) in expected.iter().zip(0..) {
        for index in 0..count {
            let pod = &pods[&format!("{role}-{index}")];
            let config = env.tf_config(pod);
            assert_eq!(config["task"]["type"], role);
            assert_eq!(config["task"]["index"], index);
            let cluster = config["cluster"].clone();
            // The cluster is identical for every task, the evaluator's view included.
            match &training_cluster {
                None => training_cluster = Some(cluster.clone()),
                Some(c) => assert_eq!(c, &cluster, "{role}-{index} sees another cluster"),
            }
            assert_eq!(env_var(pod, "WORKER_NUMBER").is_some(), role == "worker");
            let workers = expected
                .iter()
                .find(|(r, _)| *r == "worker")
                .map_or(0, |(_, n)| *n);
            assert_eq!(env_var(pod, "TOT_WORKERS").unwrap(), workers.to_string());
            let labels = &pod["metadata"]["labels"];
            assert_eq!(labels["tf-spawner/replica-type"], role);
            assert_eq!(labels["tf-spawner/replica-index"], index.to_string());
        }
    }
    let cluster = training_cluster.expect("at least one task");
    let keys: Vec<&String> = cluster.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "cluster keys in a stable (sorted) order");
    assert!(
        cluster.get("evaluator").is_none(),
        "the evaluator is not a training task"
    );
    assert!(
        cluster
            .get("chief")
            .map_or(0, |c| c.as_array().unwrap().len())
            <= 1,
        "one chief at most"
    );
    for (role, count) in expected.iter().filter(|(r, _)| *r != "evaluator") {
        let hosts: Vec<String> = (0..*count)
            .map(|i| format!("{tag}-{role}-{i}.default.svc:1999"))
            .collect();
        assert_eq!(
            cluster[*role],
            serde_json::json!(hosts),
            "{role}: contiguous indices"
        );
        for i in 0..*count {
            assert!(
                env.server
                    .get("services", "default", &format!("{tag}-{role}-{i}"))
                    .is_some()
            );
        }
    }
    pods
}

#[test]
fn multi_worker_with_and_without_a_chief() {
    let env = Env::new();
    env.spawn(&["--strategy", "multi-worker", "-w", "3", "-t", "mw"])
        .success();
    check_cluster(&env, "mw", &[("worker", 3)]);
    env.run(&["-d", "-t", "mw"]).success();

    env.spawn(&[
        "--strategy",
        "multi-worker",
        "--chief",
        "-w",
        "2",
        "-t",
        "mwc",
    ])
    .success();
    check_cluster(&env, "mwc", &[("chief", 1), ("worker", 2)]);
}

#[test]
fn parameter_server_strategy_adds_a_chief_and_uses_per_role_templates() {
    let env = Env::new();
    let cpu = env.write(
        "cpu.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  nodeSelector: {pool: cpu}\n  containers:\n  - name: tensorflow\n    image: tf-cpu:1\n",
    );
    let gpu = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/pod-gpu.yaml");
    env.spawn(&[
        "--strategy",
        "parameter-server",
        "--ps",
        "2",
        "-w",
        "4",
        "--ps-pod-file",
        cpu.to_str().unwrap(),
        "--pod-file",
        gpu,
        "-t",
        "psr",
    ])
    .success();
    let pods = check_cluster(&env, "psr", &[("chief", 1), ("ps", 2), ("worker", 4)]);
    assert_eq!(pods.len(), 7);
    for (id, pod) in &pods {
        let image = pod["spec"]["containers"][0]["image"].as_str().unwrap();
        if id.starts_with("ps-") {
            assert_eq!(image, "tf-cpu:1", "{id}");
            assert_eq!(pod["spec"]["nodeSelector"]["pool"], "cpu");
        } else {
            assert_eq!(image, "tensorflow/tensorflow:2.15.0-gpu", "{id}");
            assert!(pod["spec"].get("nodeSelector").is_none());
        }
    }
    env.run(&["-d", "-t", "psr"])
        .success()
        .stdout_has("deleted pod/psr-chief-0")
        .stdout_has("deleted service/psr-ps-1");
    assert!(env.names("default").is_empty());
}

#[test]
fn evaluator_sees_the_training_cluster_and_has_no_service() {
    let env = Env::new();
    let eval = env.write("eval.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    image: eval:1\n");
    env.spawn(&[
        "--chief",
        "--ps",
        "1",
        "-w",
        "2",
        "--evaluator",
        "--evaluator-pod-file",
        eval.to_str().unwrap(),
        "-t",
        "ev",
    ])
    .success();
    let pods = check_cluster(
        &env,
        "ev",
        &[("chief", 1), ("ps", 1), ("worker", 2), ("evaluator", 1)],
    );
    assert_eq!(
        pods["evaluator-0"]["spec"]["containers"][0]["image"],
        "eval:1"
    );
    assert_eq!(
        pods["chief-0"]["spec"]["containers"][0]["image"],
        "tensorflow/tensorflow:2.15.0"
    );
    assert!(
        env.server
            .get("services", "default", "ev-evaluator-0")
            .is_none()
    );
    env.run(&["-d", "-t", "ev"]).success();
    assert!(env.names("default").is_empty());
}

#[test]
fn combinations_tensorflow_cannot_run_are_refused_before_any_call() {
    let env = Env::new();
    let cpu = env.write(
        "cpu.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n",
    );
    for (args, needle) in [
        (
            vec!["--strategy", "parameter-server"],
            "needs at least one parameter server",
        ),
        (
            vec!["--strategy", "multi-worker", "--ps", "1"],
            "has no parameter servers",
        ),
        (vec!["--ps", "2"], "parameter servers need a coordinator"),
        (
            vec!["--strategy", "parameter-server", "--ps", "1", "-w", "0"],
            "--workers must be at least 1",
        ),
        (
            vec!["--ps-pod-file", cpu.to_str().unwrap()],
            "the run has no ps task",
        ),
        (vec!["--strategy", "bogus"], "invalid value 'bogus'"),
    ] {
        let out = env.spawn(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:#?}");
        assert!(out.stderr.contains(needle), "{args:?}: {out:#?}");
    }
    assert!(env.server.requests().is_empty());
}
