//! `spawn --detach` against the real servers: under exactly the shipped Role
//! (`examples/rbac.yaml`, applied in a fresh namespace, its ServiceAccount's token), the
//! run and its supervisor's Job and Secret are made; the server's Job controller makes
//! the supervisor's pod, which a namespace enforcing Pod Security `restricted` admits
//! (v1.23+; v1.20 has no PodSecurity admission), under the supervisor's ServiceAccount;
//! `-d` deletes the Job and its pod with the run. No node runs the pod here (`tests/pods`
//! would).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::support::*;

use crate::rbac::service_account;

#[tokio::test]
async fn a_detached_runs_supervisor_is_made_admitted_under_restricted_and_deleted_with_it() {
    let test = "a_detached_runs_supervisor_is_made_admitted_under_restricted_and_deleted_with_it";
    let Some(real) = Real::new(test).await else {
        return;
    };
    let restricted = real.server_minor().await >= 23;
    let ns = if restricted {
        crate::hardened::enforcing(&real, "detach", "restricted").await
    } else {
        real.namespace("detach").await
    };
    service_account::apply_role(&real.client, &ns).await;
    let kubeconfig: OsString =
        service_account::kubeconfig(&real.client, &real.admin_kubeconfig, &ns, real.dir.path())
            .await
            .into();
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
