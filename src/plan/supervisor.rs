//! `spawn --detach`: the run's supervisor, a Job in the run's namespace whose one pod runs
//! `tf-spawner supervise -t TAG`, the same follow `wait` runs on a laptop (restarts,
//! stops, records, notifies, cleans up), with the settings the spawn was given, read
//! from a Secret of the run ([`FOLLOW_KEY`]: never in the pod's arguments or
//! environment, a `--notify` URL may hold a token). Pure: the objects are built here,
//! the spawn creates them after the run's own (`cluster/apply.rs`), and `-d` deletes
//! them first, by the run's label.
//!
//! Why a Job: its controller makes a new pod when the pod is lost with its node or
//! deleted, and gives up after [`BACKOFF_LIMIT`] failures; the new pod takes the run
//! over from its record (`cluster/follower.rs`), so nothing is done twice. The pod asks
//! little ([`resources`]), runs as a non-root user with nothing it could escalate to
//! (Pod Security `restricted`), under the ServiceAccount the user names
//! (`--supervisor-account`; `examples/rbac.yaml` makes one bound to the run's Role).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapProjection, Container, DownwardAPIProjection, DownwardAPIVolumeFile,
    KeyToPath, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec,
    ProjectedVolumeSource, ResourceRequirements, SeccompProfile, Secret, SecurityContext,
    ServiceAccountTokenProjection, Toleration, Volume, VolumeMount, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::labels::{
    HELPER_LABEL, INVOCATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL, supervisor_name,
};

/// The supervisor's [`HELPER_LABEL`] value: its Job, pod and Secret are no tasks.
pub const SUPERVISOR: &str = "supervisor";
/// The Secret's key of the follow's settings ([`FollowRecord`], JSON).
pub const FOLLOW_KEY: &str = "follow.json";
/// Pod failures (a crash, an API server gone past `--give-up-after`) the Job retries.
pub const BACKOFF_LIMIT: i32 = 20;
/// How long the supervisor's pod tolerates a node that stopped reporting before it is
/// evicted and the Job makes a new one (the default is 300 s).
pub const LOST_NODE_SECONDS: i64 = 30;
/// The ServiceAccount the supervisor runs as unless named (`examples/rbac.yaml`).
pub const DEFAULT_ACCOUNT: &str = "tf-spawner-supervisor";
/// The user the supervisor runs as (distroless's `nonroot`).
pub const SUPERVISOR_UID: i64 = 65532;

/// What the supervisor's follow does: the settings of `wait`'s follow (`ops/wait/
/// options.rs`) that a pod can carry out, as data (durations in seconds, lists in
/// their flags' words, so this layer needs no other).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowRecord {
    pub start_timeout: Option<u64>,
    pub all_workers: bool,
    pub cleanup: bool,
    pub keep_running: bool,
    pub max_in_flight: usize,
    pub restarts: u32,
    /// `--restart-on`, as its flag reads it.
    pub restart_on: String,
    pub restart_backoff: u64,
    pub node_grace: u64,
    /// `--stall-after`; else the derived bound's factor and floor.
    pub stall_after: Option<u64>,
    pub stall_factor: u32,
    pub stall_floor: u64,
    /// `warn`, `fail` or `restart`.
    pub on_stall: String,
    /// `--notify URL` (a URL only: a pod has no shell to run a command in).
    pub notify: Option<String>,
}

/// The supervisor's objects: the Secret it reads its settings from, and its Job.
#[derive(Debug, Clone, PartialEq)]
pub struct Supervisor {
    pub secret: Secret,
    pub job: Job,
}

/// Who supervises: the image with `tf-spawner` on its PATH, and the ServiceAccount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorSpec {
    pub image: String,
    pub account: String,
}

/// The run a supervisor follows: its tag, namespace and the spawn's invocation.
#[derive(Debug, Clone, Copy)]
pub struct Supervised<'a> {
    pub tag: &'a str,
    pub namespace: &'a str,
    pub invocation: &'a str,
}

