//! Spawning: what the real server stored, object by object.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::support::*;

/// Asserts everything the server stored for a run of `n` workers on `port`.
async fn check_run(real: &Real, ns: &str, tag: &str, n: usize, port: i32) {
    // The config map with the script.
    let cms = real.config_maps(ns, tag).await;
    assert_eq!(cms.len(), 1, "{cms:#?}");
    let cm = &cms[0];
    assert_eq!(
        cm.metadata.name.as_deref(),
        Some(format!("{tag}-script").as_str())
    );
    assert_eq!(
        cm.data.as_ref().and_then(|d| d.get("training-script.py")),
        Some(&SCRIPT.to_string())
    );
    assert_eq!(label(&cm.metadata, MANAGED_BY_LABEL), Some("tf-spawner"));

    let workers: Vec<String> = (0..n)
        .map(|i| format!("{tag}-worker-{i}.{ns}.svc:{port}"))
        .collect();

    // One headless service per worker, each selecting exactly its pod.
    let services = real.services(ns, tag).await;
    let names: Vec<String> = services
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    let mut want: Vec<String> = (0..n).map(|i| format!("{tag}-worker-{i}")).collect();
    want.sort();
    assert_eq!(names, want);
    for svc in &services {
        let name = svc.metadata.name.clone().unwrap();
        let index = name.rsplit('-').next().unwrap().to_string();
        let m = &svc.metadata;
        assert_eq!(label(m, RUN_LABEL), Some(tag));
        assert_eq!(label(m, MANAGED_BY_LABEL), Some("tf-spawner"));
        assert_eq!(label(m, ROLE_LABEL), Some("worker"));
        assert_eq!(label(m, INDEX_LABEL), Some(index.as_str()));
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "{name}: headless");
        assert_eq!(spec.publish_not_ready_addresses, Some(true), "{name}");
        let ports = spec.ports.as_ref().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].port, port);
        // By the pods' port name: a restart of every task moves their port.
        assert_eq!(
            ports[0].target_port,
            Some(IntOrString::String("tf-grpc".into()))
        );
        let selector = spec.selector.as_ref().unwrap();
        assert_eq!(
            selector,
            &BTreeMap::from([
                (RUN_LABEL.to_string(), tag.to_string()),
                (ROLE_LABEL.to_string(), "worker".to_string()),
                (INDEX_LABEL.to_string(), index.clone()),
            ])
        );
        // The server itself evaluates the selector: it finds this worker's pod only.
        let as_selector: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let selected: Vec<String> = real
            .list::<k8s_openapi::api::core::v1::Pod>(ns, &as_selector.join(","))
            .await
            .into_iter()
            .map(|p| p.metadata.name.unwrap())
            .collect();
        assert_eq!(selected, vec![name.clone()], "service {name} selects");
    }

    // The pods, with their TF variables.
    let pods = real.pods(ns, tag).await;
    assert_eq!(pods.len(), n);
    for i in 0..n {
        let name = format!("{tag}-worker-{i}");
        let pod = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("pod {name} missing"));
        let m = &pod.metadata;
        assert_eq!(label(m, RUN_LABEL), Some(tag));
        assert_eq!(label(m, MANAGED_BY_LABEL), Some("tf-spawner"));
        assert_eq!(label(m, ROLE_LABEL), Some("worker"));
        assert_eq!(label(m, INDEX_LABEL), Some(i.to_string().as_str()));
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        let c = tf_container(pod);

        let tf_config = real.tf_config(pod).await;
        assert!(
            !tf_config.contains(' ') && !tf_config.contains('\n'),
            "compact: {tf_config}"
        );
        let parsed: Value = serde_json::from_str(&tf_config).expect("TF_CONFIG is JSON");
        assert_eq!(
            parsed,
            json!({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}),
            "{name}"
        );
        assert_eq!(env_value(c, "WORKER_NUMBER"), i.to_string());
        assert_eq!(env_value(c, "TOT_WORKERS"), n.to_string());

        let ports = c.ports.as_ref().unwrap();
        assert!(
            ports
                .iter()
                .any(|p| p.container_port == port && p.name.is_some()),
            "{name}: named port {port} in {ports:?}"
        );
        let mount = c
            .volume_mounts
            .iter()
            .flatten()
            .find(|v| v.mount_path == "/script")
            .unwrap_or_else(|| panic!("{name}: /script not mounted"));
        let volume = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == mount.name)
            .expect("script volume");
        assert_eq!(
            volume.config_map.as_ref().map(|c| c.name.as_str()),
            Some(format!("{tag}-script").as_str())
        );
    }
}

