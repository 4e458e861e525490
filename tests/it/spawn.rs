//! Spawning: what the API server stores, for each flag.

use serde_json::{Value, json};

use crate::support::{Env, env_var, name};

fn pods(env: &Env, ns: &str) -> Vec<Value> {
    let mut pods = env.list("pods", ns);
    pods.sort_by_key(|p| name(p).to_string());
    pods
}

#[test]
fn creates_config_map_services_and_pods_with_tf_config_for_1_2_and_5_workers() {
    for n in [1usize, 2, 5] {
        let env = Env::new();
        let out = env.spawn(&["-w", &n.to_string(), "-t", "run"]);
        out.success()
            .stdout_has(&format!(
                "run run created in namespace default (label training_attempt=run): configmap/run-script, {n} service{s}, {n} pod{s}",
                s = if n == 1 { "" } else { "s" }
            ))
            .stdout_has("tf-spawner wait run -n default")
            .stdout_has("tf-spawner logs -f run -n default")
            .stdout_has("tf-spawner status run -n default")
            .stdout_has("tf-spawner -d -t run -n default")
            .stdout_lacks("kubectl");

        let expected_hosts: Vec<String> = (0..n)
            .map(|i| format!("run-worker-{i}.default.svc:1999"))
            .collect();
        let pods = pods(&env, "default");
        assert_eq!(pods.len(), n);
        for (i, pod) in pods.iter().enumerate() {
            assert_eq!(name(pod), format!("run-worker-{i}"));
            assert_eq!(
                env.tf_config(pod),
                json!({"cluster": {"worker": expected_hosts}, "task": {"type": "worker", "index": i}})
            );
            assert_eq!(env_var(pod, "WORKER_NUMBER").unwrap(), i.to_string());
            assert_eq!(env_var(pod, "TOT_WORKERS").unwrap(), n.to_string());
            let labels = &pod["metadata"]["labels"];
            assert_eq!(labels["training_attempt"], "run");
            assert_eq!(labels["app.kubernetes.io/managed-by"], "tf-spawner");
            assert_eq!(labels["tf-spawner/replica-type"], "worker");
            assert_eq!(labels["tf-spawner/replica-index"], i.to_string());
            let c = &pod["spec"]["containers"][0];
            assert_eq!(c["name"], "tensorflow");
            assert_eq!(
                c["command"],
                json!([
                    "python",
                    "/script/wait-for-names.py",
                    "python",
                    "/script/training-script.py"
                ])
            );
            assert_eq!(
                c["ports"],
                json!([{"name": "tf-grpc", "containerPort": 1999, "protocol": "TCP"}])
            );
            assert_eq!(pod["spec"]["restartPolicy"], "Never");
            assert_eq!(
                c["volumeMounts"],
                json!([{"name": "tf-spawner-script", "mountPath": "/script", "readOnly": true}])
            );
            assert_eq!(pod["spec"]["volumes"][0]["configMap"]["name"], "run-script");
        }

        let mut services = env.list("services", "default");
        services.sort_by_key(|s| name(s).to_string());
        assert_eq!(services.len(), n);
        for (i, svc) in services.iter().enumerate() {
            assert_eq!(name(svc), format!("run-worker-{i}"));
            assert_eq!(svc["spec"]["clusterIP"], "None");
            assert_eq!(svc["spec"]["publishNotReadyAddresses"], true);
            assert_eq!(
                svc["spec"]["selector"],
                json!({"training_attempt": "run", "tf-spawner/replica-type": "worker", "tf-spawner/replica-index": i.to_string()})
            );
            assert_eq!(svc["spec"]["ports"][0]["port"], 1999);
            assert_eq!(svc["spec"]["ports"][0]["targetPort"], "tf-grpc");
            assert_eq!(svc["metadata"]["labels"]["training_attempt"], "run");
        }

        let cm = env
            .server
            .get("configmaps", "default", "run-script")
            .expect("config map");
        assert_eq!(cm["data"]["training-script.py"], crate::support::SCRIPT);
        assert_eq!(cm["metadata"]["labels"]["training_attempt"], "run");
        assert!(env.list("secrets", "default").is_empty());
    }
}

