//! Gang scheduling (docs/shared-clusters.md): `--gang volcano|coscheduling` and
//! `--scheduler-name`: the run's PodGroup, what its pods carry, its rollback and delete,
//! and a cluster without the PodGroup API.

use kube_testserver::{COSCHEDULING_PODGROUPS, Fault, Options, VOLCANO_PODGROUPS, VOLCANO_QUEUES};
use serde_json::{Value, json};

use crate::support::{Env, name};

const NS: &str = "default";

fn with_apis() -> Env {
    let env = Env::with(Options {
        volcano_api: true,
        coscheduling_api: true,
        ..Options::default()
    });
    env.server.insert(
        VOLCANO_QUEUES,
        "",
        json!({ "metadata": { "name": "team-gpu" }, "spec": { "weight": 1 }, "status": { "state": "Open" } }),
    );
    env
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_volcano_gang_creates_its_pod_group_before_the_pods() {
    let env = with_apis();
    env.spawn(&[
        "-t",
        "vg",
        "-w",
        "2",
        "--chief",
        "--evaluator",
        "--volcano-queue",
        "team-gpu",
        "--priority-class",
        "team-high",
        "--gang",
        "volcano",
    ])
    .success();
    let groups = env.list(VOLCANO_PODGROUPS, NS);
    assert_eq!(groups.len(), 1, "{groups:#?}");
    let group = &groups[0];
    assert_eq!(name(group), "vg-group");
    assert_eq!(group["apiVersion"], json!("scheduling.volcano.sh/v1beta1"));
    // The chief and the workers; not the evaluator.
    assert_eq!(group["spec"]["minMember"], json!(3), "{group:#}");
    assert_eq!(group["spec"]["queue"], json!("team-gpu"));
    // The built-in template asks 1 CPU and 1Gi a pod: the three members'.
    assert_eq!(
        group["spec"]["minResources"],
        json!({"cpu": "3", "memory": "3Gi"}),
        "{group:#}"
    );
    assert_eq!(group["spec"]["priorityClassName"], json!("team-high"));
    assert_eq!(group["metadata"]["labels"]["training_attempt"], json!("vg"));
    assert_eq!(
        group["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        json!("tf-spawner")
    );
    assert!(group["metadata"]["annotations"]["tf-spawner/invocation"].is_string());

    let config_map = &env.list("configmaps", NS)[0];
    assert!(rv(config_map) < rv(group), "the config first");
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 4);
    for pod in &pods {
        assert!(rv(group) < rv(pod), "the PodGroup before {}", name(pod));
        assert_eq!(pod["spec"]["schedulerName"], json!("volcano"), "{pod:#}");
        let annotations = &pod["metadata"]["annotations"];
        // The evaluator is scheduled on its own, in the same queue.
        let member = json!(if name(pod).contains("evaluator") {
            Value::Null
        } else {
            json!("vg-group")
        });
        assert_eq!(annotations["scheduling.k8s.io/group-name"], member);
        assert_eq!(
            annotations["scheduling.volcano.sh/queue-name"],
            json!("team-gpu")
        );
        // No --queue: no Kueue labels.
        assert!(
            pod["metadata"]["labels"]
                .get("kueue.x-k8s.io/queue-name")
                .is_none()
        );
    }
    for service in env.list("services", NS) {
        assert!(rv(group) < rv(&service));
    }
    assert!(env.list(COSCHEDULING_PODGROUPS, NS).is_empty());

    // In the summary too, and `-d` deletes it.
    let out = env.run(&["-d", "-t", "vg", "-o", "json"]);
    out.success();
    let deleted: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        deleted["deleted"]
            .as_array()
            .unwrap()
            .contains(&json!({"kind": "podgroup", "name": "vg-group"})),
        "{deleted:#}"
    );
    assert!(env.list(VOLCANO_PODGROUPS, NS).is_empty());
}

