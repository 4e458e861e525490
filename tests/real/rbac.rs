//! Issue 49, item 7: least privilege, tested. `examples/rbac.yaml`'s Role, ServiceAccount
//! and RoleBinding are applied in a fresh namespace, the ServiceAccount's token is made
//! with the TokenRequest API (`serviceaccounts/token`, a POST every server since 1.20
//! serves; `kubectl create token` needs kubectl 1.24+), and every verb runs with that
//! token alone: spawn with `-e` and `--network-policy`, a failing run's `wait` (its stop
//! of the peer and the verdict's record: both patches), `status`, `logs`, `list`, `-d`.
//! Pods stay Pending on this node-less server; the test drives them by patching
//! `pods/status` as admin. `cp` and `tensorboard` need a kubelet (`tests/pods`).

use std::ffi::OsString;

use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::support::*;

#[path = "../common/service_account.rs"]
pub mod service_account;

/// No line of stderr says a right was missing (a note or an error of a verb that went
/// on without it).
fn no_missing_right(out: &Output) {
    assert!(
        !out.stderr.contains("forbidden") && !out.stderr.contains("Forbidden"),
        "a right is missing from examples/rbac.yaml: {out:#?}"
    );
}

/// Runs the binary with the ServiceAccount's kubeconfig.
async fn as_account(real: &Real, kubeconfig: &OsString, args: Vec<OsString>) -> Output {
    let mut full: Vec<OsString> = vec!["--kubeconfig".into(), kubeconfig.clone()];
    full.extend(args);
    real.run_raw(&full, &[]).await
}

#[tokio::test]
async fn every_verb_works_under_the_shipped_role() {
    let Some(real) = Real::new("every_verb_works_under_the_shipped_role").await else {
        return;
    };
    let ns = real.namespace("rbac").await;
    service_account::apply_role(&real.client, &ns).await;
    let kubeconfig: OsString =
        service_account::kubeconfig(&real.client, &real.admin_kubeconfig, &ns, real.dir.path())
            .await
            .into();
    let run = |args: Vec<OsString>| as_account(&real, &kubeconfig, args);
    let os = |args: &[&str]| args.iter().map(OsString::from).collect::<Vec<_>>();
    let script = real.script();
    let env_file = real.write("e.env", "WANDB_API_KEY=k-123\n");
    let tag = "sa";

    let mut spawn = os(&["-t", tag, "-w", "2", "--network-policy", "-e"]);
    spawn.extend([env_file.into_os_string(), script.into_os_string()]);
    let out = run(spawn).await;
    out.success();
    no_missing_right(&out);
    assert_eq!(real.secrets(&ns, tag).await.len(), 1);
    let policies: Vec<NetworkPolicy> = real.list(&ns, &selector(tag)).await;
    assert_eq!(policies.len(), 1);

    // `logs` while the pods have no node (bound to a node this server lacks, the API
    // server could not reach its kubelet).
    let out = run(os(&["logs", "-t", tag])).await;
    out.success();
    no_missing_right(&out);

    // A failing run: wait stops the peer (patch pods) and records the verdict (patch
    // configmaps).
    let wait_args = ["wait", "-t", tag, "--timeout", "60s"];
    let mut wait = crate::started::Started::with_kubeconfig(&real, &kubeconfig, &wait_args);
    // Once it has listed the run (its first line) and follows it.
    wait.line("worker ").await;
    // Bound to a node (the peer is then stopped, not deleted as a pod no node took).
    for pod in ["sa-worker-0", "sa-worker-1"] {
        real.bind(&ns, pod, "node-1").await;
        real.set_running(&ns, pod, "tensorflow").await;
    }
    real.set_terminated(&ns, "sa-worker-0", "tensorflow", 1)
        .await;
    let out = wait.finish().await;
    assert_eq!(out.code, 3, "{out:#?}");
    no_missing_right(&out);
    assert!(!out.stderr.contains("not recorded"), "{out:#?}");
    let cm = real.config_maps(&ns, tag).await;
    let annotations = cm[0].metadata.annotations.clone().unwrap_or_default();
    assert!(
        annotations
            .get("tf-spawner/verdict")
            .is_some_and(|v| v.starts_with("Failed")),
        "{annotations:?}"
    );
    let peer = real
        .pods(&ns, tag)
        .await
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some("sa-worker-1"))
        .expect("the peer");
    let peer_annotations = peer.metadata.annotations.unwrap_or_default();
    assert!(
        peer_annotations.contains_key("tf-spawner/stopped"),
        "{peer_annotations:?}"
    );

    for verb in [os(&["status", "-t", tag]), os(&["list"])] {
        let out = run(verb).await;
        out.success();
        no_missing_right(&out);
    }
    let out = run(os(&["-d", "-y", "-t", tag])).await;
    out.success();
    no_missing_right(&out);
    // Bound to a node without a kubelet, the pods linger in their grace period.
    let left: Vec<String> = real
        .run_objects(&ns, tag)
        .await
        .into_iter()
        .filter(|o| !o.starts_with("pod/"))
        .collect();
    assert!(left.is_empty(), "{left:?} {out:#?}");
    for pod in real.pods(&ns, tag).await {
        assert!(pod.metadata.deletion_timestamp.is_some(), "{pod:?}");
    }
    let policies: Vec<NetworkPolicy> = real.list(&ns, &selector(tag)).await;
    assert!(policies.is_empty());
}

/// Issue 64, item 2: a namespace's admin (the built-in ClusterRole `admin`, bound in the
/// namespace) applies `examples/rbac.yaml` as the file says, `kubectl apply -n NS -f`, and
/// every object is made; RBAC refuses them the gangs' file (rights `admin` lacks), whose
/// header says so.
#[tokio::test]
async fn a_namespace_admin_applies_the_shipped_role_as_written() {
    let Some(real) = Real::new("a_namespace_admin_applies_the_shipped_role_as_written").await
    else {
        return;
    };
    let ns = real.namespace("nsadmin").await;
    let admin = "tf-spawner-test-namespace-admin";
    let bind = [
        "create",
        "rolebinding",
        "ns-admin",
        "--clusterrole=admin",
        "--user",
        admin,
        "-n",
        &ns,
    ];
    real.kubectl(Cred::Admin, &bind, "").await.success();
    let file = |name: &str| format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let real = &real;
    let apply = |name: String| {
        let ns = ns.clone();
        async move {
            let args = ["--as", admin, "apply", "-n", &ns, "-f", &name];
            real.kubectl(Cred::Admin, &args, "").await
        }
    };
    let out = apply(file("rbac.yaml")).await;
    out.success();
    for object in [
        "role.rbac.authorization.k8s.io/tf-spawner",
        "serviceaccount/tf-spawner",
        "rolebinding.rbac.authorization.k8s.io/tf-spawner",
    ] {
        assert!(
            out.stdout.contains(&format!("{object} created")),
            "{out:#?}"
        );
    }
    let get = [
        "get",
        "role,serviceaccount,rolebinding",
        "-n",
        &ns,
        "-o",
        "name",
    ];
    let stored = real.kubectl(Cred::Admin, &get, "").await;
    for object in [
        "role.rbac.authorization.k8s.io/tf-spawner",
        "serviceaccount/tf-spawner",
        "rolebinding.rbac.authorization.k8s.io/tf-spawner",
    ] {
        assert!(stored.stdout.lines().any(|l| l == object), "{stored:#?}");
    }
    let gangs = apply(file("rbac-gangs.yaml")).await;
    assert_ne!(gangs.code, 0, "{gangs:#?}");
    assert!(gangs.stderr.contains("forbidden"), "{gangs:#?}");
}
