//! Nodes fail (issue 39), on a cluster with a second node (`tools/one-node/second-node.sh`,
//! tainted so that only these tests' pods land there): a run's node killed under it is
//! named in `status` within the node monitor's grace period; without `--restarts`, `wait`
//! ends (exit 3) naming the lost node once `--node-lost-after` has passed; with
//! `--restarts 1` the run comes back on the healthy node and resumes from its backup.
//!
//! The second node is controlled through `TF_SPAWNER_PODS_SECOND_NODE` (a command taking
//! `kill` or `start`, as `.ci/run` sets it); without it, or without a node labelled
//! `tf-spawner.test/second-node=true`, the tests skip with a notice.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

use crate::after::{Claim, TF_IMAGE, node_has};
use crate::support::{Cluster, mnist_entrypoint, tag};

const CONTROL: &str = "TF_SPAWNER_PODS_SECOND_NODE";
const LABEL: &str = "tf-spawner.test/second-node=true";
/// The node-lifecycle controller's grace period (Kubernetes' default: 50 s on v1.36, 40 s
/// on v1.20) plus its 5 s monitor period and the status' own lag.
const DETECTION: Duration = Duration::from_secs(50 + 5 + 15);

/// The pod template: the suite's, plus the toleration of the second node's taint and a
/// preference for that node, so that the run's pods land there while it lives (and on
/// the first node once it is tainted unreachable).
fn template(c: &Cluster, image: &str) -> std::path::PathBuf {
    let prefer_second = second_node_preference("In");
    tolerating(c, "pod-second-node.yaml", image, &prefer_second)
}

/// A pod template of one `tensorflow` container of `image` (the suite's requests),
/// tolerating the second node's taint, with `affinity` (the lines under `affinity:`).
fn tolerating(c: &Cluster, name: &str, image: &str, affinity: &str) -> std::path::PathBuf {
    c.write(
        name,
        &format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: worker
spec:
  restartPolicy: Never
  tolerations:
    - {{key: tf-spawner.test/second-node, operator: Exists, effect: NoSchedule}}
  affinity:
{affinity}  containers:
    - name: tensorflow
      image: {image}
      imagePullPolicy: IfNotPresent
      resources:
        requests: {{cpu: 10m, memory: 32Mi}}
"
        ),
    )
}

/// The second node's name, or `None` (with a notice) when these tests cannot run.
async fn second_node(c: &Cluster, test: &str) -> Option<String> {
    let skip = |why: &str| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
    };
    if std::env::var_os(CONTROL).is_none_or(|v| v.is_empty()) {
        skip(&format!(
            "{CONTROL} not set (tools/one-node/second-node.sh; see .ci/run)"
        ));
        return None;
    }
    let nodes = Api::<Node>::all(c.client.clone())
        .list(&ListParams::default().labels(LABEL))
        .await
        .expect("list nodes");
    let Some(name) = nodes.items.into_iter().find_map(|n| n.metadata.name) else {
        skip("the cluster has no second node (tools/one-node/second-node.sh start)");
        return None;
    };
    Some(name)
}

/// The cluster and its second node's name, with the TensorFlow image on the node; `None`
/// (with a notice) when a TensorFlow test on two nodes cannot run.
async fn tensorflow_on_two_nodes(name: &str, test: &str) -> Option<(Cluster, String)> {
    let c = Cluster::new(name).await?;
    let node = second_node(&c, test).await?;
    if !node_has(&c, TF_IMAGE).await {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: the node has no {TF_IMAGE}"
        );
        return None;
    }
    Some((c, node))
}

fn control(action: &str) {
    let command = std::env::var(CONTROL).expect("checked");
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{command} {action}"))
        .status()
        .expect("run the second node's control");
    assert!(status.success(), "{command} {action}: {status}");
}

/// Kills the second node (or, `cut`, its kubelet alone: its containers run on); brings
/// it back when dropped (a failed test included).
struct Killed;

impl Killed {
    fn node() -> Killed {
        control("kill");
        Killed
    }

    fn cut() -> Killed {
        control("cut");
        Killed
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        control("start");
    }
}

