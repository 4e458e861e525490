//! Issue 38, hardened clusters: the pods' Pod Security defaults, and the one line of a
//! Pod Security refusal (the test server models the PodSecurity admission plugin for
//! namespaces labelled `pod-security.kubernetes.io/enforce`).

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
        "namespace 'strict' enforces Pod Security \"restricted\": runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true); run the tasks as a non-root user",
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
            .stderr_has("spawn the run as a non-root user");
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
