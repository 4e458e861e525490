//! A node full now (issue 51, "Waiting in silence"), on a real scheduler and kubelet:
//! a run that holds most of the node's CPUs, then one that would fit the empty node but
//! not what is left. The spawn warns (what already runs leaves too little), and `wait`
//! and `logs -f` say the scheduler's own `Unschedulable` reason while they wait, `logs
//! -f` on stderr, with a heartbeat in the pipe. And a task whose peer cannot start waits
//! for the peer's name before its script.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

use crate::reading::Reading;
use crate::support::{Cluster, tag};

/// Millicores of a CPU quantity (`2`, `1500m`, `0.5`).
fn millis(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => (q.parse::<f64>().unwrap_or(0.0) * 1000.0) as i64,
    }
}

/// The nodes that take the suite's pods (Ready, schedulable, no taint), each with its
/// free millicores now: allocatable less the CPU requests of the pods on it that have
/// not ended.
async fn open_nodes(c: &Cluster) -> Vec<(String, i64)> {
    let nodes = Api::<Node>::all(c.client.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes")
        .items;
    let mut open = Vec::new();
    for node in &nodes {
        let spec = node.spec.as_ref();
        let ready = (node.status.iter())
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready
            || spec
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| !t.is_empty())
            || spec.and_then(|s| s.unschedulable) == Some(true)
        {
            continue;
        }
        let (Some(name), Some(cpu)) = (
            node.metadata.name.clone(),
            (node.status.as_ref())
                .and_then(|s| s.allocatable.as_ref())
                .and_then(|a| a.get("cpu")),
        ) else {
            continue;
        };
        let fields = format!("spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed");
        let pods = Api::<Pod>::all(c.client.clone())
            .list(&ListParams::default().fields(&fields))
            .await
            .expect("list pods")
            .items;
        let used: i64 = (pods.iter())
            .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
            .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
            .map(|q| millis(&q.0))
            .sum();
        open.push((name, millis(&cpu.0) - used));
    }
    open
}

#[tokio::test]
async fn a_full_node_is_warned_at_the_spawn_and_said_while_wait_and_logs_wait() {
    let Some(c) = Cluster::new("full").await else {
        return;
    };
    // On each node that takes pods, a hog bound to it leaves 300m; the second run asks
    // for 1 CPU, which an empty node holds.
    let sleep = c.write("sleep.py", "import time\ntime.sleep(600)\n");
    let template = std::fs::read_to_string(c.template()).expect("template");
    let nodes = open_nodes(&c).await;
    assert!(!nodes.is_empty(), "no node takes pods");
    for (node, free) in &nodes {
        let pinned = template.replace("spec:\n", &format!("spec:\n  nodeName: {node}\n"));
        let file = c.write(&format!("hog-{node}.yaml"), &pinned);
        let hog_cpu = format!("{}m", free - 300);
        let out = c
            .run(&[
                "-t",
                &tag("hog"),
                "-w",
                "1",
                "--cpu",
                &hog_cpu,
                "--wait",
                "--pod-file",
                file.to_str().unwrap(),
                sleep.to_str().unwrap(),
            ])
            .await;
        out.success();
    }
    let t = tag("full");
    let out = c.spawn(&t, &sleep, &["-w", "1", "--cpu", "1"]).await;
    assert!(
        out.stderr.contains(
            "warning: no node has room for the worker's pod now (too little cpu left by what already runs; it asks for cpu 1, memory "
        ) && out.stderr.contains("; ask for less (--cpu, --memory) or wait for room\n"),
        "{out:#?}"
    );
    let out = c
        .run(&["wait", "-t", &t, "--timeout", "20s", "--heartbeat", "5s"])
        .await;
    assert_eq!(out.code, 4, "{out:#?}");
    // The scheduler's words, once on the waiting line; then the heartbeat repeats them.
    let said: Vec<&str> = (out.stdout.lines())
        .filter(|l| l.starts_with("waiting   worker-0: Unschedulable: 0/"))
        .collect();
    assert_eq!(said.len(), 1, "{out:#?}");
    assert!(said[0].contains("Insufficient cpu"), "{out:#?}");
    assert!(
        out.stdout
            .contains("still     Pending (worker-0: Unschedulable: 0/"),
        "{out:#?}"
    );
    let follow = Reading::new(c.start(&["logs", "-f", "-t", &t, "--heartbeat", "2s"]));
    // Its heartbeat, once nothing changed for 2 s; then Ctrl-C.
    follow
        .stderr_has(
            "note: still not started, nothing new for ",
            Duration::from_secs(60),
        )
        .await;
    follow.interrupt();
    let out = follow.finish(Duration::from_secs(60)).await;
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.stdout, "", "{out:#?}");
    let said = out
        .stderr
        .matches("note: not started yet: worker-0: Unschedulable: 0/")
        .count();
    assert_eq!(said, 1, "{out:#?}");
    assert!(
        out.stderr
            .contains("note: still not started, nothing new for "),
        "{out:#?}"
    );
}

/// A task whose peer cannot start (`plan/start.rs`) waits for the peer's name in the
/// cluster's DNS, says so in its log after 10 s, and at the bound
/// (`TF_SPAWNER_WAIT_FOR_NAMES`, 15 s here from `-e`) names it and starts its script.
#[tokio::test]
async fn a_task_waits_for_its_peers_name_says_so_and_starts_at_the_bound() {
    let Some(c) = Cluster::new("names").await else {
        return;
    };
    let script = c.write("hello.py", "print('the script started')\n");
    let template = std::fs::read_to_string(c.template()).expect("template");
    let nowhere = template.replace(
        "spec:\n",
        "spec:\n  nodeSelector:\n    tf-spawner.test/nowhere: \"true\"\n",
    );
    let nowhere = c.write("nowhere.yaml", &nowhere);
    let bound = c.write("bound.env", "TF_SPAWNER_WAIT_FOR_NAMES=15\n");
    let t = tag("names");
    let chief_template = c.template();
    c.run(&[
        "-t",
        &t,
        "--chief",
        "-w",
        "1",
        "--chief-pod-file",
        chief_template.to_str().unwrap(),
        "--pod-file",
        nowhere.to_str().unwrap(),
        "-e",
        bound.to_str().unwrap(),
        script.to_str().unwrap(),
    ])
    .await
    .success();
    let chief = format!("{t}-chief-0");
    c.eventually("the chief's end", Duration::from_secs(180), || async {
        let pods = c.pods(&t).await;
        let pod = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(&chief))?;
        (crate::support::phase(pod) == "Succeeded").then_some(())
    })
    .await;
    let log = c.run(&["logs", "-t", &t, "--task", "chief-0"]).await.stdout;
    let worker = format!("{t}-worker-0.{}.svc", c.namespace);
    let said: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("| ").map(|(_, said)| said))
        .collect();
    assert_eq!(said.len(), 3, "{log}");
    // The seconds each line says: at least 10, then at least the bound.
    let seconds = |line: &str, before: &str, after: &str| {
        line.strip_prefix(before)
            .and_then(|rest| rest.strip_suffix(after))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{line:?} is not {before:?}N{after:?}: {log}"))
    };
    let waiting = seconds(
        said[0],
        "tf-spawner: waiting ",
        &format!(" s so far for DNS to find {worker}"),
    );
    assert!(waiting >= 10, "{log}");
    let bound = seconds(
        said[1],
        &format!("tf-spawner: {worker} not found in DNS after "),
        " s; starting anyway",
    );
    assert!(bound >= 15, "{log}");
    assert_eq!(said[2], "the script started", "{log}");
}
