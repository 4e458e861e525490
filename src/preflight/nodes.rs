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
        // one with the most of each resource, in the pod's order.
        let (name, room) = rooms.iter().max_by_key(|(_, room)| {
            let amounts: Vec<i128> = asks
                .keys()
                .map(|k| room.get(k).copied().unwrap_or(0))
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
    let show = |from: &Room| {
        asks.keys()
            .map(|k| {
                format!(
                    "{k} {}",
                    quantity::show(k, from.get(k).copied().unwrap_or(0))
                )
            })
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
        show(asks),
        show(room)
    )
}
