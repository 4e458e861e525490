//! TensorFlow in running pods: the examples train on the one-node cluster's image
//! `tf-spawner.local/tensorflow:2.21` (`tools/one-node/tensorflow-image.sh`: the Python
//! image plus the pinned tensorflow-cpu and tf-keras), with the template
//! `tools/one-node/pod-tensorflow.yaml`, whose hostPath volume (this test's temp dir here:
//! the node is this machine) brings the data set in and the chief's model out. Each run
//! reaches its verdict with `wait`; then `-d --wait` leaves nothing.
//!
//! Skipped (with a notice) when no node has the image, unless `TF_SPAWNER_PODS_TF_IMAGE`
//! names it: then it must be there (`.ci/run` sets it).

use std::io::Write;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret, Service};
use kube::api::{Api, ListParams};

use crate::support::{Cluster, repo_file, tag};

#[path = "../common/tensorflow.rs"]
pub(crate) mod tf_common;
use tf_common::{epochs, is_keras_file, series, write_synthetic_mnist};

/// Names the TensorFlow image, and makes these tests fail rather than skip without it.
const IMAGE_VAR: &str = "TF_SPAWNER_PODS_TF_IMAGE";
/// The image and the host directory named in `tools/one-node/pod-tensorflow.yaml`.
const TEMPLATE_IMAGE: &str = "tf-spawner.local/tensorflow:2.21";
const TEMPLATE_DATA: &str = "/tmp/tf-spawner-data";
/// Importing TensorFlow and wiring the tasks takes a while on a busy 2-CPU node.
const TF_TIMEOUT: &str = "300s";

/// This test's copy of the TensorFlow template (its temp dir at `/data`), or `None` (with
/// a notice) when no node has the image and `TF_SPAWNER_PODS_TF_IMAGE` is unset.
pub(crate) async fn tensorflow_template(c: &Cluster, test: &str) -> Option<PathBuf> {
    let required = std::env::var(IMAGE_VAR).ok().filter(|v| !v.is_empty());
    let image = required
        .clone()
        .unwrap_or_else(|| TEMPLATE_IMAGE.to_string());
    let nodes = Api::<Node>::all(c.client.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes");
    let on_a_node = nodes
        .items
        .iter()
        .filter_map(|n| n.status.as_ref()?.images.as_ref())
        .flatten()
        .any(|i| i.names.iter().flatten().any(|name| name == &image));
    if !on_a_node {
        assert!(
            required.is_none(),
            "{IMAGE_VAR}={image}: no node has it (tools/one-node/tensorflow-image.sh, then start.sh)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: no node has {image} (tools/one-node/tensorflow-image.sh builds it; .ci/run sets {IMAGE_VAR})"
        );
        return None;
    }
    let text = std::fs::read_to_string(repo_file("tools/one-node/pod-tensorflow.yaml"))
        .expect("read tools/one-node/pod-tensorflow.yaml");
    assert!(text.contains(TEMPLATE_IMAGE) && text.contains(TEMPLATE_DATA));
    let dir = c.dir.path().to_str().expect("UTF-8 temp dir");
    let text = text
        .replace(TEMPLATE_DATA, dir)
        .replace(TEMPLATE_IMAGE, &image);
    Some(c.write("pod-tensorflow.yaml", &text))
}

/// Spawns run `tag` of `script` with `template` and `extra` flags, waits for its verdict
/// (saving every pod's log in `DIR/logs`) and returns the saved log of each task.
async fn train(c: &Cluster, t: &str, template: &Path, extra: &[&str], script: &str) -> Logs {
    let mut args = vec!["-t", t, "--pod-file", template.to_str().unwrap()];
    args.extend_from_slice(extra);
    let script = repo_file(script);
    args.push(script.to_str().unwrap());
    c.run(&args).await.success();
    let saved = c.dir.path().join("logs");
    let out = c
        .run(&[
            "wait",
            "-t",
            t,
            "--timeout",
            TF_TIMEOUT,
            "--save-logs",
            saved.to_str().unwrap(),
        ])
        .await;
    if out.code != 0 {
        let logs = c.run(&["logs", "-t", t]).await;
        panic!("{out:#?}\nevery task's log:\n{}", logs.stdout);
    }
    out.success().stdout_has(&format!("run {t}: Succeeded"));
    Logs {
        dir: saved,
        tag: t.to_string(),
        wait: out.stdout,
    }
}

/// The logs `wait --save-logs` kept, one file per pod, and what `wait` printed.
struct Logs {
    dir: PathBuf,
    tag: String,
    wait: String,
}

impl Logs {
    fn of(&self, task: &str) -> String {
        let path = self.dir.join(format!("{}-{task}.log", self.tag));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("saved log {}: {e}", path.display()))
    }
}