#[test]
fn default_tag_port_and_image() {
    let env = Env::new();
    env.spawn(&[]).success();
    let pod = env
        .server
        .get("pods", "default", "tf-spawner-worker-1")
        .expect("default tag, 2 workers");
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "tensorflow/tensorflow:2.15.0"
    );
    assert_eq!(
        env.tf_config(&pod)["cluster"]["worker"][1],
        "tf-spawner-worker-1.default.svc:1999"
    );
    assert_eq!(env.names("default").len(), 5);
}

#[test]
fn port_namespace_and_image_flags() {
    let env = Env::new();
    env.server.create_namespace("physics");
    env.spawn(&[
        "-p",
        "2222",
        "-n",
        "physics",
        "-i",
        "registry.example/tf:1",
        "-t",
        "x",
    ])
    .success();
    let pod = env
        .server
        .get("pods", "physics", "x-worker-0")
        .expect("pod in physics");
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "registry.example/tf:1"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["ports"][0]["containerPort"],
        2222
    );
    assert_eq!(
        env.tf_config(&pod)["cluster"]["worker"][0],
        "x-worker-0.physics.svc:2222"
    );
    let svc = env.server.get("services", "physics", "x-worker-0").unwrap();
    assert_eq!(svc["spec"]["ports"][0]["port"], 2222);
    assert!(env.names("default").is_empty());
}

#[test]
fn namespace_comes_from_the_kubeconfig_context() {
    let env = Env::new();
    env.server.create_namespace("team");
    std::fs::create_dir_all(env.path("ctx")).unwrap();
    let kubeconfig = env
        .server
        .write_kubeconfig(&env.path("ctx"), "admin", Some("team"));
    let script = env.script();
    env.run_as(&kubeconfig, &["-t", "c", script.to_str().unwrap()])
        .success();
    assert_eq!(env.list("pods", "team").len(), 2);
    // --kubeconfig wins over $KUBECONFIG.
    let out = env.run(&[
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "-t",
        "d",
        script.to_str().unwrap(),
    ]);
    out.success();
    assert!(env.server.get("pods", "team", "d-worker-0").is_some());
}

