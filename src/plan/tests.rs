//! The plan's unit tests and snapshots (`src/plan/snapshots`).

use super::resources::TaskResources;
use super::*;
use crate::labels::{COSCHEDULING_GROUP_LABEL, VOLCANO_GROUP_ANNOTATION};
use crate::render::OutputFormat;
use crate::render::render;
use crate::roles::Strategy;
use crate::template;

pub(super) fn request(roles: Roles) -> SpawnRequest {
    SpawnRequest {
        tag: "demo".into(),
        namespace: "physics".into(),
        port: 1999,
        image: None,
        roles,
        templates: Templates {
            worker: template::parse("t", template::DEFAULT_TEMPLATE.as_bytes()).unwrap(),
            by_role: BTreeMap::new(),
        },
        script: b"print('hello')\n".to_vec(),
        entrypoint: None,
        script_args: Vec::new(),
        bundle: None,
        env: EnvVars::new(),
        invocation: "0123456789abcdef".into(),
        scheduling: Scheduling::default(),
        volume: None,
        resources: Default::default(),
        hardening: Default::default(),
        experiment: None,
    }
}

#[test]
fn each_run_writes_in_its_own_folder_of_the_volume() {
    let mut req = request(Roles::new(None, false, 0, 1, false).unwrap());
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/output".into(),
        folder: None,
    });
    let plan = build(&req).unwrap();
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
    // An entrypoint's image may have no python: bash makes the folder.
    req.entrypoint = Some(b"python train.py".to_vec());
    let plan = build(&req).unwrap();
    let pod = serde_json::to_value(plan.pods.iter().next().unwrap()).unwrap();
    let command = &pod["spec"]["containers"][0]["command"];
    assert_eq!(command[0], "bash");
    assert_eq!(
        command[2],
        "mkdir -p -- \"$$TF_SPAWNER_OUTPUT_DIR\" && exec \"$$@\""
    );
    assert_eq!(command[4], "bash");
}

#[test]
fn a_volume_is_mounted_in_every_task_and_recorded_on_the_config_map() {
    let mut req = request(Roles::new(None, true, 0, 2, false).unwrap());
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/data/out".into(),
        folder: None,
    });
    let plan = build(&req).unwrap();
    let annotations = plan.config_map.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[VOLUME_ANNOTATION], "results:/data/out");
    for pod in plan.pods.iter() {
        let json = serde_json::to_value(&pod).unwrap();
        let spec = &json["spec"];
        let volume = spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == OUTPUT_VOLUME)
            .unwrap();
        assert_eq!(volume["persistentVolumeClaim"]["claimName"], "results");
        let c = &spec["containers"][0];
        assert!(
            c["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == OUTPUT_VOLUME && m["mountPath"] == "/data/out")
        );
        assert!(
            c["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == OUTPUT_DIR_VAR && e["value"] == "/data/out/demo")
        );
        // The task makes its folder, then runs the script.
        assert_eq!(c["command"][0], "python");
        assert!(
            c["command"][2]
                .as_str()
                .unwrap()
                .contains("os.makedirs(os.environ['TF_SPAWNER_OUTPUT_DIR']")
        );
        assert_eq!(c["command"][3], "python");
    }
    assert_eq!(annotations[crate::labels::VOLUME_FOLDER_ANNOTATION], "demo");
    req.volume = None;
    let plain = build(&req).unwrap();
    assert!(
        !plain
            .config_map
            .metadata
            .annotations
            .unwrap()
            .contains_key(VOLUME_ANNOTATION)
    );
}

#[test]
fn a_kueue_queue_makes_the_run_one_pod_group() {
    let mut req = request(Roles::new(None, true, 0, 2, false).unwrap());
    req.scheduling.queue = Some("team-gpu".into());
    let plan = build(&req).unwrap();
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
}

