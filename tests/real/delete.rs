//! Deleting on a 1.20 server: no collection DELETE for services (405), so the tool
//! falls back to listing and deleting them one by one.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;

use crate::support::*;

#[tokio::test]
async fn delete_removes_every_kind_and_nothing_else() {
    let Some(real) = Real::new("delete_removes_every_kind_and_nothing_else").await else {
        return;
    };
    let ns = real.namespace("delete").await;
    let script = real.script();
    let env = real.write("e.env", "K=v\n");
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "gone",
            "-w",
            "3",
            "-e",
            env.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    assert_eq!(real.run_objects(&ns, "gone").await.len(), 8);

    // Pods in every phase a run goes through (status patched as admin).
    real.set_running(&ns, "gone-worker-0", "tensorflow").await;
    real.set_terminated(&ns, "gone-worker-1", "tensorflow", 0)
        .await;
    real.set_terminated(&ns, "gone-worker-2", "tensorflow", 3)
        .await;
    let phases: Vec<String> = real
        .pods(&ns, "gone")
        .await
        .iter()
        .map(|p| p.status.as_ref().unwrap().phase.clone().unwrap())
        .collect();
    assert_eq!(phases, ["Running", "Succeeded", "Failed"]);

    // Bystanders: another run's label value, and a service without the label.
    let labelled_other = ConfigMap {
        metadata: ObjectMeta {
            name: Some("gone-script-other".into()),
            labels: Some(BTreeMap::from([(RUN_LABEL.into(), "gone-not".into())])),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    real.api::<ConfigMap>(&ns)
        .create(&PostParams::default(), &labelled_other)
        .await
        .unwrap();
    let unlabelled = Service {
        metadata: ObjectMeta {
            name: Some("gone-worker-9".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            ports: Some(vec![ServicePort {
                port: 1999,
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    real.api::<Service>(&ns)
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();

    // Stdin is not a terminal: no question, no -y needed.
    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "-t", "gone"])
        .await;
    out.success();
    for object in [
        "pod/gone-worker-0",
        "pod/gone-worker-1",
        "pod/gone-worker-2",
        "service/gone-worker-0",
        "service/gone-worker-1",
        "service/gone-worker-2",
        "configmap/gone-script",
        "secret/gone-env",
    ] {
        out.stdout_has(&format!("deleted {object}\n"));
    }
    assert_eq!(out.stdout.matches("deleted ").count(), 8, "{out:#?}");
    assert!(out.stderr.is_empty(), "{out:#?}");
    assert_eq!(real.run_objects(&ns, "gone").await, Vec::<String>::new());
    assert!(
        real.api::<ConfigMap>(&ns)
            .get_opt("gone-script-other")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        real.api::<Service>(&ns)
            .get_opt("gone-worker-9")
            .await
            .unwrap()
            .is_some()
    );

    // Again: nothing to delete is exit 1 in one line, 0 with --ignore-not-found.
    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "-t", "gone"])
        .await;
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has("no run tagged 'gone' in namespace");
    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "-d", "-t", "gone", "--ignore-not-found"],
        )
        .await;
    out.success()
        .stdout_has("nothing labelled training_attempt=gone");
}

#[tokio::test]
async fn two_tags_coexist_and_deleting_one_leaves_the_other() {
    let Some(real) = Real::new("two_tags_coexist_and_deleting_one_leaves_the_other").await else {
        return;
    };
    let ns = real.namespace("coexist").await;
    let script = real.script();
    let script = script.to_str().unwrap();
    real.run(Cred::Admin, &["-n", &ns, "-t", "alpha", "-w", "2", script])
        .await
        .success();
    real.run(Cred::Admin, &["-n", &ns, "-t", "beta", "-w", "3", script])
        .await
        .success();
    assert_eq!(real.run_objects(&ns, "alpha").await.len(), 5);
    let beta = real.snapshot(&ns, "beta").await;
    assert_eq!(beta.len(), 7);

    // Each run's TF_CONFIG names only its own workers.
    for pod in real.pods(&ns, "beta").await {
        let tf_config = real.tf_config(&pod).await;
        assert!(!tf_config.contains("alpha"), "{tf_config}");
        assert_eq!(tf_config.matches("beta-worker-").count(), 3, "{tf_config}");
    }

    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "-t", "alpha"])
        .await;
    out.success()
        .stdout_has("deleted pod/alpha-worker-1")
        .stdout_has("deleted service/alpha-worker-1")
        .stdout_lacks("beta");
    assert_eq!(real.run_objects(&ns, "alpha").await, Vec::<String>::new());
    assert_eq!(real.snapshot(&ns, "beta").await, beta, "beta untouched");
}
