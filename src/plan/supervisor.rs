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

use super::request::SpawnRequest;
use super::sweep::Search;
use crate::labels::{
    EXPERIMENT_LABEL, HELPER_LABEL, INVOCATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL,
    supervisor_name, sweeper_name,
};
use crate::metrics::early::{Objective, Stopping};

/// The supervisor's [`HELPER_LABEL`] value: its Job, pod and Secret are no tasks.
pub const SUPERVISOR: &str = "supervisor";
/// The Secret's key of the follow's settings ([`FollowRecord`], JSON).
pub const FOLLOW_KEY: &str = "follow.json";
/// A detached sweep's Secret's key of its settings ([`SweepFollow`], JSON).
pub const SWEEP_KEY: &str = "sweep.json";
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

/// What a detached sweep's supervisor runs (`sweep --detach`): the sweep as its command
/// defined it, taken up from the experiment's record as `sweep --resume` would. The
/// script, `--dir`'s files and the pod templates travel in the request, read on the
/// machine that ran the command; nothing is read from a disk in the pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFollow {
    /// The first run's request: every run's is made from it (`ops/sweep/`).
    pub base: SpawnRequest,
    /// The sweep's flags as given (`--param`s, `--samples`, `--seed`, `--method`,
    /// `--objective`, early stopping): the supervisor defines the sweep from them as the
    /// command did, and takes the record up as `--resume` does.
    pub params: Vec<String>,
    pub samples: Option<u32>,
    pub seed: Option<u64>,
    pub method: Option<Search>,
    pub objective: Option<Objective>,
    pub stopping: Stopping,
    /// The script's arguments, with their placeholders.
    pub args: Vec<String>,
    /// `--parallel`, if given.
    pub parallel: Option<u32>,
    /// `--queue` or `--gang`: every run submitted, the queue decides.
    pub queued: bool,
    pub max_in_flight: usize,
    /// Each run's follow.
    pub follow: FollowRecord,
    /// The command that takes the experiment up on a laptop (the sweep's, with
    /// `--resume NAME`), for the lines that say how.
    pub hint: String,
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

/// What a supervisor follows, with the settings it follows it by.
#[derive(Debug, Clone, Copy)]
pub enum Charge<'a> {
    /// `spawn --detach`: run `tag`, followed as `wait` would.
    Run {
        tag: &'a str,
        follow: &'a FollowRecord,
    },
    /// `sweep --detach`: experiment `name`, run as `sweep --resume` would.
    Sweep {
        name: &'a str,
        sweep: &'a SweepFollow,
    },
}

impl Charge<'_> {
    /// Its Job's and Secret's name.
    pub fn name(&self) -> String {
        match self {
            Charge::Run { tag, .. } => supervisor_name(tag),
            Charge::Sweep { name, .. } => sweeper_name(name),
        }
    }

    /// `-t TAG`, `--experiment NAME`: what `tf-spawner supervise` is told to follow.
    fn args(&self) -> [&str; 2] {
        match self {
            Charge::Run { tag, .. } => ["-t", tag],
            Charge::Sweep { name, .. } => ["--experiment", name],
        }
    }

    /// The run's label ([`RUN_LABEL`]: the run's `-d` deletes it) or the experiment's
    /// ([`EXPERIMENT_LABEL`]: `-d --experiment`'s), and [`HELPER_LABEL`]: no follow counts
    /// it as a task.
    fn labels(&self) -> BTreeMap<String, String> {
        let own = match self {
            Charge::Run { tag, .. } => (RUN_LABEL, tag),
            Charge::Sweep { name, .. } => (EXPERIMENT_LABEL, name),
        };
        BTreeMap::from([
            (own.0.to_string(), own.1.to_string()),
            (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
            (HELPER_LABEL.to_string(), SUPERVISOR.to_string()),
        ])
    }

    /// The Secret's key and value: the settings as JSON.
    fn settings(&self) -> (&'static str, Vec<u8>) {
        match self {
            Charge::Run { follow, .. } => {
                (FOLLOW_KEY, serde_json::to_vec(follow).unwrap_or_default())
            }
            Charge::Sweep { sweep, .. } => {
                (SWEEP_KEY, serde_json::to_vec(sweep).unwrap_or_default())
            }
        }
    }
}

