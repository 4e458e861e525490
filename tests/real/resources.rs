//! ResourceQuota on a real API server (docs/resources.md): a run its quota cannot hold is
//! refused before anything is created, in one line naming the quota, what the run needs
//! and what is left; the quota admission's own refusals are what the test server models.

use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::PostParams;
use serde_json::{Value, json};

use crate::support::*;

const GPU_TEMPLATE: &str = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    resources:\n      limits: {nvidia.com/gpu: 1, cpu: 500m, memory: 512Mi}\n";

/// Creates quota `name` in `ns` and waits until its controller has counted (until then
/// the API server refuses every pod: "status unknown for quota").
async fn quota(real: &Real, ns: &str, name: &str, hard: Value) -> ResourceQuota {
    let object: ResourceQuota =
        serde_json::from_value(json!({ "metadata": { "name": name }, "spec": { "hard": hard } }))
            .unwrap();
    let api = real.api::<ResourceQuota>(ns);
    api.create(&PostParams::default(), &object)
        .await
        .expect("create quota");
    for _ in 0..100 {
        let q = api.get(name).await.expect("get quota");
        let status = q.status.clone().unwrap_or_default();
        let used = status.used.unwrap_or_default();
        if status
            .hard
            .unwrap_or_default()
            .keys()
            .all(|k| used.contains_key(k))
            && !used.is_empty()
        {
            return q;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("quota {name} in {ns}: its controller never counted");
}

async fn used(real: &Real, ns: &str, name: &str, resource: &str) -> String {
    let q = real
        .api::<ResourceQuota>(ns)
        .get(name)
        .await
        .expect("get quota");
    q.status
        .and_then(|s| s.used)
        .and_then(|u| u.get(resource).cloned())
        .map(|q| q.0)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_pod_count_quota_refuses_the_run_before_any_create_and_what_fits_runs() {
    let Some(real) =
        Real::new("a_pod_count_quota_refuses_the_run_before_any_create_and_what_fits_runs").await
    else {
        return;
    };
    let ns = real.namespace("quota-pods").await;
    quota(&real, &ns, "q", json!({ "pods": "2" })).await;
    let script = real.script();
    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "-t", "big", "-w", "3", script.to_str().unwrap()],
        )
        .await;
    out.failure(1).stderr_has(&format!(
        "error: resource quota 'q' in namespace '{ns}' leaves too little for this run: pods: the run needs 3, 2 left (2 hard, 0 used); nothing was created"
    ));
    assert!(real.run_objects(&ns, "big").await.is_empty());
    assert_eq!(
        used(&real, &ns, "q", "pods").await,
        "0",
        "no pod was ever admitted"
    );
    real.run(
        Cred::Admin,
        &["-n", &ns, "-t", "fits", "-w", "2", script.to_str().unwrap()],
    )
    .await
    .success();
    assert_eq!(real.pods(&ns, "fits").await.len(), 2);
}

#[tokio::test]
async fn a_gpu_quota_refuses_the_run_before_any_create() {
    let Some(real) = Real::new("a_gpu_quota_refuses_the_run_before_any_create").await else {
        return;
    };
    let ns = real.namespace("quota-gpu").await;
    quota(
        &real,
        &ns,
        "gpus",
        json!({ "requests.nvidia.com/gpu": "2" }),
    )
    .await;
    let template = real.write("gpu.yaml", GPU_TEMPLATE);
    let script = real.script();
    let args = [
        "-n",
        &ns,
        "-t",
        "g",
        "-w",
        "3",
        "--pod-file",
        template.to_str().unwrap(),
        script.to_str().unwrap(),
    ];
    real.run(Cred::Admin, &args).await.failure(1).stderr_has(&format!(
        "error: resource quota 'gpus' in namespace '{ns}' leaves too little for this run: requests.nvidia.com/gpu: the run needs 3, 2 left (2 hard, 0 used); nothing was created"
    ));
    assert!(real.run_objects(&ns, "g").await.is_empty());
    assert_eq!(
        used(&real, &ns, "gpus", "requests.nvidia.com/gpu").await,
        "0"
    );
}

/// A quota on limits: the default template sets none, which is refused before any create,
/// naming the flags that set them; `--cpu` and `--memory` meet it, the parameter servers'
/// own too, and the pods are counted.
#[tokio::test]
async fn a_limits_quota_names_the_flags_and_the_flags_meet_it() {
    let Some(real) = Real::new("a_limits_quota_names_the_flags_and_the_flags_meet_it").await else {
        return;
    };
    let ns = real.namespace("quota-limits").await;
    quota(
        &real,
        &ns,
        "lim",
        json!({ "limits.cpu": "4", "limits.memory": "4Gi" }),
    )
    .await;
    let script = real.script();
    real.run(Cred::Admin, &["-n", &ns, "-t", "bare", "-w", "2", script.to_str().unwrap()])
        .await
        .failure(1)
        .stderr_has(&format!("error: resource quota 'lim' in namespace '{ns}' requires limits.cpu and limits.memory on every container, and the worker pods' container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created"));
    assert!(real.run_objects(&ns, "bare").await.is_empty());
    let args = [
        "-n",
        &ns,
        "-t",
        "set",
        "-w",
        "2",
        "--ps",
        "1",
        "--strategy",
        "parameter-server",
        "--cpu",
        "500m",
        "--memory",
        "512Mi",
        "--ps-cpu",
        "250m",
        script.to_str().unwrap(),
    ];
    real.run(Cred::Admin, &args).await.success();
    // A chief and 2 workers of 500m, a parameter server of 250m.
    assert_eq!(used(&real, &ns, "lim", "limits.cpu").await, "1750m");
    assert_eq!(used(&real, &ns, "lim", "limits.memory").await, "2Gi");
}

/// `--gpus` against a GPU quota: refused before any create, and nothing left.
#[tokio::test]
async fn a_gpu_quota_refuses_a_gpus_run_before_any_create() {
    let Some(real) = Real::new("a_gpu_quota_refuses_a_gpus_run_before_any_create").await else {
        return;
    };
    let ns = real.namespace("quota-gpus").await;
    quota(
        &real,
        &ns,
        "gpus",
        json!({ "requests.nvidia.com/gpu": "4" }),
    )
    .await;
    let script = real.script();
    let args = [
        "-n",
        &ns,
        "-t",
        "g",
        "-w",
        "4",
        "--chief",
        "--gpus",
        "1",
        script.to_str().unwrap(),
    ];
    real.run(Cred::Admin, &args).await.failure(1).stderr_has(&format!(
        "error: resource quota 'gpus' in namespace '{ns}' leaves too little for this run: requests.nvidia.com/gpu: the run needs 5, 4 left (4 hard, 0 used); nothing was created"
    ));
    assert!(real.run_objects(&ns, "g").await.is_empty());
    assert_eq!(
        used(&real, &ns, "gpus", "requests.nvidia.com/gpu").await,
        "0"
    );
}