/// Spawns run `tag` of `script` with `pod_file` (not the suite's template) and `extra`.
async fn spawn(
    c: &Cluster,
    tag: &str,
    script: &std::path::Path,
    pod_file: &std::path::Path,
    extra: &[&str],
) {
    let mut args = vec!["-t", tag, "--pod-file", pod_file.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(script.to_str().unwrap());
    c.run(&args).await.success();
}

/// The nodes the run's pods are on, by pod name.
fn nodes_of(pods: &[Pod]) -> Vec<(String, String)> {
    pods.iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Sleeps for ten minutes: only a lost node ends it.
const SLEEPER: &str = "import time\nprint('up', flush=True)\ntime.sleep(600)\n";

#[tokio::test]
async fn a_killed_node_is_named_by_status_and_ends_wait_with_exit_3() {
    let test = "a_killed_node_is_named_by_status_and_ends_wait_with_exit_3";
    let Some(c) = Cluster::new("node-lost").await else {
        return;
    };
    let Some(node) = second_node(&c, test).await else {
        return;
    };
    let t = tag("lost");
    let script = c.write("sleeper.py", SLEEPER);
    let pod_file = template(&c, "tf-spawner.local/python:3.11");
    spawn(
        &c,
        &t,
        &script,
        &pod_file,
        &["-w", "2", "--node-lost-after", "10s"],
    )
    .await;
    let running = c
        .pods_in_phase(&t, "Running", Duration::from_secs(120))
        .await;
    let placed = nodes_of(&running);
    assert!(placed.iter().all(|(_, n)| n == &node), "{placed:?}");
    let wait = c.start(&["wait", "-t", &t, "--timeout", "300s"]);
    let killed_at = Instant::now();
    let _killed = Killed::node();
    // status names the task and its node within the grace period (and a few seconds).
    let shown = c
        .eventually("status naming the lost node", DETECTION, || async {
            let out = c.run(&["status", "-t", &t]).await;
            out.stdout.contains("NodeLost").then_some(out.stdout)
        })
        .await;
    let seen_after = killed_at.elapsed();
    assert!(
        shown.contains(&format!("worker-0: NodeLost: node {node} not ready since")),
        "{shown}"
    );
    assert!(shown.contains("Running (NodeLost)"), "{shown}");
    let json = c.run(&["status", "-t", &t, "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).expect("status -o json");
    let pods = json["pods"].as_array().expect("pods");
    assert!(
        pods.iter()
            .all(|p| p["reason"] == "NodeLost" && p["node_lost_since"].is_string()),
        "{json:#}"
    );
    // wait ends once the pods' 10 s toleration has run out: the taint manager evicts them.
    let out = wait.wait_with_output().await.expect("wait ends");
    let waited = killed_at.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("on a lost node"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "was lost with its node: NodeLost: node {node} not ready since"
        )),
        "{stderr}"
    );
    assert!(waited < DETECTION + Duration::from_secs(60), "{waited:?}");
    eprintln!(
        "nodes: status named the lost node {:.0} s after the kill, wait ended {:.0} s after it",
        seen_after.as_secs_f64(),
        waited.as_secs_f64()
    );
}

#[tokio::test]
async fn a_run_whose_node_dies_restarts_on_the_other_node_and_resumes() {
    let test = "a_run_whose_node_dies_restarts_on_the_other_node_and_resumes";
    let Some((c, node)) = tensorflow_on_two_nodes("node-restart", test).await else {
        return;
    };
    let _claim = Claim::new(&c).await;
    let t = tag("moved");
    let pod_file = template(&c, TF_IMAGE);
    let child = mnist_restarting_once(&c, &t, &pod_file, "5s").await;
    let placed = nodes_of(&c.pods(&t).await);
    assert!(placed.iter().all(|(_, n)| n == &node), "{placed:?}");
    let killed_at = Instant::now();
    let killed = Killed::node();
    let (stdout, log) = succeeded(&c, &t, child).await;
    let took = killed_at.elapsed();
    restarted_as_lost_with(&stdout, &node);
    assert!(stdout.contains("force-deleting"), "{stdout}");
    // The second attempt ran on the other node, and resumed from the backup.
    let moved = nodes_of(&c.pods(&t).await);
    assert!(moved.iter().all(|(_, n)| n != &node), "{moved:?}");
    assert!(log.contains("attempt 1\n"), "{log}");
    let epoch = resumed_from(&log, "worker-0", &stdout);
    assert!(epoch >= 3, "resumed from epoch {epoch}: {log}");
    assert!(log.contains("Epoch 12/12"), "{log}");
    drop(killed);
    eprintln!(
        "nodes: node killed after epoch 2; the run resumed from epoch {epoch} on the other node and succeeded {:.0} s after the kill",
        took.as_secs_f64()
    );
}

/// The pod template of a run spread over both nodes, one task per node as a real
/// scheduler spreads them: the first attempt's pods (`tf-spawner/attempt: "0"`) may not
/// share a node (a required anti-affinity on that label), the restarted ones, whose
/// selector matches only the first attempt's pods (gone by then), go where they fit.
fn spread(c: &Cluster, tag: &str) -> std::path::PathBuf {
    spread_preferring(c, tag, "pod-spread.yaml", "")
}

/// [`spread`]'s template, with `preference` (a node affinity) added to its affinity.
fn spread_preferring(c: &Cluster, tag: &str, name: &str, preference: &str) -> std::path::PathBuf {
    let apart = format!(
        "    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels: {{training_attempt: {tag}, tf-spawner/attempt: \"0\"}}
{preference}"
    );
    tolerating(c, name, TF_IMAGE, &apart)
}

/// Issue 48 (item 5): two MNIST workers on two nodes, the second node killed. The
/// survivor's all-reduce aborts (exit 1, not retryable) long before the cluster names
/// the node lost; `wait` holds that verdict until the peer's fate is known, and restarts
/// when its node is named lost, on the healthy node, from the backup.
#[tokio::test]
async fn a_run_spread_over_two_nodes_survives_the_loss_of_one() {
    let test = "a_run_spread_over_two_nodes_survives_the_loss_of_one";
    let Some((c, node)) = tensorflow_on_two_nodes("node-spread", test).await else {
        return;
    };
    let _claim = Claim::new(&c).await;
    let t = tag("spread");
    let pod_file = spread(&c, &t);
    let child = mnist_restarting_once(&c, &t, &pod_file, "10s").await;
    let placed = nodes_of(&c.pods(&t).await);
    assert!(
        placed.iter().filter(|(_, n)| n == &node).count() == 1,
        "one task on each node: {placed:?}"
    );
    let killed_at = Instant::now();
    let killed_clock = k8s_openapi::jiff::Timestamp::now().as_second();
    let killed = Killed::node();
    let (stdout, log) = succeeded(&c, &t, child).await;
    let took = killed_at.elapsed();
    // The survivor's abort was seen, held, and the lost peer restarted the run.
    let held = stdout
        .lines()
        .find(|l| l.contains("failed because of a peer (TensorFlow says so)"))
        .unwrap_or_else(|| panic!("{stdout}"));
    eprintln!("nodes: {held}");
    restarted_as_lost_with(&stdout, &node);
    let pods = c.pods(&t).await;
    let moved = nodes_of(&pods);
    assert!(moved.iter().all(|(_, n)| n != &node), "{moved:?}");
    // When the new attempt's pods were made (the API server's clock, to the second).
    let restarted = pods
        .iter()
        .filter_map(|p| p.metadata.creation_timestamp.as_ref())
        .map(|t| t.0.as_second() - killed_clock)
        .min()
        .unwrap_or(-1);
    assert!(log.contains("attempt 1\n"), "{log}");
    assert!(log.contains("worker-0: resuming from epoch "), "{log}");
    assert!(log.contains("Epoch 12/12"), "{log}");
    drop(killed);
    eprintln!(
        "nodes: a run spread over two nodes lost one; restarted {restarted} s and succeeded {:.0} s after the kill",
        took.as_secs_f64()
    );
}

/// The node affinity preferring (`In`) or avoiding (`NotIn`) the second node.
fn second_node_preference(operator: &str) -> String {
    format!(
        "    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference:
            matchExpressions:
              - {{key: tf-spawner.test/second-node, operator: {operator}, values: [\"true\"]}}
"
    )
}

/// Issue 48 (item 6): the partitioned node. The chief, which writes the backup, is on
/// the second node, the worker on the first; the second node is cut off (its kubelet
/// gone, its containers alive, their network intact), so the old attempt trains on
/// while the cluster names the node lost and evicts the chief. The restart stops the
/// worker on the reachable node first (its pod is deleted, it ends on SIGTERM), so the
/// old chief's next all-reduce fails and it writes nothing more; only then are the new
/// pods created. The new attempt resumes from the backup, inside the training (not
/// from epoch 1, as it would had the old chief finished and deleted it), and ends.
#[tokio::test]
async fn a_restart_away_from_a_cut_off_node_resumes_from_an_intact_backup() {
    let test = "a_restart_away_from_a_cut_off_node_resumes_from_an_intact_backup";
    let Some((c, node)) = tensorflow_on_two_nodes("node-cut", test).await else {
        return;
    };
    let _claim = Claim::new(&c).await;
    let t = tag("cut");
    let script = crate::support::repo_file("examples/mnist.py");
    let entry = c.write(
        "entrypoint.sh",
        // Long enough to outlast the node's loss being named (~50 s): 80 epochs of the
        // example's batch once ended in 35 s on an idle machine, before it, and the old
        // chief finished; the first attempt's epochs are ~10 times longer.
        &mnist_entrypoint(80),
    );
    let chief = spread_preferring(&c, &t, "chief.yaml", &second_node_preference("In"));
    let worker = spread_preferring(&c, &t, "worker.yaml", &second_node_preference("NotIn"));
    let mut args = vec![
        "-w",
        "1",
        "--chief",
        "--chief-pod-file",
        chief.to_str().unwrap(),
    ];
    args.extend(["--volume", "out", "-c", entry.to_str().unwrap()]);
    args.extend(["--node-lost-after", "5s"]);
    spawn(&c, &t, &script, &worker, &args).await;
    let child = c.start_restarting_once(&t, "600s");
    c.eventually(
        "epoch 3 of the first attempt",
        Duration::from_secs(300),
        || async {
            let log = c.run(&["logs", "-t", &t, "--task", "chief-0"]).await.stdout;
            log.contains("Epoch 3/80").then_some(())
        },
    )
    .await;
    let placed = nodes_of(&c.pods(&t).await);
    let chief_pod = format!("{t}-chief-0");
    assert!(
        placed.iter().any(|(p, n)| p == &chief_pod && n == &node)
            && placed.iter().filter(|(_, n)| n == &node).count() == 1,
        "the chief alone on the second node: {placed:?}"
    );
    let cut_at = Instant::now();
    let cut = Killed::cut();
    let out = child.wait_with_output().await.expect("wait ends");
    let took = cut_at.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = c.run(&["logs", "-t", &t, "--task", "chief-0"]).await.stdout;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\nchief-0:\n{log}"
    );
    restarted_as_lost_with(&stdout, &node);
    // Not every task was on the cut node: no warning about tasks training on.
    assert!(
        !stderr.contains("if it is cut off rather than dead"),
        "{stderr}"
    );
    assert!(log.contains("attempt 1\n"), "{log}");
    let epoch = resumed_from(&log, "chief-0", &format!("{stdout}\n{stderr}"));
    assert!(epoch >= 3, "resumed from epoch {epoch}: {log}");
    assert!(log.contains("Epoch 80/80"), "{log}");
    assert!(log.contains("chief-0: model saved to "), "{log}");
    drop(cut);
    eprintln!(
        "nodes: the chief's node cut off in epoch 3; the run resumed from epoch {epoch} on the other node and succeeded {:.0} s after the cut",
        took.as_secs_f64()
    );
}

/// Spawns run `t` of examples/mnist.py (2 workers, 12 epochs, the claim `out`) with
/// `pod_file` and `--node-lost-after LOST_AFTER`, starts the wait that restarts it once,
/// and returns that wait once the first attempt is in epoch 3.
async fn mnist_restarting_once(
    c: &Cluster,
    t: &str,
    pod_file: &std::path::Path,
    lost_after: &str,
) -> tokio::process::Child {
    let script = crate::support::repo_file("examples/mnist.py");
    let entry = c.write("entrypoint.sh", &mnist_entrypoint(12));
    let mut args = vec!["-w", "2", "--volume", "out", "-c", entry.to_str().unwrap()];
    args.extend(["--node-lost-after", lost_after]);
    spawn(c, t, &script, pod_file, &args).await;
    let child = c.start_restarting_once(t, "600s");
    await_epoch_3(c, t).await;
    child
}

/// The wait's stdout has its restart, for the loss of `node`.
#[track_caller]
fn restarted_as_lost_with(stdout: &str, node: &str) {
    let restart = stdout
        .lines()
        .find(|l| l.contains(": restart 1/1"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        restart.contains("was lost with its node: NodeLost: node ") && restart.contains(node),
        "{stdout}"
    );
}

/// The epoch `task`'s log says the second attempt resumed from (`said`: what the wait
/// printed, shown if it says none).
#[track_caller]
fn resumed_from(log: &str, task: &str, said: &str) -> u32 {
    log.lines()
        .find_map(|l| l.split_once(&format!("{task}: resuming from epoch ")))
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no resume line:\n{log}\nwait said:\n{said}"))
}

/// Until worker 0's log says epoch 3 of 12: the first attempt trains.
async fn await_epoch_3(c: &Cluster, t: &str) {
    c.eventually(
        "epoch 3 of the first attempt",
        Duration::from_secs(300),
        || async {
            let log = c.run(&["logs", "-t", t, "--task", "worker-0"]).await.stdout;
            log.contains("Epoch 3/12").then_some(())
        },
    )
    .await;
}

/// The restarting wait (`child`) ended with exit 0: its stdout and worker 0's log.
async fn succeeded(c: &Cluster, t: &str, child: tokio::process::Child) -> (String, String) {
    let out = child.wait_with_output().await.expect("wait ends");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = c.run(&["logs", "-t", t, "--task", "worker-0"]).await.stdout;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\nworker-0:\n{log}"
    );
    (stdout, log)
}

/// The number of the last complete backup (`ckpt-N`) in generation folder `generation` of
/// the backup root `root` (examples/mnist.py's layout: `ROOT/gen-K/chief/checkpoint`).
fn last_backup(root: &std::path::Path, generation: u32) -> Option<u32> {
    let state = root.join(format!("gen-{generation}/chief/checkpoint"));
    let text = std::fs::read_to_string(state).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("model_checkpoint_path: \"ckpt-"))
        .and_then(|rest| rest.trim_end_matches('"').parse().ok())
}

/// The names in `dir` (none when it is absent).
fn names_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 48 (item 6): the partitioned node, every task on it. Both workers run on the
/// second node, which is cut off (its kubelet gone, its containers alive): nothing the
/// cluster does reaches them, so the old attempt trains on, writing its backups, while
/// the restart brings a new attempt up on the first node. Each start of examples/mnist.py
/// backs up into a folder of its own (`backup/gen-K`), the new one seeded with a copy of
/// the old one's last complete backup, and an old start stops before its next backup once
/// a newer folder is there. Asserted on the volume (a hostPath the test reads): the old
/// attempt went on backing up after the cut (the partition is real), the new attempt
/// resumed from the copy of its last backup (not from epoch 1), the old attempt's folder
/// stopped changing once the new one had begun, and when the run succeeded no folder of
/// either was left (the old attempt wrote nothing after the new one's end).
#[tokio::test]
async fn a_cut_off_attempt_cannot_touch_the_backup_its_restart_resumes_from() {
    let test = "a_cut_off_attempt_cannot_touch_the_backup_its_restart_resumes_from";
    let Some((c, node)) = tensorflow_on_two_nodes("node-fence", test).await else {
        return;
    };
    let claim = Claim::new(&c).await;
    let t = tag("fence");
    let root = claim.dir.path().join(&t).join("backup");
    let script = crate::support::repo_file("examples/mnist.py");
    // Long enough that the old attempt, training on alone, does not end before the new one
    // has begun (with 200 epochs of the example's batch it once did on v1.20, whose
    // detection is quicker: it had deleted its backup and the new attempt started over;
    // 85 were done at the restart; the first attempt's epochs are ~10 times longer now).
    let entry = c.write("entrypoint.sh", &mnist_entrypoint(80));
    let pod_file = template(&c, TF_IMAGE);
    let args = ["-w", "2", "--volume", "out", "-c", entry.to_str().unwrap()];
    let mut args = args.to_vec();
    args.extend(["--node-lost-after", "5s"]);
    spawn(&c, &t, &script, &pod_file, &args).await;
    let child = c.start_restarting_once(&t, "900s");
    let before = c
        .eventually(
            "the first attempt's 3rd backup",
            Duration::from_secs(300),
            || async { last_backup(&root, 0).filter(|n| *n >= 3) },
        )
        .await;
    let placed = nodes_of(&c.pods(&t).await);
    assert!(placed.iter().all(|(_, n)| n == &node), "{placed:?}");
    let cut = Killed::cut();
    // The new attempt seeds its folder from the old one's last complete backup.
    let seeded = c
        .eventually(
            "the new attempt's seeded backup",
            Duration::from_secs(300),
            || async {
                let log = c
                    .run(&["logs", "-t", &t, "--task", "worker-0"])
                    .await
                    .stdout;
                let line = log
                    .lines()
                    .find(|l| l.contains("worker-0: backup gen-1 seeded from gen-0"))?;
                line.rsplit_once("(ckpt-")?
                    .1
                    .trim_end_matches(')')
                    .parse::<u32>()
                    .ok()
            },
        )
        .await;
    assert!(
        seeded > before,
        "the cut-off attempt trained on after the cut: backup {before} at the cut, {seeded} copied"
    );
    // The old attempt stops before its next backup: its folder no longer changes while
    // the new attempt (one step an epoch) backs up three more times (or ends,
    // its folder deleted with the run's end).
    let fenced = last_backup(&root, 0);
    let new_at_fence = last_backup(&root, 1).unwrap_or(0);
    c.eventually(
        "the new attempt's next three backups",
        Duration::from_secs(300),
        || async {
            let gone = !root.join("gen-1").exists();
            (gone || last_backup(&root, 1).is_some_and(|n| n >= new_at_fence + 3)).then_some(())
        },
    )
    .await;
    let later = last_backup(&root, 0);
    let out = child.wait_with_output().await.expect("wait ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = c
        .run(&["logs", "-t", &t, "--task", "worker-0"])
        .await
        .stdout;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\nworker-0:\n{log}"
    );
    assert_eq!(fenced, later, "the old attempt went on backing up:\n{log}");
    let restart = stdout
        .lines()
        .find(|l| l.contains(": restart 1/1"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(restart.contains(&node), "{stdout}");
    let moved = nodes_of(&c.pods(&t).await);
    assert!(moved.iter().all(|(_, n)| n != &node), "{moved:?}");
    assert!(log.contains("attempt 1\n"), "{log}");
    let epoch: u32 = log
        .lines()
        .find_map(|l| l.split_once("worker-0: resuming from epoch "))
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no resume line:\n{log}\nwait said:\n{stdout}\n{stderr}"));
    assert!(
        epoch >= seeded,
        "resumed from epoch {epoch}, backup {seeded}: {log}"
    );
    assert!(log.contains("Epoch 80/80"), "{log}");
    assert!(log.contains("worker-0: model saved to "), "{log}");
    // Nothing of either attempt's backups is left, a while after the end: the old one,
    // still alive on the cut node until it is started again, wrote no backup since.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let left = names_in(&root);
    assert!(left.is_empty(), "left in the backup folder: {left:?}");
    drop(cut);
    eprintln!(
        "nodes: both tasks on the cut node, backup {before} at the cut; the new attempt copied backup {seeded}, resumed from epoch {epoch} and succeeded; the old one stopped at backup {fenced:?}"
    );
}