/// The supervisor of `charge` in `namespace`, made by the invocation `invocation`.
pub fn supervisor(
    (charge, namespace, invocation): (Charge<'_>, &str, &str),
    spec: &SupervisorSpec,
) -> Supervisor {
    let meta = ObjectMeta {
        name: Some(charge.name()),
        namespace: Some(namespace.to_string()),
        labels: Some(charge.labels()),
        annotations: Some(BTreeMap::from([(
            INVOCATION_ANNOTATION.to_string(),
            invocation.to_string(),
        )])),
        ..ObjectMeta::default()
    };
    let (key, json) = charge.settings();
    let secret = Secret {
        metadata: meta.clone(),
        data: Some(BTreeMap::from([(key.to_string(), ByteString(json))])),
        type_: Some("Opaque".to_string()),
        ..Secret::default()
    };
    let job = Job {
        metadata: meta,
        spec: Some(JobSpec {
            backoff_limit: Some(BACKOFF_LIMIT),
            template: pod_template(&charge, spec),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Supervisor { secret, job }
}

fn pod_template(charge: &Charge<'_>, spec: &SupervisorSpec) -> PodTemplateSpec {
    let lost = |key: &str| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some("NoExecute".to_string()),
        toleration_seconds: Some(LOST_NODE_SECONDS),
        ..Toleration::default()
    };
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(charge.labels()),
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
            containers: vec![container(charge.args(), &spec.image)],
            volumes: Some(vec![api_access()]),
            ..PodSpec::default()
        }),
    }
}

fn container(args: [&str; 2], image: &str) -> Container {
    Container {
        name: SUPERVISOR.to_string(),
        image: Some(image.to_string()),
        command: Some(
            ["tf-spawner", "supervise", args[0], args[1]]
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
    settings_of(secret, FOLLOW_KEY)
}

/// A detached sweep's settings from the Secret's data; `Err` with why, in words.
pub fn sweep_of(secret: &Secret) -> Result<SweepFollow, String> {
    settings_of(secret, SWEEP_KEY)
}

fn settings_of<T: serde::de::DeserializeOwned>(secret: &Secret, key: &str) -> Result<T, String> {
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| format!("it has no key {key}"))?;
    serde_json::from_slice(&data.0).map_err(|e| format!("its {key} cannot be read: {e}"))
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

    fn spec() -> SupervisorSpec {
        SupervisorSpec {
            image: "registry.example.com/tf-spawner:0.1".to_string(),
            account: "tf-spawner-supervisor".to_string(),
        }
    }

    fn planned() -> crate::plan::Plan {
        let mut plan = crate::plan::build(&request(Roles::workers(2).unwrap())).unwrap();
        let spec = spec();
        let charge = Charge::Run {
            tag: &plan.tag,
            follow: &follow(),
        };
        plan.supervisor = Some(supervisor(
            (charge, &plan.namespace, &plan.invocation),
            &spec,
        ));
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
    fn a_sweeps_request_reads_back_whole_from_its_secret() {
        let mut base = request(Roles::new(None, true, 1, 2, true).unwrap());
        base.entrypoint = Some(b"#!/bin/sh\nexec \"$@\"\n".to_vec());
        base.bundle = Some(crate::bundle::Bundle {
            archive: vec![0x1f, 0x8b, 0, 255],
            script: "train.py".to_string(),
            files: 1,
            left_out: vec!["data/".to_string()],
        });
        base.env.insert("TOKEN".to_string(), "s3cr3t".to_string());
        base.framework = crate::framework::Framework::Keras;
        let sweep = SweepFollow {
            base,
            params: vec!["lr=log:1e-4..1e-1".to_string()],
            samples: Some(12),
            seed: None,
            method: Some(Search::Tpe),
            objective: None,
            stopping: Stopping {
                rule: crate::metrics::early::Rule::Asha,
                eta: 3,
                min_epochs: 1,
            },
            args: vec!["--lr".to_string(), "{lr}".to_string()],
            parallel: Some(2),
            queued: false,
            max_in_flight: 50,
            follow: follow(),
            hint: "tf-spawner sweep --resume lr …".to_string(),
        };
        let charge = Charge::Sweep {
            name: "lr",
            sweep: &sweep,
        };
        let s = supervisor((charge, "team-a", "inv"), &spec());
        assert_eq!(sweep_of(&s.secret), Ok(sweep));
        assert_eq!(s.job.metadata.name.as_deref(), Some("lr-sweeper"));
        let labels = s.job.metadata.labels.unwrap();
        assert_eq!(labels[EXPERIMENT_LABEL], "lr");
        assert!(!labels.contains_key(RUN_LABEL));
        // The token and the script are in the Secret alone.
        assert!(!format!("{:?}", s.job.spec).contains("s3cr3t"));
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
