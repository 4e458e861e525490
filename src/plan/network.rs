//! `--network-policy`: one NetworkPolicy per run that lets the run's tasks reach each
//! other, for namespaces that deny traffic by default. It selects the run's tasks (the
//! pods with the run's tag and a role; not its helper pods) and admits ingress from
//! those same tasks on every port: TensorFlow's gRPC port, and the ports NCCL opens
//! between GPU workers on their own. It opens nothing to any other pod.
//!
//! Ingress only: a policy of type Egress would cut the tasks off from DNS, the datasets
//! they download and the storage they write to in every namespace that does not
//! already restrict egress (docs/shared-clusters.md, "Network policies").

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use crate::labels::{ROLE_LABEL, RUN_LABEL};

/// The pods the policy is about and admits traffic from: the run's tasks.
pub fn tasks_selector(tag: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([(RUN_LABEL.to_string(), tag.to_string())])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: ROLE_LABEL.to_string(),
            operator: "Exists".to_string(),
            values: None,
        }]),
    }
}

/// The run's NetworkPolicy, with the run's metadata (name, labels, invocation).
pub fn network_policy(tag: &str, metadata: ObjectMeta) -> NetworkPolicy {
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(tasks_selector(tag)),
            policy_types: Some(vec!["Ingress".to_string()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(tasks_selector(tag)),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: None,
            }]),
            egress: None,
        }),
    }
}

/// Whether `selector` selects a pod labelled `labels`, by the API's rules (every
/// `matchLabels` pair and every expression must hold): the pure check of the policy
/// against the run's pods.
#[cfg(test)]
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs = selector.match_labels.iter().flatten();
    let exprs = selector.match_expressions.iter().flatten();
    pairs.into_iter().all(|(k, v)| labels.get(k) == Some(v))
        && exprs.into_iter().all(|e| {
            let values = e.values.clone().unwrap_or_default();
            match (e.operator.as_str(), labels.get(&e.key)) {
                ("Exists", found) => found.is_some(),
                ("DoesNotExist", found) => found.is_none(),
                ("In", Some(v)) => values.contains(v),
                ("NotIn", found) => found.is_none_or(|v| !values.contains(v)),
                _ => false,
            }
        })
}
