//! `--framework` (src/framework.rs): what each task is told about the others, as the API
//! server stores it; the roles and backends a framework cannot run, refused in one line
//! before any call; the settings file's key.

use crate::support::{Env, env_var, name};

#[test]
fn keras_pods_are_told_the_coordinator_the_count_and_their_index_and_no_tf_config() {
    let env = Env::new();
    env.spawn(&["--framework", "keras", "-w", "3", "-t", "k3"])
        .success();
    let mut pods = env.list("pods", "default");
    pods.sort_by_key(|p| name(p).to_string());
    assert_eq!(pods.len(), 3);
    for (i, pod) in pods.iter().enumerate() {
        assert_eq!(name(pod), format!("k3-worker-{i}"));
        assert_eq!(
            env_var(pod, "KERAS_DISTRIBUTION_JOB_ADDRESSES").as_deref(),
            Some("k3-worker-0.default.svc:1999")
        );
        assert_eq!(
            env_var(pod, "KERAS_DISTRIBUTION_NUM_PROCESSES").as_deref(),
            Some("3")
        );
        assert_eq!(
            env_var(pod, "KERAS_DISTRIBUTION_PROCESS_ID"),
            Some(i.to_string())
        );
        assert_eq!(env_var(pod, "KERAS_BACKEND").as_deref(), Some("jax"));
        assert_eq!(env_var(pod, "WORKER_NUMBER"), Some(i.to_string()));
        assert_eq!(env_var(pod, "TF_CONFIG"), None, "{pod:#}");
    }
    // Each task keeps its Service: the coordinator is reached by worker 0's name.
    assert_eq!(env.list("services", "default").len(), 3);
}

#[test]
fn jax_from_the_settings_file_and_tensorflow_by_default() {
    let env = Env::new();
    let config = env.write("config.yaml", "framework: jax\n");
    let script = env.script();
    crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args([
        "-w",
        "2",
        "-t",
        "jx",
        script.to_str().unwrap(),
    ]))
    .success();
    let pods = env.list("pods", "default");
    let one = pods.iter().find(|p| name(p) == "jx-worker-1").unwrap();
    assert_eq!(
        env_var(one, "JAX_COORDINATOR_ADDRESS").as_deref(),
        Some("jx-worker-0.default.svc:1999")
    );
    assert_eq!(env_var(one, "JAX_NUM_PROCESSES").as_deref(), Some("2"));
    assert_eq!(env_var(one, "JAX_PROCESS_ID").as_deref(), Some("1"));
    assert_eq!(env_var(one, "KERAS_BACKEND"), None);
    crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args(["config"]))
        .success()
        .stdout_has("jax");

    env.spawn(&["-w", "1", "-t", "tf"]).success();
    let pods = env.list("pods", "default");
    let tf = pods.iter().find(|p| name(p) == "tf-worker-0").unwrap();
    assert!(env_var(tf, "TF_CONFIG").is_some());
    assert_eq!(env_var(tf, "JAX_COORDINATOR_ADDRESS"), None);
}

#[test]
fn what_a_framework_cannot_run_is_one_line_before_any_call() {
    let env = Env::new();
    let envfile = env.write("e.env", "KERAS_BACKEND=tensorflow\n");
    let reserved = env.write("r.env", "JAX_PROCESS_ID=3\n");
    let template = env.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    env:\n    - name: KERAS_BACKEND\n      value: torch\n",
    );
    for (args, needle) in [
        (
            vec!["--framework", "keras", "--chief"],
            "--framework keras runs workers only (keras.distribution has no chief, parameter servers or evaluator; they are tf.distribute's roles): leave out --chief",
        ),
        (
            vec!["--framework", "jax", "--strategy", "multi-worker"],
            "leave out --strategy",
        ),
        (
            vec!["--framework", "keras", "-e", envfile.to_str().unwrap()],
            "sets KERAS_BACKEND=tensorflow, and --framework keras trains several processes with keras.distribution only on jax: set KERAS_BACKEND=jax, or leave it out",
        ),
        (
            vec![
                "--framework",
                "keras",
                "--pod-file",
                template.to_str().unwrap(),
            ],
            "the pod template sets KERAS_BACKEND=torch",
        ),
        (
            vec!["-e", reserved.to_str().unwrap()],
            "JAX_PROCESS_ID is set by tf-spawner for every task and cannot be overridden",
        ),
        (vec!["--framework", "pytorch"], "tensorflow, keras, jax"),
    ] {
        let out = env.spawn(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:#?}");
        assert!(out.stderr.contains(needle), "{args:?}: {out:#?}");
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {out:#?}");
    }
    assert!(env.server.requests().is_empty());
}
