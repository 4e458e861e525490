//! What a spawn checks before its first create, from what it read of the cluster (pure;
//! the reads are `cluster/preflight_reads.rs`, the calls `ops/spawn.rs`):
//!
//! - `quota.rs`: the namespace's ResourceQuotas must leave room for the whole run, and
//!   the run's pods must set what a quota demands of them: else the spawn is refused.
//! - `nodes.rs`: some node must be large enough for each of its pods, and on a small
//!   cluster some node must have room for it now: else a warning (a cluster may grow,
//!   pods end; the spawn goes on).

pub mod nodes;
pub mod quota;

use k8s_openapi::api::core::v1::PodSpec;

use crate::plan::Plan;
use crate::roles::Role;

/// The objects a run creates, as quotas and nodes count them: the pods by role (all
/// pods of a role ask for the same), and how many of each other kind.
#[derive(Debug, Clone)]
pub struct RunObjects {
    pub pods: Vec<RolePods>,
    pub services: u32,
    pub config_maps: u32,
    pub secrets: u32,
    /// The gang's PodGroup: its resource (`podgroups.scheduling.volcano.sh`).
    pub pod_group: Option<String>,
    /// The TF container's name, which the flags size.
    pub tf_container: String,
}

/// The pods of one role: how many, and the spec of each.
#[derive(Debug, Clone)]
pub struct RolePods {
    pub role: Role,
    pub count: u32,
    pub spec: PodSpec,
}

impl RunObjects {
    pub fn of(plan: &Plan) -> RunObjects {
        let pods = plan
            .pods
            .by_role()
            .map(|(role, count, pod)| RolePods {
                role,
                count,
                spec: pod.spec.unwrap_or_default(),
            })
            .collect();
        let pod_group = plan.pod_group.as_ref().map(|g| {
            let group = g.gang().api_version().split('/').next().unwrap_or_default();
            format!("podgroups.{group}")
        });
        RunObjects {
            pods,
            services: u32::try_from(plan.services.len()).unwrap_or(u32::MAX),
            config_maps: 1,
            secrets: u32::from(plan.secret.is_some()),
            pod_group,
            tf_container: crate::labels::TF_CONTAINER.to_string(),
        }
    }

    /// Whether some pod asks for more than the built-in template's 1 CPU and 1Gi, or for
    /// anything else of a node (GPUs…): only then can it be too large for every node, and
    /// only then are all the nodes read (a list of a large cluster's nodes is megabytes;
    /// else one small page, for [`nodes::check_now`] on a small cluster).
    pub fn asks_more_than_the_default(&self) -> bool {
        let small = [
            ("cpu", crate::plan::quantity::ONE),
            ("memory", 1024 * 1024 * 1024 * crate::plan::quantity::ONE),
        ];
        self.pods.iter().any(|p| {
            crate::plan::quantity::pod_requests(&p.spec)
                .iter()
                .any(|(k, v)| {
                    let at_most = small
                        .iter()
                        .find(|(name, _)| name == k)
                        .map_or(0, |(_, m)| *m);
                    *v > at_most
                })
        })
    }
}

/// `role`'s pods in a message: `worker pods`, `the chief's pod`.
fn pods_of(role: Role, count: u32) -> String {
    if count == 1 {
        format!("the {role}'s pod")
    } else {
        format!("the {role} pods")
    }
}
