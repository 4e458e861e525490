//! Queue misconfigurations (docs/shared-clusters.md): every one is one `error:` line
//! and nothing left in the cluster, or, for what these credentials may not read, a note
//! and the run. The test server models Kueue's webhook (the gate and the managed label,
//! only in the namespaces Kueue manages) and serves LocalQueues and Volcano Queues.

use kube_testserver::{KUEUE_LOCALQUEUES, Options, User, VOLCANO_QUEUES};
use serde_json::json;

use crate::shared::kueue;
use crate::support::Env;

const NS: &str = "default";

fn pod_creates(env: &Env) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .count()
}

#[test]
fn a_missing_local_queue_is_one_error_before_anything_is_created() {
    let env = kueue(Options::default());
    let out = env.spawn(&["-t", "mq", "-w", "2", "--queue", "team-cpu"]);
    out.failure(1).stderr_has(
        "error: Kueue LocalQueue 'team-cpu' does not exist in namespace 'default': its pods would wait for ever",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.names(NS).is_empty());
    assert!(
        !env.server.requests().iter().any(|r| r.method == "POST"),
        "checked before the first create"
    );
}

/// The versions of `kueue.x-k8s.io` Kueue serves (docs/shared-clusters.md): only
/// `v1beta2` from v0.20, both from v0.15 to v0.19, only `v1beta1` before. The LocalQueue
/// is read in the newest served, and a missing or inactive one is said the same way in
/// each.
#[test]
fn the_local_queue_is_read_in_the_newest_version_kueue_serves() {
    for (served, read) in [
        (&["v1beta2"][..], "v1beta2"),
        (&["v1beta2", "v1beta1"][..], "v1beta2"),
        (&["v1beta1"][..], "v1beta1"),
    ] {
        let env = kueue(Options {
            kueue_versions: served.to_vec(),
            ..Options::default()
        });
        env.spawn(&["-t", "kv", "-w", "2", "--queue", "team-gpu"])
            .success();
        let gets: Vec<String> = env
            .server
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.contains("localqueues"))
            .map(|r| r.path.clone())
            .collect();
        assert_eq!(
            gets,
            [format!(
                "/apis/kueue.x-k8s.io/{read}/namespaces/default/localqueues/team-gpu"
            )],
            "{served:?}"
        );
        assert_eq!(env.list("pods", NS).len(), 2, "{served:?}");

        env.spawn(&["-t", "km", "-w", "2", "--queue", "team-cpu"])
            .failure(1)
            .stderr_has("error: Kueue LocalQueue 'team-cpu' does not exist in namespace 'default'");
        env.server.insert(
            KUEUE_LOCALQUEUES,
            NS,
            json!({ "metadata": { "name": "stopped" }, "spec": { "clusterQueue": "c", "stopPolicy": "Hold" },
                "status": { "conditions": [{ "type": "Active", "status": "False",
                    "reason": "Stopped", "message": "LocalQueue is stopped",
                    "lastTransitionTime": "2026-01-01T00:00:00Z" }] } }),
        );
        env.spawn(&["-t", "ks", "-w", "2", "--queue", "stopped"])
            .failure(1)
            .stderr_has(
                "error: Kueue LocalQueue 'stopped' is not active (Stopped: LocalQueue is stopped)",
            );
        assert_eq!(env.list("pods", NS).len(), 2, "{served:?}: nothing more");
    }
}

#[test]
fn a_queue_without_kueue_installed_says_so() {
    let env = Env::new();
    env.spawn(&["-t", "nk", "-w", "2", "--queue", "team-gpu"])
        .failure(1)
        .stderr_has("error: --queue team-gpu: Kueue is not installed on this cluster (no LocalQueue API kueue.x-k8s.io/v1beta2 or v1beta1)");
    assert!(env.names(NS).is_empty());
}

