//! Golden tests: a run with a pod of every kind the verdict tells apart, and what each
//! piece of the verdict makes of it, pinned whole (also read by `status`'s golden tests).

use super::*;

/// The TF container's status in `state`.
fn tf_status(ready: bool, restarts: u32, state: Value) -> Value {
    json!([{
        "name": "tensorflow", "ready": ready, "restartCount": restarts, "image": "tf",
        "imageID": "", "state": state
    }])
}

/// `pod` with `annotations` and `labels` added.
fn marked(mut pod: Value, annotations: Value, labels: Value) -> Value {
    pod["metadata"]["annotations"] = annotations;
    for (k, v) in labels.as_object().unwrap() {
        pod["metadata"]["labels"][k] = v.clone();
    }
    pod
}

/// Pods of run `t` (its cluster annotation: a chief, a ps, 12 workers, an evaluator) of
/// every kind: running, on a lost node, succeeded, ended while the pod still runs,
/// unschedulable, queued, stopped before and after it started (and ended before it
/// started), stopping, being
/// deleted, cannot pull, past its deadline, evicted, and a pod without replica labels.
/// Some are of attempt 1, after a restart.
pub(crate) fn every_kind_of_pod() -> Vec<Value> {
    let cluster = json!({"tf-spawner/cluster": "chief=1,ps=1,worker=12,evaluator=1"});
    let attempt = json!({"tf-spawner/attempt": "1"});
    let restarted = json!({
        "tf-spawner/cluster": "chief=1,ps=1,worker=12,evaluator=1",
        "tf-spawner/restarted-for": "pod t-worker-1 (worker-1) was deleted while it ran"
    });
    let stopped = json!({"tf-spawner/stopped": "2024-01-01T00:06:00Z"});
    let mut pods = Vec::new();

    let mut chief = marked(pod("chief-0", "Running"), restarted, attempt.clone());
    chief["spec"]["nodeName"] = json!("node-a");
    chief["status"]["containerStatuses"] = tf_status(
        true,
        0,
        json!({"running": {"startedAt": "2024-01-01T00:00:10Z"}}),
    );
    pods.push(chief);

    let mut ps = marked(pod("ps-0", "Running"), cluster.clone(), attempt.clone());
    ps["spec"]["nodeName"] = json!("node-b");
    ps["status"]["containerStatuses"] = tf_status(
        true,
        0,
        json!({"running": {"startedAt": "2024-01-01T00:00:05Z"}}),
    );
    ps["status"]["conditions"] = json!([
        {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:05:00Z"},
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2024-01-01T00:00:05Z"}
    ]);
    pods.push(ps);

    let mut done = marked(pod("worker-0", "Succeeded"), cluster.clone(), attempt);
    done["spec"]["nodeName"] = json!("node-a");
    done["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"terminated": {"exitCode": 0, "reason": "Completed",
            "startedAt": "2024-01-01T00:00:20Z", "finishedAt": "2024-01-01T00:03:00Z"}}),
    );
    pods.push(done);

    // Ended with 1 while the pod is still Running (a 1.27+ kubelet), after 2 restarts.
    let mut ended = marked(pod("worker-1", "Running"), cluster.clone(), json!({}));
    ended["spec"]["nodeName"] = json!("node-b");
    ended["status"]["containerStatuses"] = tf_status(
        false,
        2,
        json!({"terminated": {"exitCode": 1, "reason": "Error", "message": "boom\n  at line 2",
            "startedAt": "2024-01-01T00:01:00Z", "finishedAt": "2024-01-01T00:04:30Z"}}),
    );
    pods.push(ended);

    let mut unschedulable = marked(pod("worker-2", "Pending"), cluster.clone(), json!({}));
    unschedulable["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/2 nodes are available: 2 Insufficient cpu."}]);
    pods.push(unschedulable);

    let mut queued = marked(
        pod("worker-3", "Pending"),
        cluster.clone(),
        json!({"kueue.x-k8s.io/queue-name": "team-a"}),
    );
    queued["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
    queued["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
        "reason": "SchedulingGated", "message": "Scheduling is blocked due to non-empty scheduling gates"}]);
    pods.push(queued);

    // Stopped after the verdict before it ever started: its pull kept failing.
    let mut never = marked(pod("worker-4", "Pending"), stopped.clone(), json!({}));
    never["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"waiting": {"reason": "ErrImagePull", "message": "pull access denied"}}),
    );
    pods.push(never);

    // Stopped after the verdict, ended by its deadline.
    let mut after = marked(pod("worker-5", "Failed"), stopped.clone(), json!({}));
    after["spec"]["nodeName"] = json!("node-a");
    after["status"]["reason"] = json!("DeadlineExceeded");
    after["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"terminated": {"exitCode": 143, "reason": "Error",
            "startedAt": "2024-01-01T00:00:30Z", "finishedAt": "2024-01-01T00:06:05Z"}}),
    );
    pods.push(after);

    let mut deleting = marked(pod("worker-6", "Running"), cluster.clone(), json!({}));
    deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:07:00Z");
    deleting["spec"]["nodeName"] = json!("node-a");
    deleting["status"]["containerStatuses"] = tf_status(
        true,
        0,
        json!({"running": {"startedAt": "2024-01-01T00:00:40Z"}}),
    );
    pods.push(deleting);

    let mut back_off = marked(pod("worker-7", "Pending"), cluster.clone(), json!({}));
    back_off["spec"]["nodeName"] = json!("node-b");
    back_off["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"tf\""}}),
    );
    pods.push(back_off);

    let mut evicted = marked(pod("worker-8", "Running"), cluster.clone(), json!({}));
    evicted["spec"]["nodeName"] = json!("node-b");
    evicted["status"]["containerStatuses"] = tf_status(
        true,
        0,
        json!({"running": {"startedAt": "2024-01-01T00:00:50Z"}}),
    );
    evicted["status"]["conditions"] = json!([{"type": "DisruptionTarget", "status": "True",
        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]);
    pods.push(evicted);

    // Being stopped after the verdict: still running.
    let mut stopping = marked(pod("worker-9", "Running"), stopped.clone(), json!({}));
    stopping["spec"]["nodeName"] = json!("node-a");
    stopping["status"]["containerStatuses"] = tf_status(
        true,
        0,
        json!({"running": {"startedAt": "2024-01-01T00:01:10Z"}}),
    );
    pods.push(stopping);

    // Stopped after the verdict and ended before its container ever started.
    pods.push(marked(
        pod("worker-11", "Failed"),
        stopped.clone(),
        json!({}),
    ));

    let mut deadline = marked(pod("evaluator-0", "Failed"), cluster, json!({}));
    deadline["spec"]["nodeName"] = json!("node-b");
    deadline["status"]["reason"] = json!("DeadlineExceeded");
    deadline["status"]["message"] =
        json!("Pod was active on the node longer than the specified deadline");
    deadline["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"terminated": {"exitCode": 137, "reason": "Error",
            "startedAt": "2024-01-01T00:00:15Z", "finishedAt": "2024-01-01T00:05:15Z"}}),
    );
    pods.push(deadline);

    let mut other = pod("worker-0", "Running");
    other["metadata"]["name"] = json!("t-extra");
    other["metadata"]["labels"] = json!({"training_attempt": "t"});
    other["status"]["containerStatuses"] = tf_status(
        false,
        1,
        json!({"waiting":
        {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}}),
    );
    other["status"]["containerStatuses"][0]["lastState"] =
        json!({"terminated": {"exitCode": 2, "finishedAt": "2024-01-01T00:02:00Z"}});
    pods.push(other);
    pods
}

