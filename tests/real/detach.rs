//! `spawn --detach` against the real servers: under exactly the shipped Role
//! (`examples/rbac.yaml`, applied in a fresh namespace, its ServiceAccount's token), the
//! run and its supervisor's Job and Secret are made; the server's Job controller makes
//! the supervisor's pod, which a namespace enforcing Pod Security `restricted` admits
//! (v1.23+; v1.20 has no PodSecurity admission), under the supervisor's ServiceAccount;
//! `-d` deletes the Job and its pod with the run. No node runs the pod here (`tests/pods`
//! would).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::support::*;

use crate::rbac::service_account;

/// A fresh namespace enforcing Pod Security `restricted` (v1.23+; v1.20 has none), with
/// `examples/rbac.yaml` applied, and a kubeconfig of its ServiceAccount's token.
async fn restricted_with_the_role(real: &Real, name: &str) -> (String, OsString) {
    let ns = if real.server_minor().await >= 23 {
        crate::hardened::enforcing(real, name, "restricted").await
    } else {
        real.namespace(name).await
    };
    service_account::apply_role(&real.client, &ns).await;
    let kubeconfig =
        service_account::kubeconfig(&real.client, &real.admin_kubeconfig, &ns, real.dir.path())
            .await
            .into();
    (ns, kubeconfig)
}