#[tokio::test]
async fn one_worker_on_another_port() {
    let Some(real) = Real::new("one_worker_on_another_port").await else {
        return;
    };
    let ns = real.namespace("n1").await;
    let script = real.script();
    let out = real
        .run(
            Cred::Admin,
            &[
                "-n",
                &ns,
                "-t",
                "solo",
                "-w",
                "1",
                "-p",
                "2222",
                script.to_str().unwrap(),
            ],
        )
        .await;
    out.success()
        .stdout_has("training_attempt=solo")
        .stdout_has("tf-spawner -d -t solo");
    check_run(&real, &ns, "solo", 1, 2222).await;
    let pod = &real.pods(&ns, "solo").await[0];
    let c = tf_container(pod);
    assert_eq!(c.image.as_deref(), Some("tensorflow/tensorflow:2.15.0"));
    assert_eq!(
        c.command.as_deref(),
        Some(
            &[
                "python".to_string(),
                "/script/wait-for-names.py".to_string(),
                "python".to_string(),
                "/script/training-script.py".to_string()
            ][..]
        )
    );
}

#[tokio::test]
async fn two_workers_by_default() {
    let Some(real) = Real::new("two_workers_by_default").await else {
        return;
    };
    let ns = real.namespace("n2").await;
    let script = real.script();
    // Defaults: tag tf-spawner, 2 workers, port 1999.
    real.run(Cred::Admin, &["-n", &ns, script.to_str().unwrap()])
        .await
        .success()
        .stdout_has("training_attempt=tf-spawner");
    check_run(&real, &ns, "tf-spawner", 2, 1999).await;
    assert_eq!(real.run_objects(&ns, "tf-spawner").await.len(), 5);
}

#[tokio::test]
async fn five_workers() {
    let Some(real) = Real::new("five_workers").await else {
        return;
    };
    let ns = real.namespace("n5").await;
    let script = real.script();
    real.run(
        Cred::Admin,
        &["-n", &ns, "-t", "big", "-w", "5", script.to_str().unwrap()],
    )
    .await
    .success();
    check_run(&real, &ns, "big", 5, 1999).await;
    assert_eq!(real.run_objects(&ns, "big").await.len(), 11);
}

/// `-n NS -t TAG -e ENV_FILE`, `flags` and the training script, as admin: what the user
/// saw.
async fn spawn_with_env(
    real: &Real,
    ns: &str,
    tag: &str,
    env: &std::path::Path,
    flags: &[&str],
) -> Output {
    let script = real.script();
    let mut args = vec!["-n", ns, "-t", tag, "-e", env.to_str().unwrap()];
    args.extend(flags);
    args.push(script.to_str().unwrap());
    real.run(Cred::Admin, &args).await
}

#[tokio::test]
async fn env_file_becomes_a_secret_never_pod_env() {
    let Some(real) = Real::new("env_file_becomes_a_secret_never_pod_env").await else {
        return;
    };
    let ns = real.namespace("env").await;
    let env = real.write(
        "run.env",
        "# credentials\nexport API_KEY=\"s3cr3t-value-1\"\nDB_PASSWORD='p@ss w0rd-2'\n\nPLAIN=plain-value-3\n",
    );
    let out = spawn_with_env(&real, &ns, "envy", &env, &[]).await;
    out.success();
    let values = ["s3cr3t-value-1", "p@ss w0rd-2", "plain-value-3"];
    for v in values {
        out.stdout_lacks(v);
        assert!(!out.stderr.contains(v), "{out:#?}");
    }

    let secrets = real.secrets(&ns, "envy").await;
    assert_eq!(secrets.len(), 1);
    let secret = &secrets[0];
    assert_eq!(secret.metadata.name.as_deref(), Some("envy-env"));
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        label(&secret.metadata, MANAGED_BY_LABEL),
        Some("tf-spawner")
    );
    let data: BTreeMap<String, String> = secret
        .data
        .as_ref()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8(v.0.clone()).unwrap()))
        .collect();
    assert_eq!(
        data,
        BTreeMap::from([
            ("API_KEY".to_string(), values[0].to_string()),
            ("DB_PASSWORD".to_string(), values[1].to_string()),
            ("PLAIN".to_string(), values[2].to_string()),
        ])
    );

    let pods = real.pods(&ns, "envy").await;
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        let c = tf_container(pod);
        let refs: Vec<String> = c
            .env_from
            .iter()
            .flatten()
            .filter_map(|e| e.secret_ref.as_ref().map(|s| s.name.clone()))
            .collect();
        assert_eq!(refs, vec!["envy-env".to_string()]);
        let stored = serde_json::to_string(pod).unwrap();
        for v in values {
            assert!(!stored.contains(v), "value {v:?} in pod spec: {stored}");
        }
        for name in ["API_KEY", "DB_PASSWORD", "PLAIN"] {
            assert!(env_values(c, name).is_empty(), "{name} in pod env");
        }
    }
    check_run(&real, &ns, "envy", 2, 1999).await;
}

