//! What the shared-cluster controllers do that tf-spawner depends on, modelled from
//! their source (tf-spawner's docs/shared-clusters.md):
//!
//! - Kueue's pod webhook (`pkg/controller/jobs/pod/pod_webhook.go::Default`): in a
//!   namespace Kueue manages, with its `pod` integration on, a new pod naming a
//!   LocalQueue (label `kueue.x-k8s.io/queue-name`) gets the label
//!   `kueue.x-k8s.io/managed=true` and the scheduling gate `kueue.x-k8s.io/admission`.
//!   (Kueue also adds a finalizer of the same name; the model leaves it out, so a
//!   delete here is not held up by it.) Elsewhere the pod is left as it is.
//! - Kueue's finish rule for a pod group (`pkg/controller/jobs/pod/pod_controller.go::
//!   Finished`): [`kueue_group_finished`].
//! - The gang schedulers' count of `minMember` (scheduler-plugins'
//!   `pkg/coscheduling/coscheduling.go::Less` and `core/core.go::Permit`; Volcano's
//!   gang plugin): [`place`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::store::Store;

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
const ADMISSION_GATE: &str = "kueue.x-k8s.io/admission";
const GROUP_LABEL: &str = "kueue.x-k8s.io/pod-group-name";
const TOTAL_ANNOTATION: &str = "kueue.x-k8s.io/pod-group-total-count";
const RETRIABLE_ANNOTATION: &str = "kueue.x-k8s.io/retriable-in-group";
const COSCHEDULING_LABEL: &str = "scheduling.x-k8s.io/pod-group";
const VOLCANO_ANNOTATION: &str = "scheduling.k8s.io/group-name";

/// Kueue's webhook on a new pod (see the module's doc).
pub fn kueue_webhook(pod: &mut Value, opts: &crate::options::Options) {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    if !opts.kueue_namespaces.iter().any(|n| n == ns)
        || pod["metadata"]["labels"].get(QUEUE_LABEL).is_none()
    {
        return;
    }
    pod["metadata"]["labels"][MANAGED_LABEL] = json!("true");
    if !pod["spec"]["schedulingGates"].is_array() {
        pod["spec"]["schedulingGates"] = json!([]);
    }
    if let Some(gates) = pod["spec"]["schedulingGates"].as_array_mut()
        && !gates.iter().any(|g| g["name"] == ADMISSION_GATE)
    {
        gates.push(json!({ "name": ADMISSION_GATE }));
    }
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("Pending")
}

fn terminated(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether Kueue would call pod group `group` of `namespace` finished, releasing its
/// quota: as many pods succeeded as its total count, or no pod of it is still active
/// (every one that exists has ended) and one of them says `retriable-in-group: "false"`.
/// Pods that are gone do not count either way; a group with none left is not finished
/// by this rule.
pub fn kueue_group_finished(store: &Store, namespace: &str, group: &str) -> bool {
    let pods: Vec<Value> = store
        .list("pods", Some(namespace))
        .into_iter()
        .filter(|p| p["metadata"]["labels"][GROUP_LABEL] == group)
        .collect();
    let total: usize = pods
        .iter()
        .find_map(|p| p["metadata"]["annotations"][TOTAL_ANNOTATION].as_str())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count();
    let active = pods.iter().any(|p| !terminated(p));
    let unretriable = pods
        .iter()
        .any(|p| p["metadata"]["annotations"][RETRIABLE_ANNOTATION] == "false");
    succeeded == total || (!active && unretriable)
}

/// The PodGroup a pod belongs to: coscheduling's label, else Volcano's annotation.
fn group_of(pod: &Value) -> Option<String> {
    let meta = &pod["metadata"];
    meta["labels"][COSCHEDULING_LABEL]
        .as_str()
        .or_else(|| meta["annotations"][VOLCANO_ANNOTATION].as_str())
        .map(str::to_string)
}

/// One pass of a gang scheduler over the unbound pods of `namespace`, with `free` places
/// of one pod each; returns the names of the pods it binds (and binds them).
///
/// Pods are taken in coscheduling's queue order: higher priority first, then by name
/// (the members of a group share the group's creation time). Each takes a free place
/// if one is left. A pod outside any group binds at once; a group's pods bind once at
/// least `minMember` of them hold places (Permit), else they keep their places,
/// waiting, and bind nothing. Both schedulers count any member towards `minMember`,
/// whatever its role; Volcano places in no fixed order, of which this is one.
pub fn place(store: &mut Store, namespace: &str, free: usize) -> Vec<String> {
    let mut pods: Vec<Value> = store
        .list("pods", Some(namespace))
        .into_iter()
        .filter(|p| p["spec"]["nodeName"].as_str().is_none_or(str::is_empty))
        .filter(|p| !terminated(p))
        .collect();
    let priority = |p: &Value| p["spec"]["priority"].as_i64().unwrap_or(0);
    let name = |p: &Value| p["metadata"]["name"].as_str().unwrap_or("").to_string();
    pods.sort_by(|a, b| priority(b).cmp(&priority(a)).then(name(a).cmp(&name(b))));
    let min_member = |group: &str| {
        crate::options::GANG_PODGROUPS
            .iter()
            .find_map(|r| store.get(r, namespace, group))
            .and_then(|g| g["spec"]["minMember"].as_u64())
            .unwrap_or(1)
    };
    let mut left = free;
    let mut bound = Vec::new();
    let mut reserved: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pod in &pods {
        if left == 0 {
            break;
        }
        left -= 1;
        match group_of(pod) {
            None => bound.push(name(pod)),
            Some(group) => reserved.entry(group).or_default().push(name(pod)),
        }
    }
    for (group, names) in reserved {
        if names.len() as u64 >= min_member(&group) {
            bound.extend(names);
        }
    }
    for n in &bound {
        if let Some(mut pod) = store.get("pods", namespace, n).cloned() {
            pod["spec"]["nodeName"] = json!("node-1");
            store.put("pods", namespace, pod);
        }
    }
    bound.sort();
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, phase: &str) -> Value {
        json!({
            "metadata": { "name": name, "namespace": "ns",
                "labels": { GROUP_LABEL: "g" },
                "annotations": { TOTAL_ANNOTATION: "3", RETRIABLE_ANNOTATION: "false" } },
            "spec": {},
            "status": { "phase": phase }
        })
    }

    fn store(pods: &[(&str, &str)]) -> Store {
        let mut store = Store::new();
        for (name, phase) in pods {
            store.put("pods", "ns", pod(name, phase));
        }
        store
    }

    #[test]
    fn a_group_is_finished_when_all_succeeded_or_none_is_active() {
        let all = [("a", "Succeeded"), ("b", "Succeeded"), ("c", "Succeeded")];
        assert!(kueue_group_finished(&store(&all), "ns", "g"));
        // One failed, the others hang: not finished, the quota stays taken.
        let hung = [("a", "Failed"), ("b", "Running"), ("c", "Running")];
        assert!(!kueue_group_finished(&store(&hung), "ns", "g"));
        // The running ones stopped (gone): finished.
        assert!(kueue_group_finished(&store(&[("a", "Failed")]), "ns", "g"));
        // A chief succeeded, parameter servers still serve: not finished.
        let ps = [("a", "Succeeded"), ("b", "Running")];
        assert!(!kueue_group_finished(&store(&ps), "ns", "g"));
        // Nobody left: not by this rule.
        assert!(!kueue_group_finished(&store(&[]), "ns", "g"));
    }
}