#[tokio::test]
async fn a_detached_runs_supervisor_is_made_admitted_under_restricted_and_deleted_with_it() {
    let test = "a_detached_runs_supervisor_is_made_admitted_under_restricted_and_deleted_with_it";
    let Some(real) = Real::new(test).await else {
        return;
    };
    let (ns, kubeconfig) = restricted_with_the_role(&real, "detach").await;
    let script = real.script();
    let mut args: Vec<OsString> = ["--kubeconfig"].map(OsString::from).to_vec();
    args.push(kubeconfig.clone());
    let spawn = [
        "-t",
        "det",
        "-w",
        "1",
        "--run-as-user",
        "1000",
        "--restarts",
        "2",
        "--detach",
        "--supervisor-image",
        "registry.example.com/tf-spawner:0.1",
    ];
    args.extend(spawn.map(OsString::from));
    args.push(script.into_os_string());
    let out = real.run_raw(&args, &[]).await;
    out.success()
        .stdout_has("run det: followed from the cluster by job/det-supervisor");
    assert!(!out.stderr.contains("orbidden"), "{out:#?}");
    let jobs: Vec<Job> = real.list(&ns, &selector("det")).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");

    // The Job controller makes the pod; the namespace's admission lets it in.
    let supervisor = format!("{},tf-spawner/helper=supervisor", selector("det"));
    let began = Instant::now();
    let pod = loop {
        let pods: Vec<Pod> = real.list(&ns, &supervisor).await;
        if let Some(pod) = pods.into_iter().next() {
            break pod;
        }
        let events = real
            .kubectl(Cred::Admin, &["get", "events", "-n", &ns], "")
            .await;
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no supervisor pod after 60 s: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let spec = pod.spec.unwrap();
    assert_eq!(
        spec.service_account_name.as_deref(),
        Some("tf-spawner-supervisor")
    );
    assert_eq!(
        spec.containers[0].command.as_deref().unwrap(),
        ["tf-spawner", "supervise", "-t", "det"]
    );

    let mut delete: Vec<OsString> = ["--kubeconfig"].map(OsString::from).to_vec();
    delete.push(kubeconfig);
    delete.extend(["-n", &ns, "-d", "-y", "-t", "det"].map(OsString::from));
    let out = real.run_raw(&delete, &[]).await;
    out.success();
    assert!(!out.stderr.contains("orbidden"), "{out:#?}");
    let jobs: Vec<Job> = real.list(&ns, &selector("det")).await;
    assert!(jobs.is_empty(), "{jobs:?}");
    let left: Vec<Pod> = real.list(&ns, &supervisor).await;
    assert!(
        left.iter().all(|p| p.metadata.deletion_timestamp.is_some()),
        "{left:?}"
    );
    assert!(real.secrets(&ns, "det").await.is_empty());
}

/// `sweep --detach` under the shipped Role (its ServiceAccount's token) in a namespace
/// enforcing `restricted` (v1.23+): the record, the first run and the sweep's supervisor
/// (Job `NAME-sweeper`, its pod admitted, running `supervise --experiment NAME`). No node
/// runs that pod here, so the test runs `supervise --experiment` itself beside the server
/// (as the pod would, with the same token), drives the runs' pods to their end and sees
/// the lease under two followers: a laptop's `sweep --resume` while the supervisor has the
/// experiment shows it, acts on nothing and ends with its verdict. `-d --experiment`
/// removes it all.
#[tokio::test]
async fn a_detached_sweep_is_made_admitted_run_by_its_supervisor_alone_and_deleted() {
    let test = "a_detached_sweep_is_made_admitted_run_by_its_supervisor_alone_and_deleted";
    let Some(real) = Real::new(test).await else {
        return;
    };
    let (ns, kubeconfig) = restricted_with_the_role(&real, "dsweep").await;
    let script = real.script();
    let with = |words: &[&str]| {
        let mut args: Vec<OsString> = vec!["--kubeconfig".into(), kubeconfig.clone()];
        args.extend(["-n", &ns].map(OsString::from));
        args.extend(words.iter().map(OsString::from));
        args
    };
    let sweep = |more: &[&str]| {
        let mut words = vec![
            "sweep",
            "-t",
            "rsw",
            "-w",
            "1",
            "--run-as-user",
            "1000",
            "--param",
            "lr=1,2",
            "--parallel",
            "1",
        ];
        words.extend_from_slice(more);
        words.push(script.to_str().unwrap());
        with(&words)
    };
    let image = "registry.example.com/tf-spawner:0.1";
    let out = real
        .run_raw(&sweep(&["--detach", "--supervisor-image", image]), &[])
        .await;
    out.success()
        .stdout_has("experiment rsw: followed from the cluster by job/rsw-sweeper");
    assert!(!out.stderr.contains("orbidden"), "{out:#?}");
    let own = "tf-spawner/experiment=rsw,tf-spawner/helper=supervisor";
    let began = Instant::now();
    let pod = loop {
        let pods: Vec<Pod> = real.list(&ns, own).await;
        if let Some(pod) = pods.into_iter().next() {
            break pod;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no sweeper pod after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(
        pod.spec.unwrap().containers[0].command.as_deref().unwrap(),
        ["tf-spawner", "supervise", "--experiment", "rsw"]
    );

    // The supervisor, as its pod runs it; then a laptop's `sweep --resume`.
    let start = |args: Vec<OsString>| {
        tokio::process::Command::new(BIN)
            .args(args)
            .env_clear()
            .env("HOME", real.dir.path())
            .current_dir(real.dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start tf-spawner")
    };
    let supervisor = start(with(&["supervise", "--experiment", "rsw"]));
    let records: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = real.api(&ns);
    let began = Instant::now();
    while records
        .get("rsw-experiment")
        .await
        .ok()
        .and_then(|cm| cm.metadata.annotations?.get("tf-spawner/follower").cloned())
        .is_none()
    {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "not taken after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut laptop = start(sweep(&["--resume", "rsw"]));
    // Attached before the runs end (else, the supervisor gone, it would take the
    // experiment over, as it should): its lines read as they come.
    let mut lines = tokio::io::BufReader::new(laptop.stdout.take().unwrap()).lines();
    let mut shown = String::new();
    while !shown.contains("this sweep shows it and acts on nothing") {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the laptop's sweep attaches within 60 s")
            .expect("its stdout")
            .unwrap_or_else(|| panic!("the laptop's sweep ended: {shown}"));
        shown.push_str(&line);
        shown.push('\n');
    }
    let rest = tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            shown.push_str(&line);
            shown.push('\n');
        }
        shown
    });
    for run in ["rsw-1", "rsw-2"] {
        let worker = format!("{run}-worker-0");
        let began = Instant::now();
        while real.pods(&ns, run).await.is_empty() {
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "no {worker} after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        real.bind(&ns, &worker, "node-a").await;
        real.set_terminated(&ns, &worker, "tensorflow", 0).await;
    }
    let ended = |who: &'static str, child: tokio::process::Child| async move {
        let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("{who} ends within 120 s of the last run's end"))
            .expect("tf-spawner ran");
        assert!(out.status.success(), "{who}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let log = ended("the supervisor", supervisor).await;
    assert!(
        log.contains("experiment rsw: all 2 runs succeeded"),
        "{log}"
    );
    ended("the laptop's sweep", laptop).await;
    let log = rest.await.expect("the laptop's output");
    assert!(
        log.contains("experiment rsw: all 2 runs succeeded"),
        "{log}"
    );
    assert!(!log.contains("starting"), "{log}");

    let out = real
        .run_raw(&with(&["-d", "-y", "--experiment", "rsw"]), &[])
        .await;
    out.success();
    assert!(!out.stderr.contains("orbidden"), "{out:#?}");
    let jobs: Vec<Job> = real.list(&ns, "tf-spawner/experiment=rsw").await;
    assert!(jobs.is_empty(), "{jobs:?}");
    assert!(records.get_opt("rsw-experiment").await.unwrap().is_none());
}
