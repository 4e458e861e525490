//! Issue 38, hardened clusters: the pods' Pod Security defaults, and the one line of a
//! Pod Security refusal (the test server models the PodSecurity admission plugin for
//! namespaces labelled `pod-security.kubernetes.io/enforce`).

use kube_testserver::{NETWORK_POLICIES, Options, User};
use serde_json::{Value, json};

use crate::support::Env;

const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// Namespace `ns`, enforcing Pod Security `level` (made, or relabelled).
pub fn enforcing(env: &Env, ns: &str, level: &str) {
    env.server.insert(
        "namespaces",
        "",
        json!({"metadata": {"name": ns, "labels": {ENFORCE: level}}}),
    );
}

fn containers(pod: &Value) -> Vec<&Value> {
    let spec = &pod["spec"];
    ["initContainers", "containers"]
        .iter()
        .filter_map(|l| spec[*l].as_array())
        .flatten()
        .collect()
}

/// The three fields tf-spawner sets on every pod, as the server stored them.
fn assert_hardened(pod: &Value) {
    assert_eq!(
        pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
        "{pod:#}"
    );
    for c in containers(pod) {
        let sc = &c["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{pod:#}");
        assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{pod:#}");
    }
}

#[test]
fn every_task_pod_carries_what_restricted_asks_and_baseline_admits_it() {
    let env = Env::new();
    enforcing(&env, "base", "baseline");
    let template = env.write(
        "sidecar.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n  - name: proxy\n    image: envoy\n",
    );
    env.spawn(&[
        "-t",
        "psa",
        "-n",
        "base",
        "-w",
        "2",
        "--chief",
        "--pod-file",
        template.to_str().unwrap(),
    ])
    .success();
    let pods = env.list("pods", "base");
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(containers(pod).len(), 2, "{pod:#}");
        assert_hardened(pod);
    }
}

