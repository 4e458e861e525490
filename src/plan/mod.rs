//! The plan: every object a spawn creates, built from the inputs without any I/O.
//! `--dry-run` prints it; `apply` creates exactly it.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, ConfigMapVolumeSource, Container, ContainerPort,
    EnvFromSource, EnvVar, EnvVarSource, PersistentVolumeClaimVolumeSource, Pod, PodSpec, Secret,
    SecretEnvSource, Service, ServicePort, ServiceSpec, Toleration, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::envfile::{EnvVars, RESERVED};
use crate::errors::UsageError;
use crate::labels::{
    ATTEMPT_LABEL, ATTEMPT_VAR, CLUSTER_ANNOTATION, ENV_SECRET_ANNOTATION, EXPERIMENT_LABEL,
    INDEX_LABEL, INVOCATION_ANNOTATION, KUEUE_GROUP_COUNT_ANNOTATION, KUEUE_GROUP_LABEL,
    KUEUE_QUEUE_LABEL, KUEUE_RETRIABLE_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL,
    NETWORK_POLICY_ANNOTATION, NO_ENV_SECRET, NODE_NAME_ANNOTATION, OUTPUT_DIR_VAR,
    PARAMS_ANNOTATION, POD_GROUP_ANNOTATION, PULL_GRACE_ANNOTATION, ROLE_LABEL, RUN_LABEL,
    VOLCANO_QUEUE_ANNOTATION, VOLUME_ANNOTATION, VOLUME_FOLDER_ANNOTATION, config_map_name,
    kueue_group_name, network_policy_name, pod_group_name, secret_name, set_env, tf_container,
    tf_container_at,
};
use crate::podgroup::{Gang, PodGroup};
use crate::roles::{CLUSTER_VAR, ClusterSpec, Role, Roles, Task};

pub(crate) mod mounts;
mod resources;
pub use resources::{DEFAULT_GPU_RESOURCE, DEFAULT_SHM_SIZE, Resources, TaskResources};

/// The image when neither `-i` nor the template names one.
pub const DEFAULT_IMAGE: &str = "tensorflow/tensorflow:2.15.0";
/// The image of a task with GPUs when neither `-i` nor the template names one: TensorFlow's
/// GPU image of [`DEFAULT_IMAGE`]'s version (docs/resources.md).
pub const DEFAULT_GPU_IMAGE: &str = "tensorflow/tensorflow:2.15.0-gpu";
pub const SCRIPT_DIR: &str = "/script";
pub const SCRIPT_KEY: &str = "training-script.py";
pub const ENTRYPOINT_KEY: &str = "entrypoint.sh";
use crate::bundle::UNPACK_AND_EXEC;
pub use crate::bundle::{DIR_KEY, WORK_DIR, WORK_VOLUME};
pub use mounts::SCRIPT_VOLUME;
pub const PORT_NAME: &str = "tf-grpc";
/// What an API server accepts in one ConfigMap (data and binaryData together).
pub const MAX_CONFIG_MAP_BYTES: usize = 1024 * 1024;
/// The run's ConfigMap key holding the `cluster` part of every `TF_CONFIG`, stored once
/// for the run instead of once per pod (which made a run's objects grow as N²).
pub const CLUSTER_KEY: &str = "tf-cluster.json";

/// Everything a spawn needs, already read from disk and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnRequest {
    pub tag: String,
    pub namespace: String,
    pub port: u16,
    /// `-i`: overrides every template's image.
    pub image: Option<String>,
    pub roles: Roles,
    pub templates: Templates,
    pub script: Vec<u8>,
    pub entrypoint: Option<Vec<u8>>,
    /// The arguments after `--`: the TF container's `args`, after its command.
    pub script_args: Vec<String>,
    /// `--dir`: the directory shipped in the ConfigMap, unpacked in the pod.
    pub bundle: Option<crate::bundle::Bundle>,
    pub env: EnvVars,
    /// A random id written on every object (see [`INVOCATION_ANNOTATION`]).
    pub invocation: String,
    /// How a shared cluster schedules the run (docs/shared-clusters.md).
    pub scheduling: Scheduling,
    /// `--volume`: a claim mounted into every task.
    pub volume: Option<OutputVolume>,
    /// `--run-as-user`, `--network-policy`.
    pub hardening: security::Hardening,
    /// What each task asks of its node (docs/resources.md).
    pub resources: Resources,
    /// A run of a sweep: the experiment's label on every object, the parameters on
    /// the ConfigMap and as the TF container's variables.
    pub experiment: Option<ExperimentRun>,
}