#[test]
fn template_is_kept_and_the_tf_variables_win() {
    let env = Env::new();
    let template = env.write(
        "pod.yaml",
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: ignored
  labels: {team: physics, training_attempt: wrong}
  annotations: {note: kept}
spec:
  restartPolicy: Never
  nodeSelector: {gpu: "true"}
  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
  volumes: [{name: data, emptyDir: {}}]
  containers:
    - name: sidecar
      image: busybox
      command: [sleep, "3600"]
    - name: tensorflow
      image: my/tf:2
      env:
        - {name: KEEP, value: "1"}
        - {name: TF_CONFIG, value: "overridden"}
        - {name: WORKER_NUMBER, value: "99"}
      resources: {limits: {cpu: "2"}}
      volumeMounts: [{name: data, mountPath: /data}]
"#,
    );
    env.spawn(&[
        "--pod-file",
        template.to_str().unwrap(),
        "-w",
        "1",
        "-t",
        "tpl",
    ])
    .success();
    let pod = env.server.get("pods", "default", "tpl-worker-0").unwrap();
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["nodeSelector"], json!({"gpu": "true"}));
    assert_eq!(spec["tolerations"][0]["key"], "gpu");
    assert_eq!(pod["metadata"]["labels"]["team"], "physics");
    assert_eq!(pod["metadata"]["labels"]["training_attempt"], "tpl");
    assert_eq!(pod["metadata"]["annotations"]["note"], "kept");
    let sidecar = &spec["containers"][0];
    assert_eq!(sidecar["name"], "sidecar");
    assert_eq!(sidecar["command"], json!(["sleep", "3600"]));
    assert!(
        sidecar.get("env").is_none(),
        "TF variables only go to the tensorflow container"
    );
    let tf = &spec["containers"][1];
    assert_eq!(tf["image"], "my/tf:2");
    assert_eq!(tf["resources"]["limits"]["cpu"], "2");
    let env_names: Vec<&str> = tf["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // The template's own variables first, so `$(…)` in them cannot refer to ours.
    assert_eq!(
        env_names,
        [
            "KEEP",
            "TF_SPAWNER_CLUSTER",
            "TF_CONFIG",
            "WORKER_NUMBER",
            "TOT_WORKERS",
            "PYTHONUNBUFFERED",
            "TF_SPAWNER_ATTEMPT"
        ]
    );
    assert_eq!(env_var(&pod, "WORKER_NUMBER").unwrap(), "0");
    assert_eq!(env.tf_config(&pod)["task"]["type"], "worker");
    let mounts: Vec<&str> = tf["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(mounts, ["/data", "/script"]);
    assert_eq!(spec["volumes"].as_array().unwrap().len(), 2);
}

#[test]
fn first_container_gets_the_variables_when_none_is_named_tensorflow() {
    let env = Env::new();
    let template = env.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: main\n  - name: other\n    image: busybox\n",
    );
    env.spawn(&[
        "--pod-file",
        template.to_str().unwrap(),
        "-w",
        "1",
        "-t",
        "first",
    ])
    .success();
    let pod = env.server.get("pods", "default", "first-worker-0").unwrap();
    assert_eq!(pod["spec"]["containers"][0]["name"], "main");
    assert!(env_var(&pod, "TF_CONFIG").is_some());
    assert!(pod["spec"]["containers"][1].get("env").is_none());
}

#[test]
fn gpu_template_ships_and_image_flag_overrides_it() {
    let env = Env::new();
    let gpu = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/pod-gpu.yaml");
    env.spawn(&["--pod-file", gpu, "-w", "1", "-t", "g"])
        .success();
    let pod = env.server.get("pods", "default", "g-worker-0").unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "tensorflow/tensorflow:2.15.0-gpu"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "1"
    );
    env.spawn(&["--pod-file", gpu, "-w", "1", "-t", "h", "-i", "other:1"])
        .success();
    let pod = env.server.get("pods", "default", "h-worker-0").unwrap();
    assert_eq!(pod["spec"]["containers"][0]["image"], "other:1");
}

#[test]
fn entrypoint_goes_into_the_config_map_and_runs_with_bash() {
    let env = Env::new();
    let entry = "#!/bin/bash\n# set up\nif true; then\n  echo ready\nfi\npython /script/training-script.py\n";
    let path = env.write("entry.sh", entry);
    env.spawn(&["-c", path.to_str().unwrap(), "-t", "ep"])
        .success();
    let cm = env
        .server
        .get("configmaps", "default", "ep-script")
        .unwrap();
    assert_eq!(cm["data"]["entrypoint.sh"], entry);
    // The wait for the cluster's names, in bash as the entrypoint (its image may have
    // no python), from the same ConfigMap.
    let wait = cm["data"]["wait-for-names.sh"].as_str().unwrap();
    assert!(
        wait.contains("getent ahosts") && wait.ends_with("exec \"$@\"\n"),
        "{wait}"
    );
    let pod = env.server.get("pods", "default", "ep-worker-0").unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["command"],
        json!([
            "bash",
            "/script/wait-for-names.sh",
            "bash",
            "/script/entrypoint.sh"
        ])
    );
}