/// The supervisor of `run`, following as `follow` says.
pub fn supervisor(run: Supervised<'_>, spec: &SupervisorSpec, follow: &FollowRecord) -> Supervisor {
    let name = supervisor_name(run.tag);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(run.namespace.to_string()),
        labels: Some(labels(run.tag)),
        annotations: Some(BTreeMap::from([(
            INVOCATION_ANNOTATION.to_string(),
            run.invocation.to_string(),
        )])),
        ..ObjectMeta::default()
    };
    let json = serde_json::to_vec(follow).unwrap_or_default();
    let secret = Secret {
        metadata: meta.clone(),
        data: Some(BTreeMap::from([(FOLLOW_KEY.to_string(), ByteString(json))])),
        type_: Some("Opaque".to_string()),
        ..Secret::default()
    };
    let job = Job {
        metadata: meta,
        spec: Some(JobSpec {
            backoff_limit: Some(BACKOFF_LIMIT),
            template: pod_template(run.tag, spec),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Supervisor { secret, job }
}

/// The run's labels, and [`HELPER_LABEL`]: the run's `-d` deletes it; no follow counts
/// it as a task.
fn labels(tag: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (HELPER_LABEL.to_string(), SUPERVISOR.to_string()),
    ])
}

fn pod_template(tag: &str, spec: &SupervisorSpec) -> PodTemplateSpec {
    let lost = |key: &str| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some("NoExecute".to_string()),
        toleration_seconds: Some(LOST_NODE_SECONDS),
        ..Toleration::default()
    };
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(tag)),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            service_account_name: Some(spec.account.clone()),
            restart_policy: Some("OnFailure".to_string()),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(SUPERVISOR_UID),
                run_as_group: Some(SUPERVISOR_UID),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".to_string(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            tolerations: Some(vec![
                lost("node.kubernetes.io/not-ready"),
                lost("node.kubernetes.io/unreachable"),
            ]),
            containers: vec![container(tag, &spec.image)],
            volumes: Some(vec![api_access()]),
            ..PodSpec::default()
        }),
    }
}

fn container(tag: &str, image: &str) -> Container {
    Container {
        name: SUPERVISOR.to_string(),
        image: Some(image.to_string()),
        command: Some(
            ["tf-spawner", "supervise", "-t", tag]
                .map(String::from)
                .to_vec(),
        ),
        resources: Some(resources()),
        // A failed supervisor's last lines (a right its account lacks, named in one line)
        // kept by the kubelet in its status, where `status` reads them.
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        volume_mounts: Some(vec![VolumeMount {
            name: API_ACCESS.to_string(),
            mount_path: TOKEN_DIR.to_string(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

/// The volume of the supervisor's credentials.
const API_ACCESS: &str = "api-access";
/// Where a pod's client looks for them (kube's `Config::incluster`, client-go's).
const TOKEN_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The ServiceAccount's token (renewed by the kubelet), the cluster's CA and the
/// namespace, where a pod's client reads them: what the ServiceAccount admission plugin
/// adds to every pod, written out so that a cluster with the plugin off (as
/// ../shared/tools' planes) gives them too; with it on, the plugin leaves a pod that
/// mounts that directory as it is (plugin/pkg/admission/serviceaccount/admission.go).
fn api_access() -> Volume {
    let token = VolumeProjection {
        service_account_token: Some(ServiceAccountTokenProjection {
            path: "token".to_string(),
            expiration_seconds: Some(3607),
            ..ServiceAccountTokenProjection::default()
        }),
        ..VolumeProjection::default()
    };
    let ca = VolumeProjection {
        config_map: Some(ConfigMapProjection {
            name: "kube-root-ca.crt".to_string(),
            items: Some(vec![KeyToPath {
                key: "ca.crt".to_string(),
                path: "ca.crt".to_string(),
                ..KeyToPath::default()
            }]),
            ..ConfigMapProjection::default()
        }),
        ..VolumeProjection::default()
    };
    let namespace = VolumeProjection {
        downward_api: Some(DownwardAPIProjection {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "namespace".to_string(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: Some("v1".to_string()),
                    field_path: "metadata.namespace".to_string(),
                }),
                ..DownwardAPIVolumeFile::default()
            }]),
        }),
        ..VolumeProjection::default()
    };
    Volume {
        name: API_ACCESS.to_string(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o444),
            sources: Some(vec![token, ca, namespace]),
        }),
        ..Volume::default()
    }
}

