//! The verdict's tests, and pods as the API returns them for other modules' tests.

use std::collections::BTreeSet;

use super::failure::PULL_HINT;
use super::*;
use crate::roles::{Role, Task};
use serde_json::{Value, json};

mod golden;
mod peer;
pub(crate) use golden::every_kind_of_run;

/// A pod of run `t` as the API would return it.
pub(crate) fn pod(task: &str, phase: &str) -> Value {
    let (role, index) = task.rsplit_once('-').unwrap();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("t-{task}"),
            "labels": {"training_attempt": "t", "tf-spawner/replica-type": role, "tf-spawner/replica-index": index},
            "creationTimestamp": "2024-01-01T00:00:00Z"
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "tensorflow", "image": "tf"}]},
        "status": {"phase": phase}
    })
}

fn with_tf_config(mut pod: Value, cluster: Value) -> Value {
    let config = json!({"cluster": cluster, "task": {"type": "worker", "index": 0}});
    pod["spec"]["containers"][0]["env"] =
        json!([{"name": "TF_CONFIG", "value": config.to_string()}]);
    pod
}

fn terminated(mut pod: Value, code: i32, reason: &str) -> Value {
    pod["status"]["containerStatuses"] = json!([{
        "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"terminated": {"exitCode": code, "reason": reason, "message": "boom"}}
    }]);
    pod
}

fn waiting(mut pod: Value, reason: &str, message: &str) -> Value {
    pod["status"]["containerStatuses"] = json!([{
        "name": "tensorflow", "ready": false, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"waiting": {"reason": reason, "message": message}}
    }]);
    pod
}

pub(crate) fn view(value: Value) -> PodView {
    PodView::from_pod(&serde_json::from_value(value).unwrap())
}

fn tracker(pods: Vec<Value>, all_workers: bool) -> Tracker {
    let mut t = Tracker::new("t", all_workers);
    t.replace(pods.into_iter().map(view).collect());
    t
}

#[test]
fn reads_a_pod() {
    let mut p = terminated(pod("worker-1", "Failed"), 137, "OOMKilled");
    p["spec"]["nodeName"] = json!("node-a");
    let v = view(p);
    assert_eq!(
        v.task,
        Some(Task {
            role: Role::Worker,
            index: 1
        })
    );
    assert_eq!(v.phase, Phase::Failed);
    assert_eq!(v.node.as_deref(), Some("node-a"));
    assert_eq!(v.terminated.as_ref().unwrap().code, 137);
    assert_eq!(v.ready, (0, 1));
    assert_eq!(v.setup.container.as_deref(), Some("tensorflow"));
    assert_eq!(v.age(1704067200 + 90), Some(90));
    assert_eq!(v.label(), "worker-1");
}

#[test]
fn a_pod_has_started_when_its_container_runs_or_ran() {
    // Not started: pending without statuses, waiting, or failed before starting.
    assert!(!view(pod("worker-0", "Pending")).started);
    assert!(!view(waiting(pod("worker-0", "Pending"), "ContainerCreating", "")).started);
    assert!(!view(pod("worker-0", "Failed")).started);
    // Started: a Running pod without statuses, a running or terminated container, or
    // one waiting to restart after it ran.
    assert!(view(pod("worker-0", "Running")).started);
    assert!(view(terminated(pod("worker-0", "Failed"), 1, "Error")).started);
    let mut running = pod("worker-0", "Running");
    running["status"]["containerStatuses"] = json!([{
        "name": "tensorflow", "ready": true, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"running": {}}
    }]);
    assert!(view(running).started);
    let mut restarting = waiting(pod("worker-0", "Running"), "CrashLoopBackOff", "");
    restarting["status"]["containerStatuses"][0]["lastState"] =
        json!({"terminated": {"exitCode": 1}});
    assert!(view(restarting).started);
    // The log container decides, not a sidecar that runs.
    let mut sidecar = waiting(pod("worker-0", "Pending"), "ContainerCreating", "");
    sidecar["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "proxy", "image": "p"}));
    sidecar["status"]["containerStatuses"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "name": "proxy", "ready": true, "restartCount": 0, "image": "p", "imageID": "",
            "state": {"running": {}}
        }));
    assert!(!view(sidecar).started);
}