#[test]
fn a_volcano_gang_is_one_pod_group_in_its_queue() {
    let mut req = request(Roles::new(None, true, 0, 2, true).unwrap());
    req.scheduling.gang = Some(Gang::Volcano);
    req.scheduling.volcano_queue = Some("team-gpu".into());
    req.scheduling.priority_class = Some("team-high".into());
    let plan = build(&req).unwrap();
    let Some(PodGroup::Volcano(group)) = &plan.pod_group else {
        panic!("no Volcano PodGroup: {:?}", plan.pod_group);
    };
    // The chief and both workers: the group's members; not the evaluator.
    assert_eq!(group.spec.min_member, 3);
    assert_members(&plan, VOLCANO_GROUP_ANNOTATION, 3);
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
}

#[test]
fn a_coscheduling_gang_is_one_pod_group() {
    let mut req = request(Roles::new(Some(Strategy::ParameterServer), false, 1, 2, true).unwrap());
    req.scheduling.gang = Some(Gang::Coscheduling);
    let plan = build(&req).unwrap();
    let Some(PodGroup::Coscheduling(group)) = &plan.pod_group else {
        panic!("no coscheduling PodGroup: {:?}", plan.pod_group);
    };
    // The chief (the parameter-server strategy has one), the ps and both workers.
    assert_eq!(group.spec.min_member, 4);
    assert_members(&plan, COSCHEDULING_GROUP_LABEL, 4);
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
}

/// Exactly `n` pods name the group (by label or annotation `key`), and the
/// evaluator is not one of them.
fn assert_members(plan: &Plan, key: &str, n: usize) {
    let members: Vec<String> = plan
        .pods
        .iter()
        .filter(|p| {
            let m = &p.metadata;
            m.labels.as_ref().is_some_and(|l| l.contains_key(key))
                || m.annotations.as_ref().is_some_and(|a| a.contains_key(key))
        })
        .map(|p| p.metadata.name.unwrap_or_default())
        .collect();
    assert_eq!(members.len(), n, "{members:?}");
    assert!(
        !members.iter().any(|m| m.contains("evaluator")),
        "{members:?}"
    );
}

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
fn deadline_and_priority_class_match_the_fixture() {
    let mut req = request(Roles::workers(2).unwrap());
    req.scheduling.deadline_seconds = Some(43_200);
    req.scheduling.priority_class = Some("team-high".into());
    let plan = build(&req).unwrap();
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
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

#[test]
fn two_workers_match_the_fixture() {
    let plan = build(&request(Roles::workers(2).unwrap())).unwrap();
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
}

#[test]
fn parameter_server_with_env_and_entrypoint_matches_the_fixture() {
    let mut req = request(Roles::new(Some(Strategy::ParameterServer), false, 1, 2, true).unwrap());
    req.env
        .insert("S3_SECRET_KEY".into(), "never-printed".into());
    req.entrypoint = Some(b"#!/bin/bash\npython /script/training-script.py\n".to_vec());
    req.image = Some("my/tf:1".into());
    let plan = build(&req).unwrap();
    let yaml = render(&plan, OutputFormat::Yaml).unwrap();
    assert!(!yaml.contains("never-printed"));
    insta::assert_snapshot!(yaml);
}

#[test]
fn every_role_gets_its_template() {
    let mut req = request(Roles::new(None, true, 1, 2, true).unwrap());
    for (role, image) in [
        (Role::Chief, "chief:1"),
        (Role::Ps, "ps:1"),
        (Role::Evaluator, "eval:1"),
    ] {
        let mut pod = req.templates.worker.clone();
        pod.spec.as_mut().unwrap().containers[0].image = Some(image.into());
        req.templates.by_role.insert(role, pod);
    }
    let plan = build(&req).unwrap();
    let images: Vec<(String, String)> = plan
        .pods
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.spec.as_ref().unwrap().containers[0]
                    .image
                    .clone()
                    .unwrap(),
            )
        })
        .collect();
    let expected = [
        ("demo-chief-0", "chief:1"),
        ("demo-ps-0", "ps:1"),
        ("demo-worker-0", DEFAULT_IMAGE),
        ("demo-worker-1", DEFAULT_IMAGE),
        ("demo-evaluator-0", "eval:1"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(images, expected);
    // No service for the evaluator: nothing connects to it.
    let services: Vec<String> = plan
        .services
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        services,
        [
            "demo-chief-0",
            "demo-ps-0",
            "demo-worker-0",
            "demo-worker-1"
        ]
    );
}

