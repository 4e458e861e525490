//! GPUs on the one-node cluster (docs/resources.md): its Ready node advertises two
//! `nvidia.com/gpu` (a patch of `status.capacity` and `status.allocatable`, as Kubernetes'
//! docs advertise an extended resource; the scheduler and the kubelet then count them,
//! and no device is behind them), put back as it was after each test. `--gpus 1` workers
//! run with the limit set and a memory-backed `/dev/shm` of the asked size; a pod asking
//! for more GPUs than any node has is reported, naming `nvidia.com/gpu`.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::support::{Cluster, RUN_TIMEOUT, tag};

const GPU: &str = "nvidia.com/gpu";

/// Runs `body` while the cluster's Ready nodes advertise `count` GPUs; puts them back
/// (the resource removed) whatever `body` does.
async fn with_gpus<F: std::future::Future<Output = ()>>(c: &Cluster, count: u32, body: F) {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let ready: Vec<String> = nodes
        .list(&ListParams::default())
        .await
        .expect("list nodes")
        .items
        .into_iter()
        .filter(|n| {
            let conditions = n.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(!ready.is_empty(), "no Ready node");
    let set = |value: serde_json::Value| json!({ "status": { "capacity": { GPU: value.clone() }, "allocatable": { GPU: value } } });
    for name in &ready {
        nodes
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(set(json!(count.to_string()))),
            )
            .await
            .expect("advertise GPUs");
    }
    let outcome = AssertUnwindSafe(body).catch_unwind().await;
    for name in &ready {
        nodes
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(set(serde_json::Value::Null)),
            )
            .await
            .expect("put the node back");
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The size of `/dev/shm` as the script sees it.
const SHM_SCRIPT: &str = "import os\nst = os.statvfs('/dev/shm')\nprint(f'dev-shm-bytes {st.f_blocks * st.f_frsize}', flush=True)\n";

#[tokio::test]
async fn gpu_workers_run_with_their_limit_and_a_dev_shm_of_the_asked_size() {
    let Some(c) = Cluster::new("gpus").await else {
        return;
    };
    with_gpus(&c, 2, async {
        let t = tag("gpu");
        let script = c.write("shm.py", SHM_SCRIPT);
        c.spawn(
            &t,
            &script,
            &[
                "-w",
                "2",
                "--gpus",
                "1",
                "--memory",
                "64Mi",
                "--shm-size",
                "96Mi",
            ],
        )
        .await;
        for pod in c.pods(&t).await {
            let tf = &pod.spec.as_ref().unwrap().containers[0];
            let limits = tf
                .resources
                .as_ref()
                .and_then(|r| r.limits.clone())
                .unwrap_or_default();
            assert_eq!(limits.get(GPU).map(|q| q.0.as_str()), Some("1"), "{pod:?}");
            assert_eq!(
                limits.get("memory").map(|q| q.0.as_str()),
                Some("160Mi"),
                "64Mi and /dev/shm's 96Mi"
            );
        }
        let out = c
            .run(&["wait", "-t", &t, "--all-workers", "--timeout", RUN_TIMEOUT])
            .await;
        out.success();
        let logs = c.run(&["logs", "-t", &t]).await;
        let sizes: Vec<u64> = logs
            .stdout
            .lines()
            .filter_map(|l| l.split("dev-shm-bytes ").nth(1))
            .map(|n| n.trim().parse().expect("a size"))
            .collect();
        assert_eq!(sizes.len(), 2, "{logs:#?}");
        let minor = c.client.apiserver_version().await.expect("version").minor;
        let minor: u32 = minor.trim_end_matches('+').parse().unwrap_or(0);
        for size in sizes {
            if minor >= 22 {
                // SizeMemoryBackedVolumes: the tmpfs is the volume's sizeLimit.
                assert_eq!(size, 96 * 1024 * 1024, "{logs:#?}");
            } else {
                // 1.20: a tmpfs of the node's default size, not the container's 64Mi.
                assert!(size > 64 * 1024 * 1024, "{size} {logs:#?}");
            }
        }
        c.run(&["-d", "-t", &t, "--wait"]).await.success();
    })
    .await;
}

#[tokio::test]
async fn a_pod_asking_more_gpus_than_the_node_has_is_reported_naming_the_resource() {
    let Some(c) = Cluster::new("gpus-over").await else {
        return;
    };
    with_gpus(&c, 2, async {
        let t = tag("gpu3");
        let script = c.write("shm.py", SHM_SCRIPT);
        let out = c.spawn(&t, &script, &["-w", "1", "--gpus", "3"]).await;
        assert!(
            out.stderr.contains("warning: no node can hold the worker's pod (it asks for cpu 10m, memory 32Mi, nvidia.com/gpu 3); the largest, ")
                && out.stderr.contains("nvidia.com/gpu 2 allocatable"),
            "{out:#?}"
        );
        c.run(&["-d", "-t", &t, "--wait"]).await.success();
    })
    .await;
}
