//! Shared clusters (docs/shared-clusters.md): `--deadline`, `--priority-class`,
//! `--queue`; what they put on the pods, how a stopped or queued run is reported.

use kube_testserver::{KUEUE_LOCALQUEUES, Options};
use serde_json::json;

use crate::follow::{
    await_watches, container, failed_with_logs, finish, running, spawn_run, start,
};
use crate::support::Env;

const NS: &str = "default";

#[test]
fn deadline_and_priority_class_reach_every_pod() {
    let env = Env::new();
    spawn_run(
        &env,
        "dl",
        &[
            "-w",
            "2",
            "--chief",
            "--deadline",
            "1h30m",
            "--priority-class",
            "team-high",
        ],
    );
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(pod["spec"]["activeDeadlineSeconds"], json!(5400), "{pod:#}");
        assert_eq!(
            pod["spec"]["priorityClassName"],
            json!("team-high"),
            "{pod:#}"
        );
    }
}

#[test]
fn bad_deadlines_and_priority_classes_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (&["--deadline", "0"][..], "--deadline 0s is too short"),
        (
            &["--deadline", "soon"][..],
            "--deadline \"soon\": expected number",
        ),
        (
            &["--priority-class", "Team_High"][..],
            "--priority-class \"Team_High\" is not a valid name",
        ),
        (
            &["--local", "--deadline", "1h"][..],
            "--deadline applies to pods on a cluster",
        ),
        (
            &["--local", "--priority-class", "p"][..],
            "--priority-class applies to pods",
        ),
    ] {
        let out = env.spawn(args);
        out.failure(2).stderr_has(needle);
        assert!(env.names(NS).is_empty(), "nothing created for {args:?}");
    }
}

/// `--service-account` (a defaultable flag: issue 46's proof of the one-entry path):
/// the config file's key on every pod of every role, the flag over it, `config`'s row;
/// a bad name and `--local` refused with nothing created.
#[test]
fn a_service_account_from_the_defaults_file_reaches_every_pod_and_a_flag_wins() {
    let env = Env::new();
    env.defaults_file("service_account: data-reader\n");
    for (args, bad) in [
        (
            &["--service-account", "Data_Reader"][..],
            "--service-account \"Data_Reader\" is not a valid name",
        ),
        (
            &["--local", "--service-account", "x"][..],
            "--service-account applies to pods on a cluster",
        ),
    ] {
        env.spawn(args).failure(2).stderr_has(bad);
        assert!(env.names(NS).is_empty(), "nothing created for {args:?}");
    }
    spawn_run(&env, "sa", &["-w", "2", "--chief", "--ps", "1"]);
    spawn_run(&env, "sb", &["-w", "1", "--service-account", "other"]);
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 5);
    for pod in &pods {
        let want = if pod["metadata"]["name"].as_str().unwrap().starts_with("sa-") {
            "data-reader"
        } else {
            "other"
        };
        assert_eq!(pod["spec"]["serviceAccountName"], json!(want), "{pod:#}");
    }
    let out = env.run(&["config", "-o", "json"]);
    let config: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        config["settings"]["service_account"],
        json!({"value": "data-reader", "source": "file"})
    );
}

/// What a kubelet writes when a pod outlives its `activeDeadlineSeconds`.
fn deadline_exceeded(env: &Env, pod: &str) {
    env.server.bind_pod(NS, pod, crate::follow::NODE);
    env.server.set_pod_status(
        NS,
        pod,
        json!({
            "phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": container(false, json!({
                "terminated": {"exitCode": 137, "reason": "Error"}
            }))
        }),
    );
}

#[test]
fn a_run_past_its_deadline_fails_with_deadline_exceeded() {
    let env = Env::new();
    spawn_run(&env, "late", &["-w", "1", "--deadline", "10m"]);
    let child = start(&env, &["wait", "-t", "late"]);
    await_watches(&env, 1);
    deadline_exceeded(&env, "late-worker-0");
    let out = finish(child);
    failed_with_logs(&out, 3);
    out.stderr_has(
        "error: run 'late' failed: pod late-worker-0 (worker-0) failed: exit code 137, reason DeadlineExceeded: Pod was active on the node longer than the specified deadline; the run's --deadline ended it",
    );

    let out = env.run(&["status", "-t", "late"]);
    out.stdout_has("Failed (DeadlineExceeded)")
        .stdout_has("reason DeadlineExceeded");
    let out = env.run(&["status", "-t", "late", "-o", "json"]);
    let status: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        status["pods"][0]["reason"],
        json!("DeadlineExceeded"),
        "{status:#}"
    );
    assert_eq!(status["pods"][0]["exit_code"], json!(137), "{status:#}");
}