/// `-d --wait` returns once every pod is gone, and nothing of the run is left.
async fn delete_leaves_nothing(c: &Cluster, t: &str) {
    c.run(&["-d", "-y", "--wait", "--timeout", "180s", "-t", t])
        .await
        .success();
    let lp = ListParams::default().labels(&format!("training_attempt={t}"));
    let ns = &c.namespace;
    let left = [
        Api::<Pod>::namespaced(c.client.clone(), ns)
            .list(&lp)
            .await
            .map(|l| l.items.len()),
        Api::<Service>::namespaced(c.client.clone(), ns)
            .list(&lp)
            .await
            .map(|l| l.items.len()),
        Api::<ConfigMap>::namespaced(c.client.clone(), ns)
            .list(&lp)
            .await
            .map(|l| l.items.len()),
        Api::<Secret>::namespaced(c.client.clone(), ns)
            .list(&lp)
            .await
            .map(|l| l.items.len()),
    ];
    let left: Vec<usize> = left.into_iter().map(|n| n.expect("list")).collect();
    assert_eq!(
        left,
        [0, 0, 0, 0],
        "pods, services, config maps, secrets left"
    );
}

/// mnist.py on 2 pods with MultiWorkerMirroredStrategy: both workers train one model (the
/// same loss and accuracy each epoch), the chief (worker 0) saves it to /data/model.
#[tokio::test]
async fn mnist_trains_on_two_pods_and_the_chief_saves_the_model() {
    let Some(c) = Cluster::new("tf-mnist").await else {
        return;
    };
    let Some(template) = tensorflow_template(&c, "tf_mnist").await else {
        return;
    };
    write_synthetic_mnist(&c.dir.path().join("mnist.npz"), 512, 128);
    let env = c.write(
        "mnist.env",
        "MNIST_NPZ=/data/mnist.npz\nMODEL_DIR=/data/model\nEPOCHS=2\n",
    );
    let t = tag("mnist");
    // Under a CPU and memory limit, as a quota on limits demands (docs/resources.md).
    let env_flag = [
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
        "--cpu",
        "500m",
        "--memory",
        "2Gi",
    ];
    let logs = train(&c, &t, &template, &env_flag, "examples/mnist.py").await;
    let pods = c.pods(&t).await;
    assert_eq!(pods.len(), 2);
    for pod in pods {
        let limits = pod.spec.unwrap().containers[0]
            .resources
            .clone()
            .unwrap()
            .limits
            .unwrap();
        assert_eq!(
            (limits["cpu"].0.as_str(), limits["memory"].0.as_str()),
            ("500m", "2Gi")
        );
    }

    let mut trained = Vec::new();
    for worker in ["worker-0", "worker-1"] {
        let text = logs.of(worker);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            text.contains(&format!("{worker}: 2 replicas in sync, global batch 128")),
            "{text}"
        );
        assert!(lines.contains(&"Epoch 2/2"), "{text}");
        let done = epochs(&lines);
        assert_eq!(done.len(), 2, "{worker} trained 2 epochs: {text}");
        trained.push((
            series(&done, "loss", &lines),
            series(&done, "accuracy", &lines),
        ));
    }
    assert_eq!(trained[0], trained[1], "one model on both workers");
    // `wait` followed worker 0's log: its training line went on to epoch 2, and the
    // report has the last epoch's metrics.
    let (loss, accuracy) = (trained[0].0[1], trained[0].1[1]);
    let shown: Vec<&str> = logs
        .wait
        .lines()
        .filter(|l| l.starts_with("training  epoch "))
        .collect();
    // (Each printed once per epoch's start and end; epoch 1's start may come in one
    // piece with its end if the stream opened late.)
    let epochs: Vec<&str> = shown
        .iter()
        .map(|l| &l["training  epoch ".len()..][..1])
        .collect();
    assert!(
        epochs.windows(2).all(|w| w[0] <= w[1]) && epochs.last() == Some(&"2"),
        "{}",
        logs.wait
    );
    let report = logs
        .wait
        .lines()
        .find(|l| l.starts_with("training: 2 of 2 epochs seen to end, "))
        .unwrap_or_else(|| panic!("no report: {}", logs.wait));
    assert!(report.contains(&format!("; final loss {loss}")), "{report}");
    // `status` reads the same from the end of worker 0's log, the run over.
    let status = c.run(&["status", "-t", &t, "-o", "json"]).await;
    status.success();
    let json: serde_json::Value = serde_json::from_str(&status.stdout).expect("JSON");
    let p = &json["progress"];
    assert_eq!(
        (p["epoch"].as_u64(), p["epochs"].as_u64()),
        (Some(2), Some(2)),
        "{json:#}"
    );
    assert_eq!(p["epochs_done"], 2, "{json:#}");
    assert_eq!(p["epoch_metrics"]["loss"].as_f64(), Some(loss), "{json:#}");
    assert_eq!(
        p["epoch_metrics"]["accuracy"].as_f64(),
        Some(accuracy),
        "{json:#}"
    );
    assert_eq!(p["seconds_left"], 0, "{json:#}");
    assert!(
        logs.of("worker-0")
            .contains("worker-0: model saved to /data/model/mnist.keras")
    );
    assert!(!logs.of("worker-1").contains("model saved"));
    // The pod wrote it through the hostPath volume: the file is on this machine.
    let saved = c.dir.path().join("model/mnist.keras");
    assert!(
        is_keras_file(&saved),
        "{} is a .keras model",
        saved.display()
    );

    delete_leaves_nothing(&c, &t).await;
}

