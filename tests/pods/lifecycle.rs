//! Deleting and interrupting runs whose pods really run: pods on a node linger for their
//! grace period, and a rolled-back spawn must leave no container behind.

use std::time::{Duration, Instant};

use crate::support::{Cluster, RUN_TIMEOUT, tag};

/// Exits 3 s after SIGTERM, like a trainer that writes a checkpoint first.
const LINGER: &str = "\
import signal, sys, time
def stop(signum, frame):
    print('SIGTERM: saving a checkpoint', flush=True)
    time.sleep(3)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print('training', flush=True)
time.sleep(600)
";

#[tokio::test]
async fn delete_wait_returns_once_the_lingering_pods_are_gone() {
    let Some(c) = Cluster::new("delwait").await else {
        return;
    };
    let script = c.write("linger.py", LINGER);
    let (quick, waited) = (tag("nowait"), tag("wait"));
    for t in [&quick, &waited] {
        c.spawn(t, &script, &["-w", "2"]).await;
        c.run(&["wait", "-t", t, "--for", "start", "--timeout", RUN_TIMEOUT])
            .await
            .success();
    }
    // Without --wait, -d returns while the pods still stop (the kubelet is giving the
    // containers their grace period).
    let out = c.run(&["-d", "-y", "-t", &quick]).await;
    out.success().stdout_has(&format!("pod/{quick}-worker-0"));
    let lingering = c.pods(&quick).await;
    assert!(
        !lingering.is_empty()
            && lingering
                .iter()
                .all(|p| p.metadata.deletion_timestamp.is_some()),
        "pods on a node linger, marked for deletion: {lingering:?}"
    );

    // With --wait, it returns only when they are gone.
    let started = Instant::now();
    let out = c
        .run(&["-d", "-y", "--wait", "--timeout", "120s", "-t", &waited])
        .await;
    out.success();
    assert!(c.pods(&waited).await.is_empty(), "{out:#?}");
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "the containers took 3 s to stop: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn sigint_while_the_first_pods_start_leaves_no_object_and_no_container() {
    let Some(c) = Cluster::new("sigint").await else {
        return;
    };
    let t = tag("int");
    let script = c.write("linger.py", LINGER);
    let template = c.template();
    // One request at a time, so the spawn is still creating while its first pods start.
    let child = c.start(&[
        "-t",
        &t,
        "-w",
        "100",
        "--max-in-flight",
        "1",
        "--pod-file",
        template.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let pid = child.id().expect("pid") as i32;
    c.eventually(
        "a pod of the run bound to the node",
        Duration::from_secs(60),
        || async {
            let pods = c.pods(&t).await;
            pods.iter()
                .any(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
                .then_some(())
        },
    )
    .await;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the spawn ends after SIGINT")
        .expect("wait for the spawn");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");

    // Every object is gone once the kubelet has stopped the containers it started.
    let kube = c.client.clone();
    let ns = c.namespace.clone();
    c.eventually("the run to be gone", Duration::from_secs(120), || {
        let (kube, ns, t) = (kube.clone(), ns.clone(), t.clone());
        async move {
            use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
            use kube::api::{Api, ListParams};
            let lp = ListParams::default().labels(&format!("training_attempt={t}"));
            let pods = Api::<Pod>::namespaced(kube.clone(), &ns)
                .list(&lp)
                .await
                .ok()?;
            let svcs = Api::<Service>::namespaced(kube.clone(), &ns)
                .list(&lp)
                .await
                .ok()?;
            let cms = Api::<ConfigMap>::namespaced(kube, &ns)
                .list(&lp)
                .await
                .ok()?;
            (pods.items.is_empty() && svcs.items.is_empty() && cms.items.is_empty()).then_some(())
        }
    })
    .await;
}

/// SIGTERM reaches the training script (issue 25): the pod's pause process is PID 1, so
/// a script without a handler ends at once on a delete, and a script with one runs it.
/// The grace period is 600 s: had the signal been dropped (a script as PID 1 without a
/// handler), `-d --wait --timeout 120s` would time out waiting for the kubelet's SIGKILL.
#[tokio::test]
async fn sigterm_reaches_the_script_with_or_without_a_handler() {
    let Some(c) = Cluster::new("sigterm").await else {
        return;
    };
    let template = std::fs::read_to_string(c.template()).expect("read the pod template");
    let template = c.write(
        "grace-600.yaml",
        &template.replace(
            "  restartPolicy: Never\n",
            "  restartPolicy: Never\n  terminationGracePeriodSeconds: 600\n",
        ),
    );
    assert!(
        std::fs::read_to_string(&template)
            .unwrap()
            .contains("terminationGracePeriodSeconds: 600")
    );
    let plain = c.write(
        "plain.py",
        "import time\nprint('training', flush=True)\ntime.sleep(600)\n",
    );
    let handled = c.write("linger.py", LINGER);
    let (p, h) = (tag("plain"), tag("handled"));
    for (t, script) in [(&p, &plain), (&h, &handled)] {
        let args = [
            "-t",
            t,
            "-w",
            "1",
            "--pod-file",
            template.to_str().unwrap(),
            script.to_str().unwrap(),
        ];
        c.run(&args).await.success();
        c.run(&["wait", "-t", t, "--for", "start", "--timeout", RUN_TIMEOUT])
            .await
            .success();
    }
    // The handler's line is printed by the container while it stops: follow it.
    let follow = c.start(&["logs", "-f", "-t", &h]);
    c.eventually(
        "the handled script to be training",
        Duration::from_secs(60),
        || async {
            let out = c.run(&["logs", "-t", &h]).await;
            out.stdout.contains("training").then_some(())
        },
    )
    .await;
    for t in [&p, &h] {
        let out = c
            .run(&["-d", "-y", "--wait", "--timeout", "120s", "-t", t])
            .await;
        out.success();
        assert!(c.pods(t).await.is_empty(), "{out:#?}");
    }
    let out = tokio::time::timeout(Duration::from_secs(60), follow.wait_with_output())
        .await
        .expect("logs -f ends with the container")
        .expect("wait for logs -f");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("SIGTERM: saving a checkpoint"), "{stdout}");
}
