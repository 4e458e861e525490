//! The plan: every object a spawn creates, built from the inputs without any I/O.
//! `--dry-run` prints it; `apply` creates exactly it.
//!
//! Here: the [`Plan`] and [`build`], which checks the templates and makes the objects;
//! the PodGroup of a gang. The rest, one room each: what a spawn asks for
//! (`request.rs`), `--volume` (`volume.rs`), the metadata every object carries
//! (`meta.rs`), the ConfigMap and Secret (`config_map.rs`), the Services
//! (`services.rs`), the pods (`pod.rs`), their TF container (`container.rs`) and what it
//! runs before the script (`start.rs`, `wait_for_names.rs`);
//! `mounts.rs`, `resources.rs`, `security.rs` and `network.rs` shape the pods;
//! `pods_record.rs`, `helper_pod.rs` and `sweep.rs` serve later verbs and `sweep`.

use k8s_openapi::api::core::v1::{ConfigMap, PodSpec, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::errors::UsageError;
use crate::labels::{network_policy_name, pod_group_name};
use crate::plan::podgroup::{Gang, PodGroup};
use crate::roles::{ClusterSpec, Role};

pub(crate) mod bytes;
mod config_map;
mod container;
mod meta;
pub(crate) mod mounts;
mod pod;
mod request;
mod resources;
mod services;
mod start;
mod volume;
mod wait_for_names;

pub use config_map::{CLUSTER_KEY, ENTRYPOINT_KEY, MAX_CONFIG_MAP_BYTES, SCRIPT_KEY};
use config_map::{env_secret, script_config_map};
pub use container::{DEFAULT_IMAGE, PORT_NAME};
use meta::{meta, run_labels};
pub use mounts::SCRIPT_DIR;
pub use pod::Pods;
use pod::{gang_member, mount_inside_ours, mounts_clash};
pub use request::{ExperimentRun, Scheduling, SpawnRequest, Templates};
pub use resources::{DEFAULT_GPU_RESOURCE, DEFAULT_SHM_SIZE, Resources, TaskResources};
pub use services::Services;
pub use volume::OutputVolume;

/// The objects of one run, in creation order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub tag: String,
    pub namespace: String,
    pub invocation: String,
    pub config_map: ConfigMap,
    pub secret: Option<Secret>,
    /// `--gang`: created after the config, before the services and pods.
    pub pod_group: Option<PodGroup>,
    /// `--queue`: the Kueue LocalQueue the pods are submitted to (checked before the
    /// first create, and Kueue's hold on the first pod checked after it).
    pub kueue_queue: Option<String>,
    /// `--volcano-queue`: the Volcano queue of the PodGroup (checked before the first
    /// create).
    pub volcano_queue: Option<String>,
    pub services: Services,
    pub pods: Pods,
    /// `--volume`: checked (the claim exists) before anything is created.
    pub volume: Option<OutputVolume>,
    /// `--network-policy`: created after the config, before the services and pods.
    pub network_policy: Option<NetworkPolicy>,
    /// `--detach`: the run's supervisor, created last (`supervisor.rs`; none from
    /// [`build`]: the spawn adds it).
    pub supervisor: Option<supervisor::Supervisor>,
}

pub fn build(req: &SpawnRequest) -> Result<Plan, UsageError> {
    let cluster = ClusterSpec::new(&req.roles, &req.tag, &req.namespace, req.port);
    let config_map = script_config_map(req, &cluster)?;
    let secret = (!req.env.is_empty()).then(|| env_secret(req));
    let services = Services::new(req.clone());
    for role in Role::ALL.into_iter().filter(|r| req.roles.count(*r) > 0) {
        let template = req.templates.for_role(role);
        if template
            .spec
            .as_ref()
            .is_none_or(|s| s.containers.is_empty())
        {
            return Err(UsageError::new(format!(
                "the pod template for {role} has no containers"
            )));
        }
        if let Some(problem) = mount_inside_ours(template) {
            return Err(UsageError::new(format!(
                "the pod template for {role}: {problem}; choose another mountPath"
            )));
        }
        if let Some(problem) = mounts_clash(req, &cluster, role) {
            return Err(UsageError::new(problem));
        }
    }
    let pods = Pods::new(req.clone(), cluster);
    let pod_group = req
        .scheduling
        .gang
        .map(|gang| gang_pod_group(req, &pods, gang));
    let network_policy = req.hardening.network_policy.then(|| {
        let name = network_policy_name(&req.tag);
        network::network_policy(&req.tag, meta(req, name, run_labels(&req.tag)))
    });
    Ok(Plan {
        tag: req.tag.clone(),
        namespace: req.namespace.clone(),
        invocation: req.invocation.clone(),
        config_map,
        secret,
        pod_group,
        kueue_queue: req.scheduling.kueue_queue().cloned(),
        volcano_queue: req.scheduling.volcano_queue.clone(),
        services,
        pods,
        volume: req.volume.clone(),
        network_policy,
        supervisor: None,
    })
}

/// The run's PodGroup: its members are the tasks of the training cluster, and
/// `minMember` is all of them (see `plan/podgroup.rs` for why the evaluator is not one);
/// Volcano's `minResources` counts their pods as they are created.
fn gang_pod_group(req: &SpawnRequest, pods: &Pods, gang: Gang) -> PodGroup {
    let members = || {
        Role::ALL
            .into_iter()
            .filter(|r| gang_member(*r))
            .map(|r| (r, req.roles.count(r)))
            .filter(|(_, n)| *n > 0)
    };
    let min_member: u32 = members().map(|(_, n)| n).sum();
    let scheduling = &req.scheduling;
    let volcano = gang == Gang::Volcano;
    let min_resources = volcano
        .then(|| {
            let specs: Vec<(PodSpec, u32)> = pods
                .by_role()
                .filter(|(role, _, _)| gang_member(*role))
                .filter_map(|(_, n, pod)| Some((pod.spec?, n)))
                .collect();
            crate::plan::podgroup::min_resources(specs.iter().map(|(spec, n)| (spec, *n)))
        })
        .flatten();
    crate::plan::podgroup::pod_group(
        gang,
        meta(req, pod_group_name(&req.tag), run_labels(&req.tag)),
        crate::plan::podgroup::GroupSpec {
            min_member: i32::try_from(min_member).unwrap_or(i32::MAX),
            queue: scheduling.volcano_queue.clone().filter(|_| volcano),
            priority_class_name: scheduling.priority_class.clone().filter(|_| volcano),
            min_resources,
        },
    )
}

pub mod network;

pub mod helper_pod;
pub(crate) mod podgroup;
pub mod pods_record;
pub(crate) mod quantity;

pub mod security;

pub mod supervisor;
pub mod sweep;

#[cfg(test)]
mod tests;