/// `pod` with a sidecar container `proxy` in `state`.
fn with_sidecar(mut pod: Value, state: Value) -> Value {
    pod["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "proxy", "image": "p"}));
    pod["status"]["containerStatuses"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "name": "proxy", "ready": true, "restartCount": 0, "image": "p", "imageID": "",
            "state": state
        }));
    pod
}

#[test]
fn a_sidecar_keeps_the_pod_running_but_the_tf_container_decides() {
    // The TF container ended, the sidecar runs: the task succeeded, the pod still runs.
    let running = with_sidecar(
        terminated(pod("worker-0", "Running"), 0, "Completed"),
        json!({"running": {}}),
    );
    let v = view(running);
    assert_eq!(
        (v.state(), v.shown_phase()),
        (State::Succeeded, Phase::Succeeded)
    );
    assert!(v.sidecar_running && v.still_running());
    // Stopped after the verdict: the pod is Failed by its deadline, the task is still
    // the TF container's exit, and nothing runs.
    let mut stopped = with_sidecar(
        terminated(pod("worker-0", "Failed"), 0, "Completed"),
        json!({"terminated": {"exitCode": 137, "reason": "Error"}}),
    );
    stopped["status"]["reason"] = json!("DeadlineExceeded");
    stopped["metadata"]["annotations"] = json!({
        "tf-spawner/stopped": "2024-01-01T00:01:00Z",
        "tf-spawner/stopped-after-task": "true",
    });
    let v = view(stopped.clone());
    assert_eq!(
        (v.state(), v.shown_phase()),
        (State::Succeeded, Phase::Succeeded)
    );
    assert!(!v.sidecar_running && !v.still_running());
    // A task stopped while it ran whose SIGTERM handler exits 0 was stopped by tf-spawner,
    // not a success (seen on the one-node v1.36 cluster: `list` said "1 succeeded").
    stopped["metadata"]["annotations"] = json!({"tf-spawner/stopped": "2024-01-01T00:01:00Z"});
    assert_eq!(view(stopped).state(), State::Stopped);
    // A task that failed stays failed; a task still running runs.
    let failed = with_sidecar(
        terminated(pod("worker-0", "Running"), 3, "Error"),
        json!({"running": {}}),
    );
    assert_eq!(view(failed).state(), State::Failed);
    let plain = view(terminated(pod("worker-0", "Running"), 0, "Completed"));
    assert!(!plain.sidecar_running && !plain.still_running());
}

#[test]
fn worker_zero_decides_without_a_chief() {
    let t = tracker(
        vec![pod("worker-0", "Succeeded"), pod("worker-1", "Running")],
        false,
    );
    assert_eq!(t.verdict(), Verdict::Succeeded);
    let t = tracker(
        vec![pod("worker-0", "Running"), pod("worker-1", "Succeeded")],
        false,
    );
    assert_eq!(t.verdict(), Verdict::Running);
}

#[test]
fn all_workers_must_succeed_with_the_option() {
    let pods = vec![pod("worker-0", "Succeeded"), pod("worker-1", "Running")];
    assert_eq!(tracker(pods.clone(), true).verdict(), Verdict::Running);
    let pods = vec![pod("worker-0", "Succeeded"), pod("worker-1", "Succeeded")];
    assert_eq!(tracker(pods, true).verdict(), Verdict::Succeeded);
}

#[test]
fn the_chief_decides_and_parameter_servers_never_exit() {
    let pods = vec![
        pod("chief-0", "Running"),
        pod("ps-0", "Running"),
        pod("worker-0", "Succeeded"),
    ];
    assert_eq!(tracker(pods, false).verdict(), Verdict::Running);
    let pods = vec![
        pod("chief-0", "Succeeded"),
        pod("ps-0", "Running"),
        pod("worker-0", "Running"),
    ];
    assert_eq!(tracker(pods, false).verdict(), Verdict::Succeeded);
}

