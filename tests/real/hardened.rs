//! Hardened clusters against the real servers (issue 38): what the PodSecurity
//! admission of v1.36 does with the run's pods in namespaces enforcing `baseline` and
//! `restricted`, and what v1.20 (no PodSecurity admission) does with the same fields.

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::support::*;

/// A fresh namespace enforcing Pod Security `level`.
pub async fn enforcing(real: &Real, name: &str, level: &str) -> String {
    let ns = real.namespace(name).await;
    let patch = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}});
    Api::<Namespace>::all(real.client.clone())
        .patch(&ns, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("label namespace {ns}: {e}"));
    ns
}

/// The fields tf-spawner sets on every pod, as the server stored them.
fn assert_hardened(pod: &Pod) {
    let spec = pod.spec.as_ref().unwrap();
    let seccomp = spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    assert_eq!(
        seccomp.map(|p| p.type_.as_str()),
        Some("RuntimeDefault"),
        "{pod:?}"
    );
    for c in &spec.containers {
        let sc = c.security_context.as_ref().expect("a security context");
        assert_eq!(sc.allow_privilege_escalation, Some(false), "{pod:?}");
        let drop = sc.capabilities.as_ref().and_then(|c| c.drop.clone());
        assert_eq!(drop, Some(vec!["ALL".to_string()]), "{pod:?}");
    }
}

#[tokio::test]
async fn baseline_admits_the_pods_and_restricted_refuses_root_in_one_line() {
    let Some(real) =
        Real::new("baseline_admits_the_pods_and_restricted_refuses_root_in_one_line").await
    else {
        return;
    };
    let psa = real.server_minor().await >= 23;
    let baseline = enforcing(&real, "psa-b", "baseline").await;
    let restricted = enforcing(&real, "psa-r", "restricted").await;
    let script = real.script();
    let script = script.to_str().unwrap();
    real.run(
        Cred::Admin,
        &["-n", &baseline, "-t", "psa", "-w", "2", "--chief", script],
    )
    .await
    .success();
    let pods = real.pods(&baseline, "psa").await;
    assert_eq!(pods.len(), 3);
    pods.iter().for_each(assert_hardened);

    let out = real
        .run(
            Cred::Admin,
            &["-n", &restricted, "-t", "psa", "-w", "2", script],
        )
        .await;
    if psa {
        out.failure(1).stderr_has(&format!(
            "namespace '{restricted}' enforces Pod Security \"restricted\": runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true); run the tasks as a non-root user with --run-as-user UID (defaults key run_as_user)"
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
        assert!(real.run_objects(&restricted, "psa").await.is_empty());
    } else {
        // v1.20 has no PodSecurity admission: the label means nothing there, and the
        // fields (seccompProfile since 1.19) are stored as sent.
        out.success();
        real.pods(&restricted, "psa")
            .await
            .iter()
            .for_each(assert_hardened);
    }
}

/// Whether a stored label selector (`matchLabels`, `Exists` expressions) selects `labels`.
fn selects(selector: &serde_json::Value, labels: &serde_json::Value) -> bool {
    let pairs = selector["matchLabels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let exprs = selector["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    pairs.iter().all(|(k, v)| &labels[k] == v)
        && exprs.iter().all(|e| {
            assert_eq!(e["operator"], "Exists", "{e}");
            labels.get(e["key"].as_str().unwrap()).is_some()
        })
}

#[tokio::test]
async fn run_as_user_is_admitted_by_restricted_and_the_network_policy_selects_the_tasks() {
    let Some(real) =
        Real::new("run_as_user_is_admitted_by_restricted_and_the_network_policy_selects_the_tasks")
            .await
    else {
        return;
    };
    let ns = enforcing(&real, "psa-nr", "restricted").await;
    let script = real.script();
    let args = [
        "-n",
        &ns,
        "-t",
        "nr",
        "-w",
        "2",
        "--chief",
        "--run-as-user",
        "1000",
        "--network-policy",
        script.to_str().unwrap(),
    ];
    real.run(Cred::Admin, &args).await.success();
    let pods = real.pods(&ns, "nr").await;
    assert_eq!(pods.len(), 3);
    pods.iter().for_each(assert_hardened);
    for pod in &pods {
        let sc = pod.spec.as_ref().unwrap().security_context.clone().unwrap();
        assert_eq!(
            (
                sc.run_as_non_root,
                sc.run_as_user,
                sc.run_as_group,
                sc.fs_group
            ),
            (Some(true), Some(1000), Some(1000), Some(1000))
        );
    }
    // What the server stored of the policy, checked against the pods it stored.
    let policies: Api<NetworkPolicy> = real.api(&ns);
    let policy = policies
        .get("nr-network")
        .await
        .expect("the run's network policy");
    let policy = serde_json::to_value(&policy).unwrap();
    assert_eq!(policy["metadata"]["labels"]["training_attempt"], "nr");
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    assert_eq!(ingress.len(), 1, "{policy:#}");
    assert!(ingress[0].get("ports").is_none(), "every port: {policy:#}");
    let from = ingress[0]["from"].as_array().unwrap();
    assert_eq!(from.len(), 1, "{policy:#}");
    for pod in &pods {
        let labels = serde_json::to_value(&pod.metadata.labels).unwrap();
        assert!(selects(&policy["spec"]["podSelector"], &labels), "{labels}");
        assert!(selects(&from[0]["podSelector"], &labels), "{labels}");
    }
    let helper = json!({"training_attempt": "nr", "tf-spawner/helper": "cp"});
    assert!(!selects(&policy["spec"]["podSelector"], &helper));
    assert!(!selects(
        &from[0]["podSelector"],
        &json!({"training_attempt": "other",
        "tf-spawner/replica-type": "worker"})
    ));

    real.run(Cred::Admin, &["-n", &ns, "-d", "-t", "nr", "--yes"])
        .await
        .success()
        .stdout_has("networkpolicy/nr-network");
    assert!(policies.get_opt("nr-network").await.unwrap().is_none());
}