/// A run of an experiment (`tf-spawner sweep`): its name and this run's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentRun {
    pub name: String,
    pub params: sweep::Point,
}

impl ExperimentRun {
    /// The variables its tasks get: `TF_SPAWNER_EXPERIMENT` and each parameter's
    /// `TF_SPAWNER_PARAM_NAME` (pods and local processes alike).
    pub fn variables(&self) -> impl Iterator<Item = (String, String)> + '_ {
        std::iter::once((sweep::EXPERIMENT_VAR.to_string(), self.name.clone())).chain(
            self.params
                .iter()
                .map(|(name, value)| (sweep::param_var(name), value.clone())),
        )
    }
}

/// `--volume CLAIM[:PATH]`: an existing PersistentVolumeClaim mounted into every task's
/// TF container at `path`, which the script finds in [`OUTPUT_DIR_VAR`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputVolume {
    pub claim: String,
    pub path: String,
    /// The run's own folder under `path` (its tag), where its [`OUTPUT_DIR_VAR`]
    /// points; `None`: the whole claim (a run of an earlier version, or `cp` and
    /// `tensorboard` with `--whole-volume`). A spawn's request has none: the plan makes
    /// the folder the tag.
    pub folder: Option<String>,
}

/// The directories tf-spawner mounts in the TF container, and what: `--volume` may not
/// mount a claim at or inside one (it would hide the script, or the `--dir` unpacking
/// would write into the user's claim).
pub const OWNED_MOUNTS: [(&str, &str); 2] = [
    (SCRIPT_DIR, "the script"),
    (WORK_DIR, "the --dir directory it unpacks"),
];
/// The directories of an image's programs and the system's: a claim recorded as mounted
/// there is refused for the helper pods ([`OutputVolume::from_annotation`]).
const SYSTEM_DIRS: [&str; 13] = [
    "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc",
    "/sys", "/run", "/var/run",
];
/// Where `--volume` mounts the claim when no PATH is given.
pub const DEFAULT_OUTPUT_PATH: &str = "/output";
pub use mounts::OUTPUT_VOLUME;

impl OutputVolume {
    /// `CLAIM:PATH`, as the run's ConfigMap records it ([`VOLUME_ANNOTATION`]).
    pub fn annotation(&self) -> String {
        format!("{}:{}", self.claim, self.path)
    }

    /// `--volume CLAIM[:PATH]` read and checked (the flag's parser, and the annotation
    /// read back).
    pub fn parse(text: &str) -> Result<OutputVolume, String> {
        let (claim, path) = match text.split_once(':') {
            Some((claim, path)) => (claim, path),
            None => (text, DEFAULT_OUTPUT_PATH),
        };
        if let Some(problem) = crate::labels::name_problem(claim, 253) {
            return Err(format!("{text:?}: the claim {claim:?} {problem}"));
        }
        let resolved = mounts::key(path);
        if !path.starts_with('/')
            || resolved == "/"
            || path.split('/').any(|p| p == "..")
            || path.contains(':')
        {
            return Err(format!(
                "{text:?}: the mount path {path:?} must be an absolute directory such as {DEFAULT_OUTPUT_PATH} (not /, no '..' or ':')"
            ));
        }
        if let Some((owned, what)) = OWNED_MOUNTS
            .into_iter()
            .find(|(owned, _)| mounts::at_or_inside(&resolved, owned))
        {
            return Err(format!(
                "{text:?}: {owned} is where tf-spawner mounts {what}, which the claim would hide or be overwritten by; choose another path such as {DEFAULT_OUTPUT_PATH}"
            ));
        }
        let path = resolved;
        Ok(OutputVolume {
            claim: claim.to_string(),
            path,
            folder: None,
        })
    }