#[test]
fn env_file_values_go_to_a_secret_never_into_pod_specs() {
    let env = Env::new();
    let file = env.write(
        "creds.env",
        "# S3\n\nexport S3_ENDPOINT = https://s3.example\nS3_SECRET_KEY=\"planted-secret-value\"\n",
    );
    env.spawn(&["-e", file.to_str().unwrap(), "-t", "sec"])
        .success();
    let secret = env
        .server
        .get("secrets", "default", "sec-env")
        .expect("secret");
    assert_eq!(secret["metadata"]["labels"]["training_attempt"], "sec");
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["S3_SECRET_KEY"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, b"planted-secret-value");
    for pod in env.list("pods", "default") {
        let text = pod.to_string();
        assert!(!text.contains("planted-secret-value"));
        assert_eq!(
            pod["spec"]["containers"][0]["envFrom"],
            json!([{"secretRef": {"name": "sec-env", "optional": false}}])
        );
    }
}

#[test]
fn random_tag_is_valid_printed_and_used() {
    let env = Env::new();
    let out = env.spawn(&["-r", "-t", "ignored"]);
    out.success();
    let line = out.stdout.lines().next().unwrap();
    let tag = line
        .strip_prefix("run ")
        .and_then(|l| l.split(' ').next())
        .unwrap();
    assert!(tag.starts_with(|c: char| c.is_ascii_lowercase()), "{tag}");
    assert!(
        env.server
            .get("pods", "default", &format!("{tag}-worker-0"))
            .is_some()
    );
    assert!(
        env.server
            .get("pods", "default", "ignored-worker-0")
            .is_none()
    );
}

#[test]
fn two_runs_coexist_in_one_namespace() {
    let env = Env::new();
    env.spawn(&["-t", "alpha"]).success();
    env.spawn(&["-t", "beta", "-w", "3"]).success();
    assert_eq!(env.names("default").len(), (1 + 2 + 2) + (1 + 3 + 3));
    // Each service selects only its own run's pod.
    let svc = env
        .server
        .get("services", "default", "beta-worker-0")
        .unwrap();
    assert_eq!(svc["spec"]["selector"]["training_attempt"], "beta");
}

#[test]
fn a_second_run_with_the_same_tag_is_refused_and_nothing_changes() {
    let env = Env::new();
    env.spawn(&["-t", "dup"]).success();
    let before: Vec<Value> = env.list("pods", "default");
    env.server.clear_requests();
    let out = env.spawn(&["-t", "dup", "-w", "4"]);
    // Exit 7: a pipeline tells a taken tag from an API error (1).
    out.failure(7)
        .stderr_has("run 'dup' already exists in namespace 'default'")
        .stderr_has("tf-spawner -d --wait -t dup -n default");
    assert_eq!(env.list("pods", "default"), before);
    assert!(
        env.server.requests().iter().all(|r| r.method == "GET"),
        "only reads"
    );
}

#[test]
fn dry_run_prints_the_plan_and_creates_nothing() {
    let env = Env::new();
    let file = env.write("e.env", "TOKEN=planted-dry-run-secret\n");
    let out = env.spawn(&[
        "--dry-run",
        "-w",
        "3",
        "-t",
        "dry",
        "-e",
        file.to_str().unwrap(),
    ]);
    out.success();
    assert!(env.server.requests().is_empty(), "no API call at all");
    assert!(!out.stdout.contains("planted-dry-run-secret"));
    let docs: Vec<&str> = out
        .stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect();
    assert_eq!(docs.len(), 1 + 1 + 3 + 3);
    assert!(docs[1].contains("kind: Secret") && docs[1].contains("TOKEN: <redacted>"));

    let out = env.spawn(&["--dry-run", "-w", "2", "-t", "dry", "-o", "json"]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).expect("JSON List");
    assert_eq!(list["kind"], "List");
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "Service", "Service", "Pod", "Pod"]);
}