#[test]
fn only_workers_get_worker_number() {
    let plan = build(&request(Roles::new(None, true, 1, 2, false).unwrap())).unwrap();
    for pod in plan.pods.iter() {
        let env = pod.spec.as_ref().unwrap().containers[0]
            .env
            .clone()
            .unwrap();
        let names: Vec<&str> = env.iter().map(|e| e.name.as_str()).collect();
        let is_worker = pod.metadata.name.as_deref().unwrap().contains("-worker-");
        assert_eq!(names.contains(&"WORKER_NUMBER"), is_worker, "{names:?}");
        assert!(names.contains(&"TF_CONFIG") && names.contains(&"TOT_WORKERS"));
    }
}

#[test]
fn the_config_map_records_whether_the_run_has_a_secret() {
    let record = |plan: &Plan| {
        plan.config_map.metadata.annotations.as_ref().unwrap()[ENV_SECRET_ANNOTATION].clone()
    };
    let mut req = request(Roles::workers(1).unwrap());
    let plan = build(&req).unwrap();
    assert!(plan.secret.is_none());
    assert_eq!(record(&plan), NO_ENV_SECRET);
    req.env.insert("K".into(), "v".into());
    let plan = build(&req).unwrap();
    assert_eq!(
        plan.secret.as_ref().unwrap().metadata.name.as_deref(),
        Some("demo-env")
    );
    assert_eq!(record(&plan), "demo-env");
}

#[test]
fn binary_scripts_use_binary_data_and_size_is_bounded() {
    let mut req = request(Roles::workers(1).unwrap());
    req.script = vec![0xff, 0xfe, 0x00];
    let plan = build(&req).unwrap();
    // Only the cluster addresses are text.
    let data = plan.config_map.data.as_ref().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), [CLUSTER_KEY]);
    assert_eq!(
        plan.config_map.binary_data.unwrap()[SCRIPT_KEY].0,
        vec![0xff, 0xfe, 0x00]
    );
    req.script = vec![b'#'; MAX_CONFIG_MAP_BYTES + 1];
    assert!(
        build(&req)
            .unwrap_err()
            .to_string()
            .contains("at most 1048576 bytes")
    );
}