    /// Reads [`Self::annotation`] back, checked as `--volume` checks its value and more: anyone
    /// who may edit the namespace may write it, and the helper pods of `cp` and
    /// `tensorboard` mount the claim at its path, so a path over the image's programs
    /// (`out:/usr/local/bin`) would have them run the claim's `tar`. `Err`: why not.
    pub fn from_annotation(text: &str) -> Result<OutputVolume, String> {
        let volume = OutputVolume::parse(text)
            .ok()
            .filter(|_| text.contains(':'))
            .ok_or_else(|| format!("{text:?} is not CLAIM:PATH as tf-spawner writes it"))?;
        if let Some(system) = SYSTEM_DIRS
            .iter()
            .find(|d| mounts::at_or_inside(&volume.path, d))
        {
            return Err(format!(
                "its mount path {} is in {system}, where the helper pod's programs are",
                volume.path
            ));
        }
        Ok(volume)
    }

    /// `folder` read back (the ConfigMap's `tf-spawner/volume-folder`): the run's tag as
    /// the plan writes it, a name with no `/`, `..`, `:` or `,` (which would add a run
    /// to TensorBoard's `--logdir_spec` or leave the claim). `Err`: why not.
    pub fn check_folder(folder: &str) -> Result<(), String> {
        match crate::labels::name_problem(folder, 253) {
            None if !folder.contains("..") => Ok(()),
            _ => Err(format!(
                "its folder {:?} is not a run's tag, which is all tf-spawner writes there",
                folder
            )),
        }
    }

    /// The directory the run writes in: its folder, else the mount path.
    pub fn dir(&self) -> String {
        match &self.folder {
            Some(f) => format!("{}/{f}", self.path.trim_end_matches('/')),
            None => self.path.clone(),
        }
    }

    /// The pod volume that mounts the claim.
    pub fn volume(&self, read_only: bool) -> Volume {
        Volume {
            name: OUTPUT_VOLUME.to_string(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: self.claim.clone(),
                read_only: read_only.then_some(true),
            }),
            ..Volume::default()
        }
    }

    /// The container's mount of [`Self::volume`] at the path.
    pub fn mount(&self, read_only: bool) -> VolumeMount {
        VolumeMount {
            name: OUTPUT_VOLUME.to_string(),
            mount_path: self.path.clone(),
            read_only: read_only.then_some(true),
            ..VolumeMount::default()
        }
    }
}

/// The shared-cluster options: each one only adds to the pods (and, for a gang, an
/// object); without any, the objects are those of a plain run, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scheduling {
    /// `--deadline`: every pod's `activeDeadlineSeconds`.
    pub deadline_seconds: Option<i64>,
    /// `--node-lost-after`: every pod tolerates its node being not ready or unreachable
    /// this long (`tolerationSeconds` of [`NODE_LOST_TAINTS`], NoExecute).
    pub node_lost_after_seconds: Option<i64>,
    /// `--priority-class`: every pod's `priorityClassName`.
    pub priority_class: Option<String>,
    /// `--service-account`: every pod's `serviceAccountName`.
    pub service_account: Option<String>,
    /// `--queue`: the Kueue LocalQueue; the run's pods are one Kueue pod group.
    pub queue: Option<String>,
    /// `--volcano-queue` (with `--gang volcano`): the Volcano queue, the PodGroup's
    /// `spec.queue`.
    pub volcano_queue: Option<String>,
    /// `--gang`: the run gets one PodGroup of that scheduler, and its pods join it.
    pub gang: Option<Gang>,
    /// `--scheduler-name`: every pod's `schedulerName` (default: the gang's scheduler).
    pub scheduler_name: Option<String>,
    /// `--pull-grace`, if not the built-in one: every pod's [`PULL_GRACE_ANNOTATION`],
    /// which the verdict reads (`verdict::Tracker`).
    pub pull_grace_seconds: Option<u64>,
}

