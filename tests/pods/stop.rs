//! After a verdict, the unfinished tasks are stopped and kept (`cluster/stop.rs`): on a
//! real kubelet, the lowered `activeDeadlineSeconds` ends the pod with SIGTERM within its
//! grace period, the pod is `Failed`/`DeadlineExceeded` and keeps its log, and a terminal
//! pod no longer counts against the namespace's ResourceQuota. Also what a user sees
//! while it runs: a plain `print()` reaches `logs -f` at once (`PYTHONUNBUFFERED`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{Api, DeleteParams, PostParams};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Cluster, RUN_TIMEOUT, phase, tag};

/// Worker 1 fails after 10 s; worker 0 waits for its peer for ever, as a worker hung in
/// its all-reduce does, and leaves on SIGTERM. Plain prints, no flush.
const PEER: &str = "\
import os, signal, sys, time
i = os.environ['WORKER_NUMBER']
def leave(signum, frame):
    print('worker-%s: SIGTERM, leaving' % i)
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
print('worker-%s: waiting for my peer' % i)
if i == '1':
    time.sleep(10)
    sys.exit(3)
time.sleep(600)
";

/// The quota's `used` value of `requests.cpu`, once the quota controller has set it.
async fn used_cpu(c: &Cluster) -> Option<String> {
    let quota = Api::<ResourceQuota>::namespaced(c.client.clone(), &c.namespace)
        .get("cpu")
        .await
        .ok()?;
    let used = quota.status?.used?;
    used.get("requests.cpu").map(|q| q.0.clone())
}

#[tokio::test]
async fn a_failing_workers_peer_is_stopped_keeps_its_log_and_frees_its_cpu() {
    let Some(c) = Cluster::new("stoppeer").await else {
        return;
    };
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cpu"},
        "spec": {"hard": {"requests.cpu": "1"}}
    }))
    .unwrap();
    Api::<ResourceQuota>::namespaced(c.client.clone(), &c.namespace)
        .create(&PostParams::default(), &quota)
        .await
        .expect("create the quota");
    c.eventually(
        "the quota to be counted",
        Duration::from_secs(30),
        || async { used_cpu(&c).await.filter(|u| u == "0") },
    )
    .await;
    let t = tag("peer");
    let script = c.write("peer.py", PEER);
    c.spawn(&t, &script, &["-w", "2"]).await;

    // A plain print() reaches `logs -f` while the pod runs.
    let mut follow = c.start(&["logs", &t, "-f", "--task", "worker-0"]);
    let mut lines = BufReader::new(follow.stdout.take().expect("stdout")).lines();
    let seen = tokio::time::timeout(Duration::from_secs(90), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("worker-0: waiting for my peer") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(seen, Ok(true), "worker 0's print() was not followed");
    let _ = follow.kill().await;
    let worker_0 = format!("{t}-worker-0");
    let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let running = pods.get(&worker_0).await.expect("worker 0");
    assert_eq!(phase(&running), "Running", "{running:?}");
    assert_eq!(used_cpu(&c).await.as_deref(), Some("20m"));

    let out = c.run(&["wait", &t, "--timeout", RUN_TIMEOUT]).await;
    assert_eq!(out.code, 3, "{out:#?}");
    out.stdout_has(&format!(
        "stopped 1 pod still running after the verdict: {worker_0} (kept with its logs until -d"
    ));
    // The kubelet ends it by its deadline within its grace period (30 s), and keeps it.
    let ended = c
        .eventually(
            "worker 0 to end by its deadline",
            Duration::from_secs(90),
            || async {
                let pod = pods.get(&worker_0).await.ok()?;
                (phase(&pod) == "Failed").then_some(pod)
            },
        )
        .await;
    let status = ended.status.as_ref().expect("status");
    assert_eq!(
        status.reason.as_deref(),
        Some("DeadlineExceeded"),
        "{status:?}"
    );
    // Its SIGTERM handler ran, within the grace period.
    c.eventually(
        "worker 0's SIGTERM handler",
        Duration::from_secs(60),
        || async {
            let out = c.run(&["logs", &t, "--task", "worker-0"]).await;
            out.stdout
                .contains("worker-0: SIGTERM, leaving")
                .then_some(())
        },
    )
    .await;
    // A v1.36 kubelet writes the container's end: the handler's exit 0, not the SIGKILL
    // of a grace period run out (137). A v1.20 one leaves its state `running` once the
    // pod is Failed (seen with kubectl on both one-node clusters).
    let pod = pods.get(&worker_0).await.expect("worker 0");
    if let Some(code) = crate::support::exit_code(&pod) {
        assert_eq!(code, 0, "{:?}", pod.status);
    }
    // No longer counted against the quota.
    c.eventually(
        "the quota to be released",
        Duration::from_secs(60),
        || async { used_cpu(&c).await.filter(|u| u == "0") },
    )
    .await;
    // Its lines, the SIGTERM handler's too, stay readable; every command says the same.
    c.run(&["logs", &t])
        .await
        .success()
        .stdout_has("worker-0 | worker-0: waiting for my peer")
        .stdout_has("worker-0 | worker-0: SIGTERM, leaving")
        .stdout_has("worker-1 | worker-1: waiting for my peer");
    c.run(&["status", &t])
        .await
        .success()
        .stdout_has("worker-0: was stopped by tf-spawner after the verdict (its log is kept)")
        .stdout_has(&format!(
            "verdict: Failed — pod {t}-worker-1 (worker-1) failed: exit code 3"
        ));
    c.run(&["list"])
        .await
        .success()
        .stdout_has("worker 0/2 running, 1 failed, 1 stopped by tf-spawner");

    // A run whose pods are all gone is still listed: its ConfigMap is its record.
    for pod in [&worker_0, &format!("{t}-worker-1")] {
        let _ = pods.delete(pod, &DeleteParams::default()).await;
    }
    c.eventually("the pods to be gone", Duration::from_secs(60), || async {
        c.pods(&t).await.is_empty().then_some(())
    })
    .await;
    c.run(&["list"]).await.success().stdout_has(&format!(
        "no pods left (its ConfigMap and services remain: tf-spawner -d -t {t} removes them)"
    ));
}
