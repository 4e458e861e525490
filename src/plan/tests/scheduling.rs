//! The shared-cluster options on the pods: Volcano's `minResources`, `--scheduler-name`,
//! `--service-account`, `--node-lost-after`.

use super::*;
use crate::labels::KUEUE_QUEUE_LABEL;

#[test]
fn volcano_min_resources_is_the_sum_of_the_members_requests() {
    let mut req = request(Roles::new(None, true, 0, 2, true).unwrap());
    req.scheduling.gang = Some(Gang::Volcano);
    let worker: Pod = serde_json::from_value(serde_json::json!({
        "spec": { "containers": [{ "name": "tensorflow", "resources": {
            "requests": { "cpu": "1500m", "memory": "1Gi" },
            "limits": { "nvidia.com/gpu": "1", "memory": "2Gi" } } }],
          "initContainers": [{ "name": "fetch", "resources": { "requests": { "cpu": "4" } } }] }
    }))
    .unwrap();
    let chief: Pod = serde_json::from_value(serde_json::json!({
        "spec": { "containers": [
            { "name": "tensorflow", "resources": { "requests": { "cpu": "500m" } } },
            { "name": "sidecar", "resources": { "requests": { "cpu": "250m", "memory": "512Mi" } } }] }
    }))
    .unwrap();
    // The evaluator asks for a lot, and is not a member: it does not count.
    let evaluator: Pod = serde_json::from_value(serde_json::json!({
        "spec": { "containers": [{ "name": "tensorflow", "resources": {
            "requests": { "cpu": "64", "nvidia.com/gpu": "8" } } }] }
    }))
    .unwrap();
    req.templates.worker = worker;
    req.templates.by_role.insert(Role::Chief, chief);
    req.templates.by_role.insert(Role::Evaluator, evaluator);
    let plan = build(&req).unwrap();
    let Some(PodGroup::Volcano(group)) = &plan.pod_group else {
        panic!("no Volcano PodGroup: {:?}", plan.pod_group);
    };
    let shown: BTreeMap<&str, &str> = group
        .spec
        .min_resources
        .as_ref()
        .expect("minResources")
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    // Workers: the init container's 4 CPUs beat the containers' 1.5; the memory
    // request, not the limit; the GPU limit stands for the request. Chief: the sum of
    // its two containers.
    assert_eq!(
        shown,
        BTreeMap::from([
            ("cpu", "8750m"),
            ("memory", "2560Mi"),
            ("nvidia.com/gpu", "2"),
        ])
    );
}

#[test]
fn a_scheduler_name_overrides_the_gangs() {
    let mut req = request(Roles::workers(2).unwrap());
    req.scheduling.gang = Some(Gang::Coscheduling);
    req.scheduling.scheduler_name = Some("my-scheduler".into());
    req.scheduling.queue = Some("team-gpu".into());
    let plan = build(&req).unwrap();
    for pod in plan.pods.iter() {
        let spec = pod.spec.unwrap();
        assert_eq!(spec.scheduler_name.as_deref(), Some("my-scheduler"));
        // Coscheduling has no queue: --queue stays Kueue's.
        let labels = pod.metadata.labels.unwrap();
        assert_eq!(labels[KUEUE_QUEUE_LABEL], "team-gpu");
        assert_eq!(labels[COSCHEDULING_GROUP_LABEL], "demo-group");
    }
}

#[test]
fn a_service_account_replaces_the_templates_in_every_role_and_none_keeps_it() {
    let mut req = request(Roles::new(None, true, 1, 2, true).unwrap());
    let spec = req
        .templates
        .worker
        .spec
        .get_or_insert_with(Default::default);
    spec.service_account_name = Some("legacy".into());
    // The deprecated alias too: left, the API server would read it for the name.
    spec.service_account = Some("legacy".into());
    let kept = build(&req).unwrap();
    for pod in kept.pods.iter() {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("legacy"));
    }
    req.scheduling.service_account = Some("data-reader".into());
    let plan = build(&req).unwrap();
    assert_eq!(plan.pods.iter().count(), 5);
    for pod in plan.pods.iter() {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("data-reader"));
        assert_eq!(spec.service_account, None, "{:?}", pod.metadata.name);
    }
}

#[test]
fn node_lost_after_replaces_the_templates_evicting_tolerations_of_a_lost_node() {
    let mut req = request(Roles::workers(1).unwrap());
    let spec = req
        .templates
        .worker
        .spec
        .get_or_insert_with(Default::default);
    spec.tolerations = Some(
        serde_json::from_value(serde_json::json!([
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 900},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]))
        .unwrap(),
    );
    req.scheduling.node_lost_after_seconds = Some(45);
    let plan = build(&req).unwrap();
    let pod = plan.pods.iter().next().unwrap();
    let tolerations = serde_json::to_value(pod.spec.unwrap().tolerations.unwrap()).unwrap();
    assert_eq!(
        tolerations,
        serde_json::json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 45},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 45}
        ])
    );
    // Without the flag the pods are the template's: the cluster's defaults apply.
    req.scheduling.node_lost_after_seconds = None;
    let plan = build(&req).unwrap();
    let kept = plan
        .pods
        .iter()
        .next()
        .unwrap()
        .spec
        .unwrap()
        .tolerations
        .unwrap();
    assert_eq!(kept.len(), 3);
}