#[test]
fn dry_run_output_is_what_gets_created() {
    let env = Env::new();
    let out = env.spawn(&["--dry-run", "-o", "json", "-t", "same"]);
    let planned: Value = serde_json::from_str(&out.stdout).unwrap();
    env.spawn(&["-t", "same"]).success();
    for item in planned["items"].as_array().unwrap() {
        let resource = format!("{}s", item["kind"].as_str().unwrap().to_lowercase());
        let stored = env
            .server
            .get(&resource, "default", name(item))
            .expect("planned object stored");
        assert_eq!(stored["metadata"]["labels"], item["metadata"]["labels"]);
        // The server adds defaults (imagePullPolicy…); everything planned is stored as planned.
        for field in [
            "command",
            "env",
            "image",
            "ports",
            "volumeMounts",
            "resources",
        ] {
            assert_eq!(
                stored["spec"]["containers"][0][field], item["spec"]["containers"][0][field],
                "{field}"
            );
        }
        assert_eq!(stored["spec"]["selector"], item["spec"]["selector"]);
        assert_eq!(stored["data"], item["data"]);
    }
}

#[test]
fn context_flag_selects_a_context() {
    let env = Env::new();
    env.server.create_namespace("ctxns");
    std::fs::create_dir_all(env.path("multi")).unwrap();
    let path = env
        .server
        .write_kubeconfig(&env.path("multi"), "admin", Some("ctxns"));
    // Add a second context pointing at the same cluster with another namespace, and make it current.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: Value = serde_saphyr::from_str(&text).unwrap();
    let mut other = doc["contexts"][0].clone();
    other["name"] = json!("other");
    other["context"]["namespace"] = json!("default");
    doc["contexts"].as_array_mut().unwrap().push(other);
    doc["current-context"] = json!("other");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    let script = env.script();
    let ctx = doc["contexts"][0]["name"].as_str().unwrap().to_string();
    env.run_as(
        &path,
        &["--context", &ctx, "-t", "cx", script.to_str().unwrap()],
    )
    .success();
    assert!(env.server.get("pods", "ctxns", "cx-worker-0").is_some());
    let out = env.run_as(
        &path,
        &["--context", "nope", "-t", "cy", script.to_str().unwrap()],
    );
    out.failure(1).stderr_has("nope");
}

/// Arguments after `--` are the TF container's `args`: argv words after the command,
/// no shell in between, the same in `--dry-run`.
#[test]
fn arguments_after_double_dash_are_the_containers_args() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    let odd = "it's \"quoted\" `x`; rm -rf /";
    let args = ["--epochs", "3", odd];
    let mut all = vec!["-w", "1", "-t", "ar", script, "--"];
    all.extend(args);
    env.run(&all).success();
    let pod = env.server.get("pods", "default", "ar-worker-0").unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["command"],
        json!([
            "python",
            "/script/wait-for-names.py",
            "python",
            "/script/training-script.py"
        ])
    );
    assert_eq!(c["args"], json!(args));

    let entry = env.write(
        "entry.sh",
        "exec python /script/training-script.py \"$@\"\n",
    );
    let mut all = vec!["-w", "1", "-t", "ae", "-c", entry.to_str().unwrap(), script];
    all.extend(["--", "--epochs", "3"]);
    env.run(&all).success();
    let pod = env.server.get("pods", "default", "ae-worker-0").unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["command"],
        json!([
            "bash",
            "/script/wait-for-names.sh",
            "bash",
            "/script/entrypoint.sh"
        ])
    );
    assert_eq!(c["args"], json!(["--epochs", "3"]));

    let out = env.run(&[
        "--dry-run",
        "-o",
        "json",
        "-t",
        "dr",
        script,
        "--",
        "--lr",
        "0.1",
    ]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let pod = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Pod")
        .unwrap();
    assert_eq!(pod["spec"]["containers"][0]["args"], json!(["--lr", "0.1"]));
    // Without `--`, no args.
    env.spawn(&["-w", "1", "-t", "na"]).success();
    let pod = env.server.get("pods", "default", "na-worker-0").unwrap();
    assert!(pod["spec"]["containers"][0].get("args").is_none());
}

