//! Runs that fail, with the reasons the kubelet and the scheduler really write: a task's
//! exit code, an image that cannot be pulled, a pod no node can hold.

use std::time::Duration;

use crate::support::{Cluster, RUN_TIMEOUT, exit_code, tag};

const EXIT_3: &str = "\
import os, sys, time
if os.environ.get('WORKER_NUMBER') == '1':
    for i in range(30):
        print('worker one, line %d' % i, flush=True)
    print('giving up with exit code 3', flush=True)
    sys.exit(3)
time.sleep(600)
";

#[tokio::test]
async fn a_worker_exiting_3_fails_wait_with_its_code_and_last_lines() {
    let Some(c) = Cluster::new("exit3").await else {
        return;
    };
    let t = tag("exit");
    let script = c.write("exit3.py", EXIT_3);
    c.spawn(&t, &script, &["-w", "2"]).await;

    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    assert_eq!(out.code, 3, "{out:#?}");
    let error = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {out:#?}"));
    assert!(error.contains(&format!("{t}-worker-1")), "{error}");
    assert!(
        error.contains("exit code 3") || error.contains("exited 3"),
        "{error}"
    );
    // The failed pod's last lines, from the container's real log, before the error.
    assert!(
        out.stderr.contains("giving up with exit code 3"),
        "{out:#?}"
    );
    assert!(out.stderr.contains("worker one, line 29"), "{out:#?}");
    assert!(
        !out.stderr.contains("worker one, line 0\n"),
        "only the last lines: {out:#?}"
    );

    let pods = c.pods(&t).await;
    let one = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(&format!("{t}-worker-1")))
        .expect("worker 1");
    assert_eq!(exit_code(one), Some(3));
}

#[tokio::test]
async fn an_image_that_does_not_exist_fails_fast_with_the_pull_error() {
    let Some(c) = Cluster::new("noimage").await else {
        return;
    };
    let t = tag("img");
    let script = c.write("train.py", "print('never runs')\n");
    c.spawn(
        &t,
        &script,
        // No grace for the pull error (`--pull-grace`, built in 5m): fails at once.
        &[
            "-w",
            "1",
            "-i",
            "tf-spawner.local/no-such-image:1",
            "--pull-grace",
            "0s",
        ],
    )
    .await;

    let started = std::time::Instant::now();
    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    assert_eq!(out.code, 6, "{out:#?}");
    let error = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(
        error.contains("ErrImagePull") || error.contains("ImagePullBackOff"),
        "{out:#?}"
    );
    assert!(error.contains(&format!("{t}-worker-0")), "{error}");
    // The registry's error, which ImagePullBackOff's own message ("Back-off pulling
    // image") does not carry before kubelet 1.26, is kept; once (a 1.26+ back-off
    // message carries it itself).
    assert_eq!(error.matches("failed to pull").count(), 1, "{error}");
    // The pods never ran: stopped as such, no log promised.
    out.stdout_has(&format!(
        "stopped 1 pod that never started: {t}-worker-0 (no log;"
    ));
    // The pod never ran: it counts as pending, not as finished.
    let last = out
        .stdout
        .lines()
        .rfind(|l| l.starts_with("worker"))
        .unwrap_or_default();
    assert!(
        last.contains("0/1 running, 1 pending") && !last.contains(", 1 failed"),
        "{out:#?}"
    );
    // Fast: the pull fails at once here (no registry); no waiting for the timeout.
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );

    // One account on both versions, whether or not the kubelet has ended the pod yet
    // (v1.36 ends it within a second, v1.20 may take its sync round): why it never
    // started, from the run's record, the kubelet's events while they last, wait's verdict.
    let status = c.run(&["status", "-t", &t]).await;
    status.success();
    let never = status
        .stdout
        .lines()
        .find(|l| l.starts_with("worker-0: never started ("))
        .unwrap_or_else(|| panic!("{status:#?}"));
    assert!(
        (never.contains("ErrImagePull") || never.contains("ImagePullBackOff"))
            && never.contains("failed to pull")
            && never.ends_with("; stopped by tf-spawner after the verdict (no log)"),
        "{status:#?}"
    );
    assert!(!status.stdout.contains("its log is kept"), "{status:#?}");
    assert!(
        !status.stdout.contains("ContainerStatusUnknown"),
        "{status:#?}"
    );
    let events = status
        .stdout
        .split("events of the pods that have not started (newest first):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{status:#?}"));
    assert!(
        events
            .lines()
            .any(|l| l.starts_with("worker-0 ") && l.contains("Failed")),
        "{status:#?}"
    );
    let verdict = error.strip_prefix("error: run '").unwrap_or_default();
    let verdict = verdict.split_once("' failed: ").map(|(_, why)| why);
    assert!(
        status
            .stdout
            .contains(&format!("verdict: Failed — {}\n", verdict.unwrap_or("?"))),
        "{status:#?}"
    );
}

