//! Bad input: one clear line, a non-zero exit, nothing created.

use kube_testserver::{Fault, FaultAction};

use crate::support::Env;

#[track_caller]
fn refused(env: &Env, args: &[&str], code: i32, needle: &str) {
    let out = env.run(args);
    out.failure(code).stderr_has(needle);
    assert!(
        env.names("default").is_empty(),
        "nothing created for {args:?}"
    );
}

#[test]
fn bad_flags_and_files_are_usage_errors_before_any_call() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    let not_pod = env.write(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
    );
    let bad_yaml = env.write("bad.yaml", "apiVersion: v1\nkind: Pod\nspec: [\n");
    let empty_pod = env.write(
        "empty.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n",
    );
    let bad_env = env.write("bad.env", "A=1\nthis line is wrong\n");
    let reserved_env = env.write("res.env", "TF_CONFIG={}\n");
    let binary_env = env.write("bin.env", b"A=\xff\xfe\n");
    let dir = env.path("");

    refused(
        &env,
        &["missing.py"],
        2,
        "cannot read training script missing.py: No such file or directory",
    );
    refused(&env, &[], 2, "the training script is missing");
    refused(&env, &[dir.to_str().unwrap()], 2, "is a directory");
    refused(
        &env,
        &["--pod-file", "nope.yaml", s],
        2,
        "cannot read pod template nope.yaml",
    );
    refused(
        &env,
        &["--pod-file", not_pod.to_str().unwrap(), s],
        2,
        "must be a Pod",
    );
    refused(
        &env,
        &["--pod-file", bad_yaml.to_str().unwrap(), s],
        2,
        "is not valid YAML",
    );
    refused(
        &env,
        &["--pod-file", empty_pod.to_str().unwrap(), s],
        2,
        "has no containers",
    );
    refused(&env, &["-t", "Bad_Tag", s], 2, "invalid tag 'Bad_Tag'");
    refused(
        &env,
        &["-t", "9lives", s],
        2,
        "must start with a lowercase letter",
    );
    refused(
        &env,
        &["-t", &"a".repeat(60), s],
        2,
        "would exceed 63 characters",
    );
    refused(&env, &["-w", "0", s], 2, "--workers must be at least 1");
    refused(&env, &["-w", "100000", s], 2, "at most 10000");
    refused(
        &env,
        &["-e", bad_env.to_str().unwrap(), s],
        2,
        "bad.env:2: expected KEY=VALUE",
    );
    refused(
        &env,
        &["-e", reserved_env.to_str().unwrap(), s],
        2,
        "TF_CONFIG is set by tf-spawner",
    );
    refused(
        &env,
        &["-e", binary_env.to_str().unwrap(), s],
        2,
        "not valid UTF-8",
    );
    refused(
        &env,
        &["-c", "nope.sh", s],
        2,
        "cannot read entrypoint (-c) nope.sh",
    );
    refused(&env, &["-i", "", s], 2, "--image");
    assert!(
        env.server.requests().is_empty(),
        "no API call for bad input"
    );
}

#[test]
fn port_out_of_range_is_a_usage_error() {
    let env = Env::new();
    let script = env.script();
    for port in ["0", "65536", "-1", "abc"] {
        let out = env.run(&["-p", port, script.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{port}: {out:#?}");
        assert!(
            out.stderr.contains("--port") || out.stderr.contains("-p"),
            "{out:#?}"
        );
    }
    assert!(env.names("default").is_empty());
}

#[test]
fn oversized_script_is_refused() {
    let env = Env::new();
    let big = env.write("big.py", vec![b'#'; 1024 * 1024 + 1]);
    refused(
        &env,
        &[big.to_str().unwrap()],
        2,
        "a ConfigMap holds at most 1048576 bytes",
    );
}

#[test]
fn non_utf8_script_goes_into_binary_data() {
    let env = Env::new();
    let script = env.write("latin1.py", b"# caf\xe9\nprint(1)\n");
    env.run(&["-t", "bin", script.to_str().unwrap()]).success();
    let cm = env
        .server
        .get("configmaps", "default", "bin-script")
        .unwrap();
    assert!(cm["data"].get("training-script.py").is_none());
    assert!(cm["binaryData"]["training-script.py"].is_string());
}

#[test]
fn unreachable_server() {
    let env = Env::new();
    let script = env.script();
    let kubeconfig = env.write(
        "dead.yaml",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    );
    let out = env.run_as(&kubeconfig, &[script.to_str().unwrap()]);
    out.failure(1)
        .stderr_has("cannot reach the Kubernetes API server at https://127.0.0.1:1");
}

#[test]
fn missing_kubeconfig() {
    let env = Env::new();
    let script = env.script();
    let out = env.run(&["--kubeconfig", "nowhere.yaml", script.to_str().unwrap()]);
    out.failure(1).stderr_has("nowhere.yaml");
}

#[test]
fn rejected_token() {
    let env = Env::new();
    let script = env.script();
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    let token = env.server.admin_token();
    let bad = env.write("badtoken.yaml", text.replace(&token, "not-the-token"));
    let out = env.run_as(&bad, &[script.to_str().unwrap()]);
    out.failure(1)
        .stderr_has("rejected the credentials (401 Unauthorized)");
    assert!(env.names("default").is_empty());
}

#[test]
fn missing_namespace() {
    let env = Env::new();
    refused_in(
        &env,
        &["-n", "nowhere"],
        "namespace 'nowhere' does not exist",
    );
}

fn refused_in(env: &Env, args: &[&str], needle: &str) {
    let out = env.spawn(args);
    out.failure(1).stderr_has(needle);
    assert_eq!(env.server.object_count(), 0);
}

#[test]
fn a_failure_at_each_create_step_leaves_nothing() {
    // The requests of a 3-worker spawn with an env file: 4 lists, then 1 + 1 + 3 + 3 creates.
    let env = Env::new();
    let file = env.write("e.env", "A=1\n");
    let creates = 8;
    for k in 1..=creates {
        env.server.clear_faults();
        env.server.add_fault(Fault {
            method: Some("POST".into()),
            path_contains: None,
            nth: k,
            times: 1,
            action: FaultAction::Status {
                code: 422,
                retry_after: None,
            },
        });
        let out = env.spawn(&[
            "-w",
            "3",
            "-t",
            &format!("f{k}"),
            "-e",
            file.to_str().unwrap(),
        ]);
        out.failure(1);
        assert_eq!(
            env.server.object_count(),
            0,
            "step {k}: {:?}",
            env.names("default")
        );
    }
}

#[test]
fn global_flags_go_before_or_after_a_verb_but_spawn_flags_not_before_one() {
    let env = Env::new();
    env.server.create_namespace("ns2");
    env.spawn(&["-t", "gl", "-n", "ns2"]).success();
    env.run(&["-n", "ns2", "status", "-t", "gl"])
        .success()
        .stdout_has("gl-worker-0");
    env.run(&["status", "-t", "gl", "-n", "ns2"])
        .success()
        .stdout_has("gl-worker-1");
    env.run(&["-w", "3", "status", "-t", "gl"])
        .failure(2)
        .stderr_has("--workers belongs to spawning a run, not to `status`");
    let script = env.script();
    env.run(&[script.to_str().unwrap(), "list"])
        .failure(2)
        .stderr_has("the training script belongs to spawning a run");
}