/// Kueue is installed and the LocalQueue exists, but Kueue's webhook does not take the
/// pods of this namespace (or its pod integration is off): the pods would run at once,
/// unqueued. The first pod is created alone, seen ungated, and rolled back.
#[test]
fn pods_kueue_does_not_take_are_rolled_back_before_the_others_are_sent() {
    let env = Env::with(Options {
        kueue_api: true,
        kueue_namespaces: vec!["elsewhere".into()],
        ..Options::default()
    });
    env.server.insert(
        KUEUE_LOCALQUEUES,
        NS,
        json!({ "metadata": { "name": "team-gpu" }, "spec": { "clusterQueue": "c" } }),
    );
    let out = env.spawn(&["-t", "um", "-w", "4", "--queue", "team-gpu"]);
    out.failure(1).stderr_has(
        "error: --queue team-gpu: Kueue did not take pod um-worker-0 (no kueue.x-k8s.io/managed label, no kueue.x-k8s.io/admission scheduling gate), so the run would start unqueued: Kueue does not manage namespace 'default'",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    assert_eq!(pod_creates(&env), 1, "only the first pod was sent");
}

/// Credentials that may create pods but not read LocalQueues: a note, and the run.
#[test]
fn a_local_queue_these_credentials_cannot_read_is_a_note() {
    let env = kueue(Options {
        users: vec![User {
            denied_resources: vec![KUEUE_LOCALQUEUES.into()],
            ..User::namespaced("team", NS)
        }],
        ..Options::default()
    });
    let kubeconfig = env
        .server
        .write_kubeconfig(env.dir.path(), "team", Some(NS));
    let script = env.script();
    let out = env.run_as(
        &kubeconfig,
        &[
            "-t",
            "rb",
            "-w",
            "2",
            "--queue",
            "team-gpu",
            script.to_str().unwrap(),
        ],
    );
    out.success()
        .stderr_has("note: cannot check Kueue LocalQueue 'team-gpu' (these credentials may not read localqueues.kueue.x-k8s.io in namespace 'default'); going on");
    assert_eq!(env.list("pods", NS).len(), 2);
}

fn volcano() -> Env {
    Env::with(Options {
        volcano_api: true,
        ..Options::default()
    })
}

#[test]
fn a_missing_or_closed_volcano_queue_is_one_error() {
    let env = volcano();
    let args = [
        "-t",
        "vq",
        "-w",
        "2",
        "--gang",
        "volcano",
        "--volcano-queue",
        "gpu",
    ];
    env.spawn(&args)
        .failure(1)
        .stderr_has("error: Volcano queue 'gpu' does not exist");
    assert!(env.names(NS).is_empty());
    env.server.insert(
        VOLCANO_QUEUES,
        "",
        json!({ "metadata": { "name": "gpu" }, "spec": { "weight": 1 }, "status": { "state": "Closed" } }),
    );
    env.spawn(&args)
        .failure(1)
        .stderr_has("error: Volcano queue 'gpu' is Closed: it takes no new PodGroups");
    assert!(env.names(NS).is_empty());
    assert!(env.list(kube_testserver::VOLCANO_PODGROUPS, NS).is_empty());
}

/// One queue setting per system: `--queue` is always Kueue's LocalQueue, also with
/// `--gang volcano`; the Volcano queue is `--volcano-queue`, only with `--gang volcano`.
#[test]
fn the_kueue_and_volcano_queues_are_two_settings() {
    let env = volcano();
    env.spawn(&["-t", "x", "--volcano-queue", "gpu"])
        .failure(2)
        .stderr_has(
            "error: --volcano-queue gpu needs --gang volcano (a Kueue LocalQueue is --queue)",
        );
    env.spawn(&["-t", "x", "--gang", "volcano", "--queue", "gpu"])
        .failure(1)
        .stderr_has("error: --queue gpu: Kueue is not installed on this cluster (no LocalQueue API kueue.x-k8s.io/v1beta2 or v1beta1); a Volcano queue is --volcano-queue");
    assert!(env.names(NS).is_empty());

    // The defaults file's `volcano_queue`; its `queue` stays Kueue's.
    env.server.insert(
        VOLCANO_QUEUES,
        "",
        json!({ "metadata": { "name": "gpu" }, "spec": { "weight": 1 } }),
    );
    env.defaults_file("gang: volcano\nvolcano_queue: gpu\n");
    env.spawn(&["-t", "f", "-w", "2"]).success();
    let group = &env.list(kube_testserver::VOLCANO_PODGROUPS, NS)[0];
    assert_eq!(group["spec"]["queue"], json!("gpu"), "{group:#}");
    for pod in env.list("pods", NS) {
        assert_eq!(
            pod["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"],
            json!("gpu")
        );
        assert!(
            pod["metadata"]["labels"]
                .get("kueue.x-k8s.io/queue-name")
                .is_none()
        );
    }
    env.run(&["config"]).success().stdout_has("volcano_queue");
}

/// The first pod, sent alone with `--queue`, is created like every other: a lost answer
/// is recovered (the pod there is this invocation's, as Kueue stored it), a 500 and the
/// queue's GET are retried, a final refusal rolls everything back.
#[test]
fn the_first_pod_and_the_queue_check_survive_faults() {
    use kube_testserver::Fault;
    for (i, fault) in [
        Fault::on("POST", "/pods").drop_response(),
        Fault::on("POST", "/pods").status(500),
        Fault::on("GET", "/localqueues/team-gpu").status(503),
        Fault::on("GET", "/localqueues/team-gpu").drop_connection(),
        // The first GET of the group is its discovery.
        Fault::on("GET", "/apis/kueue.x-k8s.io").status(503),
    ]
    .into_iter()
    .enumerate()
    {
        let env = kueue(Options::default());
        env.server.add_fault(fault.clone());
        let tag = format!("f{i}");
        env.spawn(&["-t", &tag, "-w", "3", "--queue", "team-gpu"])
            .success();
        let pods = env.list("pods", NS);
        assert_eq!(pods.len(), 3, "{fault:?}");
        assert!(
            pods.iter()
                .all(|p| p["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"),
            "{fault:?}"
        );
    }
    let env = kueue(Options::default());
    env.server
        .add_fault(Fault::on("POST", "/pods").status(403).always());
    env.spawn(&["-t", "no", "-w", "3", "--queue", "team-gpu"])
        .failure(1)
        .stderr_has("error: creating pod/no-worker-0");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    assert_eq!(pod_creates(&env), 1, "the others never sent");
}

/// A namespace's credentials cannot read the cluster-scoped Volcano Queues (RBAC's
/// 403): a note, and the run.
#[test]
fn a_volcano_queue_these_credentials_cannot_read_is_a_note() {
    let env = Env::with(Options {
        volcano_api: true,
        users: vec![User::namespaced("team", NS)],
        ..Options::default()
    });
    let kubeconfig = env
        .server
        .write_kubeconfig(env.dir.path(), "team", Some(NS));
    let script = env.script();
    let out = env.run_as(
        &kubeconfig,
        &[
            "-t",
            "vn",
            "-w",
            "2",
            "--gang",
            "volcano",
            "--volcano-queue",
            "gpu",
            script.to_str().unwrap(),
        ],
    );
    out.success().stderr_has(
        "note: cannot check Volcano queue 'gpu' (these credentials may not read queues.scheduling.volcano.sh); going on",
    );
    let group = &env.list(kube_testserver::VOLCANO_PODGROUPS, NS)[0];
    assert_eq!(group["spec"]["queue"], json!("gpu"));
}

/// A LocalQueue whose ClusterQueue does not exist admits nothing: Kueue says so in its
/// `Active` condition, and the spawn repeats it.
#[test]
fn an_inactive_local_queue_is_one_error() {
    let env = kueue(Options::default());
    env.server.insert(
        KUEUE_LOCALQUEUES,
        NS,
        json!({ "metadata": { "name": "orphan" }, "spec": { "clusterQueue": "gone" },
            "status": { "conditions": [{ "type": "Active", "status": "False",
                "reason": "ClusterQueueDoesNotExist", "message": "Can't submit new workloads to clusterQueue",
                "lastTransitionTime": "2026-01-01T00:00:00Z" }] } }),
    );
    env.spawn(&["-t", "in", "-w", "2", "--queue", "orphan"])
        .failure(1)
        .stderr_has("error: Kueue LocalQueue 'orphan' is not active (ClusterQueueDoesNotExist: Can't submit new workloads to clusterQueue): its pods would wait until it is");
    assert!(env.names(NS).is_empty());
}