impl Scheduling {
    /// The Kueue LocalQueue, if the run goes through Kueue: `--queue`.
    pub fn kueue_queue(&self) -> Option<&String> {
        self.queue.as_ref()
    }

    fn scheduler_name(&self) -> Option<String> {
        self.scheduler_name
            .clone()
            .or_else(|| self.gang.map(|g| g.default_scheduler().to_string()))
    }
}

/// One pod template per role; roles without their own use the worker's.
#[derive(Debug, Clone, PartialEq)]
pub struct Templates {
    pub worker: Pod,
    pub by_role: BTreeMap<Role, Pod>,
}

impl Templates {
    pub fn for_role(&self, role: Role) -> &Pod {
        self.by_role.get(&role).unwrap_or(&self.worker)
    }
}

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
}

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

/// The run's services, built when asked for, one at a time, like [`Pods`]: a spawn only
/// needs the ones in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Services {
    request: SpawnRequest,
}

impl Services {
    pub fn len(&self) -> usize {
        self.tasks().count()
    }

    fn tasks(&self) -> impl Iterator<Item = Task> + '_ {
        self.request.roles.tasks().filter(|t| t.role.in_cluster())
    }

    /// The services in creation order (chief, parameter servers, workers).
    pub fn iter(&self) -> impl Iterator<Item = Service> + '_ {
        self.tasks().map(|task| service(&self.request, task))
    }

    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.tasks().map(|t| t.name(&self.request.tag))
    }
}

pub fn build(req: &SpawnRequest) -> Result<Plan, UsageError> {
    let cluster = ClusterSpec::new(&req.roles, &req.tag, &req.namespace, req.port);
    let config_map = script_config_map(req, &cluster)?;
    let secret = (!req.env.is_empty()).then(|| env_secret(req));
    let services = Services {
        request: req.clone(),
    };
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
    let pods = Pods {
        request: req.clone(),
        cluster,
    };
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
    })
}

/// The run's PodGroup: its members are the tasks of the training cluster, and
/// `minMember` is all of them (see `podgroup.rs` for why the evaluator is not one);
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
            crate::podgroup::min_resources(specs.iter().map(|(spec, n)| (spec, *n)))
        })
        .flatten();
    crate::podgroup::pod_group(
        gang,
        meta(req, pod_group_name(&req.tag), run_labels(&req.tag)),
        crate::podgroup::GroupSpec {
            min_member: i32::try_from(min_member).unwrap_or(i32::MAX),
            queue: scheduling.volcano_queue.clone().filter(|_| volcano),
            priority_class_name: scheduling.priority_class.clone().filter(|_| volcano),
            min_resources,
        },
    )
}

/// Whether a task of `role` joins the gang's PodGroup: the tasks of the training
/// cluster do; the evaluator does not (see `podgroup.rs`).
fn gang_member(role: Role) -> bool {
    role.in_cluster()
}

fn run_labels(tag: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
    ])
}

fn task_selector(tag: &str, task: Task) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (ROLE_LABEL.to_string(), task.role.to_string()),
        (INDEX_LABEL.to_string(), task.index.to_string()),
    ])
}

fn task_labels(tag: &str, task: Task) -> BTreeMap<String, String> {
    let mut labels = run_labels(tag);
    labels.extend(task_selector(tag, task));
    labels
}

fn meta(req: &SpawnRequest, name: String, mut labels: BTreeMap<String, String>) -> ObjectMeta {
    add_experiment_label(req, &mut labels);
    ObjectMeta {
        name: Some(name),
        namespace: Some(req.namespace.clone()),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            INVOCATION_ANNOTATION.to_string(),
            req.invocation.clone(),
        )])),
        ..ObjectMeta::default()
    }
}