#[test]
fn a_coscheduling_gang_labels_its_pods() {
    let env = with_apis();
    let out = env.spawn(&[
        "-t",
        "cg",
        "-w",
        "3",
        "--evaluator",
        "--gang",
        "coscheduling",
        "-o",
        "json",
    ]);
    out.success();
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        summary["created"][1],
        json!({"kind": "podgroup", "name": "cg-group"}),
        "{summary:#}"
    );
    let groups = env.list(COSCHEDULING_PODGROUPS, NS);
    assert_eq!(groups.len(), 1);
    assert_eq!(
        groups[0]["apiVersion"],
        json!("scheduling.x-k8s.io/v1alpha1")
    );
    assert_eq!(groups[0]["spec"]["minMember"], json!(3), "{:#}", groups[0]);
    for pod in env.list("pods", NS) {
        assert_eq!(
            pod["spec"]["schedulerName"],
            json!("scheduler-plugins-scheduler")
        );
        let member = if name(&pod).contains("evaluator") {
            Value::Null
        } else {
            json!("cg-group")
        };
        assert_eq!(
            pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
            member
        );
    }
    env.run(&["-d", "-t", "cg"]).success();
    assert!(env.list(COSCHEDULING_PODGROUPS, NS).is_empty());
    assert!(env.names(NS).is_empty());
}

#[test]
fn dry_run_shows_the_pod_group_and_creates_nothing() {
    let env = Env::new();
    let out = env.spawn(&["-t", "dr", "-w", "2", "--gang", "volcano", "--dry-run"]);
    out.success()
        .stdout_has("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n")
        .stdout_has("  name: dr-group\n")
        .stdout_has("  minMember: 2\n");
    assert!(env.server.requests().is_empty());
    let out = env.spawn(&[
        "-t",
        "dr",
        "-w",
        "2",
        "--gang",
        "coscheduling",
        "--dry-run",
        "-o",
        "json",
    ]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["ConfigMap", "PodGroup", "Service", "Service", "Pod", "Pod"]
    );
}

#[test]
fn a_scheduler_name_wins_over_the_gangs() {
    let env = with_apis();
    env.spawn(&[
        "-t",
        "sn",
        "-w",
        "1",
        "--gang",
        "volcano",
        "--scheduler-name",
        "my-volcano",
    ])
    .success();
    let pod = &env.list("pods", NS)[0];
    assert_eq!(pod["spec"]["schedulerName"], json!("my-volcano"));
}

