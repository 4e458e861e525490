//! Roles besides the workers (chief, parameter servers, evaluator) as the real server
//! stores them: one service per task in the training cluster, none for the evaluator.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn parameter_server_run_with_an_evaluator() {
    let Some(real) = Real::new("parameter_server_run_with_an_evaluator").await else {
        return;
    };
    let ns = real.namespace("roles").await;
    let script = real.script();
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "psrun",
            "--strategy",
            "parameter-server",
            "--ps",
            "2",
            "-w",
            "2",
            "--evaluator",
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();

    let addr = |task: &str| format!("psrun-{task}.{ns}.svc:1999");
    let cluster = json!({
        "chief": [addr("chief-0")],
        "ps": [addr("ps-0"), addr("ps-1")],
        "worker": [addr("worker-0"), addr("worker-1")],
    });
    let tasks = [
        ("chief", 0),
        ("ps", 0),
        ("ps", 1),
        ("worker", 0),
        ("worker", 1),
        ("evaluator", 0),
    ];
    let pods = real.pods(&ns, "psrun").await;
    assert_eq!(pods.len(), tasks.len());
    for (role, index) in tasks {
        let name = format!("psrun-{role}-{index}");
        let pod = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("pod {name} missing"));
        assert_eq!(label(&pod.metadata, ROLE_LABEL), Some(role));
        assert_eq!(
            label(&pod.metadata, INDEX_LABEL),
            Some(index.to_string().as_str())
        );
        let c = tf_container(pod);
        let tf_config: Value = serde_json::from_str(&real.tf_config(pod).await).unwrap();
        assert_eq!(
            tf_config,
            json!({"cluster": cluster, "task": {"type": role, "index": index}}),
            "{name}"
        );
        assert_eq!(env_value(c, "TOT_WORKERS"), "2");
        if role == "worker" {
            assert_eq!(env_value(c, "WORKER_NUMBER"), index.to_string());
        }
    }

    // Services for the training cluster only; each selects exactly its task's pod.
    let services = real.services(&ns, "psrun").await;
    let names: Vec<String> = services
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "psrun-chief-0",
            "psrun-ps-0",
            "psrun-ps-1",
            "psrun-worker-0",
            "psrun-worker-1"
        ]
    );
    for svc in &services {
        let selector = svc.spec.as_ref().unwrap().selector.as_ref().unwrap();
        let text: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let selected: Vec<String> = real
            .list::<k8s_openapi::api::core::v1::Pod>(&ns, &text.join(","))
            .await
            .into_iter()
            .map(|p| p.metadata.name.unwrap())
            .collect();
        assert_eq!(selected, vec![svc.metadata.name.clone().unwrap()]);
    }

    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "-t", "psrun"])
        .await;
    out.success().stdout_has("deleted pod/psrun-evaluator-0");
    assert_eq!(out.stdout.matches("deleted ").count(), 12, "{out:#?}");
    assert_eq!(real.run_objects(&ns, "psrun").await, Vec::<String>::new());
}