#[test]
fn any_failure_fails_the_run_and_names_the_pod() {
    let pods = vec![
        pod("worker-0", "Running"),
        terminated(pod("worker-1", "Failed"), 2, "Error"),
    ];
    let Verdict::Failed(f) = tracker(pods, false).verdict() else {
        panic!()
    };
    assert_eq!(f.pod, "t-worker-1");
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) failed: exit code 2, reason Error: boom"
    );
    // Never restarts: a non-zero exit is a failure even before the phase says so.
    let pods = vec![terminated(pod("worker-0", "Running"), 1, "Error")];
    assert!(matches!(tracker(pods, false).verdict(), Verdict::Failed(_)));
    // An evicted pod has no container exit.
    let mut evicted = pod("worker-0", "Failed");
    evicted["status"]["reason"] = json!("Evicted");
    evicted["status"]["message"] = json!("The node was low on resource: memory.");
    let Verdict::Failed(f) = tracker(vec![evicted], false).verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-0 (worker-0) was evicted before it ended (Evicted: The node was low on resource: memory.)"
    );
}

#[test]
fn pending_while_any_pod_is_pending() {
    let pods = vec![pod("worker-0", "Running"), pod("worker-1", "Pending")];
    let t = tracker(pods, false);
    assert_eq!(t.verdict(), Verdict::Pending);
    assert!(!t.started());
    let pods = vec![pod("worker-0", "Running"), pod("worker-1", "Running")];
    let t = tracker(pods, false);
    assert_eq!(t.verdict(), Verdict::Running);
    assert!(t.started());
}

#[test]
fn a_deleted_pod_fails_an_unfinished_run() {
    let mut t = tracker(
        vec![pod("worker-0", "Running"), pod("worker-1", "Running")],
        false,
    );
    t.remove("t-worker-1");
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was deleted before the run finished"
    );
    // A re-list that misses a pod means the same.
    let mut t = tracker(vec![pod("worker-0", "Running")], false);
    t.replace(vec![]);
    assert!(matches!(t.verdict(), Verdict::Failed(_)));
    // A finished pod deleted afterwards keeps its outcome.
    let mut t = tracker(vec![pod("worker-0", "Succeeded")], false);
    t.remove("t-worker-0");
    assert_eq!(t.verdict(), Verdict::Succeeded);
}

/// Preempted, evicted or deleted while it ran: named as such, not as the
/// training's failure, whatever exit code the kill left.
#[test]
fn a_pod_taken_away_is_named_as_such() {
    let mut preempted = terminated(pod("worker-1", "Failed"), 137, "Error");
    preempted["status"]["conditions"] = json!([{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "Preempted in order to admit critical pod"
    }]);
    let t = tracker(vec![pod("worker-0", "Running"), preempted], false);
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was preempted before it ended (PreemptionByScheduler: Preempted in order to admit critical pod)"
    );
    // A deletion timestamp on a pod still running: it will not end by itself.
    let mut deleting = pod("worker-1", "Running");
    deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    let t = tracker(vec![pod("worker-0", "Running"), deleting.clone()], false);
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was deleted while it ran"
    );
    assert_eq!(t.summary()[0].counts.failed, 1);
    // Deleted after it had ended (a cleanup): its exit stands.
    let mut cleaned = terminated(pod("worker-0", "Succeeded"), 0, "Completed");
    cleaned["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    assert_eq!(tracker(vec![cleaned], false).verdict(), Verdict::Succeeded);
    // The kill's exit of a preempted pod that then went away: still preempted.
    let mut t = tracker(vec![pod("worker-0", "Running")], false);
    let mut going = pod("worker-1", "Running");
    going["status"]["conditions"] = json!([{
        "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"
    }]);
    t.update(view(going));
    t.remove("t-worker-1");
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was evicted before it ended (EvictionByEvictionAPI)"
    );
}

#[test]
fn tasks_named_in_tf_config_but_missing_count_as_deleted() {
    let cluster = json!({"worker": ["a:1", "b:1"]});
    let t = tracker(
        vec![with_tf_config(pod("worker-1", "Running"), cluster)],
        false,
    );
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(f.pod, "t-worker-0");
    assert_eq!(f.kind, FailureKind::Gone);
}

#[test]
fn the_cluster_annotation_names_the_tasks_a_run_must_have() {
    // The layout since TF_CONFIG refers to the run's ConfigMap: the pod's TF_CONFIG
    // holds no addresses, its annotation holds the role counts.
    let mut p = pod("worker-1", "Running");
    p["metadata"]["annotations"] = json!({"tf-spawner/cluster": "chief=1,worker=2"});
    let t = tracker(vec![p], false);
    let Verdict::Failed(f) = t.verdict() else {
        panic!("chief-0 and worker-0 are missing")
    };
    assert_eq!(f.pod, "t-chief-0");
    assert_eq!(f.kind, FailureKind::Gone);
}

