//! The control plane's bad moments on a real node: the API server killed and started
//! again under `wait` and `logs -f`, and a pod deleted in the middle of a run.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};

use crate::reading::Reading;
use crate::support::{Cluster, RUN_TIMEOUT, tag};

/// The command that stops and starts the one-node cluster's kube-apiserver
/// (`tools/one-node/apiserver.sh`, with `TF_SPAWNER_ONE_NODE_VERSION` set to the
/// cluster's version). Set by `.ci/run` for a run of `outage::` tests alone: killing the
/// server would disturb the suite's other tests.
const CONTROL: &str = "TF_SPAWNER_PODS_APISERVER_CONTROL";

/// Prints `line i` for i in 1..=60, one every half second.
const COUNT: &str = "\
import time
for i in range(1, 61):
    print('line %d' % i, flush=True)
    time.sleep(0.5)
";

fn control(action: &str) {
    let command = std::env::var(CONTROL).expect("checked");
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{command} {action}"))
        .status()
        .expect("run the API server control");
    assert!(status.success(), "{command} {action}: {status}");
}

#[tokio::test]
async fn wait_and_logs_follow_go_on_through_an_api_server_restart() {
    let Some(c) = Cluster::new("apirestart").await else {
        return;
    };
    if std::env::var(CONTROL).map_or(true, |v| v.is_empty()) {
        eprintln!("SKIPPED apirestart: {CONTROL} not set (see .ci/run)");
        return;
    }
    let t = tag("restart");
    let script = c.write("count.py", COUNT);
    c.spawn(&t, &script, &["-w", "2"]).await;
    c.run(&["wait", "-t", &t, "--for", "start", "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let wait = Reading::new(c.start(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]));
    let follow = Reading::new(c.start(&["logs", "-f", "-t", &t]));
    // Both follow the run (wait has counted its tasks, logs -f printed a line).
    wait.stdout_has("worker ", Duration::from_secs(60)).await;
    follow.stdout_has(" | line ", Duration::from_secs(60)).await;
    control("stop");
    // Down until wait has seen it gone.
    wait.stderr_has(
        "note: lost the Kubernetes API server",
        Duration::from_secs(120),
    )
    .await;
    control("start");

    let finish = |child: Reading| async move {
        let out = child.finish(Duration::from_secs(180)).await;
        (Some(out.code), out.stdout, out.stderr)
    };
    let (code, stdout, stderr) = finish(wait).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("run {t}: Succeeded")), "{stdout}");
    assert!(
        stderr.contains("note: lost the Kubernetes API server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("note: the Kubernetes API server answers again"),
        "{stderr}"
    );

    // Every line of every pod exactly once, in order.
    let (code, stdout, stderr) = finish(follow).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let mut lines: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for l in stdout.lines() {
        if let Some((task, rest)) = l.split_once(" | ")
            && let Some(n) = rest.strip_prefix("line ")
        {
            lines
                .entry(task.trim().to_string())
                .or_default()
                .push(n.parse().expect("a line number"));
        }
    }
    let all: Vec<u32> = (1..=60).collect();
    for task in ["worker-0", "worker-1"] {
        assert_eq!(lines.get(task), Some(&all), "{task}:\n{stdout}\n{stderr}");
    }
}

/// A pod deleted while it runs (what preemption and eviction do) is named as deleted, at
/// once, not as a training that exited 137.
#[tokio::test]
async fn a_pod_deleted_mid_run_is_named_as_deleted() {
    let Some(c) = Cluster::new("podgone").await else {
        return;
    };
    let t = tag("gone");
    let script = c.write("count.py", COUNT);
    c.spawn(&t, &script, &["-w", "2"]).await;
    c.run(&["wait", "-t", &t, "--for", "start", "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let wait = Reading::new(c.start(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]));
    // Once it follows the run (it has counted the tasks).
    wait.stdout_has("worker ", Duration::from_secs(60)).await;
    Api::<Pod>::namespaced(c.client.clone(), &c.namespace)
        .delete(&format!("{t}-worker-1"), &DeleteParams::default())
        .await
        .expect("delete worker-1");
    let out = wait.finish(Duration::from_secs(120)).await;
    let stderr = out.stderr;
    assert_eq!(out.code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "pod {t}-worker-1 (worker-1) was deleted while it ran"
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("unable to retrieve container logs"),
        "{stderr}"
    );
}
