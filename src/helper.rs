//! Helper pods of a run (pure): the short-lived pod `cp` copies through, and the
//! TensorBoard pod. Each carries the run's tag (so `-d` deletes it) and
//! [`HELPER_LABEL`] (so it is no task of the run), mounts the run's volume read-only,
//! and lands on the node of the run's pods when the claim is ReadWriteOnce.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, HTTPGetAction, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSecurityContext, PodSpec, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::labels::{HELPER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL};
use crate::plan::OutputVolume;

/// The image of `tensorboard` when neither `--image` nor the defaults file names one:
/// TensorFlow's own, which has `tensorboard` on its PATH.
pub const TENSORBOARD_IMAGE: &str = "tensorflow/tensorflow:2.15.0";
/// The port TensorBoard serves on in its pod.
pub const TENSORBOARD_PORT: u16 = 6006;
/// The longest a copy's helper pod lives, whatever happens to the client.
const CP_DEADLINE_SECONDS: i64 = 3600;

/// What a helper pod is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    Cp,
    Tensorboard,
}

impl Helper {
    pub fn as_str(self) -> &'static str {
        match self {
            Helper::Cp => "cp",
            Helper::Tensorboard => "tensorboard",
        }
    }
}

/// Everything a helper pod is made from.
#[derive(Debug, Clone)]
pub struct HelperSpec<'a> {
    pub helper: Helper,
    pub name: String,
    pub tag: &'a str,
    pub namespace: &'a str,
    pub image: String,
    pub volume: &'a OutputVolume,
    /// Pin the pod to this node (a ReadWriteOnce claim already in use there).
    pub node: Option<String>,
    /// The run's pods' security context: the helper runs as their user.
    pub security: Option<PodSecurityContext>,
}

/// The helper pod.
pub fn pod(spec: &HelperSpec<'_>) -> Pod {
    let labels = BTreeMap::from([
        (RUN_LABEL.to_string(), spec.tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (HELPER_LABEL.to_string(), spec.helper.as_str().to_string()),
    ]);
    let (command, ports, probe) = container_of(spec);
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            namespace: Some(spec.namespace.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: spec.helper.as_str().to_string(),
                image: Some(spec.image.clone()),
                command: Some(command),
                ports,
                readiness_probe: probe,
                volume_mounts: Some(vec![spec.volume.mount(true)]),
                ..Container::default()
            }],
            volumes: Some(vec![spec.volume.volume(true)]),
            restart_policy: Some("Never".to_string()),
            termination_grace_period_seconds: Some(1),
            active_deadline_seconds: (spec.helper == Helper::Cp).then_some(CP_DEADLINE_SECONDS),
            affinity: spec.node.as_ref().map(|node| on_node(node)),
            ..PodSpec::default()
        }),
        status: None,
    };
    if let Some(s) = pod.spec.as_mut() {
        s.security_context = spec.security.as_ref().map(run_as_the_run);
        crate::plan::security::harden(s);
    }
    pod
}

/// The user, group and non-root promise of the run's pods (a namespace that enforces
/// `restricted` admitted them), and their `fsGroup` as a supplementary group, so the
/// helper reads what they wrote; not `fsGroup` itself, which would have the kubelet
/// change the ownership of the whole volume again.
fn run_as_the_run(run: &PodSecurityContext) -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: run.run_as_user,
        run_as_group: run.run_as_group,
        run_as_non_root: run.run_as_non_root,
        supplemental_groups: run.fs_group.map(|g| vec![g]),
        ..PodSecurityContext::default()
    }
}

/// The helper's command, ports and readiness probe.
fn container_of(spec: &HelperSpec<'_>) -> (Vec<String>, Option<Vec<ContainerPort>>, Option<Probe>) {
    match spec.helper {
        // `sleep` in a loop of the copy's length: the pod outlives no copy by much, even
        // when the client is killed before it can delete it.
        Helper::Cp => (
            vec!["sleep".to_string(), CP_DEADLINE_SECONDS.to_string()],
            None,
            None,
        ),
        Helper::Tensorboard => (
            vec![
                "tensorboard".to_string(),
                "--logdir".to_string(),
                spec.volume.path.clone(),
                "--bind_all".to_string(),
                "--port".to_string(),
                TENSORBOARD_PORT.to_string(),
            ],
            Some(vec![ContainerPort {
                name: Some("tensorboard".to_string()),
                container_port: i32::from(TENSORBOARD_PORT),
                protocol: Some("TCP".to_string()),
                ..ContainerPort::default()
            }]),
            Some(Probe {
                http_get: Some(HTTPGetAction {
                    path: Some("/".to_string()),
                    port: IntOrString::Int(i32::from(TENSORBOARD_PORT)),
                    ..HTTPGetAction::default()
                }),
                period_seconds: Some(2),
                ..Probe::default()
            }),
        ),
    }
}

/// Required node affinity to the node named `node` (by `metadata.name`, as a
/// DaemonSet's pods are placed: a node's hostname label need not be its name).
fn on_node(node: &str) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".to_string(),
                        operator: "In".to_string(),
                        values: Some(vec![node.to_string()]),
                    }]),
                    ..NodeSelectorTerm::default()
                }],
            }),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    }
}

/// Whether a claim with these access modes can be used by pods on one node only.
pub fn one_node_only(access_modes: &[String]) -> bool {
    !access_modes
        .iter()
        .any(|m| m == "ReadWriteMany" || m == "ReadOnlyMany")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume() -> OutputVolume {
        OutputVolume {
            claim: "out".into(),
            path: "/output".into(),
        }
    }

    #[test]
    fn a_helper_carries_the_tag_mounts_read_only_and_may_be_pinned() {
        let v = volume();
        let pod = pod(&HelperSpec {
            helper: Helper::Tensorboard,
            name: "demo-tensorboard".into(),
            tag: "demo",
            namespace: "ns",
            image: "tb:1".into(),
            volume: &v,
            node: Some("n1".into()),
            security: None,
        });
        let json = serde_json::to_value(&pod).unwrap();
        assert_eq!(json["metadata"]["labels"]["training_attempt"], "demo");
        assert_eq!(
            json["metadata"]["labels"]["tf-spawner/helper"],
            "tensorboard"
        );
        let spec = &json["spec"];
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "out"
        );
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"]["readOnly"],
            true
        );
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["readOnly"], true);
        assert_eq!(spec["containers"][0]["command"][2], "/output");
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                [0]["matchFields"][0]["values"][0],
            "n1"
        );
    }

    #[test]
    fn only_many_modes_let_pods_on_several_nodes_share_a_claim() {
        let modes = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(one_node_only(&modes(&["ReadWriteOnce"])));
        assert!(one_node_only(&modes(&["ReadWriteOncePod"])));
        assert!(!one_node_only(&modes(&["ReadWriteOnce", "ReadWriteMany"])));
    }
}
