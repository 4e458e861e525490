//! GPUs on the one-node cluster (docs/resources.md): its Ready node advertises two
//! `nvidia.com/gpu` (a patch of `status.capacity` and `status.allocatable`, as Kubernetes'
//! docs advertise an extended resource; the scheduler and the kubelet then count them,
//! and no device is behind them), put back as it was after each test. A second node
//! (`second-node.sh`, tainted NoSchedule) is left alone. `--gpus 1` workers
//! run with the limit set and a memory-backed `/dev/shm` of the asked size; a pod asking
//! for more GPUs than any node has is reported, naming `nvidia.com/gpu`: warned of before
//! the spawn, and named by `--start-timeout` in the scheduler's words.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::support::{Cluster, RUN_TIMEOUT, tag};

const GPU: &str = "nvidia.com/gpu";

/// The label of the second node `tools/one-node/second-node.sh` may add (tainted
/// NoSchedule, owned by its own tests): never patched here.
const SECOND_NODE: &str = "tf-spawner.test/second-node";

/// The one-node cluster's own node: the Ready node that is not the second node, by name.
async fn first_node(nodes: &Api<Node>) -> Node {
    let mut first: Vec<Node> = nodes
        .list(&ListParams::default())
        .await
        .expect("list nodes")
        .items
        .into_iter()
        .filter(|n| {
            !n.metadata
                .labels
                .iter()
                .flatten()
                .any(|(k, _)| k == SECOND_NODE)
        })
        .filter(|n| {
            let conditions = n.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .collect();
    first.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    first.into_iter().next().expect("no Ready node")
}

/// Runs `body` while the cluster's first node advertises `count` GPUs; puts its GPU
/// capacity and allocatable back as they were (the resource removed if it had none)
/// whatever `body` does.
async fn with_gpus<F: std::future::Future<Output = ()>>(c: &Cluster, count: u32, body: F) {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let node = first_node(&nodes).await;
    let name = node.metadata.name.clone().unwrap_or_default();
    let status = node.status.unwrap_or_default();
    let was = |map: Option<&std::collections::BTreeMap<String, Quantity>>| {
        map.and_then(|m| m.get(GPU))
            .map_or(serde_json::Value::Null, |q| json!(q.0))
    };
    let found = json!({ "status": {
        "capacity": { GPU: was(status.capacity.as_ref()) },
        "allocatable": { GPU: was(status.allocatable.as_ref()) },
    } });
    let gpus = json!(count.to_string());
    let advertised =
        json!({ "status": { "capacity": { GPU: gpus.clone() }, "allocatable": { GPU: gpus } } });
    let patch = |value: serde_json::Value| {
        let nodes = nodes.clone();
        let name = name.clone();
        async move {
            nodes
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(value))
                .await
        }
    };
    patch(advertised).await.expect("advertise GPUs");
    let outcome = AssertUnwindSafe(body).catch_unwind().await;
    patch(found).await.expect("put the node back");
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
        // The scheduler says the same: --start-timeout names it.
        let waited = c.run(&["wait", "-t", &t, "--start-timeout", "3s"]).await;
        assert_eq!(waited.code, 5, "{waited:#?}");
        assert!(
            waited.stderr.contains("Insufficient nvidia.com/gpu"),
            "{waited:#?}"
        );
        c.run(&["-d", "-t", &t, "--wait"]).await.success();
    })
    .await;
}