/// What each task asks for goes on its TF container: CPU and memory as requests and
/// limits, GPUs as limits, the parameter servers their own; a GPU task's /dev/shm is added
/// to its memory; where nothing is asked, the template's values stay; Volcano's
/// minResources counts the pods as they are.
#[test]
fn resources_go_on_the_tf_container_per_role_and_the_gang_counts_them() {
    let mut req = request(Roles::new(Some(Strategy::ParameterServer), true, 1, 2, false).unwrap());
    req.scheduling.gang = Some(Gang::Volcano);
    req.resources = Resources {
        compute: TaskResources {
            cpu: Some("4".into()),
            memory: Some("16Gi".into()),
            gpus: Some(1),
        },
        ps: TaskResources {
            cpu: Some("2".into()),
            memory: None,
            gpus: None,
        },
        ..Resources::default()
    };
    let ps_template: Pod = serde_json::from_value(serde_json::json!({
        "spec": { "containers": [{ "name": "tensorflow", "resources": { "limits": { "memory": "3Gi" } } }] }
    }))
    .unwrap();
    req.templates.by_role.insert(Role::Ps, ps_template);
    let plan = build(&req).unwrap();
    let pods: Vec<Pod> = plan.pods.iter().collect();
    let tf = |name: &str| {
        let pod = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .unwrap();
        serde_json::to_value(pod).unwrap()["spec"].clone()
    };
    let worker = tf("demo-worker-0");
    let r = &worker["containers"][0]["resources"];
    assert_eq!(
        r["requests"],
        serde_json::json!({ "cpu": "4", "memory": "18Gi" })
    );
    assert_eq!(
        r["limits"],
        serde_json::json!({ "cpu": "4", "memory": "18Gi", "nvidia.com/gpu": "1" })
    );
    assert_eq!(worker["containers"][0]["image"], DEFAULT_GPU_IMAGE);
    assert!(
        worker["volumes"]
            .to_string()
            .contains(r#""medium":"Memory","sizeLimit":"2Gi""#),
        "{worker:#}"
    );
    let ps = tf("demo-ps-0");
    let r = &ps["containers"][0]["resources"];
    assert_eq!(r["requests"], serde_json::json!({ "cpu": "2" }));
    assert_eq!(
        r["limits"],
        serde_json::json!({ "cpu": "2", "memory": "3Gi" }),
        "the template's memory stays"
    );
    assert_eq!(ps["containers"][0]["image"], DEFAULT_IMAGE);
    assert!(
        !ps["volumes"].to_string().contains("tf-spawner-shm"),
        "no GPU, no /dev/shm"
    );
    let Some(PodGroup::Volcano(group)) = &plan.pod_group else {
        panic!("no Volcano PodGroup");
    };
    let shown: BTreeMap<&str, &str> = group
        .spec
        .min_resources
        .as_ref()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    // Chief and 2 workers: 4 CPUs, 18Gi and a GPU each; the ps: 2 CPUs, 3Gi (its limit).
    assert_eq!(
        shown,
        BTreeMap::from([("cpu", "14"), ("memory", "57Gi"), ("nvidia.com/gpu", "3")])
    );
}

/// The labels of a helper pod of run `tag` (`cp`), as `helper.rs` makes them.
fn helper_labels(tag: &str) -> BTreeMap<String, String> {
    let volume = OutputVolume {
        claim: "out".into(),
        path: "/output".into(),
        folder: None,
    };
    let pod = crate::helper::pod(&crate::helper::HelperSpec {
        helper: crate::helper::Helper::Cp,
        name: format!("{tag}-cp-x"),
        tag,
        namespace: "physics",
        image: "tf".into(),
        volume: &volume,
        node: None,
        security: None,
    });
    pod.metadata.labels.unwrap()
}

#[test]
fn the_network_policy_admits_the_runs_tasks_from_each_other_and_nothing_else() {
    let mut req = request(Roles::new(None, true, 2, 2, true).unwrap());
    req.hardening.network_policy = true;
    let plan = build(&req).unwrap();
    let policy = plan.network_policy.clone().expect("a network policy");
    assert_eq!(policy.metadata.name.as_deref(), Some("demo-network"));
    assert_eq!(
        policy.metadata.labels.as_ref().unwrap()[RUN_LABEL],
        "demo",
        "-d finds it by the run's label"
    );
    let spec = policy.spec.unwrap();
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_string()]));
    assert!(
        spec.egress.is_none(),
        "egress is left as the namespace has it"
    );
    let ingress = spec.ingress.unwrap();
    assert_eq!(ingress.len(), 1);
    let from = ingress[0].from.clone().unwrap();
    assert_eq!(from.len(), 1, "one peer: the run's tasks");
    assert!(from[0].namespace_selector.is_none() && from[0].ip_block.is_none());
    let peers = from[0].pod_selector.clone().unwrap();
    let selected = spec.pod_selector.unwrap();
    let mut tasks = 0;
    for pod in plan.pods.iter() {
        let labels = pod.metadata.labels.unwrap();
        assert!(network::selects(&selected, &labels), "{labels:?}");
        assert!(network::selects(&peers, &labels), "{labels:?}");
        tasks += 1;
    }
    assert_eq!(tasks, 6, "chief, 2 ps, 2 workers, evaluator");
    let mut other = request(Roles::new(None, false, 0, 1, false).unwrap());
    other.tag = "other".into();
    let other_pod = build(&other).unwrap().pods.iter().next().unwrap();
    for labels in [other_pod.metadata.labels.unwrap(), helper_labels("demo")] {
        assert!(!network::selects(&selected, &labels), "{labels:?}");
        assert!(!network::selects(&peers, &labels), "{labels:?}");
    }
    let annotations = plan.config_map.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[NETWORK_POLICY_ANNOTATION], "demo-network");
    let yaml = render(&plan, OutputFormat::Yaml).unwrap();
    assert!(yaml.contains("kind: NetworkPolicy"), "--dry-run shows it");
    assert!(
        build(&request(Roles::new(None, false, 0, 1, false).unwrap()))
            .unwrap()
            .network_policy
            .is_none()
    );
}

