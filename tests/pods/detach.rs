//! `spawn --detach` on running pods (issue 59): the supervisor's pod, from the image
//! `tools/supervisor-image/build.sh` makes of this very binary (imported into the node's
//! containerd by `TF_SPAWNER_PODS_SUPERVISOR_IMAGE`, a command taking the binary, as
//! `.ci/run` sets it; skipped with a notice without it), runs under the ServiceAccount
//! `examples/rbac.yaml` makes, reaches the API server through the `kubernetes` Service as
//! on users' clusters, and follows the run with nobody else: a worker deleted mid-run is
//! restarted by it, the run succeeds, the verdict is recorded, and the Job completes.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams, LogParams};

use crate::support::{BIN, Cluster, phase, tag};

use crate::after::service_account;

const CONTROL: &str = "TF_SPAWNER_PODS_SUPERVISOR_IMAGE";

/// Prints its attempt, then three epochs of 4 s each.
const EPOCHS: &str = "\
import os, time
print('attempt', os.environ.get('TF_SPAWNER_ATTEMPT'), flush=True)
for e in range(1, 4):
    time.sleep(4)
    print(f'Epoch {e}/3', flush=True)
";

/// The supervisor's image, built from this binary and imported; `None` (with a notice)
/// without [`CONTROL`].
async fn supervisor_image(test: &str) -> Option<String> {
    let Some(command) = std::env::var(CONTROL).ok().filter(|v| !v.is_empty()) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: {CONTROL} not set (tools/one-node/supervisor-image.sh; see .ci/run)"
        );
        return None;
    };
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} {BIN}"))
        .output()
        .await
        .expect("run the image command");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{command} {BIN}: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Some(stdout.lines().last().expect("the image's name").to_string())
}

fn annotation(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.metadata.annotations.as_ref()?.get(key).cloned()
}

