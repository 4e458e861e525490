//! Issue 24, "After the training", against a real kube-apiserver: the server accepts a
//! run's claim volume and the helper pods of `cp` and `tensorboard` (no nodes here, so
//! they never start: both give up after their timeout and delete their pod), and a
//! missing claim is refused before anything is created.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ResourceQuota};
use kube::api::PostParams;
use serde_json::json;

use crate::support::*;

async fn claim(real: &Real, ns: &str, name: &str, mode: &str) {
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    real.api::<PersistentVolumeClaim>(ns)
        .create(&PostParams::default(), &claim)
        .await
        .expect("create the claim");
}

#[tokio::test]
async fn the_server_stores_the_volume_and_accepts_the_helper_pods() {
    let Some(real) = Real::new("after").await else {
        return;
    };
    let ns = real.namespace("after").await;
    claim(&real, &ns, "results", "ReadWriteOnce").await;
    let script = real.script();
    let tag = "vol";
    let args = ["-n", &ns, "-t", tag, "-w", "2", "--volume", "results:/out"];
    let mut all: Vec<&str> = args.to_vec();
    all.push(script.to_str().unwrap());
    let out = real.run(Cred::Admin, &all).await;
    out.success()
        .stderr_has("note: persistentvolumeclaim 'results' is ReadWriteOnce");
    for pod in real.pods(&ns, tag).await {
        let spec = pod.spec.unwrap();
        let volume = spec
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "tf-spawner-output")
            .expect("the claim's volume");
        assert_eq!(
            volume.persistent_volume_claim.unwrap().claim_name,
            "results"
        );
        let env = spec.containers[0].env.clone().unwrap();
        // Each run writes into its own folder of the claim, named after its tag.
        assert!(
            env.iter().any(
                |e| e.name == "TF_SPAWNER_OUTPUT_DIR" && e.value.as_deref() == Some("/out/vol")
            ),
            "{env:?}"
        );
    }
    let cms = real.config_maps(&ns, tag).await;
    assert_eq!(
        cms[0].metadata.annotations.as_ref().unwrap()["tf-spawner/volume"],
        "results:/out"
    );

    // A quota on limits (as many shared namespaces have, issue 41): the helper pods carry
    // small requests and limits of their own, so it admits them.
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "limits"},
        "spec": {"hard": {"limits.cpu": "20", "limits.memory": "64Gi",
            "requests.cpu": "20", "requests.memory": "64Gi"}}
    }))
    .unwrap();
    let quotas = real.api::<ResourceQuota>(&ns);
    quotas
        .create(&Default::default(), &quota)
        .await
        .expect("create the quota");
    for _ in 0..100 {
        let q = quotas.get("limits").await.unwrap();
        if q.status.and_then(|s| s.hard).is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The helper pods are accepted (a refusal would be the error), then given up on.
    let dest = real.write("placeholder", "");
    let into = dest.parent().unwrap().join("model");
    let cp = real
        .run(
            Cred::Admin,
            &[
                "-n",
                &ns,
                "cp",
                "-t",
                tag,
                "model",
                into.to_str().unwrap(),
                "--timeout",
                "2s",
            ],
        )
        .await;
    cp.failure(1)
        .stderr_has("did not start within 2s: still Pending");
    assert!(!into.exists());
    let board = real
        .run(
            Cred::Admin,
            &["-n", &ns, "tensorboard", "-t", tag, "--timeout", "2s"],
        )
        .await;
    board
        .failure(1)
        .stdout_has(&format!("started pod/{tag}-tensorboard"))
        .stderr_has("did not start within 2s");
    let left: Vec<Pod> = real.list(&ns, "tf-spawner/helper").await;
    assert!(left.is_empty(), "helper pods removed: {left:#?}");
}

#[tokio::test]
async fn a_missing_claim_is_refused_before_anything_is_created() {
    let Some(real) = Real::new("after-missing").await else {
        return;
    };
    let ns = real.namespace("after-missing").await;
    let script = real.script();
    let out = real
        .run(
            Cred::Admin,
            &[
                "-n",
                &ns,
                "-t",
                "nov",
                "--volume",
                "nope",
                script.to_str().unwrap(),
            ],
        )
        .await;
    out.failure(1).stderr_has(&format!(
        "error: --volume: persistentvolumeclaim 'nope' does not exist in namespace '{ns}'"
    ));
    assert!(real.run_objects(&ns, "nov").await.is_empty());
}