#[tokio::test]
async fn template_entrypoint_image_and_random_tag() {
    let Some(real) = Real::new("template_entrypoint_image_and_random_tag").await else {
        return;
    };
    let ns = real.namespace("flags").await;
    let script = real.script();
    let template = real.write(
        "pod.yaml",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: ignored
  labels: {team: vision}
  annotations: {note: kept}
spec:
  nodeSelector: {disk: ssd}
  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
  containers:
  - name: sidecar
    image: busybox:1.36
    command: [sleep, "3600"]
  - name: tensorflow
    image: example.org/tf:1
    env:
    - {name: TF_CONFIG, value: overridden}
    - {name: TOT_WORKERS, value: "99"}
    - {name: EXTRA, value: kept}
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
"#,
    );
    let entry = "#!/bin/bash\n# set up, then train\nset -e\nif true; then\n  python /script/training-script.py\nfi\n";
    let entry_path = real.write("entry.sh", entry);
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "tmpl",
            "-w",
            "2",
            "-p",
            "3000",
            "--pod-file",
            template.to_str().unwrap(),
            "-c",
            entry_path.to_str().unwrap(),
            "-i",
            "registry.example/tf:2",
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    check_run(&real, &ns, "tmpl", 2, 3000).await;

    let cm = &real.config_maps(&ns, "tmpl").await[0];
    assert_eq!(
        cm.data
            .as_ref()
            .unwrap()
            .get("entrypoint.sh")
            .map(String::as_str),
        Some(entry)
    );
    for pod in real.pods(&ns, "tmpl").await {
        let m = &pod.metadata;
        assert_eq!(label(m, "team"), Some("vision"));
        assert_eq!(
            m.annotations
                .as_ref()
                .and_then(|a| a.get("note"))
                .map(String::as_str),
            Some("kept")
        );
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_selector,
            Some(BTreeMap::from([("disk".to_string(), "ssd".to_string())]))
        );
        // The server adds its default not-ready/unreachable tolerations
        // (DefaultTolerationSeconds); the template's must be there too.
        assert!(
            spec.tolerations
                .iter()
                .flatten()
                .any(|t| t.key.as_deref() == Some("gpu")
                    && t.operator.as_deref() == Some("Exists")
                    && t.effect.as_deref() == Some("NoSchedule")),
            "{:?}",
            spec.tolerations
        );
        assert_eq!(spec.containers.len(), 2);
        let sidecar = &spec.containers[0];
        assert_eq!(sidecar.name, "sidecar");
        assert_eq!(sidecar.image.as_deref(), Some("busybox:1.36"));
        assert!(sidecar.env.is_none(), "sidecar untouched: {sidecar:?}");
        let c = tf_container(&pod);
        assert_eq!(c.image.as_deref(), Some("registry.example/tf:2"));
        assert_eq!(
            c.command.as_deref(),
            Some(
                &[
                    "bash".to_string(),
                    "/script/wait-for-names.sh".to_string(),
                    "bash".to_string(),
                    "/script/entrypoint.sh".to_string()
                ][..]
            )
        );
        assert_eq!(env_value(c, "EXTRA"), "kept");
        assert_eq!(env_value(c, "TOT_WORKERS"), "2");
        let limits = c.resources.as_ref().unwrap().limits.as_ref().unwrap();
        assert_eq!(limits.get("cpu").map(|q| q.0.as_str()), Some("200m"));
    }

    // -r: a new valid tag, printed, used for every object.
    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "-r", "-w", "1", script.to_str().unwrap()],
        )
        .await;
    out.success();
    // "run TAG created in namespace …"
    let tag = out
        .stdout
        .strip_prefix("run ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no tag printed: {out:#?}"))
        .to_string();
    assert_ne!(tag, "tmpl");
    assert!(tag.chars().next().unwrap().is_ascii_lowercase(), "{tag}");
    check_run(&real, &ns, &tag, 1, 1999).await;
    // The first run is untouched.
    assert_eq!(real.run_objects(&ns, "tmpl").await.len(), 5);
}

