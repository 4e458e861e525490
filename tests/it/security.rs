//! Least privilege (a credential limited to one namespace) and secrets that never leak.

use kube_testserver::{Options, User};

use crate::support::{Env, Output, run};

fn limited_env() -> Env {
    let mut options = Options {
        namespaces: vec!["default".into(), "team-a".into(), "team-b".into()],
        ..Options::default()
    };
    options.users.push(User::namespaced("team-a", "team-a"));
    let mut nosecrets = User::namespaced("team-a-nosecrets", "team-a");
    nosecrets.denied_resources = vec!["secrets".into()];
    options.users.push(nosecrets);
    Env::with(options)
}

fn kubeconfig(env: &Env, user: &str) -> std::path::PathBuf {
    let dir = env.path(user);
    std::fs::create_dir_all(&dir).unwrap();
    env.server.write_kubeconfig(&dir, user, Some("team-a"))
}

#[test]
fn a_namespace_limited_credential_can_spawn_and_delete_in_its_namespace() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a");
    let script = env.script();
    let file = env.write("e.env", "A=1\n");
    env.run_as(
        &kc,
        &[
            "-t",
            "lim",
            "-w",
            "3",
            "-e",
            file.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    )
    .success();
    assert_eq!(env.names("team-a").len(), 1 + 1 + 3 + 3);
    env.run_as(&kc, &["-d", "-t", "lim"]).success();
    assert!(env.names("team-a").is_empty());
    for r in env.server.requests() {
        // The spawn's pre-flight asks for the nodes (docs/resources.md); refused, it says
        // nothing.
        if r.method == "GET" && r.path == "/api/v1/nodes" && r.status == 403 {
            continue;
        }
        assert!(
            r.path.contains("/namespaces/team-a/"),
            "cluster-scoped or cross-namespace call: {} {}",
            r.method,
            r.path
        );
        // `-d` deletes NetworkPolicies and PodGroups by label whatever the run's record
        // says (issue 49); a credential without rights on them is refused, which is
        // nothing to delete for a run without them.
        let optional = r.path.ends_with("/networkpolicies") || r.path.ends_with("/podgroups");
        assert!(
            r.status < 400 || (optional && matches!(r.status, 403 | 404)),
            "{} {} answered {}",
            r.method,
            r.path,
            r.status
        );
    }
}

#[test]
fn elsewhere_it_gets_a_clear_403_and_nothing_is_created() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a");
    let script = env.script();
    let out = env.run_as(&kc, &["-n", "team-b", "-t", "x", script.to_str().unwrap()]);
    // The first look for the tag's objects is refused (which kind comes first is the
    // spawn's business: its ConfigMap, since `-d` of the same tag deletes that first).
    out.failure(1)
        .stderr_has("this credential is forbidden to list ")
        .stderr_has(" in namespace 'team-b' (Forbidden, 403)");
    assert_eq!(env.server.object_count(), 0);
    env.run_as(&kc, &["-n", "team-b", "-d", "-t", "x"])
        .failure(1)
        .stderr_has("in namespace 'team-b' (Forbidden, 403)");
}

#[test]
fn without_rights_on_secrets_an_env_file_fails_cleanly() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a-nosecrets");
    let script = env.script();
    let file = env.write("e.env", "A=1\n");
    let out = env.run_as(
        &kc,
        &[
            "-t",
            "ns",
            "-e",
            file.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    );
    // One line naming the right and the rule of examples/rbac.yaml that grants it.
    out.failure(1).stderr_has(
        "this credential is forbidden to create secrets in namespace 'team-a' (Forbidden, 403); examples/rbac.yaml's Role grants it in its rule for secrets",
    );
    assert!(env.names("team-a").is_empty(), "{:?}", env.names("team-a"));
    // Without -e the same credential works.
    env.run_as(&kc, &["-t", "ns", script.to_str().unwrap()])
        .success();
}

/// Requests on secrets the server saw since the last `clear_requests`.
fn secret_requests(env: &Env) -> Vec<String> {
    env.server
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/secrets"))
        .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
        .collect()
}

#[test]
fn without_rights_on_secrets_a_run_without_env_file_is_deleted_with_exit_0() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a-nosecrets");
    let script = env.script();
    env.run_as(&kc, &["-t", "nosec", "-w", "2", script.to_str().unwrap()])
        .success();
    assert_eq!(env.names("team-a").len(), 1 + 2 + 2);
    env.server.clear_requests();
    let out = env.run_as(&kc, &["-d", "-t", "nosec"]);
    out.success()
        .stdout_has("deleted pod/nosec-worker-1")
        .stdout_has("deleted service/nosec-worker-0")
        .stdout_has("deleted configmap/nosec-script");
    assert_eq!(out.stderr, "", "{out:#?}");
    assert!(env.names("team-a").is_empty(), "{:?}", env.names("team-a"));
    // Secrets are deleted by the run's label whatever its ConfigMap records (issue 49):
    // asked for once; the refusal says nothing to a run recorded without one.
    assert_eq!(
        secret_requests(&env),
        ["DELETE /api/v1/namespaces/team-a/secrets -> 403"]
    );
}

