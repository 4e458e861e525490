//! Bad input: one clear line, a non-zero exit, nothing created.

use kube_testserver::{Fault, FaultAction};

use crate::support::{Env, run};

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
    refused(&env, &[], 2, "a training script or a verb is needed");
    refused(&env, &["-w", "2"], 2, "the training script is missing");
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

/// One row of the table: the arguments, extra environment, the exit code and what the
/// one `error:` line must say.
struct Bad {
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    code: i32,
    says: String,
}

fn bad(args: &[&str], code: i32, says: impl Into<String>) -> Bad {
    Bad {
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        code,
        says: says.into(),
    }
}

/// Issue 28: every input file bounded, no arithmetic panic, every check the API server
/// would make done first, every message ours and one line. Each row: the exit code, one
/// `error:` line saying what to fix, no control character, nothing created; for a usage
/// error, no API call at all.
#[test]
fn issue_28_bad_inputs_get_one_line_naming_what_to_fix() {
    let env = Env::new();
    let s = env.script().to_str().unwrap().to_string();
    let path = |name: &str, text: &[u8]| env.write(name, text).to_str().unwrap().to_string();
    let big_env = path(
        "big.env",
        &[b"A=".as_slice(), &vec![b'x'; 1024 * 1024]].concat(),
    );
    let nul_env = path("nul.env", b"OK=1\nBAD=a\0b\n");
    let typed = path(
        "typed.yaml",
        b"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    ports:\n    - containerPort: http\n",
    );
    let dup = path(
        "dup.yaml",
        b"apiVersion: v1\nkind: Pod\nkind: Pod\nspec: {containers: [{name: a}]}\n",
    );
    let many = path("many.yaml", b"apiVersion: v1\nkind: Pod\n---\nkind: Pod\n");
    let zero_workers = path("zero.yaml", b"workers: 0\n");
    let long_deadline = path("deadline.yaml", b"deadline: 3000000000\n");
    let missing_pod_file = path("pod-file.yaml", b"pod_file: nope.yaml\n");
    let bad_kubeconfig = path("kc.yaml", b"apiVersion: v1\nclusters: [\n");
    let path_env = path("path.env", b"PATH=/nowhere\n");
    let bad_name = path(
        "name.yaml",
        b"apiVersion: v1\nkind: Pod\nmetadata: {labels: {team: ml}}\nspec:\n  containers:\n  - name: Tensor Flow\n",
    );
    let bad_label = path(
        "label.yaml",
        b"apiVersion: v1\nkind: Pod\nmetadata: {labels: {team: machine learning}}\nspec: {containers: [{name: tensorflow}]}\n",
    );
    let zero_ca = {
        let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("certificate-authority-data:"))
            .unwrap();
        path(
            "zero-ca.yaml",
            text.replace(line, "    certificate-authority: /dev/zero")
                .as_bytes(),
        )
    };
    let huge_value = path(
        "huge.env",
        &[b"HUGE=".as_slice(), &vec![b'x'; 200_000]].concat(),
    );
    let esc = "a\x1b[31mred";
    let file_env = |var: &'static str, file: &str, row: Bad| Bad {
        env: vec![(var, file.to_string())],
        ..row
    };
    let rows: Vec<Bad> = vec![
        // 1. Bounded reads, refused as soon as the bound is passed.
        bad(
            &["--dry-run", "-w", "1", "/dev/zero"],
            2,
            "training script /dev/zero is larger than 1048576 bytes; a ConfigMap holds at most 1048576 bytes",
        ),
        bad(
            &["--pod-file", "/dev/zero", &s],
            2,
            "pod template /dev/zero is larger than 1048576 bytes",
        ),
        bad(
            &["-e", "/dev/zero", &s],
            2,
            "env file (-e) /dev/zero is larger than 1048576 bytes",
        ),
        bad(
            &["-c", "/dev/zero", &s],
            2,
            "entrypoint (-c) /dev/zero is larger than 1048576 bytes",
        ),
        bad(
            &["--local", "-w", "1", "/dev/zero"],
            2,
            "training script /dev/zero is larger",
        ),
        file_env(
            "TF_SPAWNER_CONFIG",
            "/dev/zero",
            bad(
                &["config"],
                2,
                "config file /dev/zero is larger than 1048576 bytes",
            ),
        ),
        bad(
            &["--kubeconfig", "/dev/zero", &s],
            1,
            "kubeconfig /dev/zero is larger than 16777216 bytes",
        ),
        file_env(
            "KUBECONFIG",
            "/dev/zero",
            bad(
                &[&s],
                1,
                "kubeconfig /dev/zero is larger than 16777216 bytes",
            ),
        ),
        // 3. No arithmetic on user-given durations panics.
        bad(
            &[
                "--local",
                "-w",
                "1",
                "--timeout",
                "18446744073709551615",
                &s,
            ],
            2,
            "invalid value '18446744073709551615' for '--timeout <DURATION>': longer than 100 years",
        ),
        bad(
            &["--local", "-w", "1", "--timeout", "300000000000y", &s],
            2,
            "longer than 100 years",
        ),
        bad(
            &["wait", "--timeout", "300000000000y"],
            2,
            "longer than 100 years",
        ),
        bad(
            &["--request-timeout", "18446744073709551615", &s],
            2,
            "longer than 100 years",
        ),
        bad(
            &["--max-in-flight", "0", &s],
            2,
            "'--max-in-flight <N>': must be at least 1",
        ),
        // 6. What the API server would refuse, refused before any request.
        bad(
            &["--deadline", "2147483648", &s],
            2,
            "is too long: at most 2147483647 seconds (about 68 years), the API's limit",
        ),
        bad(
            &["-e", &big_env, &s],
            2,
            "big.env is larger than 1048576 bytes; its values go into a Secret",
        ),
        bad(
            &["-e", &nul_env, &s],
            2,
            "nul.env:2: the value holds a NUL byte",
        ),
        bad(
            &["--local", "-w", "1", "-e", &nul_env, &s],
            2,
            "nul.env:2: the value holds a NUL byte",
        ),
        bad(
            &["--pod-file", &bad_name, &s],
            2,
            "name.yaml: spec.containers[0].name \"Tensor Flow\" is not a valid container name",
        ),
        bad(
            &["--pod-file", &bad_label, &s],
            2,
            "label.yaml: metadata.labels.team: \"machine learning\" is not a valid label value",
        ),
        // 7/8. Messages in our words.
        bad(
            &["--local", "-w", "1", "-e", &path_env, &s],
            2,
            format!(
                "cannot run python3: not found in PATH=\"/nowhere\", which the env file {path_env} sets"
            ),
        ),
        bad(
            &["--local", "-w", "1", "-e", &huge_value, &s],
            2,
            "Argument list too long: the environment of ",
        ),
        bad(
            &["--local", "-w", "1", "-e", &huge_value, &s],
            2,
            format!(
                "set from the env file {huge_value} (its largest value: HUGE, 200000 bytes) is more than a process may get"
            ),
        ),
        bad(
            &["--pod-file", &typed, &s],
            2,
            "typed.yaml is not a valid Pod: spec.containers[0].ports[0].containerPort: invalid type: string \"http\", expected i32",
        ),
        bad(
            &["--pod-file", &dup, &s],
            2,
            "dup.yaml is not valid YAML: line 3 column 1: duplicate mapping key `kind` is not allowed here",
        ),
        bad(
            &["--pod-file", &many, &s],
            2,
            "many.yaml is not valid YAML: line 4 column 1: more than one YAML document (---); one is expected",
        ),
        file_env(
            "TF_SPAWNER_CONFIG",
            &zero_workers,
            bad(
                &[&s],
                2,
                "zero.yaml: key 'workers': must be at least 1 (tf.distribute needs a worker)",
            ),
        ),
        file_env(
            "TF_SPAWNER_CONFIG",
            &long_deadline,
            bad(&[&s], 2, "deadline.yaml: key 'deadline': 95years"),
        ),
        file_env(
            "KUBECONFIG",
            &bad_kubeconfig,
            bad(&[&s], 1, "cannot read kubeconfig "),
        ),
        file_env(
            "KUBECONFIG",
            &zero_ca,
            bad(
                &[&s],
                1,
                "kubeconfig: certificate-authority /dev/zero is not a regular file",
            ),
        ),
        file_env(
            "TF_SPAWNER_CONFIG",
            &missing_pod_file,
            bad(
                &[&s],
                2,
                format!("cannot read pod template (pod_file of config file {missing_pod_file}) "),
            ),
        ),
        bad(&["--ps", "-5", &s], 2, "invalid value '-5' for '--ps <N>'"),
        bad(
            &["status", "--al"],
            2,
            "unexpected argument '--al' found (a similar argument exists: '--all-workers'); see tf-spawner status --help",
        ),
        bad(
            &["--retries", "-1", &s],
            2,
            "invalid value '-1' for '--retries <N>'",
        ),
        bad(
            &["--frobnicate", &s],
            2,
            "unexpected argument '--frobnicate' found; see tf-spawner --help",
        ),
        bad(&["-t", esc, &s], 2, "invalid tag 'a\\u{1b}[31mred'"),
        bad(
            &[&format!("{esc}.py")],
            2,
            "cannot read training script a\\u{1b}[31mred.py: No such file or directory",
        ),
        bad(
            &["stauts", "-t", "x"],
            2,
            "'stauts' is neither a verb nor an existing training script; did you mean `status`? (the verbs: init, wait, status, logs, list, cp, tensorboard, compare, config, completions, man, sweep;",
        ),
        bad(&["lgos"], 2, "did you mean `logs`?"),
        bad(
            &["delete", "-t", "x"],
            2,
            "'delete' is neither a verb nor an existing training script; to delete a run: tf-spawner -d -t TAG",
        ),
        bad(
            &["-d", "-t", "x", &s],
            2,
            "-d deletes a run by its tag and takes no training script",
        ),
    ];
    for row in &rows {
        env.server.clear_requests();
        let mut cmd = env.cmd();
        for (k, v) in &row.env {
            cmd.env(k, v);
        }
        let out = run(cmd.args(&row.args));
        out.failure(row.code).stderr_has(&row.says);
        assert!(
            !out.stderr.chars().any(|c| c.is_control() && c != '\n'),
            "a control character reached the terminal: {out:#?}"
        );
        for hint in [
            "DuplicateKeyPolicy",
            "from_str_multiple",
            "Option<String>",
            "budget",
        ] {
            assert!(!out.stderr.contains(hint), "{hint}: {out:#?}");
        }
        assert!(env.names("default").is_empty(), "{:?}", row.args);
        if row.code == 2 {
            assert!(
                env.server.requests().is_empty(),
                "a request for {:?}",
                row.args
            );
        }
    }
    // The kubeconfig error is the file's, not "no configuration found".
    let out = run(env.cmd().env("KUBECONFIG", &bad_kubeconfig).arg(&s));
    assert!(
        !out.stderr.contains("no Kubernetes configuration found"),
        "{out:#?}"
    );
    assert!(out.stderr.contains("kc.yaml: line "), "{out:#?}");
}

