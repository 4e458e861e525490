//! An experiment's record (`tf-spawner sweep`, docs/experiments.md): the ConfigMap
//! `NAME-experiment`, labelled `tf-spawner/experiment=NAME` and managed by tf-spawner
//! but not a run (no `training_attempt`), its key `experiment.json` the sweep's plan
//! (`plan::sweep::ExperimentRecord`: parameters, method and seed, every run's tag and
//! parameters, the command line). Which runs started is read from the cluster, never
//! written: a run started is a run whose ConfigMap exists.

use anyhow::{Result, anyhow};
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::Cluster;
use super::retry::{Plain, retry};
use crate::labels::{
    EXPERIMENT_LABEL, HELPER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL, experiment_record_name,
};
use crate::metrics::early::Objective;
use crate::plan::sweep::{ExperimentRecord, PlannedRun};

/// The record's key in its ConfigMap.
pub const RECORD_KEY: &str = "experiment.json";

/// Creates the experiment's record: its uid; `None` when one of its name exists already.
pub async fn create(cluster: &Cluster, record: &ExperimentRecord) -> Result<Option<String>> {
    let name = experiment_record_name(&record.name);
    let text = serde_json::to_string(record)?;
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(cluster.namespace.clone()),
            labels: Some(
                [
                    (EXPERIMENT_LABEL.to_string(), record.name.clone()),
                    (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        data: Some([(RECORD_KEY.to_string(), text)].into()),
        ..ConfigMap::default()
    };
    let api: Api<ConfigMap> = cluster.api();
    let params = PostParams::default();
    match retry(&cluster.policy, || api.create(&params, &config_map), Plain).await {
        Ok(made) => Ok(Some(made.metadata.uid.unwrap_or_default())),
        Err(e) if e.code() == Some(409) => Ok(None),
        Err(e) => Err(cluster.explain("creating the experiment's record", &e)),
    }
}

/// Deletes experiment `name`'s record made as `uid` (a sweep whose first run was
/// refused).
pub async fn remove(cluster: &Cluster, name: &str, uid: &str) -> Result<()> {
    cluster
        .delete_exact::<ConfigMap>(&experiment_record_name(name), uid)
        .await
        .map_err(|e| cluster.explain("deleting the experiment's record", &e))
}

/// Experiment `name`'s record, if there is one.
pub async fn read(cluster: &Cluster, name: &str) -> Result<Option<ExperimentRecord>> {
    let api: Api<ConfigMap> = cluster.api();
    let record_name = experiment_record_name(name);
    let found = retry(&cluster.policy, || api.get_opt(&record_name), Plain)
        .await
        .map_err(|e| cluster.explain("reading the experiment's record", &e))?;
    let Some(text) = found
        .as_ref()
        .and_then(|cm| cm.data.as_ref())
        .and_then(|d| d.get(RECORD_KEY))
    else {
        return Ok(None);
    };
    let mut record: ExperimentRecord = serde_json::from_str(text)
        .map_err(|e| anyhow!("configmap {record_name} is not an experiment's record ({e})"))?;
    let data = found.as_ref().and_then(|cm| cm.data.as_ref());
    for (key, value) in data.into_iter().flatten() {
        if let Some(tag) = key.strip_prefix(ENDED_PREFIX) {
            record.ended.insert(tag.to_string(), value.clone());
        }
        let observed = key
            .strip_prefix(OBSERVED_PREFIX)
            .and_then(|rest| rest.rsplit_once('.'))
            .and_then(|(tag, epoch)| Some((tag, epoch.parse::<u32>().ok()?, value.parse().ok()?)));
        let valued = key.strip_prefix(VALUE_PREFIX);
        if let Some((tag, value)) = valued.and_then(|t| Some((t, value.parse::<f64>().ok()?))) {
            record.values.insert(tag.to_string(), value);
        }
        if let Some((tag, epoch, value)) = observed {
            let runs = record.observed.entry(tag.to_string()).or_default();
            runs.insert(epoch, value);
        }
    }
    Ok(Some(record))
}

/// Before a run's tag and an epoch, the record's key holding the objective's value
/// there, as early stopping read it (`observed.lrs-2.3`).
pub const OBSERVED_PREFIX: &str = "observed.";

/// The key of run `tag`'s observation at `epoch`.
pub fn observed_key(tag: &str, epoch: u32) -> String {
    format!("{OBSERVED_PREFIX}{tag}.{epoch}")
}

/// The key of run `tag`'s verdict.
pub fn ended_key(tag: &str) -> String {
    format!("{ENDED_PREFIX}{tag}")
}

/// Writes `data`'s keys in experiment `name`'s record (merged: the others are kept; an
/// observation and the decision it leads to in one request); a record gone (deleted
/// meanwhile) is not made again.
pub async fn record_data(
    cluster: &Cluster,
    name: &str,
    data: &BTreeMap<String, String>,
) -> Result<()> {
    let patch = serde_json::json!({ "data": data });
    match cluster
        .merge_patch::<ConfigMap>(&experiment_record_name(name), &patch)
        .await
    {
        Ok(()) => Ok(()),
        Err(e) if e.code() == Some(404) => Ok(()),
        Err(e) => Err(cluster.explain("writing in the experiment's record", &e)),
    }
}

/// Before a run's tag, the record's key holding the objective's value it ended with,
/// as `--method tpe` took it (`value.lrs-2`).
pub const VALUE_PREFIX: &str = "value.";

/// The key of run `tag`'s value.
pub fn value_key(tag: &str) -> String {
    format!("{VALUE_PREFIX}{tag}")
}

/// Writes the record's `experiment.json` again (`--method tpe`: a point proposed,
/// before its run is created); a record gone (deleted meanwhile) is not made again.
pub async fn record_runs(cluster: &Cluster, name: &str, text: &str) -> Result<()> {
    let data: BTreeMap<String, String> = [(RECORD_KEY.to_string(), text.to_string())].into();
    record_data(cluster, name, &data).await
}

/// Before a run's tag, the record's key holding its verdict (`ended.lrs-2`).
pub const ENDED_PREFIX: &str = "ended.";

/// An experiment's record as listed: its name, uid and age.
pub struct Listed {
    pub name: String,
    pub uid: String,
    pub age_seconds: Option<u64>,
}

/// Every experiment's record in the namespace (metadata only).
pub async fn records(cluster: &Cluster) -> Result<Vec<Listed>> {
    let selector = format!("{EXPERIMENT_LABEL},{MANAGED_BY_LABEL}={MANAGED_BY},!{RUN_LABEL}");
    let found = cluster
        .list_metadata::<ConfigMap>(&selector)
        .await
        .map_err(|e| cluster.explain("listing the experiments' records", &e))?;
    let now = crate::duration::now();
    Ok(found
        .into_iter()
        .filter_map(|m| {
            let name = m.labels.as_ref()?.get(EXPERIMENT_LABEL)?.clone();
            (m.name.as_deref() == Some(experiment_record_name(&name).as_str())).then(|| Listed {
                age_seconds: m
                    .creation_timestamp
                    .as_ref()
                    .map(|t| (now - t.0.as_second()).max(0) as u64),
                uid: m.uid.unwrap_or_default(),
                name,
            })
        })
        .collect())
}

/// The tags of every run in the namespace (each has a ConfigMap): one list of metadata.
pub async fn run_tags(cluster: &Cluster) -> Result<Vec<String>> {
    let found = cluster
        .list_metadata::<ConfigMap>(RUN_LABEL)
        .await
        .map_err(|e| cluster.explain("listing the runs' ConfigMaps", &e))?;
    Ok(found
        .into_iter()
        .filter_map(|m| m.labels.and_then(|mut l| l.remove(RUN_LABEL)))
        .collect())
}

/// The runs of experiment `name` with a task pod that has not ended (neither Succeeded
/// nor Failed): what the quota still counts, one list of its pods.
pub async fn unfinished_runs(cluster: &Cluster, name: &str) -> Result<BTreeSet<String>> {
    let selector = format!("{EXPERIMENT_LABEL}={name},{RUN_LABEL},!{HELPER_LABEL}");
    let pods = cluster
        .list::<Pod>(&selector)
        .await
        .map_err(|e| cluster.explain("listing the experiment's pods", &e))?;
    Ok(pods
        .into_iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .filter_map(|p| p.metadata.labels.and_then(|mut l| l.remove(RUN_LABEL)))
        .collect())
}

/// What `list --experiments`, `status` and `compare` take from an experiment's record:
/// its runs' tags and parameters, read as far as the record holds them (a record of
/// another version, or an editor's, is no error). Only shown (escaped), never run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Planned {
    pub namespace: String,
    pub name: String,
    /// When the record was made (seconds since the epoch).
    pub created: Option<i64>,
    pub runs: Vec<PlannedRun>,
    /// The verdicts the record keeps of the runs that ended (its `ended.TAG` keys, one
    /// line each as shown), by tag: what is left of a run deleted since.
    pub ended: BTreeMap<String, String>,
    /// `--objective`, if the sweep had one: what `compare` sorts by.
    pub objective: Option<Objective>,
    /// The sweep that runs the experiment now, as the record names it (`sweep
    /// --detach`'s supervisor, or a sweep on a laptop): `cluster/follower.rs`.
    pub follower: Option<super::follower::Holder>,
}

/// The part of [`ExperimentRecord`] read back for display.
#[derive(Debug, Default, serde::Deserialize)]
struct RunsOnly {
    #[serde(default)]
    runs: Vec<PlannedRun>,
    #[serde(default)]
    objective: Option<Objective>,
}

/// Runs read from one record at most: a forged record is no longer list.
const PLANNED_KEPT: usize = 10_000;

impl Planned {
    fn of(cm: &ConfigMap) -> Option<Planned> {
        let meta = &cm.metadata;
        let labels = meta.labels.as_ref()?;
        let name = labels.get(EXPERIMENT_LABEL)?.clone();
        if labels.contains_key(RUN_LABEL)
            || meta.name.as_deref() != Some(&experiment_record_name(&name))
        {
            return None;
        }
        let text = cm.data.as_ref().and_then(|d| d.get(RECORD_KEY));
        let only = text
            .and_then(|t| serde_json::from_str::<RunsOnly>(t).ok())
            .unwrap_or_default();
        let objective = only
            .objective
            .filter(|o| Objective::parse(&o.metric).is_ok());
        let mut runs = only.runs;
        runs.truncate(PLANNED_KEPT);
        let ended = cm
            .data
            .iter()
            .flatten()
            .filter_map(|(key, verdict)| {
                let tag = key.strip_prefix(ENDED_PREFIX)?;
                let line = verdict.lines().next().unwrap_or_default();
                Some((tag.to_string(), line.chars().take(500).collect()))
            })
            .take(PLANNED_KEPT)
            .collect();
        Some(Planned {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name,
            created: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
            runs,
            ended,
            objective,
            follower: super::follower::holder(meta, crate::duration::now()),
        })
    }
}

/// The experiments' records in the namespace (or in all of them): one paged list.
pub async fn all_planned(
    cluster: &Cluster,
    all_namespaces: bool,
) -> Result<Vec<Planned>, super::retry::CallError> {
    let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY},{EXPERIMENT_LABEL},!{RUN_LABEL}");
    let mut found = Vec::new();
    cluster
        .list_pages::<ConfigMap>(&selector, all_namespaces, |page, first| {
            if first {
                found.clear();
            }
            found.extend(page.iter().filter_map(Planned::of));
        })
        .await?;
    Ok(found)
}

/// Experiment `name`'s record as [`Planned`], if there is one.
pub async fn planned(cluster: &Cluster, name: &str) -> Result<Option<Planned>> {
    let api: Api<ConfigMap> = cluster.api();
    let record_name = experiment_record_name(name);
    let found = retry(&cluster.policy, || api.get_opt(&record_name), Plain)
        .await
        .map_err(|e| cluster.explain("reading the experiment's record", &e))?;
    Ok(found.as_ref().and_then(Planned::of))
}
