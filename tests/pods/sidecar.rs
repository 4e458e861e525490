//! A template with a sidecar, as Istio-style injection adds one: a container beside the
//! TF container that never exits. The TF container decides the verdict and is what `logs`
//! reads; after the verdict the sidecar is stopped like an unfinished task (its pod's
//! `activeDeadlineSeconds` lowered, `cluster/stop.rs`), the tasks stay succeeded, and
//! `-d --wait` removes the run.

use std::time::Duration;

use crate::support::{Cluster, RUN_TIMEOUT, phase, tag};

/// The suite template's image (the small Python image), for both containers.
fn suite_image(c: &Cluster) -> String {
    let template = std::fs::read_to_string(c.template()).expect("read the suite's template");
    template
        .lines()
        .find_map(|l| l.trim().strip_prefix("image:"))
        .expect("an image in the suite's template")
        .trim()
        .to_string()
}

#[tokio::test]
async fn a_never_ending_sidecar_is_stopped_after_the_verdict_of_the_tf_container() {
    let Some(c) = Cluster::new("sidecar").await else {
        return;
    };
    let image = suite_image(&c);
    let template = c.write(
        "sidecar.yaml",
        &format!(
            "apiVersion: v1
kind: Pod
spec:
  restartPolicy: Never
  containers:
    - name: tensorflow
      image: {image}
      imagePullPolicy: IfNotPresent
      resources: {{requests: {{cpu: 10m, memory: 32Mi}}}}
    - name: proxy
      image: {image}
      imagePullPolicy: IfNotPresent
      command: [python, -u, -c, \"import time; print('proxy up'); time.sleep(100000)\"]
      resources: {{requests: {{cpu: 10m, memory: 32Mi}}}}
"
        ),
    );
    // Worker 0, which decides, ends last: its pod is stopped for its sidecar alone.
    let script = c.write(
        "done.py",
        "import os, time\nif os.environ['WORKER_NUMBER'] == '0':\n    time.sleep(3)\nprint('training done')\n",
    );
    let t = tag("side");
    let args = [
        "-t",
        &t,
        "-w",
        "2",
        "--pod-file",
        template.to_str().unwrap(),
    ];
    c.run(&[&args[..], &[script.to_str().unwrap()]].concat())
        .await
        .success();

    let out = c.run(&["wait", &t, "--timeout", RUN_TIMEOUT]).await;
    out.success()
        .stdout_has("stopped 2 pods still running after the verdict")
        .stdout_has(&format!("{t}-worker-0"));
    // The kubelet ends each pod by its deadline: the sidecar no longer runs.
    c.eventually(
        "the sidecars to be stopped",
        Duration::from_secs(60),
        || async {
            let pods = c.pods(&t).await;
            (pods.len() == 2 && pods.iter().all(|p| phase(p) == "Failed")).then_some(())
        },
    )
    .await;
    // The task is its TF container's exit: succeeded, and its log is the TF container's.
    let status = c.run(&["status", &t]).await;
    status.success().stdout_has("verdict: Succeeded");
    let row = status
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("{t}-worker-0 ")))
        .unwrap_or_else(|| panic!("no row for worker 0: {status:#?}"));
    assert!(row.contains("Succeeded"), "{row}");
    let logs = c.run(&["logs", &t, "--task", "worker-0"]).await;
    logs.success().stdout_has("training done");
    assert!(!logs.stdout.contains("proxy up"), "{logs:#?}");

    c.run(&["-d", "-y", "--wait", "--timeout", "120s", "-t", &t])
        .await
        .success();
    assert!(c.pods(&t).await.is_empty());
}
