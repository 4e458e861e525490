//! A task that failed because of a peer: TensorFlow's texts recognised (`verdict/peer.rs`)
//! in logs of the real shape (`logs/`: the lines TensorFlow's source prints, in the
//! traceback Python and Keras wrap them in), and the blame that follows, in both orders
//! the kubelet may report the two exits.

use super::*;
use crate::verdict::peer::recognise;

fn log(name: &str) -> &'static str {
    match name {
        "survivor" => include_str!("logs/survivor-peer-node-lost.log"),
        "raised" => include_str!("logs/raised.log"),
        "victim" => include_str!("logs/victim-socket-closed.log"),
        "heartbeat" => include_str!("logs/coordination-heartbeat.log"),
        "leader" => include_str!("logs/leader-gone.log"),
        // A real run (`tf-spawner --local -w 2 examples/mnist.py`, TensorFlow 2.21,
        // TF_SPAWNER_FAIL_TASK=worker-1): worker 1 raised after its first epoch, worker
        // 0's all-reduce aborted 1 s later naming task 1 (then it was stopped).
        "real-victim" => include_str!("logs/real-local-victim.log"),
        "real-raised" => include_str!("logs/real-local-raised.log"),
        // Real runs of examples/keras_jax.py (Keras 3.15.1, jax 0.10.2, CPU), two
        // processes, one SIGKILLed mid-training; the survivor's last 20 lines (the
        // repeated `Error dispatching computation: ` shortened). Worker 1 killed: worker
        // 0 (the coordinator) raised at once, then aborted (exit 134) 94 s later when its
        // shutdown barrier saw task 1's heartbeat time out.
        "jax-heartbeat" => include_str!("logs/jax-survivor-heartbeat.log"),
        // Worker 0 killed: worker 1 aborted (exit 134) 0.2 s later; its fatal line
        // (`jax-leader`) came before its traceback, so its last lines hold Gloo's error.
        "jax-gloo" => include_str!("logs/jax-survivor-gloo.log"),
        "jax-leader" => include_str!("logs/jax-leader-gone.log"),
        _ => unreachable!(),
    }
}

fn worker(index: u32) -> Task {
    Task {
        role: Role::Worker,
        index,
    }
}

#[test]
fn tensorflows_peer_failures_are_recognised_with_the_peer_they_name() {
    let cases = [
        (
            "survivor",
            0,
            Some(1),
            "Collective ops is aborted by: failed to connect",
        ),
        (
            "victim",
            0,
            Some(1),
            "Collective ops is aborted by: Socket closed",
        ),
        ("heartbeat", 0, Some(1), "2026-11-26 14:03:12.551230: E "),
        ("leader", 1, Some(0), "2026-11-26 14:03:14.110982: E "),
    ];
    for (name, own, peer, line) in cases {
        let abort = recognise(log(name), Some(worker(own))).expect(name);
        assert_eq!(abort.peer, peer.map(worker), "{name}");
        assert!(abort.line.starts_with(line), "{name}: {}", abort.line);
        assert!(abort.line.chars().count() <= 161, "{name}: {}", abort.line);
    }
    // A task's own error is no peer's; a peer failure naming only the task itself names
    // no peer.
    assert_eq!(recognise(log("raised"), Some(worker(1))), None);
    let own_only = "Collective ops is aborted by: Socket closed\nAdditional GRPC error information from remote target /job:worker/replica:0/task:0:\n";
    let abort = recognise(own_only, Some(worker(0))).unwrap();
    assert_eq!(abort.peer, None);
    assert_eq!(
        abort.to_string(),
        "aborted because of a peer (Collective ops is aborted by: Socket closed)"
    );
}

/// Worker `index` of run `t`, failed with exit 1 at `finished` (seconds after 14:31:00).
fn exited_at(index: u32, finished: u32) -> Value {
    exited_with(index, 1, finished)
}

/// Worker `index` of run `t`, failed with exit `code` at `finished` (as [`exited_at`]).
fn exited_with(index: u32, code: i32, finished: u32) -> Value {
    let mut p = pod(&format!("worker-{index}"), "Failed");
    p["status"]["containerStatuses"] = json!([{
        "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"terminated": {"exitCode": code, "reason": "Error",
            "startedAt": "2026-11-26T14:30:00Z",
            "finishedAt": format!("2026-11-26T14:31:{finished:02}Z")}}
    }]);
    p
}

fn decided(t: &Tracker) -> Failure {
    match t.verdict() {
        Verdict::Failed(f) => f,
        v => panic!("{v:?}"),
    }
}

const RAISED: &str = "pod t-worker-1 (worker-1) failed: exit code 1, reason Error";
const VICTIM: &str = "pod t-worker-0 (worker-0) failed: exit code 1, reason Error; aborted because of its peer worker-1 (Collective ops is aborted by: Socket closed)";

