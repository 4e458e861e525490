//! The plan's unit tests: here the request every test starts from, the whole plans
//! pinned as `--dry-run` prints them (the snapshots, `src/plan/snapshots`) and the
//! ConfigMap; in `tests/`, the pods (`pod.rs`), the shared-cluster options
//! (`scheduling.rs`) and the hardening (`security.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::inputs::envfile::EnvVars;
use crate::inputs::template;
use crate::labels::{
    COSCHEDULING_GROUP_LABEL, ENV_SECRET_ANNOTATION, NO_ENV_SECRET, VOLCANO_GROUP_ANNOTATION,
};
use crate::render::OutputFormat;
use crate::render::render;
use crate::roles::{Role, Roles, Strategy};

mod pod;
mod scheduling;
mod security;

pub(super) fn request(roles: Roles) -> SpawnRequest {
    SpawnRequest {
        tag: "demo".into(),
        namespace: "physics".into(),
        port: 1999,
        image: None,
        roles,
        framework: crate::framework::Framework::Tensorflow,
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
    assert_eq!(command[1], "/script/wait-for-names.sh");
    assert_eq!(command[2], "bash");
    assert_eq!(
        command[4],
        "mkdir -p -- \"$$TF_SPAWNER_OUTPUT_DIR\" && exec \"$$@\""
    );
    assert_eq!(command[6], "bash");
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
fn deadline_and_priority_class_match_the_fixture() {
    let mut req = request(Roles::workers(2).unwrap());
    req.scheduling.deadline_seconds = Some(43_200);
    req.scheduling.priority_class = Some("team-high".into());
    let plan = build(&req).unwrap();
    insta::assert_snapshot!(render(&plan, OutputFormat::Yaml).unwrap());
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
    // Only tf-spawner's own files are text: the cluster addresses, the wait for them.
    let data = plan.config_map.data.as_ref().unwrap();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        [CLUSTER_KEY, "wait-for-names.py"]
    );
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
