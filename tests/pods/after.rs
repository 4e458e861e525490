//! Issue 24, "After the training", on running pods: a run writes under `--volume`'s
//! claim, `cp` brings the files home through a helper pod (exec + tar), `wait` and
//! `status` say how long it took, `tensorboard` forwards a local port to a pod of the
//! run, and `-d` removes the helper pods. The claim is a static hostPath
//! PersistentVolume bound to a claim of the test's namespace ([`Claim`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use std::os::unix::fs::PermissionsExt;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::support::{Cluster, RUN_TIMEOUT, tag};

#[path = "../common/service_account.rs"]
pub mod service_account;

/// A static hostPath PersistentVolume (cluster-scoped, deleted on drop) and claim
/// `out` bound to it, ReadWriteOnce, in the test's namespace. The directory is on this
/// machine, which is the node.
pub(crate) struct Claim {
    pv: String,
    pub(crate) dir: tempfile::TempDir,
    /// A client is tied to the runtime that made it: drop makes its own from this.
    config: kube::Config,
}

impl Claim {
    pub(crate) async fn new(c: &Cluster) -> Claim {
        let dir = tempfile::Builder::new()
            .prefix("tf-spawner-pv-")
            .tempdir()
            .expect("hostPath dir");
        let pv = format!("{}-out", c.namespace);
        let volume: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": pv, "labels": {"tf-spawner-test": "pods"}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": dir.path(), "type": "Directory"},
                "claimRef": {"namespace": c.namespace, "name": "out"}
            }
        }))
        .unwrap();
        Api::<PersistentVolume>::all(c.client.clone())
            .create(&PostParams::default(), &volume)
            .await
            .expect("create the PersistentVolume");
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "out"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "1Gi"}}
            }
        }))
        .unwrap();
        let claims = Api::<PersistentVolumeClaim>::namespaced(c.client.clone(), &c.namespace);
        claims
            .create(&PostParams::default(), &claim)
            .await
            .expect("create the claim");
        c.eventually("the claim bound", Duration::from_secs(60), || async {
            let found = claims.get("out").await.ok()?;
            (found.status?.phase.as_deref() == Some("Bound")).then_some(())
        })
        .await;
        let file = kube::config::Kubeconfig::read_from(&c.kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .expect("admin config");
        Claim { pv, dir, config }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let config = self.config.clone();
        let pv = self.pv.clone();
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            runtime.block_on(async move {
                if let Ok(client) = kube::Client::try_from(config) {
                    let _ = Api::<PersistentVolume>::all(client)
                        .delete(&pv, &DeleteParams::default())
                        .await;
                }
            });
        });
        let _ = done.join();
    }
}

/// The chief (worker 0) writes a "model" directory and a summary file under the volume.
const WRITER: &str = r#"
import json, os, time
out = os.environ["TF_SPAWNER_OUTPUT_DIR"]
task = json.loads(os.environ["TF_CONFIG"])["task"]
time.sleep(2)
if task["type"] == "worker" and task["index"] == 0:
    os.makedirs(os.path.join(out, "model", "variables"))
    with open(os.path.join(out, "model", "saved_model.pb"), "wb") as f:
        f.write(bytes(range(256)) * 4096)
    with open(os.path.join(out, "model", "variables", "variables.index"), "w") as f:
        f.write("index\n")
    os.symlink("/etc/passwd", os.path.join(out, "model", "link"))
    os.makedirs(os.path.join(out, "logs", "train"))
    with open(os.path.join(out, "logs", "train", "events.out.tfevents.1.host"), "w") as f:
        f.write("summary\n")
print("wrote under", out, flush=True)
"#;

/// Makes the test's namespace enforce Pod Security `restricted`.
async fn restricted(c: &Cluster) {
    let patch =
        json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    Api::<Namespace>::all(c.client.clone())
        .patch(&c.namespace, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("label the namespace");
}

async fn helper_pods(c: &Cluster, tag: &str) -> Vec<String> {
    c.pods(tag)
        .await
        .into_iter()
        .filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("tf-spawner/helper"))
        })
        .filter_map(|p| p.metadata.name)
        .collect()
}

