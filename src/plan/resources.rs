//! What a task asks of its node (docs/resources.md): CPUs, memory and GPUs on the TF
//! container, and a memory-backed `/dev/shm`. Only what is asked for changes a pod: a
//! template's own values stay where nothing is given.
//!
//! - CPU and memory: requests and limits both, equal, so that a quota on `limits.*`
//!   admits the pods and a node never has less than a task may use (Guaranteed QoS when
//!   every container of the pod has both).
//! - GPUs: `limits` of the GPU resource (`nvidia.com/gpu`, or `amd.com/gpu`, a MIG
//!   profile…); the API server sets the request to the limit, which an extended resource
//!   requires. A template's request of it, if any, is set to the same number.
//! - `/dev/shm`: an `emptyDir` of medium `Memory` with a `sizeLimit`, on every task
//!   with GPUs unless the template mounts its own (NCCL, which MultiWorkerMirroredStrategy
//!   uses on GPUs, fails in a container's 64 MiB default). Since the kubelet charges what is written there to the container's memory
//!   (tmpfs pages count in its memory cgroup, and the volume is at most the pod's memory
//!   limit), the size is added to the memory the task asks for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, PodSpec, ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::plan::quantity;
use crate::roles::Role;

/// The GPU resource when none is named.
pub const DEFAULT_GPU_RESOURCE: &str = "nvidia.com/gpu";
/// `/dev/shm`'s size on a task with GPUs when none is given (what arena mounts).
pub const DEFAULT_SHM_SIZE: &str = "2Gi";
pub use super::mounts::SHM_VOLUME;
pub const SHM_PATH: &str = "/dev/shm";

/// What one task's TF container asks for; `None`: the template's value stays.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct TaskResources {
    /// CPUs (`4`, `500m`): requests and limits.
    pub cpu: Option<String>,
    /// Memory (`16Gi`), before `/dev/shm` is added: requests and limits.
    pub memory: Option<String>,
    /// GPUs of the run's GPU resource: limits (0 removes a template's).
    pub gpus: Option<u32>,
}

/// The resources of a run's tasks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resources {
    /// The chief, the workers and the evaluator.
    pub compute: TaskResources,
    /// The parameter servers.
    pub ps: TaskResources,
    /// The extended resource the GPUs are counted in.
    pub gpu_resource: String,
    /// The size of the memory-backed `/dev/shm` of each task with GPUs; `None`: none.
    pub shm_size: Option<String>,
}

impl Default for Resources {
    fn default() -> Resources {
        Resources {
            compute: TaskResources::default(),
            ps: TaskResources::default(),
            gpu_resource: DEFAULT_GPU_RESOURCE.to_string(),
            shm_size: Some(DEFAULT_SHM_SIZE.to_string()),
        }
    }
}

impl Resources {
    pub fn for_role(&self, role: Role) -> &TaskResources {
        match role {
            Role::Ps => &self.ps,
            Role::Chief | Role::Worker | Role::Evaluator => &self.compute,
        }
    }
}

/// Whether a resource counts GPUs: the run's GPU resource, any `…/gpu`, an NVIDIA MIG
/// profile (`nvidia.com/mig-1g.10gb`).
pub fn is_gpu(name: &str, gpu_resource: &str) -> bool {
    name == gpu_resource || name.ends_with("/gpu") || name.starts_with("nvidia.com/mig-")
}

/// Whether any container of the pod asks for a GPU.
pub fn has_gpus(spec: &PodSpec, gpu_resource: &str) -> bool {
    let all = spec.containers.iter();
    all.chain(spec.init_containers.iter().flatten()).any(|c| {
        quantity::container_requests(c)
            .iter()
            .any(|(name, v)| *v > 0 && is_gpu(name, gpu_resource))
    })
}

/// Sets the task's resources on the TF container (at `at`) and mounts its `/dev/shm`;
/// returns whether the task has GPUs.
pub fn apply(res: &Resources, role: Role, spec: &mut PodSpec, at: usize) -> bool {
    let task = res.for_role(role);
    let Some(c) = spec.containers.get_mut(at) else {
        return false;
    };
    if let Some(gpus) = task.gpus {
        set_gpus(c, &res.gpu_resource, gpus);
    }
    let gpu = has_gpus(spec, &res.gpu_resource);
    let shm = res
        .shm_size
        .clone()
        .filter(|_| gpu && !mounts_shm(spec, at));
    let Some(c) = spec.containers.get_mut(at) else {
        return gpu;
    };
    if let Some(cpu) = &task.cpu {
        set_both(c, "cpu", cpu);
    }
    if let Some(memory) = &task.memory {
        set_both(c, "memory", &with_shm(memory, shm.as_deref()));
    }
    if let Some(size) = shm {
        mount_shm(spec, at, &size);
    }
    gpu
}

/// `memory + shm`, written as Kubernetes writes bytes.
fn with_shm(memory: &str, shm: Option<&str>) -> String {
    let (Some(m), Some(s)) = (quantity::parse(memory), shm.and_then(quantity::parse)) else {
        return memory.to_string();
    };
    quantity::show("memory", m + s)
}

fn resources(c: &mut Container) -> &mut ResourceRequirements {
    c.resources
        .get_or_insert_with(ResourceRequirements::default)
}

fn set_both(c: &mut Container, name: &str, value: &str) {
    let r = resources(c);
    for map in [&mut r.requests, &mut r.limits] {
        map.get_or_insert_with(BTreeMap::new)
            .insert(name.to_string(), Quantity(value.to_string()));
    }
}

fn set_gpus(c: &mut Container, name: &str, gpus: u32) {
    let r = resources(c);
    if gpus == 0 {
        for map in [&mut r.requests, &mut r.limits].into_iter().flatten() {
            map.remove(name);
        }
        return;
    }
    let value = Quantity(gpus.to_string());
    r.limits
        .get_or_insert_with(BTreeMap::new)
        .insert(name.to_string(), value.clone());
    if let Some(requests) = r.requests.as_mut().filter(|m| m.contains_key(name)) {
        requests.insert(name.to_string(), value);
    }
}

/// Whether the template's TF container mounts something at `/dev/shm` itself.
fn mounts_shm(spec: &PodSpec, at: usize) -> bool {
    spec.containers.get(at).is_some_and(|c| {
        c.volume_mounts
            .iter()
            .flatten()
            .any(|m| super::mounts::key(&m.mount_path) == SHM_PATH)
    })
}

/// The memory-backed volume, mounted at `/dev/shm` in the TF container (a template's
/// volume of its name, and its mount there, give way).
fn mount_shm(spec: &mut PodSpec, at: usize, size: &str) {
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != SHM_VOLUME);
    volumes.push(Volume {
        name: SHM_VOLUME.to_string(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_string()),
            size_limit: Some(Quantity(size.to_string())),
        }),
        ..Volume::default()
    });
    if let Some(c) = spec.containers.get_mut(at) {
        let shm = VolumeMount {
            name: SHM_VOLUME.to_string(),
            mount_path: SHM_PATH.to_string(),
            ..VolumeMount::default()
        };
        super::mounts::replace(c, shm);
    }
}
