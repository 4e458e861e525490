//! Whether some node could ever hold one of the run's pods: its `status.allocatable`
//! (what the scheduler compares requests with) at least what the pod requests, for every
//! resource the pod asks for. When no schedulable node could, a warning names the
//! largest one; never a refusal: a cluster autoscaler may add a larger node, and nodes
//! that are not there yet are not listed. Taints and affinity are not looked at.
//!
//! What already runs is [`check_now`]'s: on a small cluster (at most [`NOW_NODES`]
//! schedulable nodes, so that one list of its pods is small), a pod that some node
//! could hold but none can now, the requests of the pods already on each node leaving
//! too little, or its taints not tolerated, is a warning too: it stays Pending
//! (Unschedulable) until pods there end.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

use super::{RolePods, RunObjects};
use crate::plan::quantity;

/// What each resource a node (or a pod) has (or asks for), in its quantity's units.
type Room = BTreeMap<String, i128>;

/// The warning, if no node could hold one pod of some role (the first such role).
pub fn check(nodes: &[Node], run: &RunObjects) -> Option<String> {
    let rooms = rooms(nodes);
    if rooms.is_empty() {
        return None;
    }
    for pods in &run.pods {
        let asks = asks(pods);
        if asks.is_empty() {
            continue;
        }
        let fits = |room: &Room| {
            asks.iter()
                .filter(|(k, v)| room.get(*k).copied().unwrap_or(0) >= **v)
                .count()
        };
        if rooms.iter().any(|(_, room)| fits(room) == asks.len()) {
            continue;
        }
        // The largest: the one that holds the most of what the pod asks for, then the
        // one with the most of each resource, the scarce ones first (an extended
        // resource such as nvidia.com/gpu, then cpu, memory…): a GPU pod's warning names
        // a GPU node, not a larger node without GPUs.
        let mut order: Vec<&String> = asks.keys().collect();
        order.sort_by_key(|k| !k.contains('/'));
        let (name, room) = rooms.iter().max_by_key(|(_, room)| {
            let amounts: Vec<i128> = order
                .iter()
                .map(|k| room.get(*k).copied().unwrap_or(0))
                .collect();
            (fits(room), amounts)
        })?;
        return Some(warning(pods, &asks, name, room));
    }
    None
}

/// The most schedulable nodes whose pods [`check_now`] reads (one list of every
/// namespace's pods that have not ended: small on a small cluster).
pub const NOW_NODES: usize = 16;

/// Whether [`check_now`] is worth its list of pods: a cluster of at most [`NOW_NODES`]
/// schedulable nodes.
pub fn small(nodes: &[Node]) -> bool {
    let n = rooms(nodes).len();
    n > 0 && n <= NOW_NODES
}

/// The warning, if no node has room now for one pod of some role (the first such
/// role) that some node could hold empty ([`check`] names the others): each node's
/// allocatable less the requests of the pods on it that have not ended (`pods`: of
/// every namespace, as the scheduler counts them).
pub fn check_now(nodes: &[Node], pods: &[Pod], run: &RunObjects) -> Option<String> {
    let rooms = rooms(nodes);
    let free: Vec<(String, Room)> = rooms
        .iter()
        .map(|(name, room)| {
            let mut left = room.clone();
            for pod in pods.iter().filter(|p| on_node(p, name)) {
                let asks = pod.spec.as_ref().map(quantity::pod_requests);
                for (k, v) in asks.into_iter().flatten() {
                    *left.entry(k).or_default() -= v;
                }
            }
            (name.clone(), left)
        })
        .collect();
    for pods in &run.pods {
        let asks = asks(pods);
        let fits = |room: &Room| {
            asks.iter()
                .all(|(k, v)| room.get(k).copied().unwrap_or(0) >= *v)
        };
        // The nodes that could hold it empty and whose taints it tolerates.
        let tolerations = pods.spec.tolerations.as_deref().unwrap_or_default();
        let candidates: Vec<&(String, Room)> = free
            .iter()
            .filter(|(name, _)| rooms.iter().any(|(n, r)| n == name && fits(r)))
            .filter(|(name, _)| admits(nodes, name, tolerations))
            .collect();
        if asks.is_empty() || candidates.iter().any(|(_, r)| fits(r)) {
            continue;
        }
        // The most room: the one that lacks the least of what the pod asks for.
        let short = |room: &Room| -> Vec<i128> {
            asks.iter()
                .map(|(k, v)| (*v - room.get(k).copied().unwrap_or(0)).max(0))
                .collect()
        };
        let Some((name, room)) = candidates.into_iter().min_by_key(|(_, room)| {
            let s = short(room);
            (s.iter().filter(|v| **v > 0).count(), s)
        }) else {
            continue;
        };
        return Some(warning_now(pods, &asks, name, room));
    }
    None
}

