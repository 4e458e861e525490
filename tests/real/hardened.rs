//! Hardened clusters against the real servers (issue 38): what the PodSecurity
//! admission of v1.36 does with the run's pods in namespaces enforcing `baseline` and
//! `restricted`, and what v1.20 (no PodSecurity admission) does with the same fields.

use k8s_openapi::api::core::v1::{Namespace, Pod};
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
            "namespace '{restricted}' enforces Pod Security \"restricted\": runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true); run the tasks as a non-root user"
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
