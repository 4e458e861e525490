//! `--queue` against the real 1.20 server (docs/shared-clusters.md): Kueue's
//! LocalQueue CRD is installed from a small definition (`crds/kueue-localqueue.yaml`);
//! Kueue itself does not run here, so its webhook never takes a pod, which is what a
//! namespace Kueue does not manage looks like. Every misconfiguration is one `error:`
//! line and nothing left. (Volcano's queue is checked in `gang.rs`, beside the PodGroup
//! CRDs it needs.)

use crate::support::*;

pub const LOCAL_QUEUE_CRD: &str = "localqueues.kueue.x-k8s.io";

/// Applies a CRD and waits until the server serves it.
pub async fn install_crd(real: &Real, crd: &str, definition: &str, probe: &[&str]) {
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], definition)
        .await
        .success();
    let established = format!("crd/{crd}");
    real.kubectl(
        Cred::Admin,
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout",
            "60s",
            &established,
        ],
        "",
    )
    .await
    .success();
    // Discovery serves the new version a moment after the CRD is established.
    for _ in 0..50 {
        let mut args = vec!["get", crd];
        args.extend_from_slice(probe);
        if real.kubectl(Cred::Admin, &args, "").await.code == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("{crd} never served");
}

#[tokio::test]
async fn queue_misconfigurations_are_one_error_and_leave_nothing() {
    let Some(real) = Real::new("queue_misconfigurations_are_one_error_and_leave_nothing").await
    else {
        return;
    };
    let ns = real.namespace("queues").await;
    let script = real.script();
    let spawn = |tag: &'static str| {
        let ns = ns.clone();
        let script = script.clone();
        let real = &real;
        async move {
            let args = [
                "-n",
                &ns,
                "-t",
                tag,
                "-w",
                "3",
                "--queue",
                "team-gpu",
                script.to_str().unwrap(),
            ];
            let out = real.run(Cred::Admin, &args).await;
            assert_eq!(out.code, 1, "{out:#?}");
            assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
            assert!(
                real.run_objects(&ns, tag).await.is_empty(),
                "{tag}: objects left"
            );
            out
        }
    };

    let installed = real
        .kubectl(Cred::Admin, &["get", "crd", LOCAL_QUEUE_CRD], "")
        .await
        .code
        == 0;
    if !installed {
        spawn("nk").await.stderr_has(
            "error: --queue team-gpu: Kueue is not installed on this cluster (no LocalQueue API kueue.x-k8s.io/v1beta1)",
        );
    }
    install_crd(
        &real,
        LOCAL_QUEUE_CRD,
        include_str!("crds/kueue-localqueue.yaml"),
        &["-n", &ns],
    )
    .await;

    spawn("mq").await.stderr_has(&format!(
        "error: Kueue LocalQueue 'team-gpu' does not exist in namespace '{ns}'"
    ));

    let queue = format!(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata:\n  name: team-gpu\n  namespace: {ns}\nspec:\n  clusterQueue: cluster-gpu\n"
    );
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], &queue)
        .await
        .success();
    // No Kueue webhook takes the first pod: rolled back before the others are sent.
    spawn("um").await.stderr_has(&format!(
        "error: --queue team-gpu: Kueue did not take pod um-worker-0 (no kueue.x-k8s.io/managed label, no kueue.x-k8s.io/admission scheduling gate), so the run would start unqueued: Kueue does not manage namespace '{ns}'"
    ));

    // A user who may create pods but not read LocalQueues (RBAC's 403): a note, then
    // the same check of the first pod.
    let team = real.team_ns();
    let tag = real.tag_in(&team, "q");
    let out = real
        .run(
            Cred::TeamA,
            &[
                "-t",
                &tag,
                "-w",
                "2",
                "--queue",
                "team-gpu",
                script.to_str().unwrap(),
            ],
        )
        .await;
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has(&format!(
        "note: cannot check Kueue LocalQueue 'team-gpu' (these credentials may not read localqueues.kueue.x-k8s.io in namespace '{team}'); going on"
    ))
    .stderr_has("error: --queue team-gpu: Kueue did not take pod");
    assert!(real.run_objects(&team, &tag).await.is_empty());
}