/// parameter_server.py on 4 pods: the chief coordinates, the variables live on the
/// parameter server, 2 workers run the steps; the chief's exit 0 decides the run while the
/// others still serve, and `-d --wait` stops them (they exit on SIGTERM) and leaves nothing.
#[tokio::test]
async fn parameter_server_strategy_trains_on_four_pods() {
    let Some(c) = Cluster::new("tf-ps").await else {
        return;
    };
    let Some(template) = tensorflow_template(&c, "tf_parameter_server").await else {
        return;
    };
    // The model lands in the run's output folder, the volume (no MODEL_DIR), as mnist.py's.
    let claim = crate::after::Claim::new(&c).await;
    let env = c.write("ps.env", "EPOCHS=3\nSTEPS_PER_EPOCH=10\n");
    let t = tag("ps");
    let flags = [
        "--volume",
        "out",
        "--strategy",
        "parameter-server",
        "--ps",
        "1",
        "-w",
        "2",
        "-e",
        env.to_str().unwrap(),
    ];
    let logs = train(&c, &t, &template, &flags, "examples/parameter_server.py").await;

    let chief = logs.of("chief-0");
    let lines: Vec<&str> = chief.lines().collect();
    assert!(
        lines.contains(&"chief: variables on /job:ps/replica:0/task:0/device:CPU:0"),
        "{chief}"
    );
    let done = epochs(&lines);
    assert_eq!(done.len(), 3, "3 epochs: {chief}");
    let loss = series(&done, "loss", &lines);
    assert!(loss[2] < loss[0], "the loss went down: {loss:?}");
    assert!(
        chief.contains("chief: trained 3 epochs of 10 steps with 1 ps; loss "),
        "{chief}"
    );
    // The run's folder on the volume: /output/TAG ($TF_SPAWNER_OUTPUT_DIR).
    let said = format!("chief: model saved to /output/{t}/model/parameter_server.keras");
    assert!(lines.contains(&said.as_str()), "{chief}");
    let saved = claim
        .dir
        .path()
        .join(&t)
        .join("model/parameter_server.keras");
    assert!(
        is_keras_file(&saved),
        "{} is a .keras model",
        saved.display()
    );
    for task in ["ps-0", "worker-0", "worker-1"] {
        let serving = format!("{task}: serving the coordinator at grpc://{t}-{task}.");
        assert!(logs.of(task).contains(&serving), "{serving:?}");
    }

    delete_leaves_nothing(&c, &t).await;
}