/// Requests and limits (CPU, memory): a follow is a watch and a few requests a minute;
/// limits too, so a namespace whose quota counts `limits.*` admits it.
pub fn resources() -> ResourceRequirements {
    let list = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.to_string())),
            ("memory".to_string(), Quantity(memory.to_string())),
        ])
    };
    ResourceRequirements {
        requests: Some(list("50m", "64Mi")),
        limits: Some(list("500m", "256Mi")),
        ..ResourceRequirements::default()
    }
}

/// The follow's settings from the Secret's data; `Err` with why, in words.
pub fn follow_of(secret: &Secret) -> Result<FollowRecord, String> {
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(FOLLOW_KEY))
        .ok_or_else(|| format!("it has no key {FOLLOW_KEY}"))?;
    serde_json::from_slice(&data.0).map_err(|e| format!("its {FOLLOW_KEY} cannot be read: {e}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::tests::request;
    use crate::roles::Roles;

    pub(crate) fn follow() -> FollowRecord {
        FollowRecord {
            start_timeout: Some(600),
            all_workers: false,
            cleanup: true,
            keep_running: false,
            max_in_flight: 50,
            restarts: 3,
            restart_on: "removed,exit:137".to_string(),
            restart_backoff: 10,
            node_grace: 40,
            stall_after: None,
            stall_factor: 10,
            stall_floor: 1800,
            on_stall: "warn".to_string(),
            notify: Some("https://hooks.example.com/x".to_string()),
        }
    }

    fn planned() -> crate::plan::Plan {
        let mut plan = crate::plan::build(&request(Roles::workers(2).unwrap())).unwrap();
        let spec = SupervisorSpec {
            image: "registry.example.com/tf-spawner:0.1".to_string(),
            account: "tf-spawner-supervisor".to_string(),
        };
        let run = Supervised {
            tag: &plan.tag,
            namespace: &plan.namespace,
            invocation: &plan.invocation,
        };
        plan.supervisor = Some(supervisor(run, &spec, &follow()));
        plan
    }

    #[test]
    fn the_follow_goes_in_the_secret_and_reads_back_whole() {
        let plan = planned();
        let s = plan.supervisor.unwrap();
        assert_eq!(follow_of(&s.secret), Ok(follow()));
        let labels = s.secret.metadata.labels.clone().unwrap();
        assert_eq!(labels[HELPER_LABEL], SUPERVISOR);
        assert_eq!(labels[RUN_LABEL], plan.tag);
        let mut broken = s.secret.clone();
        broken.data = None;
        assert!(
            follow_of(&broken)
                .unwrap_err()
                .contains("no key follow.json")
        );
    }

    #[test]
    fn the_job_runs_supervise_as_a_non_root_user_under_the_account() {
        let plan = planned();
        let job = plan.supervisor.unwrap().job;
        assert_eq!(
            job.metadata.name.as_deref(),
            Some(supervisor_name(&plan.tag).as_str())
        );
        let pod = job.spec.unwrap().template.spec.unwrap();
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("tf-spawner-supervisor")
        );
        assert_eq!(pod.restart_policy.as_deref(), Some("OnFailure"));
        let c = &pod.containers[0];
        assert_eq!(
            c.command.as_deref().unwrap(),
            ["tf-spawner", "supervise", "-t", plan.tag.as_str()]
        );
        // No secret in its arguments or environment.
        assert!(c.env.is_none());
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
    }
}