#[test]
fn a_restricted_namespace_refuses_root_in_one_line_naming_the_fix_and_nothing_is_left() {
    let env = Env::new();
    enforcing(&env, "strict", "restricted");
    let out = env.spawn(&["-t", "psa", "-n", "strict", "-w", "2"]);
    out.failure(1).stderr_has(
        "namespace 'strict' enforces Pod Security \"restricted\": runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true); run the tasks as a non-root user with --run-as-user UID (defaults key run_as_user)",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(
        !out.stderr.contains("allowPrivilegeEscalation"),
        "only root is left to refuse: {out:#?}"
    );
    assert!(env.names("strict").is_empty(), "{:?}", env.names("strict"));
}

#[test]
fn what_the_template_sets_is_kept_and_a_refusal_names_the_template() {
    let env = Env::new();
    enforcing(&env, "strict", "restricted");
    let template = env.write(
        "own.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  securityContext:\n    runAsNonRoot: true\n    runAsUser: 1000\n  containers:\n  - name: tensorflow\n    securityContext:\n      allowPrivilegeEscalation: true\n",
    );
    let file = template.to_str().unwrap();
    let out = env.spawn(&["-t", "own", "-n", "strict", "--pod-file", file]);
    out.failure(1)
        .stderr_has("allowPrivilegeEscalation != false (container \"tensorflow\" must set securityContext.allowPrivilegeEscalation=false)")
        .stderr_has("the pod template (--pod-file) asks for what the namespace forbids");
    env.spawn(&["-t", "own", "-n", "default", "--pod-file", file])
        .success();
    let pod = env.server.get("pods", "default", "own-worker-0").unwrap();
    let sc = &pod["spec"]["containers"][0]["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], true, "{pod:#}");
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{pod:#}");
}

#[test]
fn a_refused_helper_pod_is_one_line_naming_the_fix_not_a_debug_dump() {
    let env = Env::new();
    env.server.insert(
        "persistentvolumeclaims",
        "lab",
        json!({
            "metadata": {"name": "results"},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]}
        }),
    );
    env.spawn(&["-t", "old", "-n", "lab", "--volume", "results"])
        .success();
    // The namespace enforces `restricted` since the run was spawned.
    enforcing(&env, "lab", "restricted");
    for args in [
        &["cp", "-t", "old", "-n", "lab", "model", "out"][..],
        &["tensorboard", "-t", "old", "-n", "lab"][..],
    ] {
        let out = env.run(args);
        out.failure(1)
            .stderr_has(
                "namespace 'lab' enforces Pod Security \"restricted\": runAsNonRoot != true",
            )
            .stderr_has("spawn the run with --run-as-user UID (defaults key run_as_user)");
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
        for dump in ["ApiError", "Status {", "Some(Failure)"] {
            assert!(!out.stderr.contains(dump), "{out:#?}");
        }
        let helpers: Vec<String> = env
            .names("lab")
            .into_iter()
            .filter(|n| n.contains("-cp-") || n.contains("tensorboard"))
            .collect();
        assert!(helpers.is_empty(), "{helpers:?}");
    }
}

/// A claim in `ns`, as a provisioner would leave it (Bound).
fn claim(env: &Env, ns: &str, name: &str) {
    env.server.insert(
        "persistentvolumeclaims",
        ns,
        json!({
            "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]}
        }),
    );
}

#[test]
fn run_as_user_is_admitted_by_restricted_and_the_helpers_run_as_the_run() {
    let env = Env::new();
    enforcing(&env, "strict", "restricted");
    claim(&env, "strict", "results");
    env.spawn(&[
        "-t",
        "nr",
        "-n",
        "strict",
        "-w",
        "2",
        "--volume",
        "results",
        "--run-as-user",
        "1000",
    ])
    .success();
    let pods = env.list("pods", "strict");
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        assert_hardened(pod);
        let sc = &pod["spec"]["securityContext"];
        assert_eq!(
            (
                &sc["runAsNonRoot"],
                &sc["runAsUser"],
                &sc["runAsGroup"],
                &sc["fsGroup"]
            ),
            (&json!(true), &json!(1000), &json!(1000), &json!(1000)),
            "{pod:#}"
        );
        let home = crate::support::env_var(pod, "HOME");
        assert_eq!(home.as_deref(), Some("/home/tf-spawner"), "{pod:#}");
    }
    // The helper pod is admitted too (the namespace's admission refuses a pod that does
    // not promise runAsNonRoot): it runs as the run's user. The test server runs no
    // kubelet, so `cp` waits for it to start and gives up after its timeout.
    env.server.clear_requests();
    let out = env.run(&[
        "cp",
        "-t",
        "nr",
        "-n",
        "strict",
        "model",
        "out",
        "--timeout",
        "1s",
    ]);
    out.failure(1);
    assert!(!out.stderr.contains("Pod Security"), "{out:#?}");
    let created = env.server.requests().into_iter().any(|r| {
        r.method == "POST"
            && r.path == "/api/v1/namespaces/strict/pods"
            && r.status == 201
            && r.query.is_empty()
    });
    assert!(created, "the helper pod was admitted");
}

#[test]
fn run_as_user_comes_from_the_defaults_file_and_refuses_root_in_one_line() {
    let env = Env::new();
    let config = env.write("config.yaml", "run_as_user: 2000\nnetwork_policy: true\n");
    let out = crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .args(["config", "-o", "json"]),
    );
    out.success();
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    let text = shown.to_string();
    assert!(
        text.contains("run_as_user") && text.contains("2000"),
        "{text}"
    );
    assert!(text.contains("network_policy"), "{text}");
    let script = env.script();
    crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &config).args([
        "-t",
        "df",
        script.to_str().unwrap(),
    ]))
    .success();
    let pod = env.server.get("pods", "default", "df-worker-0").unwrap();
    assert_eq!(pod["spec"]["securityContext"]["runAsUser"], 2000);
    assert!(
        env.server
            .get(NETWORK_POLICIES, "default", "df-network")
            .is_some()
    );

    for (args, needle) in [
        (
            &["--run-as-user", "0"][..],
            "error: --run-as-user \"0\" is root",
        ),
        (
            &["--run-as-user", "me"][..],
            "error: --run-as-user \"me\" is not a user id",
        ),
        (&["--local", "--run-as-user", "1000"][..], "--run-as-user"),
        (&["--local", "--network-policy"][..], "--network-policy"),
    ] {
        let mut all = vec!["-t", "bad"];
        all.extend_from_slice(args);
        let out = env.spawn(&all);
        out.failure(2).stderr_has(needle);
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    let bad = env.write("bad.yaml", "run_as_user: 0\n");
    let out = crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &bad).args([
        "-t",
        "bad",
        script.to_str().unwrap(),
    ]));
    out.failure(2)
        .stderr_has("key 'run_as_user': \"0\" is root");
}

