//! A run's record: its ConfigMap, which stays until `-d` whatever became of its pods.
//! Made with the run (its creation time, the run's tasks in [`CLUSTER_ANNOTATION`]);
//! `wait` adds the verdict ([`VERDICT_ANNOTATION`]) and the tasks it deleted because no
//! node had taken them ([`NEVER_STARTED_ANNOTATION`]). `status` and `list` read it (its
//! metadata only, never the script) to show a run whose pods are all gone.

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::Cluster;
use crate::labels::{
    CLUSTER_ANNOTATION, EXPERIMENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, METRICS_ANNOTATION,
    NEVER_STARTED_ANNOTATION, NOT_STARTED_ANNOTATION, PARAMS_ANNOTATION, RUN_LABEL,
    VERDICT_ANNOTATION, config_map_name, run_selector,
};
use crate::metrics::RunMetrics;
use crate::roles::RoleSizes;

/// What a run's ConfigMap says of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    pub namespace: String,
    pub tag: String,
    /// When the run was made (seconds since the epoch).
    pub created: Option<i64>,
    /// The run's tasks per role; none for a run of an earlier version.
    pub sizes: Option<RoleSizes>,
    /// The verdict `wait` recorded: `Succeeded`, `Failed: …`.
    pub verdict: Option<String>,
    /// Tasks deleted after the verdict without ever starting (`worker-2`).
    pub never_started: Vec<String>,
    /// Why the tasks stopped or deleted after the verdict before they started had not
    /// started, grouped by reason.
    pub not_started: Vec<NotStarted>,
    /// A restart `wait --restarts` recorded and did not carry out (stopped before it
    /// created the attempt's pods again): its attempt
    /// ([`super::recreate::RESTARTING_ANNOTATION`]).
    pub restarting: Option<u32>,
    /// The experiment the run belongs to ([`EXPERIMENT_LABEL`]), and its parameters
    /// ([`PARAMS_ANNOTATION`]).
    pub experiment: Option<String>,
    pub params: std::collections::BTreeMap<String, String>,
    /// What its training printed ([`METRICS_ANNOTATION`], `metrics/`).
    pub metrics: Option<RunMetrics>,
    /// The attempts restarts replaced, and why each ended (from their kept logs,
    /// `attempt_logs.rs`; read by [`read`] alone).
    pub attempts: Vec<(u32, String)>,
    /// Who follows the run now, and when it last checked in (`follower.rs`).
    pub follower: Option<super::follower::Holder>,
}

/// Tasks that never started, and why ([`NOT_STARTED_ANNOTATION`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotStarted {
    pub why: String,
    pub tasks: Vec<String>,
}

/// Reasons kept at most (a run of 1,000 unscheduled workers has one), and their length.
const REASONS_KEPT: usize = 20;
const REASON_CHARS: usize = 600;

/// The tasks of `unstarted` (task, reason), grouped by reason in their order, bounded.
pub fn group_not_started(unstarted: &[(String, String)]) -> Vec<NotStarted> {
    let mut out: Vec<NotStarted> = Vec::new();
    for (task, why) in unstarted {
        let why: String = why.chars().take(REASON_CHARS).collect();
        match out.iter().position(|n| n.why == why) {
            Some(at) => out[at].tasks.push(task.clone()),
            None if out.len() < REASONS_KEPT => out.push(NotStarted {
                why,
                tasks: vec![task.clone()],
            }),
            None => {}
        }
    }
    out
}

impl Record {
    /// Why task `task` (`worker-0`) had not started when tf-spawner stopped or deleted
    /// it, if the record says.
    pub fn why_not_started(&self, task: &str) -> Option<&str> {
        self.not_started
            .iter()
            .find(|n| n.tasks.iter().any(|t| t == task))
            .map(|n| n.why.as_str())
    }
}