#[tokio::test]
async fn a_detached_run_is_restarted_by_its_supervisor_with_nobody_attached() {
    let test = "a_detached_run_is_restarted_by_its_supervisor_with_nobody_attached";
    let Some(c) = Cluster::new("detach").await else {
        return;
    };
    let Some(image) = supervisor_image(test).await else {
        return;
    };
    service_account::apply_role(&c.client, &c.namespace).await;
    let t = tag("det");
    let script = c.write("epochs.py", EPOCHS);
    let args = [
        "-w",
        "2",
        "--detach",
        "--supervisor-image",
        &image,
        "--restarts",
        "2",
        "--restart-backoff",
        "1s",
    ];
    c.spawn(&t, &script, &args).await.stdout_has(&format!(
        "run {t}: followed from the cluster by job/{t}-supervisor"
    ));
    // The spawning process is gone: the supervisor's pod takes the run.
    let records = Api::<ConfigMap>::namespaced(c.client.clone(), &c.namespace);
    let record = format!("{t}-script");
    let follower = c
        .eventually(
            "the supervisor taking the run",
            Duration::from_secs(120),
            || async {
                let cm = records.get(&record).await.ok()?;
                annotation(&cm, "tf-spawner/follower")
                    .filter(|w| w.contains(&format!("on {t}-supervisor-")))
            },
        )
        .await;
    let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let worker = format!("{t}-worker-1");
    c.eventually("worker-1 running", Duration::from_secs(120), || async {
        let pod = pods.get(&worker).await.ok()?;
        (phase(&pod) == "Running").then_some(())
    })
    .await;
    pods.delete(&worker, &DeleteParams::default())
        .await
        .expect("delete worker-1");

    let verdict = c
        .eventually(
            "the supervisor's verdict",
            Duration::from_secs(240),
            || async {
                let cm = records.get(&record).await.ok()?;
                annotation(&cm, "tf-spawner/verdict")
            },
        )
        .await;
    let sup = format!("training_attempt={t},tf-spawner/helper=supervisor");
    let log = async {
        let list = pods.list(&ListParams::default().labels(&sup)).await.ok()?;
        let name = list.items.first()?.metadata.name.clone()?;
        pods.logs(&name, &LogParams::default()).await.ok()
    }
    .await
    .unwrap_or_default();
    assert_eq!(verdict, "Succeeded", "{log}");
    assert!(
        log.contains(&format!(
            "run {t}: restart 1/2 in 1s: pod {worker} (worker-1) was deleted while it ran"
        )),
        "{log}"
    );
    let tasks = c.pods(&t).await.into_iter().filter(|p| {
        p.metadata
            .labels
            .as_ref()
            .is_some_and(|l| !l.contains_key("tf-spawner/helper"))
    });
    for pod in tasks {
        let attempt = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("tf-spawner/attempt"))
            .cloned();
        assert_eq!(attempt.as_deref(), Some("1"), "{pod:?}");
    }
    // The Job ends with the run, 0: nothing left to follow.
    let jobs = Api::<Job>::namespaced(c.client.clone(), &c.namespace);
    c.eventually(
        "the supervisor's Job complete",
        Duration::from_secs(60),
        || async {
            let job = jobs.get(&format!("{t}-supervisor")).await.ok()?;
            (job.status?.succeeded? == 1).then_some(())
        },
    )
    .await;
    // The morning's status: the attempt, why, and who followed it (it let go).
    let status = c.run(&["status", &t]).await;
    status
        .success()
        .stdout_has(&format!(
            "attempt: 1 (pod {worker} (worker-1) was deleted while it ran; re-created by tf-spawner on {t}-supervisor-"
        ))
        .stdout_has("verdict: Succeeded");
    assert!(follower.starts_with("tf-spawner on "), "{follower}");
    // -d removes the supervisor with the run.
    c.run(&["-d", "-y", "-t", &t]).await.success();
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// The supervisor's pod deleted in the middle of a restart (its backoff: the restart
/// recorded, the pods not yet made again): the Job's next pod takes the run up from its
/// record and finishes that restart; the run ends after exactly one.
#[tokio::test]
async fn a_supervisor_lost_mid_restart_is_replaced_and_the_run_restarted_once() {
    let test = "a_supervisor_lost_mid_restart_is_replaced_and_the_run_restarted_once";
    let Some(c) = Cluster::new("detach-lost").await else {
        return;
    };
    let Some(image) = supervisor_image(test).await else {
        return;
    };
    service_account::apply_role(&c.client, &c.namespace).await;
    let t = tag("dlo");
    let script = c.write("epochs.py", EPOCHS);
    let args = [
        "-w",
        "2",
        "--detach",
        "--supervisor-image",
        &image,
        "--restarts",
        "2",
        "--restart-backoff",
        "15s",
    ];
    c.spawn(&t, &script, &args).await;
    let records = Api::<ConfigMap>::namespaced(c.client.clone(), &c.namespace);
    let record = format!("{t}-script");
    let first = c
        .eventually(
            "the supervisor taking the run",
            Duration::from_secs(120),
            || async {
                let cm = records.get(&record).await.ok()?;
                annotation(&cm, "tf-spawner/follower")
                    .filter(|w| w.contains(&format!("on {t}-supervisor-")))
            },
        )
        .await;
    let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let worker = format!("{t}-worker-1");
    c.eventually("worker-1 running", Duration::from_secs(120), || async {
        let pod = pods.get(&worker).await.ok()?;
        (phase(&pod) == "Running").then_some(())
    })
    .await;
    pods.delete(&worker, &DeleteParams::default())
        .await
        .expect("delete worker-1");
    c.eventually("the restart recorded", Duration::from_secs(60), || async {
        let cm = records.get(&record).await.ok()?;
        annotation(&cm, "tf-spawner/restarting")
    })
    .await;
    let supervisor = first
        .split_once(" on ")
        .and_then(|(_, rest)| rest.split_once(','))
        .map(|(pod, _)| pod.to_string())
        .expect("the supervisor's pod in its name");
    pods.delete(&supervisor, &DeleteParams::default())
        .await
        .expect("delete the supervisor's pod");

    let verdict = c
        .eventually("the verdict", Duration::from_secs(240), || async {
            let cm = records.get(&record).await.ok()?;
            annotation(&cm, "tf-spawner/verdict")
        })
        .await;
    assert_eq!(verdict, "Succeeded");
    let tasks = c.pods(&t).await.into_iter().filter(|p| {
        p.metadata
            .labels
            .as_ref()
            .is_some_and(|l| !l.contains_key("tf-spawner/helper"))
    });
    for pod in tasks {
        let attempt = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("tf-spawner/attempt"))
            .cloned();
        assert_eq!(
            attempt.as_deref(),
            Some("1"),
            "exactly one restart: {pod:?}"
        );
    }
    let sup = format!("training_attempt={t},tf-spawner/helper=supervisor");
    let list = pods
        .list(&ListParams::default().labels(&sup))
        .await
        .unwrap();
    let second = list
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .find(|n| *n != supervisor)
        .expect("the Job's second pod");
    let log = pods.logs(&second, &LogParams::default()).await.unwrap();
    assert!(log.contains(&format!("run {t}: Succeeded")), "{log}");
}
