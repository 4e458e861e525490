//! The run's task pods, built when asked for ([`Pods`]): each from its role's template,
//! with the run's metadata, the shared-cluster options ([`Scheduling`]), the run's
//! volumes, hardening and resources, and the TF container (`container.rs`); and the
//! checks `build` makes of a template's mounts.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, EnvVar, Pod, PodSpec, Toleration, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::container::set_up_tf_container;
use super::meta::{add_experiment_label, meta, task_labels};
use super::mounts::{self, OUTPUT_VOLUME, SCRIPT_VOLUME};
use super::request::{Scheduling, SpawnRequest};
use super::volume::{OWNED_MOUNTS, OutputVolume};
use super::{resources, security};
use crate::bundle::WORK_VOLUME;
use crate::labels::{
    ATTEMPT_LABEL, CLUSTER_ANNOTATION, KUEUE_GROUP_COUNT_ANNOTATION, KUEUE_GROUP_LABEL,
    KUEUE_QUEUE_LABEL, KUEUE_RETRIABLE_ANNOTATION, NODE_NAME_ANNOTATION, OUTPUT_DIR_VAR,
    PULL_GRACE_ANNOTATION, VOLCANO_QUEUE_ANNOTATION, config_map_name, kueue_group_name,
    pod_group_name, tf_container, tf_container_at,
};
use crate::plan::podgroup::Gang;
use crate::roles::{ClusterSpec, Role, Task};

/// The run's pods, built when asked for, one at a time: a spawn only needs the pods in
/// flight, and `--dry-run` prints each as it is built. (When every pod's `TF_CONFIG`
/// listed the whole cluster, holding them all cost memory that grew as N²: 44 MB for
/// 1,000 workers.)
#[derive(Debug, Clone, PartialEq)]
pub struct Pods {
    request: SpawnRequest,
    cluster: ClusterSpec,
}

impl Pods {
    pub(super) fn new(request: SpawnRequest, cluster: ClusterSpec) -> Pods {
        Pods { request, cluster }
    }

    pub fn len(&self) -> usize {
        self.request.roles.tasks().count()
    }

    /// The pods in creation order (chief, parameter servers, workers, evaluator).
    pub fn iter(&self) -> impl Iterator<Item = Pod> + '_ {
        self.request
            .roles
            .tasks()
            .map(|task| pod(&self.request, &self.cluster, task))
    }

    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.request
            .roles
            .tasks()
            .map(|t| t.name(&self.request.tag))
    }

    /// For each role the run has, its number of pods and its first pod: the pods of a
    /// role differ only in their names, index and `TF_CONFIG`, not in what they ask for.
    pub fn by_role(&self) -> impl Iterator<Item = (Role, u32, Pod)> + '_ {
        let roles = &self.request.roles;
        Role::ALL
            .into_iter()
            .filter(|r| roles.count(*r) > 0)
            .map(|role| {
                let first = pod(&self.request, &self.cluster, Task { role, index: 0 });
                (role, roles.count(role), first)
            })
    }
}

fn pod(req: &SpawnRequest, cluster: &ClusterSpec, task: Task) -> Pod {
    let template = req.templates.for_role(task.role);
    let mut spec: PodSpec = template.spec.clone().unwrap_or_default();
    let metadata = pod_metadata(req, cluster, task, &template.metadata, &spec);

    spec.restart_policy
        .get_or_insert_with(|| "Never".to_string());
    // The pod's pause process is PID 1, so the script is not: SIGTERM (a delete, an
    // eviction, a preemption) ends it at once or runs its handler, instead of being
    // dropped by a PID 1 without one while the kubelet waits out the grace period.
    spec.share_process_namespace.get_or_insert(true);
    set_scheduling(&req.scheduling, &mut spec);
    add_run_volumes(req, &mut spec);
    security::harden(&mut spec);

    let at = tf_container_at(&spec.containers);
    let gpu = resources::apply(&req.resources, task.role, &mut spec, at);
    // `build` checked that every template has a container.
    if let Some(container) = spec.containers.get_mut(at) {
        set_up_tf_container(req, cluster, task, container, gpu);
    }
    if let Some(volume) = &req.volume {
        mount_output_volume(volume, &req.tag, &mut spec, at);
    }
    if let Some(uid) = req.hardening.run_as_user {
        security::run_as(&mut spec, uid);
        security::writable_home(&mut spec, at);
    }
    Pod {
        metadata,
        spec: Some(spec),
        status: None,
    }
}

