//! What a spawn asks for: the [`SpawnRequest`] (read from disk and checked by
//! `inputs/mod.rs`, lowered from the flags by `settings/spawn.rs`) and its parts: the
//! shared-cluster options ([`Scheduling`]), the pod [`Templates`] and a sweep's run
//! ([`ExperimentRun`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::resources::Resources;
use super::security;
use super::sweep;
use super::volume::OutputVolume;
use crate::inputs::envfile::EnvVars;
use crate::plan::podgroup::Gang;
use crate::roles::{Role, Roles};

/// Everything a spawn needs, already read from disk and checked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpawnRequest {
    pub tag: String,
    pub namespace: String,
    pub port: u16,
    /// `-i`: overrides every template's image.
    pub image: Option<String>,
    pub roles: Roles,
    /// `--framework`: which variables tell each task about the others.
    pub framework: crate::framework::Framework,
    pub templates: Templates,
    #[serde(with = "crate::plan::bytes")]
    pub script: Vec<u8>,
    #[serde(with = "crate::plan::bytes::optional")]
    pub entrypoint: Option<Vec<u8>>,
    /// The arguments after `--`: the TF container's `args`, after its command.
    pub script_args: Vec<String>,
    /// `--dir`: the directory shipped in the ConfigMap, unpacked in the pod.
    pub bundle: Option<crate::bundle::Bundle>,
    pub env: EnvVars,
    /// A random id written on every object (see
    /// [`INVOCATION_ANNOTATION`](crate::labels::INVOCATION_ANNOTATION)).
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// The shared-cluster options: each one only adds to the pods (and, for a gang, an
/// object); without any, the objects are those of a plain run, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Scheduling {
    /// `--deadline`: every pod's `activeDeadlineSeconds`.
    pub deadline_seconds: Option<i64>,
    /// `--node-lost-after`: every pod tolerates its node being not ready or unreachable
    /// this long (`tolerationSeconds` of
    /// [`NODE_LOST_TAINTS`](super::pod::NODE_LOST_TAINTS), NoExecute).
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
    /// `--pull-grace`, if not the built-in one: every pod's
    /// [`PULL_GRACE_ANNOTATION`](crate::labels::PULL_GRACE_ANNOTATION), which the verdict
    /// reads (`verdict::Tracker`).
    pub pull_grace_seconds: Option<u64>,
}

impl Scheduling {
    /// The Kueue LocalQueue, if the run goes through Kueue: `--queue`.
    pub fn kueue_queue(&self) -> Option<&String> {
        self.queue.as_ref()
    }

    pub(super) fn scheduler_name(&self) -> Option<String> {
        self.scheduler_name
            .clone()
            .or_else(|| self.gang.map(|g| g.default_scheduler().to_string()))
    }
}

/// One pod template per role; roles without their own use the worker's.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Templates {
    pub worker: Pod,
    pub by_role: BTreeMap<Role, Pod>,
}

impl Templates {
    pub fn for_role(&self, role: Role) -> &Pod {
        self.by_role.get(&role).unwrap_or(&self.worker)
    }
}