/// Every `$` of the arguments after `--` (of the script or of a `-c` entrypoint) and of a
/// script path under `--dir` is stored doubled: the kubelet's expansion of `$(VAR)` and
/// `$$` in `command` and `args` then gives the process what was typed, never a variable
/// of the pod (the run's Secret, TF_SPAWNER_CLUSTER). TF_CONFIG keeps its one reference,
/// which is meant to be expanded.
#[test]
fn dollars_reach_the_process_as_typed_not_expanded_by_the_kubelet() {
    let env = Env::new();
    let secrets = env.write("s.env", "SECRET_KEY=hunter2\n");
    let code = env.path("code");
    std::fs::create_dir_all(&code).unwrap();
    let script = code.join("tr$(HOME)a$$in.py");
    std::fs::write(&script, "pass\n").unwrap();
    let typed = [
        "a$$b",
        "$(TF_SPAWNER_CLUSTER)",
        "$(SECRET_KEY)",
        "$HOME",
        "x$",
    ];
    let (code, script) = (code.to_str().unwrap(), script.to_str().unwrap());
    let secrets = secrets.to_str().unwrap();
    let mut all = vec![
        "-w", "1", "-t", "dl", "-e", secrets, "--dir", code, script, "--",
    ];
    all.extend(typed);
    env.run(&all).success();
    // What a kubelet would make of the stored words, with the pod's variables defined.
    let defined = [
        ("SECRET_KEY", "hunter2"),
        ("TF_SPAWNER_CLUSTER", "{\"worker\": []}"),
        ("HOME", "/root"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    let pod = env.server.get("pods", "default", "dl-worker-0").unwrap();
    let c = &pod["spec"]["containers"][0];
    let escaped: Vec<String> = typed.iter().map(|a| a.replace('$', "$$")).collect();
    assert_eq!(words(&c["args"]), escaped);
    let run: Vec<String> = words(&c["args"])
        .iter()
        .map(|a| crate::support::expand(a, &defined))
        .collect();
    assert_eq!(run, typed);
    let command = words(&c["command"]);
    let path = command.last().unwrap();
    assert_eq!(path, "/tf-spawner-work/tr$$(HOME)a$$$$in.py");
    assert_eq!(
        crate::support::expand(path, &defined),
        "/tf-spawner-work/tr$(HOME)a$$in.py"
    );
    assert!(
        env_var(&pod, "TF_CONFIG")
            .unwrap()
            .starts_with("{\"cluster\":$(TF_SPAWNER_CLUSTER),"),
        "{pod}"
    );
    assert_eq!(env.tf_config(&pod)["task"]["type"], "worker");

    let entry = env.write(
        "entry.sh",
        "exec python /script/training-script.py \"$@\"\n",
    );
    let plain = env.script();
    let mut all = vec!["-w", "1", "-t", "de", "-c", entry.to_str().unwrap()];
    all.extend([plain.to_str().unwrap(), "--"]);
    all.extend(typed);
    env.run(&all).success();
    let pod = env.server.get("pods", "default", "de-worker-0").unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        words(&c["command"]),
        [
            "bash",
            "/script/wait-for-names.sh",
            "bash",
            "/script/entrypoint.sh"
        ]
    );
    assert_eq!(words(&c["args"]), escaped);
}

/// `--dir repo/proj` ships what git would commit: the repository root's `.gitignore`,
/// its `.git/info/exclude` and the user's global excludes keep `secrets.json`, `*.key`,
/// `*.pem` and `data/` home (today's main shipped them to the ConfigMap, which the
/// `view` role reads); one line says how many were left out, `-v` lists them.
#[test]
fn dir_in_a_repository_ships_nothing_git_ignores() {
    use base64::Engine;
    let env = Env::new();
    for (path, text) in [
        ("repo/.git/HEAD", "ref: refs/heads/main\n"),
        ("repo/.git/info/exclude", "*.key\n"),
        ("repo/.gitignore", "secrets.json\ndata/\n"),
        (".config/git/ignore", "*.pem\n"),
        ("repo/proj/train.py", "print(1)\n"),
        ("repo/proj/model.py", "X = 1\n"),
        ("repo/proj/secrets.json", "{\"token\": \"s3cret\"}"),
        ("repo/proj/deploy.key", "KEY"),
        ("repo/proj/tls.pem", "PEM"),
        ("repo/proj/data/rows.csv", "1,2"),
    ] {
        std::fs::create_dir_all(env.path(path).parent().unwrap()).unwrap();
        env.write(path, text);
    }
    let proj = env.path("repo/proj");
    let script = proj.join("train.py");
    let (proj, script) = (proj.to_str().unwrap(), script.to_str().unwrap());
    let out = env.run(&["-w", "1", "-t", "gi", "--dir", proj, script]);
    out.success()
        .stderr_has("4 files or directories left out")
        .stderr_has("-v lists them");
    let cm = env
        .server
        .get("configmaps", "default", "gi-script")
        .unwrap();
    let tgz = base64::engine::general_purpose::STANDARD
        .decode(cm["binaryData"]["dir.tar.gz"].as_str().unwrap())
        .unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&tgz[..]));
    let mut names: Vec<String> = tar
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["model.py", "train.py"]);
    let out = env.run(&["-v", "-w", "1", "-t", "gi2", "--dir", proj, script]);
    out.success()
        .stderr_has("left out data/")
        .stderr_has("left out deploy.key")
        .stderr_has("left out secrets.json")
        .stderr_has("left out tls.pem");
}