#[tokio::test]
async fn a_pod_asking_for_more_cpu_than_the_node_has_is_unschedulable_until_the_timeout() {
    let Some(c) = Cluster::new("unsched").await else {
        return;
    };
    let t = tag("big");
    let template = std::fs::read_to_string(c.template()).expect("template");
    let big = c.write("pod-big.yaml", &template.replace("cpu: 10m", "cpu: \"64\""));
    assert!(
        std::fs::read_to_string(&big)
            .unwrap()
            .contains("cpu: \"64\"")
    );
    let script = c.write("train.py", "print('never runs')\n");
    let out = c
        .run(&[
            "-t",
            &t,
            "-w",
            "1",
            "--pod-file",
            big.to_str().unwrap(),
            script.to_str().unwrap(),
        ])
        .await;
    out.success();

    let out = c.run(&["wait", "-t", &t, "--timeout", "15s"]).await;
    assert_eq!(out.code, 4, "{out:#?}");
    // The real scheduler's words, in wait's progress.
    assert!(
        out.stdout.contains("Unschedulable") && out.stdout.contains("Insufficient cpu"),
        "{out:#?}"
    );
    let status = c.run(&["status", "-t", &t]).await;
    status.success();
    assert!(
        status.stdout.contains("Unschedulable") && status.stdout.contains("Insufficient cpu"),
        "{status:#?}"
    );
    // The scheduler's event (events.k8s.io on 1.19+, read through core/v1), as kubectl
    // describe lists it.
    let json = c.run(&["status", "-t", &t, "-o", "json"]).await;
    json.success();
    let json: serde_json::Value = serde_json::from_str(&json.stdout).expect("status JSON");
    let events = json["pods"][0]["events"].as_array().expect("events");
    assert!(
        events.iter().any(|e| e["reason"] == "FailedScheduling"
            && e["type"] == "Warning"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .contains("Insufficient cpu")),
        "{json:#}"
    );
    // No node took the pod, so there is no log: a note says so (the server itself
    // answers such a log request with an empty 204).
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success();
    assert!(logs.stdout.is_empty(), "{logs:#?}");
    assert!(
        logs.stderr.contains(&format!("{t}-worker-0")) && logs.stderr.contains("not started"),
        "{logs:#?}"
    );
}

/// `--start-timeout` on a real scheduler: the chief starts, worker 0's nodeSelector
/// matches no node; `spawn --wait --start-timeout` fails with exit 5 naming worker 0 and
/// the scheduler's own reason, and stops the chief that did start.
#[tokio::test]
async fn a_pod_no_node_matches_trips_the_start_timeout_with_the_schedulers_reason() {
    let Some(c) = Cluster::new("starttimeout").await else {
        return;
    };
    let t = tag("start");
    let template = std::fs::read_to_string(c.template()).expect("template");
    let nowhere = c.write(
        "pod-nowhere.yaml",
        &template.replace(
            "  restartPolicy: Never\n",
            "  restartPolicy: Never\n  nodeSelector:\n    tf-spawner-test/pool: nowhere\n",
        ),
    );
    assert!(
        std::fs::read_to_string(&nowhere)
            .unwrap()
            .contains("tf-spawner-test/pool: nowhere")
    );
    let template = c.template();
    let script = c.write("train.py", "import time\ntime.sleep(600)\n");
    let out = c
        .run(&[
            "-t",
            &t,
            "--chief",
            "--chief-pod-file",
            template.to_str().unwrap(),
            "-w",
            "1",
            "--pod-file",
            nowhere.to_str().unwrap(),
            "--wait",
            "--start-timeout",
            "30s",
            "--timeout",
            RUN_TIMEOUT,
            script.to_str().unwrap(),
        ])
        .await;
    assert_eq!(out.code, 5, "{out:#?}");
    let error = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {out:#?}"));
    assert!(
        error.starts_with(&format!(
            "error: run '{t}' did not start within 30s of its creation (--start-timeout): worker-0: Unschedulable: 0/1 nodes are available"
        )),
        "{out:#?}"
    );
    // v1.36: "didn't match Pod's node affinity/selector."; v1.20: "… node affinity."
    assert!(
        error.contains("didn't match Pod's node affinity"),
        "{error}"
    );
    assert!(!error.contains("chief-0"), "the chief started: {error}");
    out.stdout_has(&format!(
        "stopped 1 pod still running after the verdict: {t}-chief-0"
    ))
    .stdout_has("deleted 1 task that never started: worker-0 (no node had taken it: no log)");
    // The chief that started is stopped by its deadline and kept (it holds its node no
    // longer); worker 0, which no node took, is deleted.
    let pods = c.pods(&t).await;
    assert!(
        pods.iter().all(|p| {
            p.spec.as_ref().and_then(|s| s.active_deadline_seconds) == Some(1)
                || p.metadata.deletion_timestamp.is_some()
        }),
        "{pods:#?}"
    );
}