#[tokio::test]
async fn second_run_with_the_same_tag_is_refused_and_changes_nothing() {
    let Some(real) = Real::new("second_run_with_the_same_tag_is_refused_and_changes_nothing").await
    else {
        return;
    };
    let ns = real.namespace("again").await;
    let script = real.script();
    real.run(
        Cred::Admin,
        &["-n", &ns, "-t", "once", script.to_str().unwrap()],
    )
    .await
    .success();
    let before = real.snapshot(&ns, "once").await;
    assert_eq!(before.len(), 5);

    let env = real.write("e.env", "K=v\n");
    let out = spawn_with_env(&real, &ns, "once", &env, &["-w", "3"]).await;
    out.failure(7)
        .stderr_has("already exists")
        .stderr_has("tf-spawner -d --wait -t once");
    assert_eq!(real.snapshot(&ns, "once").await, before, "nothing changed");
}

#[tokio::test]
async fn a_rejection_only_the_server_makes_rolls_everything_back() {
    let Some(real) = Real::new("a_rejection_only_the_server_makes_rolls_everything_back").await
    else {
        return;
    };
    let ns = real.namespace("rollback").await;
    let env = real.write("e.env", "TOKEN=abc\n");
    // Valid YAML, a valid Pod to the client; the server refuses limits below requests.
    let template = real.write(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: tensorflow\n    resources:\n      requests: {cpu: \"2\"}\n      limits: {cpu: \"1\"}\n",
    );
    let pod_file = ["-w", "3", "--pod-file", template.to_str().unwrap()];
    let out = spawn_with_env(&real, &ns, "doomed", &env, &pod_file).await;
    out.failure(1)
        .stderr_has("doomed-worker-")
        .stderr_has("Invalid")
        .stderr_has("must be less than or equal to cpu limit");
    assert_eq!(real.run_objects(&ns, "doomed").await, Vec::<String>::new());
    // Not even unlabelled leftovers by name.
    let cm = real
        .api::<k8s_openapi::api::core::v1::ConfigMap>(&ns)
        .get_opt("doomed-script")
        .await
        .unwrap();
    assert!(cm.is_none(), "{cm:?}");
}

#[tokio::test]
async fn a_missing_namespace_is_a_clear_error() {
    let Some(real) = Real::new("a_missing_namespace_is_a_clear_error").await else {
        return;
    };
    let ns = unique("tfs-nowhere");
    let env = real.write("e.env", "K=v\n");
    let out = spawn_with_env(&real, &ns, "lost", &env, &[]).await;
    out.failure(1)
        .stderr_has(&format!("namespace '{ns}' does not exist"));
    assert!(
        !real.namespace_exists(&ns).await,
        "the namespace must not be created"
    );

    // Deleting there: the 1.20 server lists and collection-deletes in a missing
    // namespace without complaint (200, empty) and answers 405 for services; the tool
    // reports nothing to delete, naming the namespace.
    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "-d", "-t", "lost", "--ignore-not-found"],
        )
        .await;
    out.success().stdout_has(&format!(
        "nothing labelled training_attempt=lost in namespace {ns}"
    ));
    assert!(!real.namespace_exists(&ns).await);
}

#[tokio::test]
async fn a_rejected_token_is_a_clear_error() {
    let Some(real) = Real::new("a_rejected_token_is_a_clear_error").await else {
        return;
    };
    let ns = real.namespace("token").await;
    let text = std::fs::read_to_string(real.kubeconfig(Cred::TeamA)).unwrap();
    let bad: String = text
        .lines()
        .map(|l| match l.find("token:") {
            Some(at) => format!("{}token: not-a-valid-token", &l[..at]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(bad.contains("not-a-valid-token"));
    let kubeconfig = real.write("bad-kubeconfig", &bad);
    let script = real.script();
    let out = real
        .run_raw(
            &[
                "--kubeconfig".into(),
                kubeconfig.into(),
                "-n".into(),
                ns.clone().into(),
                script.into(),
            ],
            &[],
        )
        .await;
    out.failure(1).stderr_has("401");
    assert_eq!(
        real.run_objects(&ns, "tf-spawner").await,
        Vec::<String>::new()
    );
}
