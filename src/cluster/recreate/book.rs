//! What the run's ConfigMap holds for a restart ([`Book`], one GET: [`recorded`]): when
//! the run was made, the pods its spawn recorded, a restart under way ([`RestartRecord`],
//! written by [`save`] before the pods are deleted and removed by [`clear`] once the
//! next attempt's pods exist) and the cluster part of `TF_CONFIG` ([`set_cluster`]). A
//! restart's pods, by name, are [`Templates`].

use std::collections::BTreeMap;

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use crate::cluster::Cluster;
use crate::labels::{
    NEVER_STARTED_ANNOTATION, NOT_STARTED_ANNOTATION, VERDICT_ANNOTATION, config_map_name,
};
use crate::plan::CLUSTER_KEY;
use crate::roles::ClusterSpec;

/// The run's task pods as the next attempt re-creates them, by name.
pub type Templates = BTreeMap<String, Pod>;

/// What the run's ConfigMap holds for a restart (one GET, [`recorded`]).
#[derive(Debug, Clone, Default)]
pub struct Book {
    /// When the run was made (the ConfigMap's creation).
    pub created: Option<Timestamp>,
    /// The pods the spawn recorded (`plan/pods_record.rs`), unvetted; `None` for a run of an
    /// earlier version (or one whose pods did not fit), `Some(Err)` when unreadable.
    pub spawned: Option<Result<Templates, String>>,
    /// A restart under way ([`RestartRecord`]).
    pub restart: Option<RestartRecord>,
    /// The cluster part of the tasks' `TF_CONFIG` ([`CLUSTER_KEY`]), as the next pods
    /// made will read it; `None` in a run of an earlier version or when unreadable.
    pub cluster: Option<ClusterSpec>,
}

/// A restart under way, recorded in the run's ConfigMap before its pods are deleted (key
/// [`RESTART_KEY`], gzip'd JSON, and the annotation [`RESTARTING_ANNOTATION`]): if the
/// restart is stopped before its pods are created again (Ctrl-C in the backoff, a
/// `--timeout`, a lost client), the next `wait --restarts` finds the templates there and
/// takes the restart up again. Cleared once the attempt's pods are created.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RestartRecord {
    /// The attempt the restart makes.
    pub attempt: u32,
    /// The pods it re-creates, as templates, by name.
    pub templates: Templates,
    /// The failure it is for (absent in a record of an earlier version).
    #[serde(default)]
    pub cause: Option<String>,
    /// The port the attempt's tasks listen on (absent in a record of an earlier
    /// version: the port is left as it was).
    #[serde(default)]
    pub port: Option<u16>,
}

/// The run's ConfigMap key of a [`RestartRecord`].
pub const RESTART_KEY: &str = "restart.json.gz";
/// The run's ConfigMap annotation saying which attempt a recorded restart makes.
pub const RESTARTING_ANNOTATION: &str = "tf-spawner/restarting";

/// Records `record` in the run's ConfigMap. `Ok(false)` when the API server refused it
/// for its size (the ConfigMap would exceed 1 MiB): the restart goes on, unrecorded.
pub async fn save(cluster: &Cluster, tag: &str, record: &RestartRecord) -> Result<bool> {
    use std::io::Write;
    let json = serde_json::to_vec(record)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json)?;
    let bytes = k8s_openapi::ByteString(gz.finish()?);
    // A restart begins: a verdict recorded before (a run `wait`ed once, then waited
    // with --restarts) no longer holds.
    let patch = serde_json::json!({
        "metadata": {"annotations": {
            RESTARTING_ANNOTATION: record.attempt.to_string(),
            VERDICT_ANNOTATION: null,
            NEVER_STARTED_ANNOTATION: null,
            NOT_STARTED_ANNOTATION: null,
        }},
        "binaryData": {RESTART_KEY: bytes},
    });
    match cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
    {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.code(), Some(413 | 422)) => Ok(false),
        Err(e) => Err(cluster.explain("recording the restart in the run's configmap", &e)),
    }
}

/// What the run's ConfigMap holds for a restart (one GET): nothing without one.
pub async fn recorded(cluster: &Cluster, tag: &str) -> Result<Book> {
    let Some(cm) = cluster.config_map(&config_map_name(tag)).await? else {
        return Ok(Book::default());
    };
    let data = cm.binary_data.as_ref();
    let spawned = data
        .and_then(|d| d.get(crate::plan::pods_record::PODS_KEY))
        .map(|b| {
            gunzip_json(&b.0)
                .ok_or_else(|| "the pods recorded at its spawn cannot be read".to_string())
        });
    Ok(Book {
        created: cm.metadata.creation_timestamp.map(|t| t.0),
        spawned,
        restart: data
            .and_then(|d| d.get(RESTART_KEY))
            .and_then(|b| gunzip_json(&b.0)),
        cluster: cm
            .data
            .as_ref()
            .and_then(|d| d.get(CLUSTER_KEY))
            .and_then(|json| ClusterSpec::parse(json)),
    })
}

/// The JSON value gzip'd in `bytes` (at most 64 MiB of it), if it is one.
fn gunzip_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    use std::io::Read;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(64 << 20)
        .read_to_end(&mut json)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

/// Sets the cluster part of the tasks' `TF_CONFIG` that the next pods made will read
/// (before a restart of every task on another port: `roles::next_port`).
pub async fn set_cluster(cluster: &Cluster, tag: &str, spec: &ClusterSpec) -> Result<()> {
    let patch = serde_json::json!({"data": {CLUSTER_KEY: spec.cluster_json()}});
    cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
        .map_err(|e| cluster.explain("moving the run's tasks to their new port", &e))
}

/// Removes the record (once the restart's pods are created).
pub async fn clear(cluster: &Cluster, tag: &str) -> Result<()> {
    let patch = serde_json::json!({
        "metadata": {"annotations": {
            RESTARTING_ANNOTATION: null,
            VERDICT_ANNOTATION: null,
            NEVER_STARTED_ANNOTATION: null,
            NOT_STARTED_ANNOTATION: null,
        }},
        "binaryData": {RESTART_KEY: null},
    });
    cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
        .map_err(|e| cluster.explain("clearing the restart's record in the run's configmap", &e))
}