/// mnist.py resumes on pods: a run whose worker 1 fails after 2 of 4 epochs (exit 42,
/// TF_SPAWNER_FAIL_CODE) leaves the chief's BackupAndRestore backup on the shared volume
/// (the template's hostPath, BACKUP_DIR=/data/backup: what `--volume` gives at
/// $TF_SPAWNER_OUTPUT_DIR/backup); after `-d`, the same run spawned again, without the
/// failure, on new pods restores it: both workers say they resume from epoch 3, Keras
/// trains epochs 3 and 4 only, the chief saves the model, and the backups (a folder per
/// start: `gen-0`, then `gen-1` seeded from it) are deleted.
#[tokio::test]
async fn mnist_resumes_on_new_pods_from_the_backup_on_the_volume() {
    let Some(c) = Cluster::new("tf-resume").await else {
        return;
    };
    let Some(template) = tensorflow_template(&c, "tf_resume").await else {
        return;
    };
    write_synthetic_mnist(&c.dir.path().join("mnist.npz"), 512, 128);
    let common =
        "MNIST_NPZ=/data/mnist.npz\nMODEL_DIR=/data/model\nBACKUP_DIR=/data/backup\nEPOCHS=4\n";
    let failing = c.write(
        "fail.env",
        &format!(
            "{common}TF_SPAWNER_FAIL_TASK=worker-1\nTF_SPAWNER_FAIL_AFTER=2\nTF_SPAWNER_FAIL_CODE=42\n"
        ),
    );
    let t = tag("resume");
    let mut args = vec!["-t", &t, "--pod-file", template.to_str().unwrap()];
    args.extend(["-w", "2", "-e", failing.to_str().unwrap()]);
    let script = repo_file("examples/mnist.py");
    args.push(script.to_str().unwrap());
    c.run(&args).await.success();
    let out = c.run(&["wait", "-t", &t, "--timeout", TF_TIMEOUT]).await;
    assert_eq!(out.code, 3, "{out:#?}");
    // The verdict names the first failure the watch sees: worker 1's exit 42, or, when
    // the kubelet reports it later (seen once on a v1.20 node), worker 0's all-reduce
    // aborted by worker 1 leaving.
    let worker_1 = format!("pod {t}-worker-1 (worker-1) failed: exit code 42");
    let worker_0 = format!("pod {t}-worker-0 (worker-0) failed: exit code 1");
    assert!(
        out.stderr.contains(&worker_1)
            || (out.stderr.contains(&worker_0) && out.stderr.contains("Collective ops is aborted")),
        "{out:#?}"
    );
    let backup = c.dir.path().join("backup");
    assert!(
        backup.join("gen-0/chief/checkpoint").is_file(),
        "the chief's backup is on the volume, in the first start's folder"
    );
    delete_leaves_nothing(&c, &t).await;

    let env = c.write("resume.env", common);
    let logs = train(
        &c,
        &t,
        &template,
        &["-w", "2", "-e", env.to_str().unwrap()],
        "examples/mnist.py",
    )
    .await;
    for worker in ["worker-0", "worker-1"] {
        let text = logs.of(worker);
        assert!(
            text.contains(&format!(
                "{worker}: resuming from epoch 3 of 4 (backup in /data/backup)"
            )),
            "{text}"
        );
        let starts: Vec<&str> = text.lines().filter(|l| l.starts_with("Epoch ")).collect();
        assert_eq!(starts, ["Epoch 3/4", "Epoch 4/4"], "{text}");
    }
    assert!(is_keras_file(&c.dir.path().join("model/mnist.keras")));
    let left: Vec<_> = std::fs::read_dir(&backup)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the backups were deleted when training completed: {left:?}"
    );
    delete_leaves_nothing(&c, &t).await;
}

/// Issue 45: the `train.py` that `tf-spawner init` writes trains as written on 2 pods of
/// the TensorFlow image, shipped with its project (`dir: .` of the `tf-spawner.yaml` it
/// writes beside it): both workers train the same 3 Keras epochs (synthetic data, nothing
/// to download) and the chief saves the model.
#[tokio::test]
async fn the_train_py_of_init_trains_on_two_pods() {
    let Some(c) = Cluster::new("tf-init").await else {
        return;
    };
    let Some(template) = tensorflow_template(&c, "tf_init").await else {
        return;
    };
    c.run(&["init"]).await.success();
    let t = tag("init");
    let args = [
        "-t",
        &t,
        "--pod-file",
        template.to_str().unwrap(),
        "train.py",
    ];
    c.run(&args)
        .await
        .success()
        .stdout_has(&format!("run {t} created in namespace"));
    let saved = c.dir.path().join("logs");
    let out = c
        .run(&[
            "wait",
            &t,
            "--timeout",
            TF_TIMEOUT,
            "--save-logs",
            saved.to_str().unwrap(),
        ])
        .await;
    if out.code != 0 {
        let logs = c.run(&["logs", "-t", &t]).await;
        panic!("{out:#?}\nevery task's log:\n{}", logs.stdout);
    }
    out.success().stdout_has(&format!("run {t}: Succeeded"));
    let logs = Logs {
        dir: saved,
        tag: t.clone(),
        wait: out.stdout,
    };
    let mut losses = Vec::new();
    for worker in ["worker-0", "worker-1"] {
        let text = logs.of(worker);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"Epoch 3/3"), "{text}");
        let done = epochs(&lines);
        assert_eq!(done.len(), 3, "{text}");
        losses.push(series(&done, "loss", &lines));
    }
    assert_eq!(losses[0], losses[1], "one model, all-reduced");
    assert!(
        logs.of("worker-0")
            .contains("train.py: model saved to /tmp/train/model/model.keras"),
        "{}",
        logs.of("worker-0")
    );
    assert!(logs.wait.contains("training"), "{}", logs.wait);
    delete_leaves_nothing(&c, &t).await;
}