#[test]
fn without_rights_on_secrets_a_run_with_a_secret_is_a_clear_error() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a-nosecrets");
    let admin = kubeconfig(&env, "admin");
    let script = env.script();
    let file = env.write("e.env", "A=1\n");
    env.run_as(
        &admin,
        &[
            "-t",
            "withsec",
            "-e",
            file.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    )
    .success();
    let out = env.run_as(&kc, &["-d", "-t", "withsec"]);
    assert_eq!(out.code, 1, "{out:#?}");
    let last = out.stderr.trim_end();
    assert!(
        last.starts_with("error: deleting secrets: ")
            && last.contains(
                "is forbidden to deletecollection secrets in namespace 'team-a' (Forbidden, 403)"
            )
            && last.contains("secrets of run 'withsec' may be left in namespace 'team-a'"),
        "{out:#?}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    // The rest is gone, and said so; the secret is left.
    out.stdout_has("deleted pod/withsec-worker-1")
        .stdout_has("deleted configmap/withsec-script");
    assert_eq!(env.names("team-a"), ["secret/withsec-env"]);
}

#[test]
fn without_rights_on_secrets_a_run_without_a_record_is_deleted_as_before() {
    let env = limited_env();
    let kc = kubeconfig(&env, "team-a-nosecrets");
    let admin = kubeconfig(&env, "admin");
    let script = env.script();
    // A run made before config maps recorded the secret: nothing says it has none.
    env.run_as(&admin, &["-t", "old", "-w", "1", script.to_str().unwrap()])
        .success();
    let mut cm = env
        .server
        .get("configmaps", "team-a", "old-script")
        .unwrap();
    cm["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("tf-spawner/env-secret");
    env.server.insert("configmaps", "team-a", cm);
    let out = env.run_as(&kc, &["-d", "-t", "old"]);
    out.failure(1)
        .stderr_has("deleting secrets: ")
        .stderr_has("secrets of run 'old' may be left");
    assert!(env.names("team-a").is_empty(), "{:?}", env.names("team-a"));
    // Again: nothing of the run is left to tell, and the secrets cannot be looked at.
    // Nothing to delete is no error with --ignore-not-found; that secrets were not
    // looked at is said.
    let out = env.run_as(&kc, &["-d", "-t", "old", "--ignore-not-found"]);
    out.success()
        .stdout_has("nothing labelled training_attempt=old in namespace team-a");
    assert!(
        out.stderr.starts_with("note: nothing else of run 'old' was found, and its secrets could not be looked for: deleting secrets: ")
            && out.stderr.trim_end().lines().count() == 1,
        "{out:#?}"
    );
}

const PLANTED: &str = "planted-Secret-V4lue";

fn no_leak(out: &Output) {
    assert!(
        !out.stdout.contains(PLANTED),
        "stdout leaks the secret: {}",
        out.stdout
    );
    assert!(
        !out.stderr.contains(PLANTED),
        "stderr leaks the secret: {}",
        out.stderr
    );
}

#[test]
fn env_file_values_never_appear_in_any_output() {
    let env = Env::new();
    let file = env.write(
        "s.env",
        format!("S3_SECRET_KEY={PLANTED}\nexport TOKEN='{PLANTED}'\n"),
    );
    let f = file.to_str().unwrap();
    let script = env.script();
    let s = script.to_str().unwrap();
    let mut outputs = vec![
        env.run(&["--dry-run", "-e", f, s]),
        env.run(&["--dry-run", "-o", "json", "-e", f, s]),
        env.run(&["-t", "leak", "-e", f, s]),
        env.run(&["-t", "leak", "-e", f, s]), // refused: already exists
        env.run(&["-d", "-t", "leak"]),
    ];
    // A failing spawn (the pods are rejected) and its rollback.
    env.server
        .add_fault(kube_testserver::Fault::on("POST", "/pods").status(422));
    outputs.push(env.run(&["-t", "leak2", "-e", f, s]));
    // Verbose logging, where the binary supports it.
    outputs.push(run(env
        .cmd()
        .env("RUST_LOG", "trace")
        .args(["-t", "leak3", "-e", f, s])));
    for out in &outputs {
        no_leak(out);
    }
    assert_eq!(outputs[0].code, 0);
    assert_eq!(outputs[3].code, 7);
    assert_eq!(outputs[5].code, 1);
    for pod in env.list("pods", "default") {
        assert!(!pod.to_string().contains(PLANTED));
    }
}

/// An env file's mistakes are reported by file, line and kind, never by their text: a
/// pasted token (a line without `=`, text after a closing quote, a key with a space)
/// stays out of CI logs. Keys the API server refuses (`.`, `..`) are refused before
/// anything is created.
#[test]
fn env_file_errors_name_the_line_never_its_text() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    for (text, said) in [
        (format!("A=1\n{PLANTED}\n"), "bad.env:2: expected KEY=VALUE"),
        (
            format!("A='x' {PLANTED}\n"),
            "bad.env:1: text after the closing quote",
        ),
        // A valid name whose value is bad: the name may be the secret.
        (
            format!("{PLANTED}='x' y\n"),
            "bad.env:1: text after the closing quote",
        ),
        // A pasted token ending in base64's padding is no KEY=VALUE.
        (
            format!("{PLANTED}==\n"),
            "bad.env:1: expected KEY=VALUE, found a pasted token",
        ),
        // A lone \r ends the line: the planted line is a line of its own.
        (
            format!("A=1\r{PLANTED}\n"),
            "bad.env:2: expected KEY=VALUE, found a line without '='",
        ),
        (
            format!("{PLANTED} x=1\n"),
            "bad.env:1: the variable name has a character that is not allowed",
        ),
        (
            "..=1\n".to_string(),
            "bad.env:1: the variable name is '.' or '..'",
        ),
        (
            ".=1\n".to_string(),
            "bad.env:1: the variable name is '.' or '..'",
        ),
    ] {
        let file = env.write("bad.env", &text);
        let out = env.run(&["-t", "envs", "-e", file.to_str().unwrap(), s]);
        out.failure(2).stderr_has(said);
        no_leak(&out);
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert_eq!(env.server.object_count(), 0);
}

/// A namespace is one segment of every URL: `-n 'team-a?'` once sent
/// `DELETE /api/v1/namespaces/team-a?/configmaps?…`, a delete of namespace team-a.
/// Every verb refuses a namespace that is not a DNS-1123 label, as a usage error,
/// before any request, wherever the namespace came from.
#[test]
fn a_namespace_that_is_not_a_name_is_refused_with_nothing_sent() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    for ns in ["x?", "x#", "x/y", "team-a?x=1", "..", "X"] {
        let verbs: [Vec<&str>; 5] = [
            vec!["-d", "-y", "-t", "demo", "-n", ns],
            vec!["-d", "-t", "demo", "-n", ns],
            vec!["list", "-n", ns],
            vec!["status", "-t", "demo", "-n", ns],
            vec!["-t", "demo", "-n", ns, script],
        ];
        for args in verbs {
            let out = env.run(&args);
            out.failure(2).stderr_has("is not a valid namespace name");
            assert_eq!(
                out.stderr.trim().lines().count(),
                1,
                "{args:?}: {}",
                out.stderr
            );
            let sent = env.server.requests();
            assert!(
                sent.is_empty(),
                "{args:?} sent {} {}",
                sent[0].method,
                sent[0].path
            );
        }
    }
}

/// The same from the kubeconfig context and from the defaults file: the line names
/// where the namespace came from.
#[test]
fn a_bad_namespace_from_the_kubeconfig_or_the_config_file_is_refused_naming_it() {
    let env = Env::new();
    let dir = env.path("ctx");
    std::fs::create_dir_all(&dir).unwrap();
    let kc = env.server.write_kubeconfig(&dir, "admin", Some("'x#'"));
    for args in [
        &["-d", "-y", "-t", "demo"][..],
        &["list"],
        &["status", "-t", "demo"],
    ] {
        env.run_as(&kc, args).failure(2).stderr_has(
            "the namespace of kubeconfig context 'test' \"x#\" is not a valid namespace name",
        );
    }
    env.defaults_file("namespace: 'x?'\n");
    env.run(&["-d", "-y", "-t", "demo"])
        .failure(2)
        .stderr_has("key 'namespace': \"x?\" is not a valid namespace name");
    // A valid -n beats the file's (and the context's) bad one (an empty list also asks
    // whether the namespace itself is there).
    env.run_as(&kc, &["list", "-n", "default"]).success();
    assert!(env.server.requests().iter().all(|r| {
        r.path.starts_with("/api/v1/namespaces/default/") || r.path == "/api/v1/namespaces/default"
    }));
}

/// A bearer token sent to an `http://` API server off this machine crosses the network
/// in clear: a warning says so (a loopback `kubectl proxy` is not warned about).
#[test]
fn a_token_for_a_plain_http_server_is_warned_about() {
    let env = Env::new();
    let kc = env.write(
        "kubeconfig-http",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://192.0.2.1:8080\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: planted-token}\n",
    );
    let out = env.run_as(
        &kc,
        &[
            "list",
            "--request-timeout",
            "1s",
            "--retries",
            "0",
            "--give-up-after",
            "1s",
        ],
    );
    assert_ne!(out.code, 0, "{out:#?}");
    out.stderr_has("warning: the API server http://192.0.2.1:8080/ is reached over plain http://: the credentials (bearer token or password) cross the network unencrypted");
    assert!(!out.stderr.contains("planted-token"), "{out:#?}");
}