/// A task pod's labels: the template's, the run's and task's, the attempt, Kueue's.
fn pod_labels(req: &SpawnRequest, task: Task, template: &ObjectMeta) -> BTreeMap<String, String> {
    let mut labels = template.labels.clone().unwrap_or_default();
    labels.extend(task_labels(&req.tag, task));
    labels.insert(ATTEMPT_LABEL.to_string(), "0".to_string());
    add_experiment_label(req, &mut labels);
    if let Some(queue) = req.scheduling.kueue_queue() {
        labels.insert(KUEUE_QUEUE_LABEL.to_string(), queue.clone());
        labels.insert(
            KUEUE_GROUP_LABEL.to_string(),
            kueue_group_name(&req.tag, &req.invocation),
        );
    }
    labels
}

/// A task pod's metadata: its name, labels and annotations (ours first, then the
/// template's where they do not clash).
fn pod_metadata(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
    task: Task,
    template: &ObjectMeta,
    spec: &PodSpec,
) -> ObjectMeta {
    let labels = pod_labels(req, task, template);
    let mut metadata = meta(req, task.name(&req.tag), labels);
    let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CLUSTER_ANNOTATION.to_string(), cluster.sizes());
    if let Some(node) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        annotations.insert(NODE_NAME_ANNOTATION.to_string(), node.clone());
    }
    if req.scheduling.gang == Some(Gang::Volcano)
        && let Some(queue) = &req.scheduling.volcano_queue
    {
        // A pod outside the group waits in the same queue, in a PodGroup of its own.
        annotations.insert(VOLCANO_QUEUE_ANNOTATION.to_string(), queue.clone());
    }
    if let Some(seconds) = req.scheduling.pull_grace_seconds {
        annotations.insert(PULL_GRACE_ANNOTATION.to_string(), seconds.to_string());
    }
    if req.scheduling.kueue_queue().is_some() {
        let pods: u32 = Role::ALL.into_iter().map(|r| req.roles.count(r)).sum();
        annotations.insert(KUEUE_GROUP_COUNT_ANNOTATION.to_string(), pods.to_string());
        annotations.insert(KUEUE_RETRIABLE_ANNOTATION.to_string(), "false".to_string());
    }
    if let Some(theirs) = &template.annotations {
        for (k, v) in theirs {
            annotations.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    // The gang's member label or annotation (ours over the template's).
    if let Some(gang) = req.scheduling.gang.filter(|_| gang_member(task.role)) {
        gang.about()
            .member
            .join(&mut metadata, pod_group_name(&req.tag));
    }
    metadata
}

/// Whether a task of `role` joins the gang's PodGroup: the tasks of the training
/// cluster do; the evaluator does not (see `plan/podgroup.rs`).
pub(super) fn gang_member(role: Role) -> bool {
    role.in_cluster()
}

/// A mount of the template's TF container inside a directory tf-spawner mounts
/// ([`OWNED_MOUNTS`]): it would be created in the script's read-only volume, or the
/// `--dir` unpacking would write into it. (A mount at one of them is replaced by ours.)
pub(super) fn mount_inside_ours(template: &Pod) -> Option<String> {
    let spec = template.spec.as_ref()?;
    let at = tf_container_at(&spec.containers);
    let mounts = spec.containers.get(at)?.volume_mounts.as_ref()?;
    mounts.iter().find_map(|m| {
        let (owned, what) = OWNED_MOUNTS.into_iter().find(|(owned, _)| {
            mounts::at_or_inside(&m.mount_path, owned) && mounts::key(&m.mount_path) != *owned
        })?;
        Some(format!(
            "spec.containers[{at}].volumeMounts: {} is inside {owned}, where tf-spawner mounts {what}",
            m.mount_path
        ))
    })
}

/// Two of the mounts tf-spawner adds to `role`'s TF container at one path (a
/// `--volume` claim where `--run-as-user` mounts the writable HOME): the claim would be
/// dropped or hide ours.
pub(super) fn mounts_clash(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
    role: Role,
) -> Option<String> {
    let pod = pod(req, cluster, Task { role, index: 0 });
    let spec = pod.spec?;
    let problem = mounts::clash(tf_container(&spec.containers)?)?;
    Some(match &req.volume {
        Some(v) => format!("--volume {}: {problem}", v.annotation()),
        None => format!("the pod for {role}: {problem}"),
    })
}

/// The taints the node-lifecycle controller puts on a node that stopped reporting
/// (`Ready` False: not-ready; `Unknown`: unreachable); the taint manager evicts the pods
/// that do not tolerate them (NoExecute), after their `tolerationSeconds`. Without one
/// of ours, the DefaultTolerationSeconds admission plugin gives every pod 300 s of each.
pub const NODE_LOST_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// `--deadline`, `--node-lost-after`, the gang's scheduler and `--priority-class` on a pod.
fn set_scheduling(scheduling: &Scheduling, spec: &mut PodSpec) {
    if let Some(seconds) = scheduling.deadline_seconds {
        spec.active_deadline_seconds = Some(seconds);
    }
    if let Some(seconds) = scheduling.node_lost_after_seconds {
        // Replacing the template's own tolerations of those taints that evict (NoExecute,
        // or every effect): the longest toleration would win.
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        tolerations.retain(|t| {
            !t.key
                .as_deref()
                .is_some_and(|k| NODE_LOST_TAINTS.contains(&k))
                || t.effect.as_deref().is_some_and(|e| e != "NoExecute")
        });
        tolerations.extend(NODE_LOST_TAINTS.iter().map(|key| Toleration {
            key: Some(key.to_string()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: Some(seconds),
            ..Toleration::default()
        }));
    }
    if let Some(name) = scheduling.scheduler_name() {
        spec.scheduler_name = Some(name);
    }
    if let Some(class) = &scheduling.priority_class {
        spec.priority_class_name = Some(class.clone());
        // The admission plugin fills in the class's value; a template's own value would
        // be refused when it differs.
        spec.priority = None;
    }
    if let Some(account) = &scheduling.service_account {
        spec.service_account_name = Some(account.clone());
        // The deprecated alias, which the API server would otherwise take for an unset
        // name's.
        spec.service_account = None;
    }
}

/// The script's ConfigMap volume and, with `--dir`, the work directory's emptyDir
/// (replacing any of the template's volumes of those names).
fn add_run_volumes(req: &SpawnRequest, spec: &mut PodSpec) {
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != SCRIPT_VOLUME);
    volumes.push(Volume {
        name: SCRIPT_VOLUME.to_string(),
        config_map: Some(ConfigMapVolumeSource {
            name: config_map_name(&req.tag),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    });
    if req.bundle.is_some() {
        volumes.retain(|v| v.name != WORK_VOLUME);
        volumes.push(Volume {
            name: WORK_VOLUME.to_string(),
            empty_dir: Some(Default::default()),
            ..Volume::default()
        });
    }
}

/// `--volume`: the claim as a volume of the pod, mounted in the TF container (at `at`),
/// whose [`OUTPUT_DIR_VAR`] names the run's own folder on it, `PATH/TAG` (made by the
/// command, `start.rs`). A template's volume or mount of the same
/// name or path gives way.
fn mount_output_volume(volume: &OutputVolume, tag: &str, spec: &mut PodSpec, at: usize) {
    let dir = OutputVolume {
        folder: Some(tag.to_string()),
        ..volume.clone()
    }
    .dir();
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != OUTPUT_VOLUME);
    volumes.push(volume.volume(false));
    if let Some(c) = spec.containers.get_mut(at) {
        mounts::replace(c, volume.mount(false));
        let env = c.env.get_or_insert_with(Vec::new);
        env.retain(|e| e.name != OUTPUT_DIR_VAR);
        env.push(EnvVar {
            name: OUTPUT_DIR_VAR.to_string(),
            value: Some(dir),
            value_from: None,
        });
    }
}