#[test]
fn run_as_user_makes_every_task_non_root_with_a_writable_home_and_volume() {
    let mut req = request(Roles::new(None, true, 0, 2, false).unwrap());
    req.hardening.run_as_user = Some(1000);
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/output".into(),
        folder: None,
    });
    let plan = build(&req).unwrap();
    for pod in plan.pods.iter() {
        let v = serde_json::to_value(&pod).unwrap();
        let sc = &v["spec"]["securityContext"];
        assert_eq!(sc["runAsNonRoot"], true);
        assert_eq!(sc["runAsUser"], 1000);
        assert_eq!(sc["runAsGroup"], 1000);
        assert_eq!(sc["fsGroup"], 1000, "the volume is made the group's");
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
        let c = &v["spec"]["containers"][0];
        let home = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "HOME")
            .unwrap();
        assert_eq!(home["value"], security::HOME_DIR);
        assert!(
            c["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["mountPath"] == security::HOME_DIR)
        );
        assert!(
            v["spec"]["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|vol| vol["name"] == security::HOME_VOLUME && vol["emptyDir"].is_object())
        );
    }
}

/// Issue 57: the record vetting is an allow-list of what the plan sets, so every pod the
/// plan makes (user, deadline, node-lost tolerations, a gang's scheduler, `--dir`'s init
/// container, GPUs) asks for nothing beyond it: a run whose pods all vanished is
/// re-created from its record with no live pod to compare with.
#[test]
fn the_plans_pods_ask_for_nothing_the_record_vetting_refuses() {
    let mut req = request(Roles::new(None, true, 0, 2, false).unwrap());
    req.scheduling = Scheduling {
        deadline_seconds: Some(600),
        node_lost_after_seconds: Some(60),
        gang: Some(Gang::ALL[0]),
        ..Scheduling::default()
    };
    req.hardening.run_as_user = Some(1000);
    req.bundle = Some(crate::bundle::Bundle {
        archive: vec![0x1f, 0x8b, 0],
        script: "src/train.py".into(),
        files: 2,
        left_out: vec![],
    });
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/output".into(),
        folder: None,
    });
    let plan = build(&req).unwrap();
    for pod in plan.pods.iter() {
        let asked = crate::cluster::vetting::privileges(&pod);
        assert!(asked.is_empty(), "{:?}: {asked:?}", pod.metadata.name);
    }
}

/// Issue 57: a sweep's parameter reaches its variable as written: the kubelet expands
/// `$(VAR)` in a variable's value, so the plan escapes it as it escapes the arguments
/// (`--param 'p=$(SECRET_KEY)'` gave the task the `-e` secret).
#[test]
fn a_parameter_in_a_variable_is_escaped_for_the_kubelet() {
    let mut req = request(Roles::new(None, false, 0, 1, false).unwrap());
    req.experiment = Some(ExperimentRun {
        name: "exp".into(),
        params: vec![("p".into(), "$(SECRET_KEY) $$".into())],
    });
    req.script_args = vec!["$(SECRET_KEY)".into()];
    let plan = build(&req).unwrap();
    let pod = serde_json::to_value(plan.pods.iter().next().unwrap()).unwrap();
    let c = &pod["spec"]["containers"][0];
    let var = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "TF_SPAWNER_PARAM_P")
        .unwrap();
    assert_eq!(var["value"], "$$(SECRET_KEY) $$$$");
    assert_eq!(c["args"][0], "$$(SECRET_KEY)");
}