#[tokio::test]
async fn a_run_writes_to_its_volume_and_cp_brings_the_files_home() {
    let Some(c) = Cluster::new("after-cp").await else {
        return;
    };
    let claim = Claim::new(&c).await;
    let t = tag("vol");
    let script = c.write("writer.py", WRITER);
    let spawned = c.spawn(&t, &script, &["-w", "2", "--volume", "out"]).await;
    spawned.stderr_has("note: persistentvolumeclaim 'out' is ReadWriteOnce");
    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    out.success()
        .stdout_has(&format!("run {t}: Succeeded\ntook "))
        .stdout_has("to worker-0's end");
    // The file the pod wrote is on the node's disk, where the claim is.
    // In the run's own folder of the claim (its tag).
    assert!(
        claim
            .dir
            .path()
            .join(&t)
            .join("model/saved_model.pb")
            .is_file()
    );

    let home = c.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let copied = c
        .run(&["cp", "-t", &t, "model", home.to_str().unwrap()])
        .await;
    copied
        .success()
        .stdout_has("copied model (2 files, 1048582 bytes) to ")
        .stderr_has("note: skipped model/link (a link)");
    let model = home.join("model");
    assert_eq!(
        std::fs::read(model.join("saved_model.pb")).unwrap(),
        [0u8..=255]
            .into_iter()
            .flatten()
            .collect::<Vec<u8>>()
            .repeat(4096)
    );
    assert_eq!(
        std::fs::read_to_string(model.join("variables/variables.index")).unwrap(),
        "index\n"
    );
    assert!(model.join("link").symlink_metadata().is_err());

    // A path that is not there: a clear error, nothing written, the helper gone.
    let missing = c
        .run(&["cp", "-t", &t, "/output/nothing", home.to_str().unwrap()])
        .await;
    missing.failure(1).stderr_has(
        "error: nothing: no such file or directory in the run's volume (claim 'out' at /output)",
    );
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert_eq!(entries, [model], "only the first copy is there");
    assert!(helper_pods(&c, &t).await.is_empty(), "cp deletes its pods");

    // The report comes from the container states.
    let status = c.run(&["status", "-t", &t, "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(&status.success().stdout).unwrap();
    assert!(json["duration_seconds"].as_u64().is_some(), "{json:#}");
    for pod in json["pods"].as_array().unwrap() {
        let took = pod["duration_seconds"]
            .as_u64()
            .expect("each task's duration");
        assert!((1..120).contains(&took), "{pod:#}");
        assert!(pod["started_at"].is_string() && pod["finished_at"].is_string());
    }
}

/// Issue 49, item 7: a run's life with nothing but `examples/rbac.yaml`'s Role, through
/// its ServiceAccount's token: spawn with `--volume` (persistentvolumeclaims), wait, `cp`
/// (a helper pod and `pods/exec`), `tensorboard` (`pods/portforward`), `-d`. No line
/// says a right was missing.
#[tokio::test]
async fn cp_and_tensorboard_work_under_the_shipped_role() {
    let Some(mut c) = Cluster::new("after-rbac").await else {
        return;
    };
    let _claim = Claim::new(&c).await;
    service_account::apply_role(&c.client, &c.namespace).await;
    c.kubeconfig =
        service_account::kubeconfig(&c.client, &c.kubeconfig, &c.namespace, c.dir.path()).await;
    let t = tag("rbac");
    let script = c.write("writer.py", WRITER);
    let forbidden = |out: &crate::support::Output| {
        assert!(!out.stderr.to_lowercase().contains("forbidden"), "{out:#?}");
    };
    let spawned = c.spawn(&t, &script, &["-w", "1", "--volume", "out"]).await;
    forbidden(&spawned);
    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    out.success().stdout_has(&format!("run {t}: Succeeded"));
    forbidden(&out);
    let home = c.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let copied = c
        .run(&["cp", "-t", &t, "model", home.to_str().unwrap()])
        .await;
    copied.success().stdout_has("copied model (2 files");
    forbidden(&copied);
    assert!(home.join("model/saved_model.pb").is_file());

    // tensorboard (pods/portforward, and patch on its pod's sessions), on the
    // stand-in TensorBoard pod (made as admin: the image has no tensorboard).
    Api::<Pod>::namespaced(c.client.clone(), &c.namespace)
        .create(
            &PostParams::default(),
            &stand_in(&t, &c.namespace, "tf-spawner.local/python:3.11"),
        )
        .await
        .expect("create the stand-in");
    let mut child = c.start(&["tensorboard", "-t", &t, "--timeout", "120s"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let port: u16 = tokio::time::timeout(Duration::from_secs(150), async {
        loop {
            let line = stdout.next_line().await.unwrap().expect("a line on stdout");
            if let Some(rest) = line.strip_prefix("TensorBoard: http://127.0.0.1:") {
                return rest.split('/').next().unwrap().parse().unwrap();
            }
        }
    })
    .await
    .expect("the URL within 150 s");
    let listing = get(port, "/model/").await;
    assert!(listing.contains("saved_model.pb"), "{listing}");
    let pid = child.id().expect("pid") as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let ended = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("ends after Ctrl-C")
        .unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert!(ended.status.success(), "{stderr}");
    assert!(!stderr.to_lowercase().contains("forbidden"), "{stderr}");

    let out = c.run(&["-d", "-y", "-t", &t]).await;
    out.success();
    forbidden(&out);
}

/// A stand-in for TensorBoard (the Python image has none): an HTTP server listing the
/// run's volume, as the run's TensorBoard pod, which `tensorboard` then reuses. Labelled
/// as tf-spawner labels its helper pods (`list` selects tf-spawner's pods by
/// `app.kubernetes.io/managed-by`).
fn stand_in(tag: &str, namespace: &str, image: &str) -> Pod {
    let labels = BTreeMap::from([
        ("training_attempt", tag),
        ("tf-spawner/helper", "tensorboard"),
        ("app.kubernetes.io/managed-by", "tf-spawner"),
    ]);
    serde_json::from_value(json!({
        "metadata": {"name": format!("{tag}-tensorboard"), "namespace": namespace,
            "labels": labels},
        "spec": {
            "containers": [{
                "name": "tensorboard", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["python", "-m", "http.server", "6006", "-d", format!("/output/{tag}")],
                "volumeMounts": [{"name": "o", "mountPath": "/output", "readOnly": true}],
                "readinessProbe": {"tcpSocket": {"port": 6006}, "periodSeconds": 1}
            }],
            "volumes": [{"name": "o", "persistentVolumeClaim": {"claimName": "out", "readOnly": true}}]
        }
    }))
    .unwrap()
}

/// One HTTP/1.0 GET of `path` on 127.0.0.1:`port`; the whole answer.
async fn get(port: u16, path: &str) -> String {
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the forwarded port");
    conn.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn tensorboard_forwards_a_local_port_to_the_run_s_pod_until_ctrl_c() {
    let Some(c) = Cluster::new("after-tb").await else {
        return;
    };
    let _claim = Claim::new(&c).await;
    let t = tag("tb");
    let script = c.write("writer.py", WRITER);
    c.spawn(&t, &script, &["-w", "1", "--volume", "out"]).await;
    c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let image = "tf-spawner.local/python:3.11";
    // An image without tensorboard: one error line with the kubelet's reason, no pod left.
    let wrong = c
        .run(&[
            "tensorboard",
            "-t",
            &t,
            "--image",
            image,
            "--timeout",
            "90s",
        ])
        .await;
    wrong
        .failure(1)
        .stderr_has(&format!(
            "error: pod/{t}-tensorboard ended before it could be used"
        ))
        .stderr_has("tensorboard")
        .stderr_has("choose another with --image");
    c.eventually("the failed pod gone", Duration::from_secs(60), || async {
        helper_pods(&c, &t).await.is_empty().then_some(())
    })
    .await;
    Api::<Pod>::namespaced(c.client.clone(), &c.namespace)
        .create(&PostParams::default(), &stand_in(&t, &c.namespace, image))
        .await
        .expect("create the stand-in");

    let mut child = c.start(&["tensorboard", "-t", &t, "--timeout", "120s"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(150), async {
        loop {
            let line = stdout.next_line().await.unwrap().expect("a line on stdout");
            if line.starts_with("TensorBoard: ") {
                return line;
            }
        }
    })
    .await
    .expect("the URL within 150 s");
    let port: u16 = line
        .strip_prefix("TensorBoard: http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a URL line: {line:?}"));
    let listing = get(port, "/logs/train/").await;
    assert!(listing.starts_with("HTTP/1.0 200"), "{listing}");
    assert!(listing.contains("events.out.tfevents.1.host"), "{listing}");
    // Two connections at once, each its own forward.
    let (a, b) = tokio::join!(get(port, "/model/"), get(port, "/model/variables/"));
    assert!(a.contains("saved_model.pb") && b.contains("variables.index"));
    // While it serves, `status` and `list` show the helper pod apart from the tasks.
    c.run(&["status", "-t", &t])
        .await
        .success()
        .stdout_has(&format!(
            "helper pod/{t}-tensorboard (tensorboard): Running, "
        ))
        .stdout_has("; deleted when the last tensorboard session using it ends (1 now)\n");
    c.run(&["list"])
        .await
        .success()
        .stdout_has("; helper pod: tensorboard\n");

    let pid = child.id().expect("pid") as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("ends after Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .await
        .unwrap();
    // The pod ends with the session that used it (no --keep); Ctrl-C is how it ends.
    assert!(
        err.contains(&format!("deleted pod/{t}-tensorboard")),
        "{err}"
    );
    assert!(err.contains("tensorboard ended by Ctrl-C"), "{err}");
    assert!(helper_pods(&c, &t).await.is_empty());
    c.run(&["-d", "-t", &t, "-y", "--wait", "--timeout", "60s"])
        .await
        .success();
    assert!(c.pods(&t).await.is_empty());
}

/// The TensorFlow image the one-node tooling builds (`tools/one-node/tensorflow-image.sh`:
/// tensorflow-cpu, tf-keras and tensorboard), unless `TF_SPAWNER_PODS_TF_IMAGE` names another.
pub(crate) const TF_IMAGE: &str = "tf-spawner.local/tensorflow:2.21";
const TF_IMAGE_VAR: &str = "TF_SPAWNER_PODS_TF_IMAGE";

/// Whether the node has `image` (never pulled: a probe pod with
/// `imagePullPolicy: Never` either starts or waits with `ErrImageNeverPull`).
pub(crate) async fn node_has(c: &Cluster, image: &str) -> bool {
    let probe: Pod = serde_json::from_value(json!({
        "metadata": {"name": "image-probe"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "probe", "image": image, "imagePullPolicy": "Never", "command": ["true"]}]}
    }))
    .unwrap();
    let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    pods.create(&PostParams::default(), &probe)
        .await
        .expect("create the probe");
    c.eventually("the image probe", Duration::from_secs(60), || async {
        let pod = pods.get("image-probe").await.ok()?;
        let status = pod.status?.container_statuses?.into_iter().next()?;
        let state = status.state?;
        if let Some(waiting) = state.waiting {
            return match waiting.reason.as_deref() {
                Some("ErrImageNeverPull") => Some(false),
                _ => None,
            };
        }
        Some(true)
    })
    .await
}

/// The TensorFlow image to train with: `TF_SPAWNER_PODS_TF_IMAGE` (then the node must have
/// it), else [`TF_IMAGE`] if the node has it, else `None` after a SKIPPED notice.
async fn tensorflow_image(c: &Cluster, test: &str) -> Option<String> {
    let required = std::env::var(TF_IMAGE_VAR).ok().filter(|v| !v.is_empty());
    let image = required.clone().unwrap_or_else(|| TF_IMAGE.to_string());
    if node_has(c, &image).await {
        return Some(image);
    }
    assert!(
        required.is_none(),
        "{TF_IMAGE_VAR}={image}: the node does not have it (tools/one-node/tensorflow-image.sh, then start.sh)"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: the node has no {image} (tools/one-node/tensorflow-image.sh builds it; .ci/run sets {TF_IMAGE_VAR})"
    );
    None
}

/// Synthetic MNIST in the pod, then the example, trained briefly with Keras 2.
const MNIST_ENTRYPOINT: &str = r#"set -e
python -c "
import numpy as np
r = np.random.default_rng(0)
x = lambda n: r.integers(0, 255, (n, 28, 28), dtype=np.uint8)
y = lambda n: r.integers(0, 10, n, dtype=np.int64)
np.savez('/tmp/mnist.npz', x_train=x(512), y_train=y(512), x_test=x(128), y_test=y(128))
"
export MNIST_NPZ=/tmp/mnist.npz TF_USE_LEGACY_KERAS=1 EPOCHS=2 STEPS_PER_EPOCH=4
exec python /script/training-script.py
"#;

/// Trains examples/mnist.py on 2 workers of `image` with claim `out` as `--volume`, to
/// its verdict (every task's log in the panic otherwise).
async fn train_mnist(c: &Cluster, t: &str, image: &str) {
    let script = crate::support::repo_file("examples/mnist.py");
    let entry = c.write("entrypoint.sh", MNIST_ENTRYPOINT);
    let extra = [
        "-w",
        "2",
        "--volume",
        "out",
        "-i",
        image,
        "-c",
        entry.to_str().unwrap(),
        "--run-as-user",
        "1000",
    ];
    c.spawn(t, &script, &extra).await;
    let out = c.run(&["wait", "-t", t, "--timeout", "300s"]).await;
    if out.code != 0 {
        let logs = c.run(&["logs", "-t", t]).await;
        panic!("{out:#?}\nevery task's log:\n{}", logs.stdout);
    }
    out.stdout_has("took ");
}

/// The body of an HTTP answer, as JSON, after checking its status line says 200.
fn json_body(answer: &str) -> serde_json::Value {
    let status = answer.lines().next().unwrap_or_default();
    assert!(status.contains(" 200 "), "{answer}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// Starts `tf-spawner tensorboard -t TAG` (its image from the defaults file) and returns
/// the child and the local port it printed.
async fn start_tensorboard(c: &Cluster, t: &str) -> (tokio::process::Child, u16) {
    let mut child = c.start(&["tensorboard", "-t", t, "--timeout", "180s"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(240), async {
        loop {
            let line = stdout.next_line().await.unwrap().expect("a line on stdout");
            if let Some(rest) = line.strip_prefix("TensorBoard: http://127.0.0.1:") {
                return rest.split('/').next().unwrap().parse().unwrap();
            }
        }
    })
    .await
    .expect("TensorBoard serves");
    (child, port)
}

/// What TensorBoard's HTTP API lists through the forwarded `port`, once it has loaded the
/// chief's summaries: the runs (`/data/runs`) and the logs/train run's scalar tags
/// (`/data/plugin/scalars/tags`).
async fn served_summaries(c: &Cluster, port: u16) -> (Vec<String>, Vec<String>) {
    c.eventually(
        "TensorBoard's scalars",
        Duration::from_secs(120),
        || async {
            let runs = json_body(&get(port, "/data/runs").await);
            let tags = json_body(&get(port, "/data/plugin/scalars/tags").await);
            let train = tags
                .get("logs/train")?
                .as_object()?
                .keys()
                .cloned()
                .collect::<Vec<_>>();
            let runs = runs
                .as_array()?
                .iter()
                .filter_map(|r| r.as_str())
                .map(String::from);
            (!train.is_empty()).then(|| (runs.collect(), train))
        },
    )
    .await
}

/// A `cp` whose client is killed (SIGKILL) once its helper pod exists: the pod stays
/// (for `-d`). Returns its name.
async fn killed_cp(c: &Cluster, t: &str) -> String {
    let home = c.dir.path().join("killed");
    let mut child = c.start(&["cp", "-t", t, "model", home.to_str().unwrap()]);
    let name = c
        .eventually("cp's helper pod", Duration::from_secs(60), || async {
            helper_pods(c, t)
                .await
                .into_iter()
                .find(|n| n.starts_with(&format!("{t}-cp-")))
        })
        .await;
    child.kill().await.expect("SIGKILL cp");
    name
}

/// What connecting from inside the TensorBoard pod to port 6006 of its own IP and of
/// its loopback gives (`connect_ex`: 0, or the errno): TensorBoard listens on the
/// loopback only, so no other pod reaches it.
async fn connects_from_inside(c: &Cluster, t: &str) -> String {
    let api = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let name = format!("{t}-tensorboard");
    let pod = api.get(&name).await.expect("the TensorBoard pod");
    let ip = pod.status.and_then(|s| s.pod_ip).expect("its IP");
    let probe =
        "import socket, sys\nprint(*[socket.socket().connect_ex((a, 6006)) for a in sys.argv[1:]])";
    let command = ["python", "-c", probe, &ip, "127.0.0.1"];
    let params = kube::api::AttachParams::default().stderr(false);
    let mut process = api.exec(&name, command, &params).await.expect("exec");
    let mut out = String::new();
    process
        .stdout()
        .expect("stdout")
        .read_to_string(&mut out)
        .await
        .unwrap();
    process.join().await.unwrap();
    out.trim().to_string()
}

/// The TensorBoard part: the pod of the run (the run's image by default) serves the
/// chief's real summaries (read from the volume) through the forwarded port, while it
/// listens on the pod's loopback only; Ctrl-C deletes the pod.
async fn tensorboard_serves_the_summaries(c: &Cluster, t: &str) {
    let (mut child, port) = start_tensorboard(c, t).await;
    let refused = connects_from_inside(c, t).await;
    assert_eq!(
        refused, "111 0",
        "ECONNREFUSED on the pod's IP, 0 on its loopback"
    );
    let (runs, tags) = served_summaries(c, port).await;
    // --logdir is the volume's root: the run is named by its directory under it.
    assert_eq!(runs, ["logs/train"], "the chief's one run");
    for tag in ["epoch_loss", "epoch_accuracy"] {
        assert!(tags.iter().any(|x| x == tag), "{tag} in {tags:?}");
    }
    let page = get(port, "/").await;
    assert!(
        page.contains("<tf-tensorboard") || page.contains("TensorBoard"),
        "{page}"
    );
    let pid = child.id().expect("pid") as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("ends after Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        helper_pods(c, t).await.is_empty(),
        "the pod ended with tensorboard"
    );
}

/// `cp` brings the chief's model home: `mnist.keras`, a zip archive holding the model's
/// config and its weights.
async fn copy_the_model_home(c: &Cluster, t: &str) {
    let home = c.dir.path().join("home");
    c.run(&["cp", "-t", t, "model", home.to_str().unwrap()])
        .await
        .success();
    let keras = std::fs::read(home.join("mnist.keras")).expect("the saved model");
    assert!(keras.starts_with(b"PK"), "a zip archive");
    // The .keras layout: the model's config and its weights as zip entries.
    for entry in [&b"config.json"[..], b"model.weights.h5"] {
        assert!(
            keras.windows(entry.len()).any(|w| w == entry),
            "{} in mnist.keras",
            String::from_utf8_lossy(entry)
        );
    }
}

#[tokio::test]
async fn mnist_trains_into_its_volume_then_cp_and_tensorboard_read_it() {
    let test = "mnist_trains_into_its_volume_then_cp_and_tensorboard_read_it";
    let Some(c) = Cluster::new("after-mnist").await else {
        return;
    };
    let Some(image) = tensorflow_image(&c, test).await else {
        return;
    };
    let claim = Claim::new(&c).await;
    // A namespace enforcing Pod Security `restricted` (v1.36; a v1.20 node has no such
    // admission), the tasks run as user 1000. A hostPath volume ignores `fsGroup`: its
    // directory is made writable by all, as provisioners of such volumes (local-path) do.
    restricted(&c).await;
    std::fs::set_permissions(claim.dir.path(), std::fs::Permissions::from_mode(0o777))
        .expect("chmod the volume's directory");
    let t = tag("mnist");
    train_mnist(&c, &t, &image).await;
    let pods = c.pods(&t).await;
    let uid = pods[0]
        .spec
        .as_ref()
        .unwrap()
        .security_context
        .as_ref()
        .unwrap()
        .run_as_user;
    assert_eq!(uid, Some(1000), "the tasks ran as user 1000");

    copy_the_model_home(&c, &t).await;

    // The chief's summaries are on the volume: TensorBoard (the run's image, its
    // default) lists them.
    let train = claim.dir.path().join(&t).join("logs/train");
    assert!(
        std::fs::read_dir(&train)
            .map(|mut d| d.any(|e| e.is_ok_and(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("events.out.tfevents."))))
            .unwrap_or(false),
        "the chief wrote its summaries to {}",
        train.display()
    );
    tensorboard_serves_the_summaries(&c, &t).await;

    // -d removes a helper pod a killed `cp` left.
    let cp = killed_cp(&c, &t).await;
    assert_eq!(helper_pods(&c, &t).await, std::slice::from_ref(&cp));
    c.run(&["-d", "-t", &t, "-y", "--wait", "--timeout", "90s"])
        .await
        .success()
        .stdout_has(&format!("deleted pod/{cp}"));
    assert!(c.pods(&t).await.is_empty(), "nothing of the run is left");
}
