//! The hardening: `--network-policy`'s selectors, `--run-as-user`, and every pod the
//! plan makes passing the record vetting.

use super::*;
use crate::labels::{NETWORK_POLICY_ANNOTATION, RUN_LABEL};
use crate::plan::{network, security};

/// The labels of a helper pod of run `tag` (`cp`), as `plan/helper_pod.rs` makes them.
fn helper_labels(tag: &str) -> BTreeMap<String, String> {
    let volume = OutputVolume {
        claim: "out".into(),
        path: "/output".into(),
        folder: None,
    };
    let pod = crate::plan::helper_pod::pod(&crate::plan::helper_pod::HelperSpec {
        helper: crate::plan::helper_pod::Helper::Cp,
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
