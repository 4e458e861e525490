//! Issue 49, item 2: nothing read back from the cluster is trusted beyond what the run's
//! own objects can be. Each test plants on the test server what someone who may edit
//! the namespace can write (a restart record, the run's ConfigMap annotations, a
//! heartbeat) and shows the real binary refuse or ignore it (docs/hardened.md).

use std::io::Write;

use serde_json::{Value, json};

use crate::follow::{exited, finish, running, start};
use crate::support::{Env, name};

const NS: &str = "default";

/// The run's ConfigMap with `change` merged into its metadata, put back as an editor's
/// `kubectl edit` would.
fn edit_config_map(env: &Env, tag: &str, change: impl FnOnce(&mut Value)) {
    let mut cm = env
        .server
        .get("configmaps", NS, &format!("{tag}-script"))
        .unwrap();
    change(&mut cm);
    env.server.insert("configmaps", NS, cm);
}

/// A forged restart record asking for a privileged pod that mounts the host's `/`,
/// named and labelled outside the run: `wait --restarts` refuses it in one line,
/// creates nothing, and follows the run's own pods to their verdict (on main it made
/// the pod, which `-d`, `status` and `list` never saw).
#[test]
fn a_forged_restart_record_creates_nothing() {
    use base64::Engine;
    let env = Env::new();
    env.spawn(&["-t", "fr", "-w", "1"]).success();
    let evil = json!({
        "metadata": {"name": "miner", "labels": {"app": "x"}},
        "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "busybox",
            "securityContext": {"privileged": true},
            "volumeMounts": [{"name": "host", "mountPath": "/host"}]}],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}]}
    });
    let record = json!({"attempt": 1, "templates": {"miner": evil}, "cause": "forged"});
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(record.to_string().as_bytes()).unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    edit_config_map(&env, "fr", |cm| {
        cm["binaryData"]["restart.json.gz"] = json!(bytes);
        cm["metadata"]["annotations"]["tf-spawner/restarting"] = json!("1");
    });
    running(&env, "fr-worker-0");
    let child = start(&env, &["wait", "fr", "--restarts", "2"]);
    crate::follow::await_watches(&env, 1);
    exited(&env, "fr-worker-0", 0);
    let out = finish(child);
    out.success()
        .stderr_has("warning: run fr: the restart recorded in its configmap is not taken up: pod miner is not named as the task its labels say");
    let names: Vec<String> = env
        .list("pods", NS)
        .iter()
        .map(|p| name(p).to_string())
        .collect();
    assert_eq!(names, ["fr-worker-0"]);

    // Named and labelled as the run's own task, it still may not ask for the host.
    let mut evil = evil;
    evil["metadata"] = json!({"name": "fr-worker-1", "labels": {
        "training_attempt": "fr", "tf-spawner/replica-type": "worker",
        "tf-spawner/replica-index": "1"}});
    let record = json!({"attempt": 1, "templates": {"fr-worker-1": evil}});
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(record.to_string().as_bytes()).unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    edit_config_map(&env, "fr", |cm| {
        cm["binaryData"]["restart.json.gz"] = json!(bytes);
    });
    env.run(&["wait", "fr", "--restarts", "2"])
        .success()
        .stderr_has("pod fr-worker-1 asks for");
    assert!(env.server.get("pods", NS, "fr-worker-1").is_none());
}

/// Annotations saying the run has no Secret and no NetworkPolicy do not make `-d` leave
/// them behind: every kind is deleted by the run's label.
#[test]
fn forged_annotations_do_not_make_delete_skip_a_kind() {
    let env = Env::new();
    env.write("secrets.env", "TOKEN=s3cret\n");
    env.spawn(&[
        "-t",
        "fd",
        "-w",
        "1",
        "-e",
        "secrets.env",
        "--network-policy",
    ])
    .success();
    edit_config_map(&env, "fd", |cm| {
        let a = &mut cm["metadata"]["annotations"];
        a["tf-spawner/env-secret"] = json!("none");
        a.as_object_mut()
            .unwrap()
            .remove("tf-spawner/network-policy");
        a.as_object_mut().unwrap().remove("tf-spawner/pod-group");
    });
    assert!(
        env.names(NS).contains(&"secret/fd-env".to_string()),
        "{:?}",
        env.names(NS)
    );
    env.run(&["-d", "-y", "-t", "fd"]).success();
    assert!(env.names(NS).is_empty(), "left behind: {:?}", env.names(NS));
}

/// A run whose worker failed, its verdict forged to `Succeeded` on its ConfigMap:
/// `status` and `list` say what the pods say while they are there.
#[test]
fn a_forged_verdict_does_not_override_the_pods() {
    let env = Env::new();
    env.spawn(&["-t", "fv", "-w", "2"]).success();
    running(&env, "fv-worker-0");
    running(&env, "fv-worker-1");
    let child = start(&env, &["wait", "fv"]);
    crate::follow::await_watches(&env, 1);
    exited(&env, "fv-worker-0", 1);
    assert_eq!(finish(child).code, 3);
    edit_config_map(&env, "fv", |cm| {
        cm["metadata"]["annotations"]["tf-spawner/verdict"] = json!("Succeeded");
    });
    let out = env.run(&["status", "-t", "fv", "-o", "json"]);
    let status: Value = serde_json::from_str(&out.success().stdout).unwrap();
    assert_eq!(status["verdict"], "Failed", "{status:#}");
    let out = env.run(&["list", "-o", "json"]);
    let list: Value = serde_json::from_str(&out.success().stdout).unwrap();
    assert_eq!(list["runs"][0]["verdict"], "Failed", "{list:#}");
}