#[test]
fn a_queue_makes_the_run_one_kueue_pod_group() {
    let env = kueue(Options::default());
    spawn_run(&env, "q", &["-w", "3", "--queue", "team-gpu"]);
    let pods = env.list("pods", NS);
    assert_eq!(pods.len(), 3);
    let group = pods[0]["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"].clone();
    assert!(group.as_str().unwrap().starts_with("q-"), "{group}");
    for pod in &pods {
        let meta = &pod["metadata"];
        assert_eq!(
            meta["labels"]["kueue.x-k8s.io/queue-name"],
            json!("team-gpu")
        );
        assert_eq!(meta["labels"]["kueue.x-k8s.io/pod-group-name"], group);
        assert_eq!(
            meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"],
            json!("3")
        );
        assert_eq!(
            meta["annotations"]["kueue.x-k8s.io/retriable-in-group"],
            json!("false")
        );
        // Kueue's webhook took it.
        assert_eq!(meta["labels"]["kueue.x-k8s.io/managed"], json!("true"));
    }
    // Not on the other objects: Kueue manages pods.
    for kind in ["services", "configmaps"] {
        for obj in env.list(kind, NS) {
            assert!(obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].is_null());
        }
    }
}

#[test]
fn a_bad_queue_name_is_a_usage_error() {
    let env = Env::new();
    for (args, needle) in [
        (
            &["--queue", "Team GPU"][..],
            "--queue \"Team GPU\" is not a valid name",
        ),
        (&["--queue", &"q".repeat(64)][..], "at most 63 characters"),
        (
            &["--local", "--queue", "q"][..],
            "--queue applies to pods on a cluster",
        ),
    ] {
        env.spawn(args).failure(2).stderr_has(needle);
        assert!(env.names(NS).is_empty(), "nothing created for {args:?}");
    }
}

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const ADMISSION_GATE: &str = "kueue.x-k8s.io/admission";

/// A test server with Kueue: its LocalQueue API, the LocalQueue `team-gpu`, and its
/// webhook managing namespace `default` (every pod naming a queue is gated at creation).
pub fn kueue(mut options: Options) -> Env {
    options.kueue_api = true;
    options.kueue_namespaces = vec![NS.into()];
    let env = Env::with(options);
    env.server.insert(
        KUEUE_LOCALQUEUES,
        NS,
        json!({ "metadata": { "name": "team-gpu" }, "spec": { "clusterQueue": "cluster-gpu" } }),
    );
    env
}