fn script_config_map(req: &SpawnRequest, cluster: &ClusterSpec) -> Result<ConfigMap, UsageError> {
    let cluster_json = cluster.cluster_json();
    let files = req.script.len()
        + req.entrypoint.as_ref().map_or(0, Vec::len)
        + req.bundle.as_ref().map_or(0, |b| b.archive.len());
    if files + cluster_json.len() > MAX_CONFIG_MAP_BYTES {
        return Err(UsageError::new(format!(
            "the training script{} is {files} bytes and the run's cluster addresses {} bytes; a ConfigMap holds at most {MAX_CONFIG_MAP_BYTES} bytes (load large files from storage instead)",
            match (req.entrypoint.is_some(), req.bundle.is_some()) {
                (_, true) => ", entrypoint and --dir",
                (true, false) => " and entrypoint",
                (false, false) => "",
            },
            cluster_json.len()
        )));
    }
    let mut data = BTreeMap::from([(CLUSTER_KEY.to_string(), cluster_json)]);
    let mut binary_data = BTreeMap::new();
    let files = std::iter::once((SCRIPT_KEY, &req.script))
        .chain(req.entrypoint.as_ref().map(|e| (ENTRYPOINT_KEY, e)));
    for (key, bytes) in files {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                data.insert(key.to_string(), text.to_string());
            }
            Err(_) => {
                binary_data.insert(key.to_string(), ByteString(bytes.clone()));
            }
        }
    }
    if let Some(bundle) = &req.bundle {
        binary_data.insert(DIR_KEY.to_string(), ByteString(bundle.archive.clone()));
    }
    let mut metadata = meta(req, config_map_name(&req.tag), run_labels(&req.tag));
    metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(record_annotations(req, cluster));
    Ok(ConfigMap {
        metadata,
        data: (!data.is_empty()).then_some(data),
        binary_data: (!binary_data.is_empty()).then_some(binary_data),
        ..ConfigMap::default()
    })
}

/// What the run's ConfigMap records of it for the verbs that come later: its env
/// Secret (or none), its tasks (for `list` and `status` once its pods are gone,
/// cluster/record.rs), its gang, volume and NetworkPolicy (what `-d` deletes).
fn record_annotations(req: &SpawnRequest, cluster: &ClusterSpec) -> BTreeMap<String, String> {
    let secret = if req.env.is_empty() {
        NO_ENV_SECRET.to_string()
    } else {
        secret_name(&req.tag)
    };
    let mut annotations = BTreeMap::from([
        (ENV_SECRET_ANNOTATION.to_string(), secret),
        (CLUSTER_ANNOTATION.to_string(), cluster.sizes()),
    ]);
    if let Some(gang) = req.scheduling.gang {
        annotations.insert(POD_GROUP_ANNOTATION.to_string(), gang.as_str().to_string());
    }
    if let Some(volume) = &req.volume {
        annotations.insert(VOLUME_ANNOTATION.to_string(), volume.annotation());
        annotations.insert(VOLUME_FOLDER_ANNOTATION.to_string(), req.tag.clone());
    }
    if req.hardening.network_policy {
        annotations.insert(
            NETWORK_POLICY_ANNOTATION.to_string(),
            network_policy_name(&req.tag),
        );
    }
    if let Some(experiment) = &req.experiment {
        annotations.insert(
            PARAMS_ANNOTATION.to_string(),
            sweep::params_json(&experiment.params),
        );
    }
    annotations
}

fn env_secret(req: &SpawnRequest) -> Secret {
    let data = req
        .env
        .iter()
        .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
        .collect();
    Secret {
        metadata: meta(req, secret_name(&req.tag), run_labels(&req.tag)),
        type_: Some("Opaque".to_string()),
        data: Some(data),
        ..Secret::default()
    }
}