/// Whether a pod with `tolerations` may be placed on node `name`: each of its
/// NoSchedule and NoExecute taints tolerated (the scheduler's TaintToleration filter).
fn admits(nodes: &[Node], name: &str, tolerations: &[Toleration]) -> bool {
    let Some(node) = nodes
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
    else {
        return false;
    };
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
    taints
        .into_iter()
        .flatten()
        .filter(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"))
        .all(|t| tolerations.iter().any(|tol| tolerates(tol, t)))
}

/// k8s.io/api core/v1 `Toleration.ToleratesTaint`: the effect and the key when the
/// toleration names them, then the value unless the operator is `Exists`.
fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    if tol
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if tol
        .key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match tol.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            tol.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether `pod` is on node `name` and holds its requests there (not ended).
fn on_node(pod: &Pod, name: &str) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name)
        && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// What one pod of `pods` asks of a node (the resources it asks some of).
fn asks(pods: &RolePods) -> Room {
    quantity::pod_requests(&pods.spec)
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// `no node has room for one of the worker pods now (each asks for cpu 1, memory 1Gi);
/// the most is on n1, cpu 500m, memory 3Gi free of what already runs: …`.
fn warning_now(pods: &RolePods, asks: &Room, name: &str, free: &Room) -> String {
    let show = |from: &Room, how: fn(&str, i128) -> String| {
        asks.keys()
            .map(|k| format!("{k} {}", how(k, from.get(k).copied().unwrap_or(0).max(0))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let short: Vec<&str> = asks
        .iter()
        .filter(|(k, v)| free.get(*k).copied().unwrap_or(0) < **v)
        .map(|(k, _)| k.as_str())
        .collect();
    let (which, each, stays) = wording(pods);
    format!(
        "no node has room for {which} now (too little {} left by what already runs; {each} for {}); the most is on {name}, {} free: {stays} Pending until pods there end; ask for less (--cpu, --memory) or wait for room",
        short.join(", "),
        show(asks, quantity::show),
        show(free, quantity::human)
    )
}

/// How a warning names the pods: `the chief's pod` / `one of the worker pods`, then
/// `it asks` / `each asks` and `it stays` / `they stay`.
fn wording(pods: &RolePods) -> (String, &'static str, &'static str) {
    if pods.count == 1 {
        (format!("the {}'s pod", pods.role), "it asks", "it stays")
    } else {
        (
            format!("one of the {} pods", pods.role),
            "each asks",
            "they stay",
        )
    }
}

/// The schedulable nodes, each with its allocatable resources.
fn rooms(nodes: &[Node]) -> Vec<(String, Room)> {
    nodes
        .iter()
        .filter(|n| n.spec.as_ref().and_then(|s| s.unschedulable) != Some(true))
        .map(|n| {
            let allocatable = n.status.as_ref().and_then(|s| s.allocatable.as_ref());
            let room = allocatable
                .into_iter()
                .flatten()
                .filter_map(|(k, q)| Some((k.clone(), quantity::parse(&q.0)?)))
                .collect();
            (n.metadata.name.clone().unwrap_or_default(), room)
        })
        .collect()
}

/// `no node can hold one of the worker pods (each asks for cpu 8); the largest, n1,
/// has cpu 4 allocatable: …`.
fn warning(pods: &RolePods, asks: &Room, name: &str, room: &Room) -> String {
    // What the pod asks for as written; what a node has as a reader reads it (23.5Gi).
    let show = |from: &Room, how: fn(&str, i128) -> String| {
        asks.keys()
            .map(|k| format!("{k} {}", how(k, from.get(k).copied().unwrap_or(0))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (which, each, stays) = wording(pods);
    format!(
        "no node can hold {which} ({each} for {}); the largest, {name}, has {} allocatable: {stays} Pending until a node that large joins the cluster",
        show(asks, quantity::show),
        show(room, quantity::human)
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;
    use crate::roles::Role;

    fn node(name: &str, allocatable: &[(&str, &str)]) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"allocatable": allocatable.iter().copied().collect::<BTreeMap<_, _>>()},
        }))
        .unwrap()
    }

    fn workers(asks: &[(&str, &str)]) -> RunObjects {
        let q: BTreeMap<String, Quantity> = asks
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect();
        let spec = PodSpec {
            containers: vec![Container {
                name: "tensorflow".into(),
                resources: Some(ResourceRequirements {
                    limits: Some(q.clone()),
                    requests: Some(q),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        RunObjects {
            pods: vec![RolePods {
                role: Role::Worker,
                count: 2,
                spec,
            }],
            services: 2,
            config_maps: 1,
            secrets: 0,
            pod_group: None,
            tf_container: "tensorflow".into(),
        }
    }

    fn running(node: &str, cpu: &str, memory: &str, phase: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p-{node}-{cpu}")},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_no_node_has_room_for_now_names_what_is_short_and_the_roomiest_node() {
        let nodes = [
            node("n1", &[("cpu", "4"), ("memory", "8Gi")]),
            node("n2", &[("cpu", "2"), ("memory", "16Gi")]),
        ];
        let run = workers(&[("cpu", "1"), ("memory", "1Gi")]);
        let busy = [
            running("n1", "3500m", "1Gi", "Running"),
            running("n2", "1500m", "2Gi", "Pending"),
            // An ended pod holds nothing.
            running("n1", "4", "1Gi", "Succeeded"),
        ];
        assert_eq!(
            check_now(&nodes, &busy, &run).as_deref(),
            Some(
                "no node has room for one of the worker pods now (too little cpu left by what already runs; each asks for cpu 1, memory 1Gi); the most is on n1, cpu 500m, memory 7Gi free: they stay Pending until pods there end; ask for less (--cpu, --memory) or wait for room"
            )
        );
        // An empty node the pod does not tolerate has no room for it.
        let mut tainted = node("n3", &[("cpu", "4"), ("memory", "8Gi")]);
        tainted.spec = Some(
            serde_json::from_value(serde_json::json!({"taints": [
                {"key": "second-node", "value": "true", "effect": "NoSchedule"}]}))
            .unwrap(),
        );
        let with = [nodes[0].clone(), nodes[1].clone(), tainted];
        assert!(check_now(&with, &busy, &run).is_some());
        let mut tolerant = run.clone();
        tolerant.pods[0].spec.tolerations = Some(vec![Toleration {
            key: Some("second-node".into()),
            operator: Some("Exists".into()),
            ..Default::default()
        }]);
        assert_eq!(check_now(&with, &busy, &tolerant), None);
        // Room on one node: no warning; nor for a pod no node could ever hold (check's).
        assert_eq!(check_now(&nodes, &busy[..1], &run), None);
        assert_eq!(check_now(&nodes, &busy, &workers(&[("cpu", "8")])), None);
    }

    #[test]
    fn a_gpu_pod_that_fits_nowhere_names_the_gpu_node_not_a_larger_one_without_gpus() {
        let nodes = [
            node("cpu-64", &[("cpu", "64"), ("memory", "256Gi")]),
            node(
                "gpu-1",
                &[("cpu", "8"), ("memory", "32Gi"), ("nvidia.com/gpu", "1")],
            ),
        ];
        let run = workers(&[("cpu", "16"), ("memory", "4Gi"), ("nvidia.com/gpu", "1")]);
        assert_eq!(
            check(&nodes, &run).as_deref(),
            Some(
                "no node can hold one of the worker pods (each asks for cpu 16, memory 4Gi, nvidia.com/gpu 1); the largest, gpu-1, has cpu 8, memory 32Gi, nvidia.com/gpu 1 allocatable: they stay Pending until a node that large joins the cluster"
            )
        );
        // A pod that fits on one node: no warning.
        let run = workers(&[("cpu", "4"), ("memory", "4Gi"), ("nvidia.com/gpu", "1")]);
        assert_eq!(check(&nodes, &run), None);
        // Without GPUs asked, the most of cpu then memory.
        let run = workers(&[("cpu", "100")]);
        assert!(
            check(&nodes, &run)
                .unwrap()
                .contains("the largest, cpu-64, ")
        );
    }
}
