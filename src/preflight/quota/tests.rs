use k8s_openapi::api::core::v1::{Container, ResourceQuota, ResourceRequirements};
use serde_json::json;

use super::*;
use crate::preflight::RolePods;
use crate::roles::Role;

fn quota(name: &str, hard: serde_json::Value, used: serde_json::Value) -> ResourceQuota {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "hard": hard },
        "status": { "hard": hard, "used": used },
    }))
    .unwrap()
}

fn container(name: &str, requests: serde_json::Value, limits: serde_json::Value) -> Container {
    Container {
        name: name.into(),
        resources: Some(ResourceRequirements {
            requests: serde_json::from_value(requests).unwrap(),
            limits: serde_json::from_value(limits).unwrap(),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}

fn run(workers: u32, tf: Container) -> RunObjects {
    RunObjects {
        pods: vec![RolePods {
            role: Role::Worker,
            count: workers,
            spec: PodSpec {
                containers: vec![tf],
                ..PodSpec::default()
            },
        }],
        services: workers,
        config_maps: 1,
        secrets: 0,
        pod_group: None,
        tf_container: "tensorflow".into(),
    }
}

#[test]
fn a_run_that_fits_passes_and_one_pod_too_many_is_refused_naming_what_is_left() {
    let gpu = container("tensorflow", json!(null), json!({"nvidia.com/gpu": "1"}));
    let q = quota(
        "gpus",
        json!({"requests.nvidia.com/gpu": "8", "pods": "10"}),
        json!({"requests.nvidia.com/gpu": "6", "pods": "3"}),
    );
    assert_eq!(
        check(std::slice::from_ref(&q), &run(2, gpu.clone()), "team"),
        Ok(())
    );
    let err = check(&[q], &run(4, gpu), "team").unwrap_err();
    assert_eq!(
        err,
        "resource quota 'gpus' in namespace 'team' leaves too little for this run: requests.nvidia.com/gpu: the run needs 4, 2 left (8 hard, 6 used); nothing was created (kubectl describe resourcequota gpus -n team)"
    );
}

#[test]
fn services_and_the_config_map_count_too() {
    let tf = container("tensorflow", json!(null), json!(null));
    let q = quota(
        "objs",
        json!({"services": "3", "count/configmaps": "1"}),
        json!({"services": "0", "count/configmaps": "1"}),
    );
    let err = check(&[q], &run(4, tf), "ns").unwrap_err();
    assert!(
        err.contains("count/configmaps: the run needs 1, 0 left (1 hard, 1 used)"),
        "{err}"
    );
    assert!(err.contains("services: the run needs 4, 3 left"), "{err}");
}

#[test]
fn a_quota_on_limits_demands_them_of_every_container() {
    let tf = container("tensorflow", json!({"cpu": "1"}), json!(null));
    let q = quota(
        "q",
        json!({"limits.cpu": "8", "limits.memory": "8Gi"}),
        json!({"limits.cpu": "0", "limits.memory": "0"}),
    );
    let err = check(std::slice::from_ref(&q), &run(2, tf), "ns").unwrap_err();
    assert!(
        err.starts_with("resource quota 'q' in namespace 'ns' requires limits.cpu and limits.memory on every container, and the worker pods' container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created"),
        "{err}"
    );
    let tf = container(
        "tensorflow",
        json!(null),
        json!({"cpu": "2", "memory": "2Gi"}),
    );
    assert_eq!(
        check(std::slice::from_ref(&q), &run(2, tf.clone()), "ns"),
        Ok(())
    );
    let err = check(&[q], &run(5, tf), "ns").unwrap_err();
    assert!(
        err.contains("limits.cpu: the run needs 10, 8 left"),
        "{err}"
    );
    assert!(
        err.contains("limits.memory: the run needs 10Gi, 8Gi left (8Gi hard, 0 used)"),
        "{err}"
    );
}

#[test]
fn init_containers_count_as_the_evaluator_counts_them() {
    let mut r = run(
        1,
        container("tensorflow", json!({"memory": "1Gi"}), json!(null)),
    );
    r.pods[0].spec.init_containers = Some(vec![container(
        "setup",
        json!({"memory": "3Gi"}),
        json!(null),
    )]);
    let q = quota(
        "m",
        json!({"requests.memory": "2Gi"}),
        json!({"requests.memory": "0"}),
    );
    let err = check(&[q], &r, "ns").unwrap_err();
    assert!(
        err.contains("requests.memory: the run needs 3Gi, 2Gi left"),
        "{err}"
    );
}

#[test]
fn scoped_quotas_and_quotas_without_status_are_left_alone() {
    let tf = container(
        "tensorflow",
        json!(null),
        json!({"cpu": "1", "memory": "1Gi"}),
    );
    let mut best_effort = quota("be", json!({"pods": "0"}), json!({"pods": "0"}));
    best_effort.spec.as_mut().unwrap().scopes = Some(vec!["BestEffort".into()]);
    assert_eq!(check(&[best_effort], &run(3, tf.clone()), "ns"), Ok(()));
    let mut not_be = quota(
        "nbe",
        json!({"pods": "2", "services": "0"}),
        json!({"pods": "0", "services": "0"}),
    );
    not_be.spec.as_mut().unwrap().scopes = Some(vec!["NotBestEffort".into()]);
    let err = check(&[not_be], &run(3, tf.clone()), "ns").unwrap_err();
    assert!(
        err.contains("pods: the run needs 3, 2 left") && !err.contains("services"),
        "{err}"
    );
    let mut unknown = quota("new", json!({"pods": "1"}), json!({}));
    unknown.status.as_mut().unwrap().used = None;
    assert_eq!(check(&[unknown], &run(3, tf), "ns"), Ok(()));
}

#[test]
fn the_room_is_the_runs_the_scarcest_resource_leaves_at_once() {
    let gpu = container("tensorflow", json!(null), json!({"nvidia.com/gpu": "1"}));
    let q = quota(
        "gpus",
        json!({"requests.nvidia.com/gpu": "8", "pods": "10"}),
        json!({"requests.nvidia.com/gpu": "4", "pods": "1"}),
    );
    let (runs, why) = room(std::slice::from_ref(&q), &run(2, gpu.clone())).unwrap();
    assert_eq!(runs, 2);
    assert_eq!(
        why,
        "the quota 'gpus' leaves 4 requests.nvidia.com/gpu, a run needs 2"
    );
    // Pods are scarcer when each run takes 4: 9 left, 2 runs; GPUs also 1.
    let (runs, _) = room(&[q], &run(4, gpu.clone())).unwrap();
    assert_eq!(runs, 1);
    let none = quota(
        "cm",
        json!({"configmaps": "10"}),
        json!({"configmaps": "10"}),
    );
    assert_eq!(room(&[none], &run(1, gpu.clone())).unwrap().0, 0);
    assert_eq!(room(&[], &run(1, gpu)), None);
}