fn service(req: &SpawnRequest, task: Task) -> Service {
    Service {
        metadata: meta(req, task.name(&req.tag), task_labels(&req.tag, task)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            publish_not_ready_addresses: Some(true),
            selector: Some(task_selector(&req.tag, task)),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_string()),
                port: i32::from(req.port),
                // The pods' port by name: a restart of every task moves it
                // (`roles::next_port`), and the service's endpoints follow.
                target_port: Some(IntOrString::String(PORT_NAME.to_string())),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
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

/// A sweep's run: [`EXPERIMENT_LABEL`] on every object.
fn add_experiment_label(req: &SpawnRequest, labels: &mut BTreeMap<String, String>) {
    if let Some(experiment) = &req.experiment {
        labels.insert(EXPERIMENT_LABEL.to_string(), experiment.name.clone());
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

/// A mount of the template's TF container inside a directory tf-spawner mounts
/// ([`OWNED_MOUNTS`]): it would be created in the script's read-only volume, or the
/// `--dir` unpacking would write into it. (A mount at one of them is replaced by ours.)
fn mount_inside_ours(template: &Pod) -> Option<String> {
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
fn mounts_clash(req: &SpawnRequest, cluster: &ClusterSpec, role: Role) -> Option<String> {
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
/// command, [`make_output_dir`]). A template's volume or mount of the same name or path
/// gives way.
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

/// `python -c` of this, then the command: the run's folder made, then the command run
/// (`exec`). The folder is made by the task itself, as the run's user (`--run-as-user`),
/// so the task may write in it: a `subPath` mount's folder would be made by the kubelet,
/// as root, with the mode of the claim's root (`kubelet_pods.go::makeMounts`).
const MAKE_OUTPUT_DIR_PY: &str = "import os, sys; os.makedirs(os.environ['TF_SPAWNER_OUTPUT_DIR'], exist_ok=True); os.execvp(sys.argv[1], sys.argv[1:])";
/// The same in bash, for an entrypoint (its image may have no python).
const MAKE_OUTPUT_DIR_SH: &str = "mkdir -p -- \"$TF_SPAWNER_OUTPUT_DIR\" && exec \"$@\"";

/// With `--volume`, `command` preceded by the making of the run's folder.
fn make_output_dir(req: &SpawnRequest, command: Vec<String>) -> Vec<String> {
    if req.volume.is_none() {
        return command;
    }
    let mut made: Vec<String> = match req.entrypoint {
        Some(_) => ["bash", "-c", MAKE_OUTPUT_DIR_SH, "tf-spawner"]
            .map(String::from)
            .to_vec(),
        None => ["python", "-c", MAKE_OUTPUT_DIR_PY]
            .map(String::from)
            .to_vec(),
    };
    made.extend(command);
    made
}

/// The TF container: its image (with `gpu`, the task has GPUs), command, variables,
/// port and the script's mount.
fn set_up_tf_container(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
    task: Task,
    c: &mut Container,
    gpu: bool,
) {
    let default = if gpu {
        DEFAULT_GPU_IMAGE
    } else {
        DEFAULT_IMAGE
    };
    c.image = req
        .image
        .clone()
        .or_else(|| c.image.clone().filter(|i| !i.trim().is_empty()))
        .or_else(|| Some(default.to_string()));
    let command = make_output_dir(req, tf_command(req));
    c.command = Some(command.iter().map(|w| kubelet_literal(w)).collect());
    // Kubernetes appends `args` to `command` as argv words (no shell): the script (or
    // the entrypoint, as "$@") gets them unchanged, once escaped for the kubelet.
    c.args = (!req.script_args.is_empty())
        .then(|| req.script_args.iter().map(|a| kubelet_literal(a)).collect());

    set_tf_env(req, cluster, task, c);
    if let Some(experiment) = &req.experiment {
        // A sweep's run: its parameters (`plan/sweep.rs`), escaped as the arguments are:
        // the kubelet expands `$(VAR)` in a variable's value too, so `--param
        // 'p=$(SECRET)'` would read another variable (the `-e` secrets) into it.
        let env = c.env.get_or_insert_with(Vec::new);
        env.extend(experiment.variables().map(|(name, value)| EnvVar {
            name,
            value: Some(kubelet_literal(&value)),
            value_from: None,
        }));
    }
    set_port_and_mounts(req, c);
}

/// The TF container's variables: the cluster (from the run's ConfigMap), `TF_CONFIG`
/// and the task's, the task defaults, the `-e` Secret, the attempt.
fn set_tf_env(req: &SpawnRequest, cluster: &ClusterSpec, task: Task, c: &mut Container) {
    let env = c.env.get_or_insert_with(Vec::new);
    env.retain(|e| !RESERVED.contains(&e.name.as_str()));
    // The cluster comes from the run's ConfigMap; TF_CONFIG refers to it after it (the
    // kubelet expands `$(VAR)` from the variables defined before). The template's own
    // variables come first, so `$(…)` in them means what it always did.
    env.push(EnvVar {
        name: CLUSTER_VAR.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: config_map_name(&req.tag),
                key: CLUSTER_KEY.to_string(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    });
    let reference = format!("$({CLUSTER_VAR})");
    env.extend(
        cluster
            .env_around(&req.roles, task, &reference)
            .into_iter()
            .map(|(name, value)| EnvVar {
                name: name.to_string(),
                value: Some(value),
                value_from: None,
            }),
    );

    for (name, value) in crate::roles::TASK_DEFAULTS {
        let env = c.env.get_or_insert_with(Vec::new);
        if !env.iter().any(|e| e.name == name) && !req.env.contains_key(name) {
            env.push(EnvVar {
                name: name.to_string(),
                value: Some(value.to_string()),
                value_from: None,
            });
        }
    }

    if !req.env.is_empty() {
        c.env_from.get_or_insert_with(Vec::new).push(EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: secret_name(&req.tag),
                optional: Some(false),
            }),
            ..EnvFromSource::default()
        });
    }

    // The attempt: 0 here, N in the pods the N-th restart re-creates (ops/restart.rs).
    set_env(c, ATTEMPT_VAR, "0");
}

/// The TF container's port, the script's mount and, with `--dir`, the work directory's.
fn set_port_and_mounts(req: &SpawnRequest, c: &mut Container) {
    let port = i32::from(req.port);
    let ports = c.ports.get_or_insert_with(Vec::new);
    ports.retain(|p| p.container_port != port && p.name.as_deref() != Some(PORT_NAME));
    ports.push(ContainerPort {
        name: Some(PORT_NAME.to_string()),
        container_port: port,
        protocol: Some("TCP".to_string()),
        ..ContainerPort::default()
    });

    let script = VolumeMount {
        name: SCRIPT_VOLUME.to_string(),
        mount_path: SCRIPT_DIR.to_string(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    mounts::replace(c, script);
    if req.bundle.is_some() {
        let work = VolumeMount {
            name: WORK_VOLUME.to_string(),
            mount_path: WORK_DIR.to_string(),
            ..VolumeMount::default()
        };
        mounts::replace(c, work);
        for (name, value) in [
            ("TF_SPAWNER_SCRIPT_DIR", SCRIPT_DIR),
            ("TF_SPAWNER_WORK_DIR", WORK_DIR),
        ] {
            set_env(c, name, value);
        }
    }
}

/// The TF container's command (the arguments after `--` are its `args`): the script,
/// or the entrypoint; with `--dir`, the script inside the unpacked directory, after the
/// unpacking.
fn tf_command(req: &SpawnRequest) -> Vec<String> {
    let run = match (&req.entrypoint, &req.bundle) {
        (Some(_), _) => vec!["bash".into(), format!("{SCRIPT_DIR}/{ENTRYPOINT_KEY}")],
        (None, Some(b)) => vec!["python".into(), format!("{WORK_DIR}/{}", b.script)],
        (None, None) => vec!["python".into(), format!("{SCRIPT_DIR}/{SCRIPT_KEY}")],
    };
    if req.bundle.is_none() {
        return run;
    }
    let mut command = vec!["python".into(), "-c".into(), UNPACK_AND_EXEC.into()];
    command.extend(run);
    command
}

/// `word` escaped for the kubelet, which expands `$(VAR)` and `$$` in a container's
/// `command` and `args` (`third_party/forked/golang/expansion`: `$$` is a literal `$`):
/// every `$` doubled, so the process gets `word` as typed, as `--local` passes it. Never
/// applied to `TF_CONFIG`, whose `$(TF_SPAWNER_CLUSTER)` is meant to be expanded.
pub fn kubelet_literal(word: &str) -> String {
    word.replace('$', "$$")
}

pub mod network;
pub mod record;
pub mod security;
pub mod sweep;

#[cfg(test)]
mod tests;