/// Worker 1 raised at 14:31:33, worker 0's collective aborted at 14:31:43: `status` the
/// next morning (one list) names worker 1, by the kubelet's times and by the logs.
#[test]
fn a_snapshot_blames_the_task_that_failed_first_by_the_kubelets_times() {
    let mut t = tracker(vec![exited_at(0, 43), exited_at(1, 33)], false);
    assert_eq!(decided(&t).to_string(), RAISED);
    t.note_log("t-worker-0", log("victim"));
    t.note_log("t-worker-1", log("raised"));
    assert_eq!(decided(&t).to_string(), RAISED);
    let failures: Vec<String> = t.failures().iter().map(ToString::to_string).collect();
    assert_eq!(failures, [VICTIM, RAISED]);
}

/// The other order: the kubelet ended the victim first (a second's resolution, a busy
/// node). Its log says it was a peer's doing: the peer is named, in a snapshot and in a
/// follow that saw the victim first.
#[test]
fn a_victim_reported_first_is_not_blamed() {
    let mut t = tracker(vec![exited_at(0, 33), exited_at(1, 33)], false);
    t.note_log("t-worker-0", log("victim"));
    t.note_log("t-worker-1", log("raised"));
    assert_eq!(decided(&t).to_string(), RAISED);
    let mut t = Tracker::new("t", false);
    t.replace(vec![
        view(pod("worker-0", "Running")),
        view(pod("worker-1", "Running")),
    ]);
    t.update(view(exited_at(0, 30)));
    t.note_log("t-worker-0", log("victim"));
    let alone = decided(&t);
    assert_eq!(alone.to_string(), VICTIM);
    assert!(t.peers_unended(&alone), "worker-1 still runs");
    t.update(view(exited_at(1, 33)));
    t.note_log("t-worker-1", log("raised"));
    let both = decided(&t);
    assert_eq!(both.to_string(), RAISED);
    assert!(!t.peers_unended(&both));
}

/// The survivor's abort while its peer's node stopped reporting: the loss decides (a
/// removal, retried), before the taint manager's eviction.
#[test]
fn a_survivors_abort_beside_a_lost_peer_is_the_peers_loss() {
    let mut t = tracker(vec![exited_at(0, 40), pod("worker-1", "Running")], false);
    t.note_log("t-worker-0", log("survivor"));
    let f = decided(&t);
    assert!(f.after_peer.is_some() && t.peers_unended(&f), "{f}");
    assert!(!retryable::RestartOn::default().retries(&f.kind), "{f}");
    t.update(view(on_a_lost_node("worker-1", false)));
    let f = decided(&t);
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was lost with its node: NodeLost: node node-b not ready since 2024-01-01T00:01:00Z (it stopped reporting)"
    );
    assert!(retryable::RestartOn::default().retries(&f.kind), "{f}");
    // Without the survivor's word the lost node is only named, not yet a failure.
    let t = tracker(
        vec![exited_at(0, 40), on_a_lost_node("worker-1", false)],
        false,
    );
    assert_eq!(decided(&t).pod, "t-worker-0");
}

/// Golden: the logs of a real two-worker TensorFlow failure, in every order the kubelet
/// may report the two exits (the raiser first, the same second, the victim first), in a
/// snapshot (`status`, a late `wait`) and in a follow that saw the victim alone first:
/// worker 1, which raised, is blamed, and worker 0 points at it.
#[test]
fn a_real_two_worker_failure_blames_the_raiser_in_both_orders() {
    let raised = "pod t-worker-1 (worker-1) failed: exit code 1, reason Error";
    let abort = recognise(log("real-victim"), Some(worker(0))).expect("real abort");
    assert_eq!(abort.peer, Some(worker(1)), "{abort}");
    assert!(
        abort
            .line
            .contains("Collective ops is aborted by: Socket closed"),
        "{abort}"
    );
    assert_eq!(recognise(log("real-raised"), Some(worker(1))), None);
    for (victim_end, raiser_end) in [(43, 42), (42, 42), (41, 42)] {
        let mut t = tracker(
            vec![exited_at(0, victim_end), exited_at(1, raiser_end)],
            false,
        );
        t.note_log("t-worker-0", log("real-victim"));
        t.note_log("t-worker-1", log("real-raised"));
        assert_eq!(decided(&t).to_string(), raised, "{victim_end} {raiser_end}");
        let victim = t
            .failures()
            .into_iter()
            .find(|f| f.pod == "t-worker-0")
            .unwrap();
        assert!(
            victim
                .to_string()
                .contains("aborted because of its peer worker-1"),
            "{victim}"
        );
    }
    let mut t = Tracker::new("t", false);
    t.replace(vec![
        view(pod("worker-0", "Running")),
        view(pod("worker-1", "Running")),
    ]);
    t.update(view(exited_at(0, 41)));
    t.note_log("t-worker-0", log("real-victim"));
    assert!(t.peers_unended(&decided(&t)), "worker-1 still runs");
    t.update(view(exited_at(1, 42)));
    t.note_log("t-worker-1", log("real-raised"));
    assert_eq!(decided(&t).to_string(), raised);
}