#[test]
fn stuck_reasons_and_fail_fast() {
    let mut unschedulable = pod("worker-1", "Pending");
    unschedulable["status"]["conditions"] = json!([{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    }]);
    let t = tracker(vec![pod("worker-0", "Running"), unschedulable], false);
    assert_eq!(t.verdict(), Verdict::Pending);
    let summary = t.summary();
    assert_eq!(summary.len(), 1);
    let (who, reason) = summary[0].stuck.clone().unwrap();
    assert_eq!(who, "worker-1");
    assert_eq!(
        reason.to_string(),
        "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    );

    for reason in [
        "ContainerCreating",
        "CrashLoopBackOff",
        "CreateContainerError",
    ] {
        let t = tracker(
            vec![waiting(pod("worker-0", "Pending"), reason, "m")],
            false,
        );
        assert_eq!(t.verdict(), Verdict::Pending, "{reason}");
    }
    for reason in [
        "ImagePullBackOff",
        "InvalidImageName",
        "CreateContainerConfigError",
    ] {
        let t = tracker(
            vec![waiting(pod("worker-0", "Pending"), reason, "bad")],
            false,
        );
        let Verdict::Failed(f) = t.verdict() else {
            panic!("{reason}")
        };
        let hint = if reason == "ImagePullBackOff" {
            PULL_HINT
        } else {
            ""
        };
        assert_eq!(
            f.to_string(),
            format!("pod t-worker-0 (worker-0) cannot start: {reason}: bad{hint}")
        );
    }
    // ErrImagePull: the second sighting is final.
    let pulling = waiting(pod("worker-0", "Pending"), "ErrImagePull", "not found");
    let mut t = tracker(vec![pulling.clone()], false);
    assert_eq!(t.verdict(), Verdict::Pending);
    t.update(view(pulling));
    assert!(matches!(t.verdict(), Verdict::Failed(_)));
}

/// What a real kubelet writes for an image that cannot be pulled (seen on the
/// one-node cluster): ErrImagePull with the registry's error, then ImagePullBackOff
/// saying only "Back-off pulling image". The verdict keeps the error; the pod counts
/// as pending (it never ran), not as finished.
#[test]
fn a_failed_pull_keeps_its_error_and_counts_as_pending() {
    let image = "tf-spawner.local/nope:1";
    let error = format!(
        "rpc error: code = Unknown desc = failed to pull and unpack image \"{image}\": no such host"
    );
    let mut t = tracker(
        vec![waiting(pod("worker-0", "Pending"), "ErrImagePull", &error)],
        false,
    );
    let back_off = format!("Back-off pulling image \"{image}\"");
    t.update(view(waiting(
        pod("worker-0", "Pending"),
        "ImagePullBackOff",
        &back_off,
    )));
    let Verdict::Failed(f) = t.verdict() else {
        panic!("an image that cannot be pulled fails the run")
    };
    assert_eq!(
        f.to_string(),
        format!(
            "pod t-worker-0 (worker-0) cannot start: ImagePullBackOff: {back_off} (last pull error: {error}){PULL_HINT}"
        )
    );
    let counts = &t.summary()[0].counts;
    assert_eq!(
        (
            counts.pending,
            counts.failed,
            counts.succeeded + counts.failed
        ),
        (1, 0, 0)
    );
}

/// A kubelet of 1.26 or later (seen on the v1.36 node) puts the pull error in the
/// back-off's message itself: the verdict says it once, not twice.
#[test]
fn a_back_off_that_names_its_pull_error_says_it_once() {
    let image = "tf-spawner.local/nope:1";
    let error = format!("failed to pull and unpack image \"{image}\": no such host");
    let mut t = tracker(
        vec![waiting(pod("worker-0", "Pending"), "ErrImagePull", &error)],
        false,
    );
    let back_off = format!("Back-off pulling image \"{image}\": ErrImagePull: {error}");
    t.update(view(waiting(
        pod("worker-0", "Pending"),
        "ImagePullBackOff",
        &back_off,
    )));
    let Verdict::Failed(f) = t.verdict() else {
        panic!("an image that cannot be pulled fails the run")
    };
    assert_eq!(
        f.to_string(),
        format!("pod t-worker-0 (worker-0) cannot start: ImagePullBackOff: {back_off}{PULL_HINT}")
    );
    assert_eq!(f.to_string().matches("no such host").count(), 1);
}

/// Issue 50 item 6: a pull error within its pod's grace (`--pull-grace`, from the pod's
/// creation; built in 5m) is no verdict; past it, it is, naming `--image`.
#[test]
fn a_pull_error_is_final_only_past_its_pods_grace() {
    let created = 1_704_067_200; // pod()'s creationTimestamp
    let back_off = waiting(pod("worker-0", "Pending"), "ImagePullBackOff", "x");
    let at = |grace: Option<&str>, age: i64| {
        let mut p = back_off.clone();
        if let Some(grace) = grace {
            p["metadata"]["annotations"] = json!({"tf-spawner/pull-grace": grace});
        }
        let mut t = tracker(vec![p], false);
        t.at(created + age);
        t.verdict()
    };
    // The built-in grace: 5 minutes.
    assert_eq!(at(None, 299), Verdict::Pending);
    let Verdict::Failed(f) = at(None, 300) else {
        panic!("past the grace, a pull error fails the run")
    };
    assert!(
        f.to_string()
            .ends_with("check --image; a slow registry: --pull-grace)")
    );
    // The run's own (its pods' annotation).
    assert_eq!(at(Some("3600"), 3599), Verdict::Pending);
    assert!(matches!(at(Some("3600"), 3600), Verdict::Failed(_)));
    assert!(matches!(at(Some("0"), 0), Verdict::Failed(_)));
    // ErrImagePull: final past the grace, once seen twice (a passing hiccup), as before.
    let pulling = waiting(pod("worker-0", "Pending"), "ErrImagePull", "not found");
    let mut t = tracker(vec![pulling.clone()], false);
    t.at(created + 400);
    assert_eq!(t.verdict(), Verdict::Pending, "seen once");
    t.at(created + 10);
    t.update(view(pulling));
    assert_eq!(
        t.verdict(),
        Verdict::Pending,
        "seen twice, within the grace"
    );
    t.at(created + 301);
    assert!(matches!(t.verdict(), Verdict::Failed(_)));
}

#[test]
fn summary_counts_per_role_in_role_order() {
    let t = tracker(
        vec![
            pod("worker-0", "Running"),
            pod("worker-1", "Pending"),
            pod("worker-2", "Succeeded"),
            pod("chief-0", "Running"),
            pod("ps-0", "Running"),
        ],
        false,
    );
    let s = t.summary();
    let roles: Vec<Option<Role>> = s.iter().map(|r| r.role).collect();
    assert_eq!(
        roles,
        [Some(Role::Chief), Some(Role::Ps), Some(Role::Worker)]
    );
    assert_eq!(
        s[2].counts,
        RoleCounts {
            total: 3,
            pending: 1,
            running: 1,
            lost: 0,
            succeeded: 1,
            failed: 0,
            queued: 0,
            stopped: 0,
        }
    );
}

/// A pod as Kueue's webhook leaves it until the run's group is admitted.
fn gated(task: &str) -> Value {
    let mut p = pod(task, "Pending");
    p["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("team-gpu");
    p["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
    p["status"]["conditions"] = json!([{
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"
    }]);
    p
}

#[test]
fn gated_pods_are_queued_not_stuck_and_never_fail_fast() {
    let t = tracker(vec![gated("worker-0"), gated("worker-1")], false);
    assert_eq!(t.verdict(), Verdict::Pending);
    assert!(!t.started());
    let s = t.summary();
    assert_eq!(s[0].counts.queued, 2);
    assert_eq!(s[0].counts.pending, 0);
    assert_eq!(s[0].queue.as_deref(), Some("team-gpu"));
    assert_eq!(s[0].stuck, None);
    // Admitted: the gates go, the pods are pending like any other.
    let t = tracker(vec![pod("worker-0", "Pending"), gated("worker-1")], false);
    let s = t.summary();
    assert_eq!((s[0].counts.pending, s[0].counts.queued), (1, 1));
    // A pod of a gang's PodGroup waits for the whole group: queued, with the
    // scheduler's reason kept.
    let mut volcano = pod("worker-0", "Pending");
    volcano["metadata"]["annotations"] = json!({
        "scheduling.k8s.io/group-name": "t", "scheduling.volcano.sh/queue-name": "gpu"
    });
    volcano["spec"]["schedulerName"] = json!("volcano");
    volcano["status"]["conditions"] = json!([{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "pod group is not ready, 2 Pending, 2 minAvailable"
    }]);
    let mut cosched = pod("worker-1", "Pending");
    cosched["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = json!("t");
    let t = tracker(vec![volcano, cosched], false);
    let s = t.summary();
    assert_eq!((s[0].counts.queued, s[0].counts.pending), (2, 0));
    assert_eq!(s[0].queue.as_deref(), Some("gpu"));
    assert_eq!(s[0].stuck.as_ref().unwrap().1.reason, "Unschedulable");
    assert_eq!(t.verdict(), Verdict::Pending);
    // A bound pod is past its queue, whatever its spec says.
    let mut bound = gated("worker-0");
    bound["spec"]["nodeName"] = json!("n");
    assert!(!view(bound).queued);
}

/// What a stop after the verdict (or a cleanup) leaves for a later `status`: the
/// parameter server deleted after the chief succeeded does not fail the run, and of a
/// preempted worker and a worker deleted after it, the preemption is named.
#[test]
fn removals_after_the_decision_do_not_change_it() {
    let mut stopped = pod("ps-0", "Running");
    stopped["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    let pods = vec![
        terminated(pod("chief-0", "Succeeded"), 0, "Completed"),
        stopped,
        terminated(pod("worker-0", "Succeeded"), 0, "Completed"),
    ];
    assert_eq!(tracker(pods, false).verdict(), Verdict::Succeeded);
    // Gone altogether (the annotation names the task): the same.
    let mut chief = terminated(pod("chief-0", "Succeeded"), 0, "Completed");
    chief["metadata"]["annotations"] = json!({"tf-spawner/cluster": "chief=1,ps=1,worker=1"});
    let t = tracker(vec![chief, pod("worker-0", "Succeeded")], false);
    assert_eq!(t.verdict(), Verdict::Succeeded);
    // A training failure still fails a run whose chief succeeded.
    let pods = vec![
        terminated(pod("chief-0", "Succeeded"), 0, "Completed"),
        terminated(pod("worker-0", "Failed"), 1, "Error"),
    ];
    assert!(matches!(tracker(pods, false).verdict(), Verdict::Failed(_)));

    let mut deleted = pod("worker-0", "Running");
    deleted["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    let mut preempted = terminated(pod("worker-1", "Failed"), 137, "Error");
    preempted["status"]["conditions"] = json!([{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"
    }]);
    let Verdict::Failed(f) = tracker(vec![deleted, preempted], false).verdict() else {
        panic!()
    };
    assert_eq!(f.pod, "t-worker-1");
}

/// A running pod as the node-lifecycle controller leaves it when the pod's node stops
/// reporting (seen on v1.36: `Ready` False from the controller, `ContainersReady` still
/// the kubelet's True; then the taint manager's `DisruptionTarget` and deletion).
fn on_a_lost_node(task: &str, evicted: bool) -> Value {
    let mut p = pod(task, "Running");
    p["spec"]["nodeName"] = json!("node-b");
    p["status"]["containerStatuses"] = json!([{
        "name": "tensorflow", "ready": true, "restartCount": 0, "image": "tf", "imageID": "",
        "state": {"running": {"startedAt": "2024-01-01T00:00:05Z"}}
    }]);
    let mut conditions = vec![
        json!({"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:01:00Z"}),
        json!({"type": "ContainersReady", "status": "True", "lastTransitionTime": "2024-01-01T00:00:05Z"}),
    ];
    if evicted {
        conditions.push(json!({"type": "DisruptionTarget", "status": "True",
            "reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint"}));
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:40Z");
    }
    p["status"]["conditions"] = json!(conditions);
    p
}

#[test]
fn a_pod_on_a_node_that_stopped_reporting_is_lost_not_running() {
    let lost = view(on_a_lost_node("worker-1", false));
    assert_eq!(lost.node_lost, Some(1704067260));
    // The kubelet's own not-ready (its containers not ready, or a readiness gate) is not a lost node.
    let mut own = on_a_lost_node("worker-1", false);
    own["status"]["conditions"][1]["status"] = json!("False");
    assert_eq!(view(own).node_lost, None);
    let mut gated = on_a_lost_node("worker-1", false);
    gated["status"]["conditions"][0]["reason"] = json!("ReadinessGatesNotReady");
    assert_eq!(view(gated).node_lost, None);
    let t = tracker(
        vec![
            on_a_lost_node("worker-1", false),
            on_a_lost_node("worker-0", false),
        ],
        false,
    );
    // Still running as far as the verdict goes (the bound has not passed), but the
    // summary counts the tasks apart and says why.
    assert_eq!(t.verdict(), Verdict::Running);
    let s = t.summary();
    assert_eq!((s[0].counts.running, s[0].counts.lost), (0, 2));
    let (who, reason) = s[0].stuck.clone().unwrap();
    assert_eq!(who, "worker-0");
    assert_eq!(
        reason.to_string(),
        "NodeLost: node node-b not ready since 2024-01-01T00:01:00Z (it stopped reporting)"
    );
    assert_eq!(
        t.on_lost_nodes(),
        BTreeSet::from(["t-worker-0".to_string(), "t-worker-1".to_string()])
    );
}

#[test]
fn a_task_evicted_from_its_lost_node_was_lost_with_it_and_is_retryable() {
    let t = tracker(
        vec![
            on_a_lost_node("worker-0", true),
            on_a_lost_node("worker-1", false),
        ],
        false,
    );
    let Verdict::Failed(f) = t.verdict() else {
        panic!("{:?}", t.verdict())
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-0 (worker-0) was lost with its node: NodeLost: node node-b not ready since 2024-01-01T00:01:00Z (it stopped reporting)"
    );
    assert!(retryable::RestartOn::default().retries(&f.kind));
    // Gone from the API (forced, or a v1.20 taint manager's plain deletion): the same.
    let mut t = tracker(vec![on_a_lost_node("worker-0", false)], false);
    t.remove("t-worker-0");
    let Verdict::Failed(f) = t.verdict() else {
        panic!("{:?}", t.verdict())
    };
    assert!(f.to_string().contains("was lost with its node"), "{f}");
    // Another NoExecute taint's eviction, on a node that reports: not a lost node.
    let mut p = on_a_lost_node("worker-0", true);
    p["status"]["conditions"][0]["status"] = json!("True");
    let Verdict::Failed(f) = tracker(vec![p], false).verdict() else {
        panic!()
    };
    assert!(
        f.to_string()
            .contains("was taken away before it ended (DeletionByTaintManager"),
        "{f}"
    );
}

/// In a follow, the first failure seen decides: a worker deleted while it ran, then its
/// peer failing because its collective broke, is the deletion's failure (a restart is
/// for the deleted worker), though a plain deletion is named last among failures seen
/// at once.
#[test]
fn the_first_failure_seen_decides_in_a_follow() {
    let mut t = Tracker::new("t", false);
    t.replace(vec![
        view(pod("worker-0", "Running")),
        view(pod("worker-1", "Running")),
    ]);
    t.remove("t-worker-1");
    t.update(view(terminated(pod("worker-0", "Failed"), 1, "Error")));
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(f.pod, "t-worker-1", "{f}");
    // The same pods in one list: the exit decides.
    let mut t = Tracker::new("t", false);
    let mut deleted = pod("worker-1", "Running");
    deleted["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    t.replace(vec![
        view(terminated(pod("worker-0", "Failed"), 1, "Error")),
        view(deleted),
    ]);
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(f.pod, "t-worker-0", "{f}");
}

/// A pod deleted before it ever ran was not "deleted while it ran".
#[test]
fn a_pod_deleted_before_it_started_is_not_said_to_have_run() {
    let mut pending = pod("worker-1", "Pending");
    pending["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:01:00Z");
    let t = tracker(vec![pod("worker-0", "Running"), pending], false);
    let Verdict::Failed(f) = t.verdict() else {
        panic!()
    };
    assert_eq!(
        f.to_string(),
        "pod t-worker-1 (worker-1) was deleted before the run finished"
    );
}
