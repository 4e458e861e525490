//! Shared clusters against the real 1.20 server: what it stores of `--deadline` and
//! `--priority-class`, a run stopped at its deadline, and scheduling gates, which 1.20
//! does not know (it drops the field: gated pods are tested on the test server,
//! `tests/it/shared.rs`). `--queue` needs Kueue, which does not run here: its checks
//! are in `queues.rs`, its labels in `tests/it/shared.rs`.

use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn deadline_and_priority_class_are_stored_and_a_deadline_is_reported() {
    let Some(real) =
        Real::new("deadline_and_priority_class_are_stored_and_a_deadline_is_reported").await
    else {
        return;
    };
    let ns = real.namespace("shared").await;
    // The Priority admission plugin refuses a pod naming a class that does not exist.
    let class = unique("tfs-prio");
    let classes: Api<PriorityClass> = Api::all(real.client.clone());
    classes
        .create(
            &PostParams::default(),
            &PriorityClass {
                metadata: ObjectMeta {
                    name: Some(class.clone()),
                    ..ObjectMeta::default()
                },
                value: 1000,
                ..PriorityClass::default()
            },
        )
        .await
        .expect("create the priority class");
    let script = real.script();
    let out = real
        .run(
            Cred::Admin,
            &[
                "-n",
                &ns,
                "-t",
                "sh",
                "-w",
                "2",
                "--deadline",
                "2h",
                "--priority-class",
                &class,
                script.to_str().unwrap(),
            ],
        )
        .await;
    let _ = classes.delete(&class, &DeleteParams::default()).await;
    out.success();
    let pods = real.pods(&ns, "sh").await;
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.active_deadline_seconds, Some(7200));
        assert_eq!(spec.priority_class_name.as_deref(), Some(class.as_str()));
        // Filled in by the Priority admission plugin from the class.
        assert_eq!(spec.priority, Some(1000));
    }

    // What a kubelet writes when the deadline passes.
    real.patch_pod_status(
        &ns,
        "sh-worker-0",
        json!({
            "phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": [container_status("tensorflow", false, json!({
                "terminated": {"exitCode": 137, "reason": "Error",
                    "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T02:00:00Z"}
            }))],
        }),
    )
    .await;
    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "wait", "-t", "sh", "--timeout", "60s"],
        )
        .await;
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("failed: exit code 137, reason DeadlineExceeded");
    // The verdict is in: the worker no node took is deleted (it never started), the
    // failed one kept.
    out.stdout_has("deleted 1 task that never started: worker-1 (no node had taken it: no log)");
    let left: Vec<String> = real
        .pods(&ns, "sh")
        .await
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(left, ["sh-worker-0"]);
    real.run(Cred::Admin, &["-n", &ns, "status", "-t", "sh"])
        .await
        .success()
        .stdout_has("Failed (DeadlineExceeded)");
}

/// Scheduling gates as the server under test stores them: a server before 1.26 does not
/// know the field and drops it (the pod is a plain pending one); 1.27 and later keep it
/// (on by default from 1.27, GA in 1.30) and the pod is queued until the gate is removed.
#[tokio::test]
async fn scheduling_gates_are_kept_or_dropped_as_the_server_does() {
    let Some(real) = Real::new("scheduling_gates_are_kept_or_dropped_as_the_server_does").await
    else {
        return;
    };
    let ns = real.namespace("gates").await;
    let template = real.write(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  schedulingGates: [{name: example.com/hold}]\n  containers: [{name: tensorflow, image: tf:1}]\n",
    );
    let script = real.script();
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "g",
            "-w",
            "1",
            "--pod-file",
            template.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    let pod = &real.pods(&ns, "g").await[0];
    let gates = pod.spec.as_ref().unwrap().scheduling_gates.clone();
    let list = real.run(Cred::Admin, &["-n", &ns, "list"]).await;
    let list = list.success();
    if real.server_minor().await >= 27 {
        let names: Vec<String> = gates
            .unwrap_or_default()
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(names, ["example.com/hold"]);
        list.stdout_has("worker 0/1 running, 1 queued");
    } else {
        assert_eq!(gates, None);
        list.stdout_has("worker 0/1 running, 1 pending");
    }
}