#[test]
fn a_network_policy_comes_and_goes_with_the_run() {
    let env = Env::new();
    let dry = env.spawn(&["-t", "np", "-w", "2", "--network-policy", "--dry-run"]);
    dry.success()
        .stdout_has("kind: NetworkPolicy")
        .stdout_has("name: np-network");
    assert!(
        env.server
            .get(NETWORK_POLICIES, "default", "np-network")
            .is_none()
    );

    let out = env.spawn(&[
        "-t",
        "np",
        "-w",
        "2",
        "--chief",
        "--network-policy",
        "-o",
        "json",
    ]);
    out.success();
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        summary["created"]
            .as_array()
            .unwrap()
            .contains(&json!({"kind": "networkpolicy", "name": "np-network"})),
        "{summary:#}"
    );
    let policy = env
        .server
        .get(NETWORK_POLICIES, "default", "np-network")
        .unwrap();
    assert_eq!(policy["metadata"]["labels"]["training_attempt"], "np");
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let selector = &policy["spec"]["podSelector"];
    assert_eq!(
        selector,
        &policy["spec"]["ingress"][0]["from"][0]["podSelector"]
    );

    let out = env.run(&["-d", "-t", "np", "--yes"]);
    out.success().stdout_has("networkpolicy/np-network");
    assert!(
        env.server
            .get(NETWORK_POLICIES, "default", "np-network")
            .is_none()
    );
    assert!(
        env.names("default").is_empty(),
        "{:?}",
        env.names("default")
    );
}

#[test]
fn a_failed_spawn_rolls_its_network_policy_back() {
    let env = Env::new();
    enforcing(&env, "strict", "restricted");
    let out = env.spawn(&["-t", "rb", "-n", "strict", "--network-policy"]);
    out.failure(1).stderr_has("enforces Pod Security");
    assert!(
        env.server
            .get(NETWORK_POLICIES, "strict", "rb-network")
            .is_none()
    );
    assert!(env.names("strict").is_empty(), "{:?}", env.names("strict"));
}

#[test]
fn credentials_that_may_not_create_network_policies_get_one_line_naming_the_option() {
    let mut options = Options {
        namespaces: vec!["default".into(), "team-a".into()],
        ..Options::default()
    };
    let mut user = User::namespaced("team-a", "team-a");
    user.denied_resources = vec![NETWORK_POLICIES.into()];
    options.users.push(user);
    let env = Env::with(options);
    let dir = env.path("team-a");
    std::fs::create_dir_all(&dir).unwrap();
    let kc = env.server.write_kubeconfig(&dir, "team-a", Some("team-a"));
    let script = env.script();
    let out = env.run_as(
        &kc,
        &["-t", "np", "--network-policy", script.to_str().unwrap()],
    );
    out.failure(1).stderr_has(
        "error: creating networkpolicy/np-network: these credentials may not create network policies in namespace 'team-a'",
    )
    .stderr_has("spawn without --network-policy");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.names("team-a").is_empty(), "{:?}", env.names("team-a"));
    // Without the option, the same credentials spawn and delete the run whole.
    env.run_as(&kc, &["-t", "np", script.to_str().unwrap()])
        .success();
    env.run_as(&kc, &["-d", "-t", "np", "--yes"]).success();
    assert!(env.names("team-a").is_empty(), "{:?}", env.names("team-a"));
}

/// A template's `privileged: true` is kept (the template is the user's), with one
/// warning line naming the container: it gets every device and capability of its node.
#[test]
fn a_privileged_template_container_is_kept_with_a_warning() {
    let env = Env::new();
    let template = env.write(
        "priv.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  initContainers:\n  - {name: setup, image: busybox}\n  containers:\n  - name: tensorflow\n    image: tf\n    securityContext: {privileged: true}\n",
    );
    let out = env.spawn(&[
        "-t",
        "priv",
        "-w",
        "1",
        "--pod-file",
        template.to_str().unwrap(),
    ]);
    out.success().stderr_has(
        "priv.yaml: spec.containers[0] (tensorflow) runs privileged (securityContext.privileged: true)",
    );
    assert_eq!(out.stderr.matches("warning:").count(), 1, "{out:#?}");
    let pod = env.server.get("pods", "default", "priv-worker-0").unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["securityContext"]["privileged"],
        true
    );
}
