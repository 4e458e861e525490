//! A run from start to verdict on real pods: the peers resolve each other by the names in
//! `TF_CONFIG`, connect and agree (`examples/wiring_check.py`), and `wait`, `logs` and
//! `status` report what the kubelet saw.

use kube::ResourceExt;
use std::time::Duration;

use crate::support::{Cluster, RUN_TIMEOUT, exit_code, phase, repo_file, tag};

#[tokio::test]
async fn three_workers_wire_up_and_succeed() {
    let Some(c) = Cluster::new("wiring").await else {
        return;
    };
    let t = tag("wire");
    let script = repo_file("examples/wiring_check.py");
    c.spawn(&t, &script, &["-w", "3"]).await;

    let out = c
        .run(&["wait", "-t", &t, "--all-workers", "--timeout", RUN_TIMEOUT])
        .await;
    if out.code != 0 {
        // Every task's side of it: what each could not reach, and why.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let logs = c.run(&["logs", "-t", &t]).await;
        panic!("{out:#?}\nevery task's log:\n{}", logs.stdout);
    }
    out.success().stdout_has(&format!("run {t}: Succeeded"));

    // Every task found every peer through cluster DNS and agreed on one sum.
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success();
    let mut sums = Vec::new();
    for i in 0..3 {
        let prefix = format!("worker-{i} | worker-{i}: cluster of 3 tasks agrees on ");
        let line = logs
            .stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no agreement line of worker-{i}: {logs:#?}"));
        sums.push(line[prefix.len()..].to_string());
    }
    assert!(sums.iter().all(|s| s == &sums[0]), "{sums:?}");

    let status = c.run(&["status", "-t", &t]).await;
    status.success().stdout_has("verdict: Succeeded");
    for i in 0..3 {
        let row = status
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{t}-worker-{i} ")))
            .unwrap_or_else(|| panic!("no row for worker {i}: {status:#?}"));
        assert!(
            row.contains("Succeeded") && row.contains("tf-spawner-node"),
            "{row}"
        );
    }
    // What the kubelet wrote, not what a test wrote. A 1.27+ kubelet writes the terminal
    // phase once it has torn the pod down, seconds after the container ended.
    for pod in c
        .pods_in_phase(&t, "Succeeded", Duration::from_secs(60))
        .await
    {
        assert_eq!(phase(&pod), "Succeeded", "{pod:?}");
        assert_eq!(exit_code(&pod), Some(0));
    }
}

/// Chief, parameter server, evaluator and workers; the parameter server serves forever,
/// as TensorFlow's do: the verdict still comes from the chief, and `--cleanup` removes
/// the run, the still-running parameter server included.
#[tokio::test]
async fn chief_ps_and_evaluator_reach_a_verdict_and_cleanup_removes_them() {
    let Some(c) = Cluster::new("roles").await else {
        return;
    };
    let t = tag("roles");
    let script = repo_file("examples/wiring_check.py");
    let entrypoint = c.write(
        "serve-forever.sh",
        "# A parameter server never exits on its own: check the wiring, then keep serving.\n\
         # Its handler first: the stop may come while the check still runs.\n\
         if [[ \"$TF_CONFIG\" == *'\"type\":\"ps\"'* ]]; then trap 'exit 0' TERM; fi\n\
         python /script/training-script.py\n\
         code=$?\n\
         if [[ \"$TF_CONFIG\" == *'\"type\":\"ps\"'* ]]; then\n\
         \x20 echo 'ps: serving until stopped'\n\
         \x20 sleep infinity &\n\
         \x20 wait\n\
         fi\n\
         exit $code\n",
    );
    c.spawn(
        &t,
        &script,
        &[
            "-w",
            "2",
            "--chief",
            "--ps",
            "1",
            "--evaluator",
            "-c",
            entrypoint.to_str().unwrap(),
        ],
    )
    .await;

    let saved = c.dir.path().join("logs");
    let out = c
        .run(&[
            "wait",
            "-t",
            &t,
            "--timeout",
            RUN_TIMEOUT,
            "--save-logs",
            saved.to_str().unwrap(),
            "--cleanup",
        ])
        .await;
    out.success().stdout_has(&format!("run {t}: Succeeded"));

    // Each task's whole log, saved before the cleanup: the four cluster tasks and the
    // evaluator (outside the cluster, it connects to all four) agree.
    let log = |pod: &str| {
        std::fs::read_to_string(saved.join(format!("{t}-{pod}.log")))
            .unwrap_or_else(|e| panic!("saved log of {pod}: {e}; wait said {out:#?}"))
    };
    for task in ["chief-0", "ps-0", "worker-0", "worker-1", "evaluator-0"] {
        let text = log(task);
        assert!(
            text.contains(&format!("{task}: cluster of 4 tasks agrees on ")),
            "{task}: {text}"
        );
    }
    // (Not its "serving until stopped" line: the chief may reach the verdict, and the stop
    // the parameter server, while its wiring check is still exiting, before the echo; seen
    // once on a v1.20 node under load. Its agreement line above is its log kept: its
    // handler, installed before the check, lets the check end, and `--save-logs` waits
    // for the stopped pod's log to end.)

    // The run is gone from the API: the kubelet has stopped every container, the
    // parameter server's included (a pod on a node is only removed once it has).
    c.eventually(
        "the run's pods to be gone",
        Duration::from_secs(90),
        || async { c.pods(&t).await.is_empty().then_some(()) },
    )
    .await;
}

/// Without `--cleanup`, the verdict still ends the run for the cluster: the parameter
/// server, which serves until stopped, is stopped once the chief has succeeded (TFJob's
/// `cleanPodPolicy: Running`) by its lowered deadline, and kept with its log, as the
/// finished pods are. The kubelet runs the parameter server's SIGTERM handler.
///
/// The stop may come while the parameter server's wiring check still lingers (the chief
/// can only agree once the ps has answered it: the ps has started, nothing more). So
/// the handler is installed first, before the check (a SIGTERM before it ended bash at
/// once: `logs` had only the agreement line, seen on v1.20 under load); bash runs it
/// once the check ends, within the grace period. And a v1.20 kubelet says the pod
/// `Failed` before its container has ended: the handler's line is awaited in the log.
#[tokio::test]
async fn the_verdict_stops_the_parameter_server_and_keeps_the_finished_pods() {
    let Some(c) = Cluster::new("stopps").await else {
        return;
    };
    let t = tag("stopps");
    let script = repo_file("examples/wiring_check.py");
    let entrypoint = c.write(
        "serve-forever.sh",
        "if [[ \"$TF_CONFIG\" == *'\"type\":\"ps\"'* ]]; then\n\
         \x20 trap 'echo ps: stopped; exit 0' TERM\n\
         fi\n\
         python /script/training-script.py || exit $?\n\
         if [[ \"$TF_CONFIG\" == *'\"type\":\"ps\"'* ]]; then\n\
         \x20 echo 'ps: serving until stopped'\n\
         \x20 sleep infinity &\n\
         \x20 wait\n\
         fi\n",
    );
    c.spawn(
        &t,
        &script,
        &[
            "-w",
            "1",
            "--chief",
            "--ps",
            "1",
            "-c",
            entrypoint.to_str().unwrap(),
        ],
    )
    .await;
    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    out.success().stdout_has(&format!("run {t}: Succeeded"));

    // The chief decides: the parameter server (serving forever) is stopped and kept, so
    // is the chief. The worker ends with the chief, unless its container was still
    // running at the verdict (seen once on a v1.36 node): then it is stopped like the ps.
    let ps = format!("{t}-ps-0");
    c.eventually(
        "the parameter server to end by its deadline",
        Duration::from_secs(90),
        || async {
            let pods = c.pods(&t).await;
            let ps = pods.iter().find(|p| p.name_any() == ps)?;
            let reason = ps.status.as_ref()?.reason.as_deref();
            (phase(ps) == "Failed" && reason == Some("DeadlineExceeded")).then_some(())
        },
    )
    .await;
    let chief = c
        .pods(&t)
        .await
        .into_iter()
        .find(|p| p.name_any() == format!("{t}-chief-0"));
    assert_eq!(chief.as_ref().and_then(exit_code), Some(0), "{chief:?}");
    c.run(&["status", "-t", &t])
        .await
        .success()
        .stdout_has("ps-0: was stopped by tf-spawner after the verdict (its log is kept)")
        .stdout_has("verdict: Succeeded\n");
    // Its handler ran (a v1.20 kubelet says the pod Failed while it still runs).
    c.eventually(
        "the parameter server's SIGTERM handler",
        Duration::from_secs(60),
        || async {
            let out = c.run(&["logs", "-t", &t, "--task", "ps-0"]).await;
            (out.code == 0 && out.stdout.contains("| ps: stopped")).then_some(())
        },
    )
    .await;
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success()
        .stdout_has("chief-0  | chief-0: cluster of 3 tasks agrees on ");
}
