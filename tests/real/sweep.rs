//! `tf-spawner sweep` on a real API server (docs/experiments.md): under a ResourceQuota
//! that holds two runs at a time, the third run starts only once the quota controller
//! has counted a finished run's pods out. Pods stay Pending here (no nodes): the test
//! binds them and patches their status as a kubelet would.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota};
use kube::api::PostParams;
use serde_json::json;

use crate::support::*;

/// Waits (60 s at most) until run `tag` has `n` pods.
async fn await_pods(real: &Real, ns: &str, tag: &str, n: usize) -> Vec<Pod> {
    let start = Instant::now();
    loop {
        let pods = real.pods(ns, tag).await;
        if pods.len() >= n {
            return pods;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{tag}: no {n} pods"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Both workers of run `tag` bound and exited 0.
async fn succeed(real: &Real, ns: &str, tag: &str) {
    for task in ["worker-1", "worker-0"] {
        let name = format!("{tag}-{task}");
        real.bind(ns, &name, "node-a").await;
        real.set_terminated(ns, &name, "tensorflow", 0).await;
    }
}

#[tokio::test]
async fn a_sweep_under_a_quota_for_two_runs_runs_two_at_a_time() {
    let Some(real) = Real::new("a_sweep_under_a_quota_for_two_runs_runs_two_at_a_time").await
    else {
        return;
    };
    let ns = real.namespace("sweep").await;
    let quota: ResourceQuota = serde_json::from_value(
        json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "4" } } }),
    )
    .unwrap();
    real.api::<ResourceQuota>(&ns)
        .create(&PostParams::default(), &quota)
        .await
        .expect("create quota");
    // The quota's controller counts before any pod is admitted.
    let start = Instant::now();
    while real
        .api::<ResourceQuota>(&ns)
        .get("q")
        .await
        .unwrap()
        .status
        .and_then(|s| s.used)
        .is_none_or(|u| u.is_empty())
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "quota never counted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let script = real.script();
    let args = [
        "-n",
        &ns,
        "sweep",
        "-t",
        "sq",
        "-w",
        "2",
        "--param",
        "lr=0.1,0.2,0.3",
        script.to_str().unwrap(),
        "--",
        "--lr",
        "{lr}",
    ];
    let sweep = real.run(Cred::Admin, &args);
    let driver = async {
        await_pods(&real, &ns, "sq-2", 2).await;
        await_pods(&real, &ns, "sq-1", 2).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            real.pods(&ns, "sq-3").await.is_empty(),
            "a third run does not fit"
        );
        succeed(&real, &ns, "sq-1").await;
        await_pods(&real, &ns, "sq-3", 2).await;
        succeed(&real, &ns, "sq-2").await;
        succeed(&real, &ns, "sq-3").await;
    };
    let (out, ()) = tokio::join!(sweep, driver);
    out.success()
        .stdout_has(
            "experiment sq: 3 runs, 2 at a time: the quota 'q' leaves 4 pods, a run needs 2\n",
        )
        .stdout_has("experiment sq: all 3 runs succeeded");
    for (k, lr) in [(1, "0.1"), (2, "0.2"), (3, "0.3")] {
        let tag = format!("sq-{k}");
        let cms: Vec<ConfigMap> = real.config_maps(&ns, &tag).await;
        let cm = &cms[0];
        assert_eq!(label(&cm.metadata, "tf-spawner/experiment"), Some("sq"));
        let params = cm.metadata.annotations.as_ref().unwrap()["tf-spawner/params"].clone();
        assert_eq!(params, format!("{{\"lr\":\"{lr}\"}}"));
        for pod in real.pods(&ns, &tag).await {
            assert_eq!(label(&pod.metadata, "tf-spawner/experiment"), Some("sq"));
            let c = tf_container(&pod);
            assert_eq!(c.args.clone().unwrap_or_default(), ["--lr", lr]);
            assert_eq!(env_value(c, "TF_SPAWNER_PARAM_LR"), lr);
        }
    }
    let record = real
        .api::<ConfigMap>(&ns)
        .get("sq-experiment")
        .await
        .expect("the experiment's record");
    assert!(record.data.unwrap()["experiment.json"].contains("\"sq-3\""));
}
