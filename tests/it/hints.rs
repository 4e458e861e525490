//! Issue 51: where the tool knows the cause of a mistake, its one line names the fix.

use crate::support::Env;

#[test]
fn a_misspelled_containers_field_is_named_in_the_error() {
    let env = Env::new();
    let pod = env.write(
        "typo.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  contaners:\n  - name: tensorflow\n    image: x\n",
    );
    let out = env.spawn(&["-t", "typo", "--pod-file", pod.to_str().unwrap()]);
    out.failure(2).stderr_has(&format!(
        "error: pod template {} has no containers: spec.contaners is not a field of a Pod; did you mean `spec.containers`?",
        pod.display()
    ));
    assert!(env.server.requests().is_empty(), "no API call");
}

#[test]
fn a_template_restart_policy_other_than_never_is_refused_in_one_line() {
    let env = Env::new();
    for policy in ["Always", "OnFailure"] {
        let pod = env.write(
            "restart.yaml",
            format!(
                "apiVersion: v1\nkind: Pod\nspec:\n  restartPolicy: {policy}\n  containers:\n  - name: tensorflow\n"
            ),
        );
        let out = env.spawn(&["-t", "again", "--pod-file", pod.to_str().unwrap()]);
        out.failure(2).stderr_has(&format!(
            "error: pod template {}: spec.restartPolicy is {policy}; tf-spawner needs Never (remove the line)",
            pod.display()
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.server.requests().is_empty(), "no API call");
}

#[test]
fn script_arguments_without_the_double_dash_get_a_hint_to_add_it() {
    let env = Env::new();
    env.script();
    let out = env.run(&["-w", "2", "train.py", "--epochs", "3"]);
    out.failure(2).stderr_has(
        "error: unexpected argument '--epochs' found; the training script's arguments go after `--`: tf-spawner -w 2 train.py -- --epochs 3; see tf-spawner --help",
    );
    let out = env.run(&["train.py", "3"]);
    out.failure(2)
        .stderr_has("go after `--`: tf-spawner train.py -- 3; see tf-spawner --help");
    // Before the script, or to a verb, the argument is tf-spawner's: no such hint.
    for args in [&["--epochs", "train.py"][..], &["status", "--epochs"]] {
        let out = env.run(args);
        out.failure(2);
        assert!(!out.stderr.contains("go after `--`"), "{out:#?}");
    }
    assert!(env.server.requests().is_empty(), "no API call");
}

#[test]
fn a_mistyped_verb_with_a_run_suggests_the_verb_not_a_double_dash() {
    let env = Env::new();
    let out = env.run(&["staus", "exp1"]);
    out.failure(2).stderr_has(
        "error: unexpected argument 'exp1' found; 'staus' is no verb: did you mean `tf-spawner status exp1`?; see tf-spawner --help",
    );
    assert!(!out.stderr.contains("go after `--`"), "{out:#?}");
    // Far from every verb: no guess, and no `--` hint for a script that is not there.
    let out = env.run(&["zzzz", "exp1"]);
    out.failure(2);
    assert!(
        !out.stderr.contains("did you mean") && !out.stderr.contains("`--`"),
        "{out:#?}"
    );
    assert!(env.server.requests().is_empty(), "no API call");
}

#[test]
fn cp_usage_reads_as_the_command_is_typed() {
    let env = Env::new();
    let out = env.run(&["cp", "--help"]);
    out.success()
        .stdout_has("Usage: tf-spawner cp [OPTIONS] [TAG] REMOTE LOCAL\n");
    assert!(!out.stdout.contains("<[TAG]"), "{out:#?}");
}

#[test]
fn a_known_failure_ends_with_the_line_that_names_its_fix() {
    use crate::follow::{exited, running, spawn_run};
    let env = Env::new();
    let cases = [
        (
            "k3",
            "ValueError: Attempt to convert a value (PerReplica:{\n  0: <tf.Tensor ...>\n}) with an unsupported type to a Tensor.\n",
            "hint: Keras 3's Model.fit does not work under MultiWorkerMirroredStrategy: use Keras 2 from tf-keras",
        ),
        (
            "pd",
            "PermissionError: [Errno 13] Permission denied: '/output/pd/model'\n",
            "see docs/hardened.md",
        ),
    ];
    for (tag, log, hint) in cases {
        spawn_run(&env, tag, &["-w", "1"]);
        let pod = format!("{tag}-worker-0");
        running(&env, &pod);
        env.server.append_log("default", &pod, log);
        exited(&env, &pod, 1);
        env.run(&["status", tag]).success().stdout_has(hint);
        let out = env.run(&["wait", tag]);
        assert_eq!(out.code, 3, "{out:#?}");
        out.stderr_has(hint);
    }
    // An unknown failure gets no hint.
    spawn_run(&env, "plain", &["-w", "1"]);
    running(&env, "plain-worker-0");
    env.server
        .append_log("default", "plain-worker-0", "ValueError: bad shape\n");
    exited(&env, "plain-worker-0", 1);
    let out = env.run(&["wait", "plain"]);
    assert_eq!(out.code, 3, "{out:#?}");
    assert!(!out.stderr.contains("hint:"), "{out:#?}");
}

#[test]
fn run_as_user_with_a_host_path_claim_is_warned_at_the_spawn() {
    use serde_json::json;
    let env = Env::new();
    for (pv, source) in [
        ("pv-host", json!({"hostPath": {"path": "/data/results"}})),
        (
            "pv-nfs",
            json!({"nfs": {"server": "nfs.lab", "path": "/results"}}),
        ),
    ] {
        let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"]});
        spec.as_object_mut()
            .unwrap()
            .extend(source.as_object().unwrap().clone());
        env.server.insert(
            "persistentvolumes",
            "",
            json!({"metadata": {"name": pv}, "spec": spec}),
        );
        env.server.insert(
            "persistentvolumeclaims",
            "default",
            json!({
                "metadata": {"name": format!("claim-{pv}")},
                "spec": {"accessModes": ["ReadWriteMany"], "volumeName": pv,
                         "resources": {"requests": {"storage": "1Gi"}}},
                "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]}
            }),
        );
    }
    let warned = "warning: persistentvolumeclaim 'claim-pv-host' is bound to a hostPath volume (pv-host: /data/results), which ignores fsGroup: user 1000 (--run-as-user)";
    let out = env.spawn(&[
        "-t",
        "hp",
        "--volume",
        "claim-pv-host",
        "--run-as-user",
        "1000",
    ]);
    out.success().stderr_has(warned);
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    // The image's own user, or a volume that honours fsGroup: nothing to say.
    for args in [
        &["-t", "hq", "--volume", "claim-pv-host"][..],
        &[
            "-t",
            "nf",
            "--volume",
            "claim-pv-nfs",
            "--run-as-user",
            "1000",
        ],
    ] {
        let out = env.spawn(args);
        out.success();
        assert!(!out.stderr.contains("hostPath"), "{out:#?}");
    }
}