/// The run of [`every_kind_of_pod`] as a tracker that saw worker-7's pull fail first.
pub(crate) fn every_kind_of_run() -> Tracker {
    let mut t = Tracker::new("t", false);
    let mut pulling = pod("worker-7", "Pending");
    pulling["status"]["containerStatuses"] = tf_status(
        false,
        0,
        json!({"waiting": {"reason": "ErrImagePull", "message": "failed to resolve reference \"tf\""}}),
    );
    t.update(view(pulling));
    t.replace(every_kind_of_pod().into_iter().map(view).collect());
    t
}

#[test]
fn every_kind_of_pod_reads_as_pinned() {
    let views: Vec<PodView> = every_kind_of_pod().into_iter().map(view).collect();
    insta::assert_debug_snapshot!(views);
}

/// Each task's state and failure, one line each, then the verdict.
fn states_text(t: &Tracker) -> String {
    let mut out: String = t
        .states()
        .iter()
        .map(|(task, pod, state, failure)| format!("{task:?} {pod} {state:?} {failure:?}\n"))
        .collect();
    out.push_str(&format!("verdict: {:?}\n", t.verdict()));
    out
}

#[test]
fn every_kind_of_entry_states_as_pinned() {
    let mut t = every_kind_of_run();
    let mut text = states_text(&t);
    // Gone: from a lost node, evicted, deleted while it ran, deleted after it succeeded,
    // deleted before it was scheduled.
    for name in [
        "t-ps-0",
        "t-worker-8",
        "t-worker-6",
        "t-worker-0",
        "t-worker-2",
    ] {
        t.remove(name);
    }
    text.push_str("\nafter deletions:\n");
    text.push_str(&states_text(&t));
    insta::assert_snapshot!(text);
}

#[test]
fn every_kind_of_run_sums_up_as_pinned() {
    let mut t = every_kind_of_run();
    let mut text = format!("{:#?}\n", t.summary());
    for name in [
        "t-ps-0",
        "t-worker-8",
        "t-worker-6",
        "t-worker-0",
        "t-worker-2",
    ] {
        t.remove(name);
    }
    text.push_str(&format!("\nafter deletions:\n{:#?}\n", t.summary()));
    // A routine reason (ContainerCreating) gives way to one that says more.
    let mut unschedulable = pod("worker-1", "Pending");
    unschedulable["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/2 nodes are available"}]);
    let t = tracker(
        vec![
            waiting(pod("worker-0", "Pending"), "ContainerCreating", ""),
            unschedulable,
            waiting(pod("worker-2", "Pending"), "PodInitializing", ""),
        ],
        false,
    );
    text.push_str(&format!("\nroutine first:\n{:#?}\n", t.summary()));
    insta::assert_snapshot!(text);
}