#[test]
fn misspelled_template_fields_are_warned_about_and_the_run_goes_on() {
    let env = Env::new();
    let pod = env.write(
        "typo.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containres: []\n  containers:\n  - name: tensorflow\n    imagee: x\n",
    );
    let out = env.spawn(&["-t", "typo", "--pod-file", pod.to_str().unwrap()]);
    out.success();
    assert_eq!(
        out.stderr,
        format!(
            "warning: pod template {0}: spec.containers[0].imagee is not a field of a Pod and is ignored (misspelled?)\n\
             warning: pod template {0}: spec.containres is not a field of a Pod and is ignored (misspelled?)\n",
            pod.display()
        )
    );
    assert_eq!(env.list("pods", "default").len(), 2);
}

#[test]
fn a_script_with_a_name_near_a_verb_runs_when_it_exists() {
    let env = Env::new();
    env.write("stauts", "print('a script named stauts')\n");
    env.run(&["-t", "named", "stauts"]).success();
    assert_eq!(env.list("pods", "default").len(), 2);
    // A script named exactly like a verb is given as a path.
    env.write("status", "print('a script named status')\n");
    env.run(&["-t", "verb", "./status"]).success();
    assert_eq!(env.list("pods", "default").len(), 4);
}

#[test]
fn delete_matching_nothing_names_the_runs_there() {
    let env = Env::new();
    env.spawn(&["-t", "real-one"]).success();
    let out = env.run(&["-d", "-t", "real-on"]);
    out.failure(1).stderr_has(
        "no run tagged 'real-on' in namespace default; the runs there: real-one (tf-spawner list -n default;",
    );
    out.stderr_has("--ignore-not-found makes this exit 0");
    assert_eq!(
        (out.stdout.as_str(), out.stderr.lines().count()),
        ("", 1),
        "{out:#?}"
    );
    assert_eq!(env.list("pods", "default").len(), 2);
}

#[test]
fn a_bad_defaults_file_stops_commands_that_read_it_not_version_help_completions_or_man() {
    let env = Env::new();
    let file = env.write("config.yaml", "workers: 0\n");
    let with = |args: &[&str]| run(env.cmd().env("TF_SPAWNER_CONFIG", &file).args(args));
    with(&["config"]).failure(2).stderr_has("key 'workers'");
    with(&["list"]).failure(2).stderr_has("key 'workers'");
    for args in [
        &["--version"][..],
        &["--help"],
        &["completions", "bash"],
        &["man"],
    ] {
        with(args).success();
    }
}