#[test]
fn a_failure_after_the_pod_group_rolls_it_back() {
    let env = with_apis();
    env.server
        .add_fault(Fault::on("POST", "/pods").always().status(403));
    let out = env.spawn(&["-t", "rb", "-w", "2", "--gang", "volcano"]);
    out.failure(1);
    assert!(env.list(VOLCANO_PODGROUPS, NS).is_empty(), "rolled back");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

#[test]
fn a_cluster_without_the_api_gets_one_clear_error_and_nothing() {
    let env = Env::new();
    for (gang, error) in [
        (
            "volcano",
            "error: the Volcano PodGroup API (scheduling.volcano.sh/v1beta1) is not installed on this cluster",
        ),
        (
            "coscheduling",
            "error: the coscheduling PodGroup API (scheduling.x-k8s.io/v1alpha1) is not installed on this cluster",
        ),
    ] {
        let out = env.spawn(&["-t", "none", "-w", "2", "--gang", gang]);
        out.failure(1).stderr_has(error);
        assert!(env.names(NS).is_empty(), "nothing created for {gang}");
    }
    // `-d` deletes PodGroups by the run's label whatever its ConfigMap records (issue
    // 49): a cluster without the APIs answers 404, which is nothing to delete.
    env.spawn(&["-t", "plain", "-w", "1"]).success();
    env.server.clear_requests();
    env.run(&["-d", "-t", "plain"]).success();
    let asked = env
        .server
        .requests()
        .iter()
        .filter(|r| r.path.contains("podgroups"))
        .count();
    assert_eq!(asked, 2, "{:#?}", env.server.requests());
    assert!(env.names(NS).is_empty());

    // Without that record (no ConfigMap left), `-d` tries both kinds, and skips them
    // without a word on a cluster without the API (404).
    env.server.insert(
        "pods",
        NS,
        json!({"metadata": {"name": "orphan-worker-0", "labels": {"training_attempt": "orphan"}},
               "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}),
    );
    env.server.clear_requests();
    let out = env.run(&["-d", "-t", "orphan"]);
    out.success();
    assert!(!out.stderr.contains("podgroup"), "{}", out.stderr);
    let podgroup_answers: Vec<u16> = env
        .server
        .requests()
        .iter()
        .filter(|r| r.path.contains("podgroups"))
        .map(|r| r.status)
        .collect();
    assert_eq!(podgroup_answers, [404, 404]);
    assert!(env.names(NS).is_empty());
}

#[test]
fn a_bad_gang_is_a_usage_error() {
    let env = with_apis();
    let out = env.spawn(&["-t", "bad", "--gang", "kube-batch"]);
    assert_eq!(out.code, 2, "{out:#?}");
    // The flag's parser is the defaults file's (`gang: kube-batch` is refused alike).
    assert_eq!(
        out.stderr, "error: --gang \"kube-batch\" is not one of volcano, coscheduling\n",
        "{out:#?}"
    );
    let out = env.spawn(&["-t", "bad", "--scheduler-name", "My Scheduler"]);
    out.failure(2)
        .stderr_has("--scheduler-name \"My Scheduler\" is not a valid name");
    let out = env.spawn(&["-t", "bad", "--local", "--gang", "volcano"]);
    out.failure(2).stderr_has("--gang");
    assert!(env.names(NS).is_empty());
    assert!(env.list(VOLCANO_PODGROUPS, NS).is_empty());
}

#[test]
fn the_defaults_file_sets_the_gang() {
    let env = with_apis();
    let config = env.write(
        "config.yaml",
        "gang: coscheduling\nscheduler_name: team-sched\n",
    );
    let out = env
        .cmd()
        .env("TF_SPAWNER_CONFIG", &config)
        .args(["config", "-o", "json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        shown["settings"]["gang"],
        json!({"value": "coscheduling", "source": "file"}),
        "{shown:#}"
    );
    assert_eq!(
        shown["settings"]["scheduler_name"]["value"],
        json!("team-sched")
    );
    let script = env.script();
    let out = env
        .cmd()
        .env("TF_SPAWNER_CONFIG", &config)
        .args(["-t", "df", "-w", "1", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.list(COSCHEDULING_PODGROUPS, NS).len(), 1);
    assert_eq!(
        env.list("pods", NS)[0]["spec"]["schedulerName"],
        json!("team-sched")
    );
}

/// Every placed member counts towards `minMember` (coscheduling's Permit, Volcano's
/// gang plugin), and coscheduling places by name: `T-evaluator-0` before
/// `T-worker-*`. The test server's scheduler model gets `free` places, one pod each;
/// whatever their number, the training tasks are bound all together or not at all.
#[test]
fn an_evaluator_cannot_leave_a_gang_half_placed() {
    for gang in ["coscheduling", "volcano"] {
        for free in 1..=5 {
            let env = with_apis();
            env.spawn(&["-t", "ev", "-w", "3", "--evaluator", "--gang", gang])
                .success();
            let bound = env.server.place_gangs(NS, free);
            let workers = bound.iter().filter(|n| n.contains("-worker-")).count();
            assert!(
                workers == 0 || workers == 3,
                "{gang} with {free} places bound {bound:?}: a half-placed gang"
            );
            if free >= 4 {
                assert_eq!(workers, 3, "{gang} with {free} places bound {bound:?}");
            }
        }
    }
}

/// scheduler-plugins before v0.25 served its PodGroups as `scheduling.sigs.k8s.io` and
/// read the label `pod-group.scheduling.sigs.k8s.io`: the error names the version.
#[test]
fn an_older_scheduler_plugins_is_named() {
    let env = Env::with(Options {
        legacy_coscheduling_api: true,
        ..Options::default()
    });
    let out = env.spawn(&["-t", "old", "-w", "2", "--gang", "coscheduling"]);
    out.failure(1).stderr_has(
        "error: this cluster has scheduler-plugins before v0.25 (its PodGroup API scheduling.sigs.k8s.io/v1alpha1); --gang coscheduling needs v0.25 or later (scheduling.x-k8s.io/v1alpha1)",
    );
    assert!(env.names(NS).is_empty());
}