#[test]
fn a_gated_run_is_queued_in_status_list_and_wait_until_admitted() {
    let env = kueue(Options::default());
    spawn_run(&env, "gq", &["-w", "4", "--queue", "team-gpu"]);
    for pod in env.list("pods", NS) {
        assert_eq!(
            pod["spec"]["schedulingGates"],
            json!([{"name": ADMISSION_GATE}]),
            "{pod:#}"
        );
        assert_eq!(pod["status"]["conditions"][0]["reason"], "SchedulingGated");
    }

    let out = env.run(&["status", "-t", "gq"]);
    out.success()
        .stdout_has("Pending (queued in team-gpu)")
        .stdout_has("verdict: Pending");
    assert!(!out.stdout.contains("SchedulingGated"), "{out:#?}");
    let out = env.run(&["status", "-t", "gq", "-o", "json"]);
    let status: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(status["pods"][0]["queued"], json!(true), "{status:#}");
    assert_eq!(status["pods"][0]["queue"], json!("team-gpu"), "{status:#}");

    env.run(&["list"])
        .success()
        .stdout_has("worker 0/4 running, 4 queued in team-gpu");
    let out = env.run(&["list", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        list["runs"][0]["roles"]["worker"]["queued"],
        json!(4),
        "{list:#}"
    );
    assert_eq!(list["runs"][0]["queue"], json!("team-gpu"), "{list:#}");

    // Queued is never failed fast; --timeout still applies.
    let out = env.run(&["wait", "-t", "gq", "--for", "start", "--timeout", "1s"]);
    out.failure(4).stderr_has(
        "waiting for run 'gq' to start (verdict so far: Pending; 4 pods still queued in team-gpu)",
    );
    assert!(
        out.stdout
            .contains("worker    0/4 running, 4 queued in team-gpu"),
        "{out:#?}"
    );

    // Kueue admits the group: the gates go, the pods start, the wait ends.
    env.server.clear_requests();
    let child = start(&env, &["wait", "-t", "gq", "--for", "start"]);
    await_watches(&env, 1);
    for i in 0..4 {
        let pod = format!("gq-worker-{i}");
        env.server.remove_scheduling_gates(NS, &pod);
        running(&env, &pod);
    }
    let out = finish(child);
    out.success();
    assert!(
        out.stdout
            .contains("worker    0/4 running, 4 queued in team-gpu"),
        "{out:#?}"
    );
    assert!(out.stdout.contains("worker    4/4 running"), "{out:#?}");
}

#[test]
fn a_pod_template_with_its_own_gate_is_queued_too() {
    let env = Env::new();
    let template = env.write(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  schedulingGates: [{name: example.com/hold}]\n  containers: [{name: tensorflow, image: tf:1}]\n",
    );
    spawn_run(
        &env,
        "tg",
        &["-w", "2", "--pod-file", template.to_str().unwrap()],
    );
    env.run(&["list"])
        .success()
        .stdout_has("worker 0/2 running, 2 queued");
}

/// A 1.20 server does not know `schedulingGates`: it drops the field, so Kueue's gate
/// cannot hold the pods and the run would start unqueued: refused, nothing left. (The
/// real-server suite checks how real v1.20 and v1.36 servers store gates.)
#[test]
fn a_1_20_server_drops_the_gates() {
    let env = kueue(Options::v1_20());
    let out = env.spawn(&["-t", "old", "-w", "2", "--queue", "team-gpu"]);
    out.failure(1).stderr_has(
        "error: --queue team-gpu: the API server dropped Kueue's scheduling gate from pod old-worker-0, so the run would start unqueued: scheduling gates need Kubernetes 1.27 or later",
    );
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
}

/// A cluster that demands a queue: set it once in the defaults file.
#[test]
fn the_defaults_file_sets_queue_priority_class_and_deadline_and_a_flag_wins() {
    let env = kueue(Options::default());
    let path = env.defaults_file("queue: team-gpu\npriority_class: team-low\ndeadline: 12h\n");
    spawn_run(&env, "df", &["-w", "1", "--priority-class", "team-high"]);
    let pod = &env.list("pods", NS)[0];
    assert_eq!(pod["metadata"]["labels"][QUEUE_LABEL], json!("team-gpu"));
    assert_eq!(pod["spec"]["priorityClassName"], json!("team-high"));
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], json!(43200));

    let out = env.run(&["config"]);
    out.success();
    let row = |key: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} row: {out:#?}"))
            .to_string()
    };
    assert!(
        row("queue").contains("team-gpu")
            && row("queue").ends_with(&format!("config file {}", path.display())),
        "{out:#?}"
    );
    assert!(row("priority_class").contains("team-low"), "{out:#?}");
    assert!(row("deadline").contains("12h"), "{out:#?}");
    let out = env.run(&["config", "-o", "json"]);
    let config: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        config["settings"]["queue"],
        json!({"value": "team-gpu", "source": "file"})
    );
    assert_eq!(
        config["settings"]["deadline"],
        json!({"value": "12h", "source": "file"})
    );

    // Without the file: none, from the built-in default.
    std::fs::remove_file(&path).unwrap();
    let out = env.run(&["config", "-o", "json"]);
    let config: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        config["settings"]["queue"],
        json!({"value": null, "source": "default"})
    );
}

/// A pod template placing the run in a Volcano PodGroup created beforehand: its pods wait
/// for the whole group, queued, with the scheduler's reason.
#[test]
fn pods_of_a_gang_pod_group_are_queued_until_placed() {
    let env = Env::new();
    let template = env.write(
        "volcano.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n    scheduling.k8s.io/group-name: pg\n    scheduling.volcano.sh/queue-name: gpu\nspec:\n  schedulerName: volcano\n  containers: [{name: tensorflow, image: tf:1}]\n",
    );
    spawn_run(
        &env,
        "vg",
        &["-w", "2", "--pod-file", template.to_str().unwrap()],
    );
    crate::follow::unschedulable(
        &env,
        "vg-worker-0",
        "pod group is not ready, 2 Pending, 2 minAvailable",
    );
    env.run(&["list"])
        .success()
        .stdout_has("worker 0/2 running, 2 queued in gpu");
    let out = env.run(&["wait", "-t", "vg", "--for", "start", "--timeout", "1s"]);
    out.failure(4)
        .stderr_has("2 pods still queued in gpu; worker-0: Unschedulable: pod group is not ready");
    env.run(&["status", "-t", "vg"])
        .success()
        .stdout_has("Pending (queued in gpu)")
        .stdout_has("worker-0: Unschedulable: pod group is not ready");
}