/// JAX's lost peer (a real survivor's last lines): the heartbeat's task number and the
/// leader name the peer, Gloo's error names none; each said by JAX, the line cut to one.
#[test]
fn jaxs_peer_failures_are_recognised_with_the_peer_they_name() {
    let cases = [
        (
            "jax-heartbeat",
            0,
            Some(1),
            "Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died;",
        ),
        (
            "jax-gloo",
            1,
            None,
            "Gloo all-reduce failed: [external/gloo/gloo/transport/tcp/pair.cc:538] Read error [127.0.0.1]:43154: Connection reset by peer",
        ),
        (
            "jax-leader",
            1,
            Some(0),
            "Terminating process because the JAX distributed service detected fatal errors.",
        ),
    ];
    for (name, own, peer, line) in cases {
        let abort = recognise(log(name), Some(worker(own))).expect(name);
        assert_eq!(
            (abort.said_by, abort.peer),
            ("JAX", peer.map(worker)),
            "{name}"
        );
        assert!(abort.line.starts_with(line), "{name}: {}", abort.line);
        assert!(abort.line.chars().count() <= 161, "{name}: {}", abort.line);
    }
    assert_eq!(
        recognise(log("victim"), None).unwrap().said_by,
        "TensorFlow"
    );
    // The task itself is never its own peer; a plain SIGABRT's text is no peer's doing.
    assert_eq!(
        recognise(log("jax-heartbeat"), Some(worker(1)))
            .unwrap()
            .peer,
        None
    );
    let own_abort = "F1206 03:24:46.071161   19073 some.cc:80] Check failed: x > 0\n*** Check failure stack trace: ***\n";
    assert_eq!(recognise(own_abort, Some(worker(0))), None);
}

/// A Keras 3 run on JAX whose worker 1 was deleted: worker 0's exit 134 (its heartbeat
/// abort) is worker 1's doing. In one list (`status`, a late `wait`) the deletion decides
/// and is retried by default; in a follow that saw the abort first (worker 1's node
/// stopped reporting), the verdict waits on worker 1, and its loss decides.
#[test]
fn a_jax_survivors_abort_is_blamed_on_the_deleted_or_lost_peer() {
    let mut deleted = pod("worker-1", "Running");
    deleted["metadata"]["deletionTimestamp"] = json!("2026-11-26T14:31:10Z");
    let mut t = tracker(vec![exited_with(0, 134, 40), deleted], false);
    let alone = decided(&t);
    assert_eq!(alone.pod, "t-worker-0", "without its log, the 134 decides");
    assert!(!retryable::RestartOn::default().retries(&alone.kind));
    t.note_log("t-worker-0", log("jax-heartbeat"));
    let f = decided(&t);
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was deleted while it ran"
    );
    assert!(retryable::RestartOn::default().retries(&f.kind), "{f}");
    let victim = t
        .failures()
        .into_iter()
        .find(|f| f.pod == "t-worker-0")
        .unwrap();
    assert_eq!(
        victim.to_string(),
        "pod t-worker-0 (worker-0) failed: exit code 134, reason Error; aborted because of its peer worker-1 (Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for mo…)"
    );

    let mut t = tracker(
        vec![exited_with(0, 134, 40), pod("worker-1", "Running")],
        false,
    );
    t.note_log("t-worker-0", log("jax-heartbeat"));
    let f = decided(&t);
    assert!(t.peers_unended(&f), "{f}");
    t.update(view(on_a_lost_node("worker-1", false)));
    let f = decided(&t);
    assert_eq!(f.pod, "t-worker-1", "{f}");
    assert!(retryable::RestartOn::default().retries(&f.kind), "{f}");
}

/// Worker 0, JAX's coordinator, killed (exit 137): worker 1 aborts 0.2 s later (134) with
/// Gloo's error, which names no task; in every order of the two exits the killed worker
/// is blamed, and retried (137 is in the default --restart-on).
#[test]
fn a_killed_jax_coordinator_is_blamed_not_its_aborted_peer() {
    for (killed_end, victim_end) in [(40, 40), (40, 41), (41, 40)] {
        let mut t = tracker(
            vec![
                exited_with(0, 137, killed_end),
                exited_with(1, 134, victim_end),
            ],
            false,
        );
        t.note_log("t-worker-1", log("jax-gloo"));
        t.note_log("t-worker-0", "Epoch 5/100000\n");
        let f = decided(&t);
        assert_eq!(f.pod, "t-worker-0", "{killed_end} {victim_end}: {f}");
        assert!(retryable::RestartOn::default().retries(&f.kind), "{f}");
    }
}
