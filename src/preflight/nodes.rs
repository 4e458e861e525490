//! Whether some node could ever hold one of the run's pods: its `status.allocatable`
//! (what the scheduler compares requests with) at least what the pod requests, for every
//! resource the pod asks for. When no schedulable node could, a warning names the
//! largest one; never a refusal: a cluster autoscaler may add a larger node, and nodes
//! that are not there yet are not listed. Taints, affinity and what already runs are not
//! looked at: the warning is for the pod that can never fit, not for a full cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use super::{RolePods, RunObjects};
use crate::quantity;

/// What each resource a node (or a pod) has (or asks for), in its quantity's units.
type Room = BTreeMap<String, i128>;

/// The warning, if no node could hold one pod of some role (the first such role).
pub fn check(nodes: &[Node], run: &RunObjects) -> Option<String> {
    let rooms = rooms(nodes);
    if rooms.is_empty() {
        return None;
    }
    for pods in &run.pods {
        let asks: Room = quantity::pod_requests(&pods.spec)
            .into_iter()
            .filter(|(_, v)| *v > 0)
            .collect();
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
    let (which, each, stays) = if pods.count == 1 {
        (format!("the {}'s pod", pods.role), "it asks", "it stays")
    } else {
        (
            format!("one of the {} pods", pods.role),
            "each asks",
            "they stay",
        )
    };
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