/// A heartbeat from the year 2100 on the TensorBoard pod is no session: the pod is not
/// kept for it.
#[test]
fn a_heartbeat_from_the_future_keeps_no_tensorboard_pod() {
    let env = Env::new();
    env.spawn(&["-t", "hb", "-w", "1"]).success();
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {"name": "hb-tensorboard", "labels": {
            "training_attempt": "hb", "tf-spawner/helper": "tensorboard",
            "app.kubernetes.io/managed-by": "tf-spawner"},
            "annotations": {"tf-spawner/sessions": "{\"forged\":4102444800}"}},
            "spec": {"containers": [{"name": "tensorboard", "image": "tb"}]},
            "status": {"phase": "Running"}}),
    );
    env.run(&["status", "-t", "hb"])
        .success()
        .stdout_has("no tensorboard session uses it now");
}

/// The pods a spawn records in the run's ConfigMap (`pods.json.gz`), edited to mount
/// the host's `/`: once the run's pods are gone, `wait --restarts` refuses the record in
/// one line and creates nothing; a record with no pods at all (a run of an earlier
/// version) says so the same way.
#[test]
fn a_forged_record_of_the_spawns_pods_creates_nothing() {
    use base64::Engine;
    use std::io::Read;
    let env = Env::new();
    env.spawn(&["-t", "fp", "-w", "1"]).success();
    let cm = env.server.get("configmaps", NS, "fp-script").unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let gz = b64
        .decode(cm["binaryData"]["pods.json.gz"].as_str().unwrap())
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    let mut pods: Value = serde_json::from_str(&text).unwrap();
    let pod = &mut pods["fp-worker-0"];
    pod["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "host", "hostPath": {"path": "/"}}));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(pods.to_string().as_bytes()).unwrap();
    let forged = b64.encode(gz.finish().unwrap());
    edit_config_map(&env, "fp", |cm| {
        cm["binaryData"]["pods.json.gz"] = json!(forged);
    });
    env.server.delete_pod(NS, "fp-worker-0");
    let out = env.run(&["wait", "fp", "--restarts", "1", "--restart-backoff", "0s"]);
    out.failure(1);
    assert_eq!(
        out.stderr,
        "error: run 'fp' cannot be restarted: every pod of the run was gone when this wait began, and the pods recorded at its spawn are refused: pod fp-worker-0 asks for hostPath /, which no pod of the run has (a record is trusted no further than the run's pods on the server: docs/hardened.md)\n",
        "{out:#?}"
    );
    assert!(env.server.get("pods", NS, "fp-worker-0").is_none());

    edit_config_map(&env, "fp", |cm| {
        cm["binaryData"]
            .as_object_mut()
            .unwrap()
            .remove("pods.json.gz");
    });
    env.run(&["wait", "fp", "--restarts", "1"])
        .failure(1)
        .stderr_has("every pod of the run was gone when this wait began, and the run's configmap holds no record of its pods");
    assert!(env.server.get("pods", NS, "fp-worker-0").is_none());
}

/// A `tf-spawner/deadline-at` planted on a pod, a day past the run's `--deadline`: the
/// restart says it is refused and gives the new pods what the record allows (issue 50).
#[test]
fn a_planted_deadline_past_the_records_is_refused() {
    let env = Env::new();
    env.spawn(&["-t", "fd", "-w", "2", "--deadline", "1h"])
        .success();
    let mut pod = env.server.get("pods", NS, "fd-worker-0").unwrap();
    pod["metadata"]["annotations"]["tf-spawner/deadline-at"] = json!("2100-01-01T00:00:00Z");
    env.server.insert("pods", NS, pod);
    env.server.delete_pod(NS, "fd-worker-1");
    let mut child = start(
        &env,
        &["wait", "fd", "--restarts", "1", "--restart-backoff", "0s"],
    );
    let names = ["fd-worker-0", "fd-worker-1"];
    crate::support::await_attempt(&env, "fd", &names, "1", &mut child);
    for name in names {
        running(&env, name);
    }
    exited(&env, "fd-worker-0", 0);
    let out = finish(child);
    out.success();
    out.stderr_has("warning: run fd: pod fd-worker-0's tf-spawner/deadline-at (2100-01-01T00:00:00Z) is later than the run's record allows (")
        .stderr_has("the record's is used");
    for name in ["fd-worker-0", "fd-worker-1"] {
        let pod = env.server.get("pods", NS, name).unwrap();
        assert_eq!(
            pod["metadata"]["labels"]["tf-spawner/attempt"], "1",
            "{pod}"
        );
        let left = pod["spec"]["activeDeadlineSeconds"].as_i64().unwrap();
        assert!(left <= 3600, "{name}: {left}");
        let at = pod["metadata"]["annotations"]["tf-spawner/deadline-at"]
            .as_str()
            .unwrap();
        assert!(!at.starts_with("2100"), "{name}: {at}");
    }
}