impl Record {
    fn of(meta: &ObjectMeta) -> Option<Record> {
        let labels = meta.labels.as_ref()?;
        let tag = labels.get(RUN_LABEL)?.clone();
        let annotation = |key: &str| meta.annotations.as_ref().and_then(|a| a.get(key));
        Some(Record {
            namespace: meta.namespace.clone().unwrap_or_default(),
            created: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
            sizes: annotation(CLUSTER_ANNOTATION).and_then(|s| RoleSizes::parse(s)),
            verdict: annotation(VERDICT_ANNOTATION).cloned(),
            never_started: annotation(NEVER_STARTED_ANNOTATION)
                .map(|s| {
                    s.split(',')
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            not_started: annotation(NOT_STARTED_ANNOTATION)
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default(),
            restarting: annotation(super::recreate::RESTARTING_ANNOTATION)
                .and_then(|a| a.parse().ok()),
            experiment: labels.get(EXPERIMENT_LABEL).cloned(),
            params: annotation(PARAMS_ANNOTATION)
                .map(|s| crate::metrics::params(s))
                .unwrap_or_default(),
            metrics: annotation(METRICS_ANNOTATION).and_then(|s| RunMetrics::parse(s)),
            attempts: Vec::new(),
            follower: super::follower::holder(meta, crate::duration::now()),
            tag,
        })
    }
}

/// The run's end as [`write`] records it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ending<'a> {
    pub verdict: &'a str,
    /// Tasks deleted unstarted, and why the tasks stopped or deleted unstarted had not
    /// started.
    pub never_started: &'a [&'a str],
    pub not_started: &'a [NotStarted],
    /// What the training printed; `None` leaves a record written before (a restart's).
    pub metrics: Option<&'a RunMetrics>,
}

/// Writes the verdict, the tasks deleted unstarted, why the tasks stopped or deleted
/// unstarted had not started and the training's metrics on run `tag`'s ConfigMap (one
/// request).
pub async fn write(cluster: &Cluster, tag: &str, end: Ending<'_>) -> Result<()> {
    // Tasks this end stopped or deleted unstarted are added; none leaves what an earlier
    // end recorded (a later wait on the ended run stops nothing; a restart clears them).
    let mut annotations = serde_json::json!({ VERDICT_ANNOTATION: end.verdict });
    if !end.never_started.is_empty() {
        annotations[NEVER_STARTED_ANNOTATION] = end.never_started.join(",").into();
    }
    if !end.not_started.is_empty() {
        annotations[NOT_STARTED_ANNOTATION] = serde_json::to_string(end.not_started)
            .unwrap_or_default()
            .into();
    }
    if let Some(m) = end.metrics {
        annotations[METRICS_ANNOTATION] = m.to_text().into();
    }
    patch(cluster, tag, &annotations, "recording the verdict").await
}

/// Writes the training's metrics alone on run `tag`'s ConfigMap (at a restart).
pub async fn write_metrics(cluster: &Cluster, tag: &str, metrics: &RunMetrics) -> Result<()> {
    let annotations = serde_json::json!({ METRICS_ANNOTATION: metrics.to_text() });
    patch(cluster, tag, &annotations, "recording the metrics").await
}

async fn patch(
    cluster: &Cluster,
    tag: &str,
    annotations: &serde_json::Value,
    doing: &str,
) -> Result<()> {
    let patch = serde_json::json!({ "metadata": { "annotations": annotations } });
    match cluster
        .merge_patch::<ConfigMap>(&config_map_name(tag), &patch)
        .await
    {
        // The run was deleted meanwhile: nothing to record.
        Err(e) if e.code() == Some(404) => Ok(()),
        result => result.map_err(|e| cluster.explain(doing, &e)),
    }
}

/// Run `tag`'s record, if its ConfigMap is there.
pub async fn read(cluster: &Cluster, tag: &str) -> Result<Option<Record>> {
    let found = cluster
        .list_metadata::<ConfigMap>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing the run's ConfigMap", &e))?;
    let name = config_map_name(tag);
    let mut record = found
        .iter()
        .filter(|m| m.name.as_deref() == Some(name.as_str()))
        .find_map(Record::of);
    if let Some(r) = &mut record {
        r.attempts = super::attempt_logs::ended(&found);
    }
    Ok(record)
}

/// The records of every run in the namespace (or in all of them).
pub async fn all(
    cluster: &Cluster,
    all_namespaces: bool,
) -> Result<Vec<Record>, super::retry::CallError> {
    matching(cluster, all_namespaces, "").await
}

/// The records of experiment `name`'s runs in the namespace.
pub async fn of_experiment(
    cluster: &Cluster,
    name: &str,
) -> Result<Vec<Record>, super::retry::CallError> {
    matching(cluster, false, &format!(",{EXPERIMENT_LABEL}={name}")).await
}

/// The records whose ConfigMaps also match `more` (`,LABEL=VALUE`…).
async fn matching(
    cluster: &Cluster,
    all_namespaces: bool,
    more: &str,
) -> Result<Vec<Record>, super::retry::CallError> {
    let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY},{RUN_LABEL}{more}");
    let found = cluster
        .list_metadata_in::<ConfigMap>(&selector, all_namespaces)
        .await?;
    Ok(found
        .iter()
        .filter(|m| {
            let tag = m.labels.as_ref().and_then(|l| l.get(RUN_LABEL));
            tag.is_some_and(|t| m.name.as_deref() == Some(config_map_name(t).as_str()))
        })
        .filter_map(Record::of)
        .collect())
}
