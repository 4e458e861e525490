//! The task pods: each role's template, the variables, `--volume`'s mount and folder,
//! the resources of each role, a sweep's parameters escaped for the kubelet.

use super::*;
use crate::labels::{OUTPUT_DIR_VAR, VOLUME_ANNOTATION};
use crate::plan::container::DEFAULT_GPU_IMAGE;
use crate::plan::mounts::OUTPUT_VOLUME;

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
        // The task makes its folder (after the wait for the names, `start.rs`), then
        // runs the script.
        assert_eq!(c["command"][1], "/script/wait-for-names.py");
        assert!(
            c["command"][4]
                .as_str()
                .unwrap()
                .contains("os.makedirs(os.environ['TF_SPAWNER_OUTPUT_DIR']")
        );
        assert_eq!(c["command"][5], "python");
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

/// `--framework keras`: each worker is told the coordinator (worker 0's Service on the
/// run's port), the count and its index, with `KERAS_BACKEND=jax` unless the template
/// sets it; no `TF_CONFIG`, which means nothing to keras.distribution.
#[test]
fn keras_workers_get_the_keras_variables_and_no_tf_config() {
    let mut req = request(Roles::workers(3).unwrap());
    req.framework = crate::framework::Framework::Keras;
    let plan = build(&req).unwrap();
    for (i, pod) in plan.pods.iter().enumerate() {
        let env: Vec<(String, Option<String>)> = pod.spec.as_ref().unwrap().containers[0]
            .env
            .clone()
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.value))
            .collect();
        let get = |name: &str| {
            let found: Vec<_> = env.iter().filter(|(n, _)| n == name).collect();
            assert!(found.len() <= 1, "{name} set twice: {env:?}");
            found.first().and_then(|(_, v)| v.clone())
        };
        assert_eq!(
            get("KERAS_DISTRIBUTION_JOB_ADDRESSES").as_deref(),
            Some("demo-worker-0.physics.svc:1999")
        );
        assert_eq!(
            get("KERAS_DISTRIBUTION_NUM_PROCESSES").as_deref(),
            Some("3")
        );
        assert_eq!(
            get("KERAS_DISTRIBUTION_PROCESS_ID"),
            Some(i.to_string()),
            "{env:?}"
        );
        assert_eq!(get("KERAS_BACKEND").as_deref(), Some("jax"));
        assert_eq!(get("WORKER_NUMBER"), Some(i.to_string()));
        assert_eq!(get("TOT_WORKERS").as_deref(), Some("3"));
        assert!(!env.iter().any(|(n, _)| n == "TF_CONFIG"), "{env:?}");
    }

    // A template's own KERAS_BACKEND is kept, not doubled.
    let mut req = request(Roles::workers(1).unwrap());
    req.framework = crate::framework::Framework::Keras;
    req.templates.worker.spec.as_mut().unwrap().containers[0].env =
        Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "KERAS_BACKEND".into(),
            value: Some("jax".into()),
            value_from: None,
        }]);
    let plan = build(&req).unwrap();
    let env = plan
        .pods
        .iter()
        .next()
        .unwrap()
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .env
        .clone()
        .unwrap();
    assert_eq!(env.iter().filter(|e| e.name == "KERAS_BACKEND").count(), 1);
}