/// `--dir` ships the script's directory (what the ignore files exclude left out) in the
/// ConfigMap; the pod unpacks it and runs the script from there.
#[test]
fn dir_ships_the_code_without_what_is_excluded() {
    use base64::Engine;
    let env = Env::new();
    let code = env.path("code");
    std::fs::create_dir_all(code.join("data")).unwrap();
    std::fs::write(code.join("train.py"), "import helpers\n").unwrap();
    std::fs::write(code.join("helpers.py"), "X = 1\n").unwrap();
    std::fs::write(code.join("data/big.bin"), vec![1u8; 3 << 20]).unwrap();
    std::fs::write(code.join(".tfspawnerignore"), "data/\n").unwrap();
    let script = code.join("train.py");
    let (code, script) = (code.to_str().unwrap(), script.to_str().unwrap());
    env.run(&["-w", "1", "-t", "dir", "--dir", code, script, "--", "-v"])
        .success();
    let cm = env
        .server
        .get("configmaps", "default", "dir-script")
        .unwrap();
    let tgz = base64::engine::general_purpose::STANDARD
        .decode(cm["binaryData"]["dir.tar.gz"].as_str().unwrap())
        .unwrap();
    assert!(tgz.len() < 4096, "{} bytes", tgz.len());
    let pod = env.server.get("pods", "default", "dir-worker-0").unwrap();
    let c = &pod["spec"]["containers"][0];
    let command: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        command[..4],
        ["python", "/script/wait-for-names.py", "python", "-c"]
    );
    assert_eq!(command[5..], ["python", "/tf-spawner-work/train.py"]);
    assert_eq!(c["args"], json!(["-v"]));
    assert_eq!(
        env_var(&pod, "TF_SPAWNER_WORK_DIR").as_deref(),
        Some("/tf-spawner-work")
    );

    // Not excluded, the data is too big: a usage error naming the file and the ways out,
    // and nothing created.
    std::fs::remove_file(env.path("code/.tfspawnerignore")).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..3_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(env.path("code/data/big.bin"), noise).unwrap();
    env.run(&["-w", "1", "-t", "big", "--dir", code, script])
        .failure(2)
        .stderr_has("data/big.bin")
        .stderr_has(".tfspawnerignore")
        .stderr_has("image");
    assert!(env.names("default").iter().all(|n| !n.contains("big")));
}
