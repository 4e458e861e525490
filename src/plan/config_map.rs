//! The run's ConfigMap (the script, the entrypoint, `--dir`'s archive, the cluster's
//! addresses, and what it records of the run for the verbs that come later) and its
//! `-e` Secret.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::meta::{meta, run_labels};
use super::request::SpawnRequest;
use super::sweep;
use crate::bundle::DIR_KEY;
use crate::errors::UsageError;
use crate::labels::{
    CLUSTER_ANNOTATION, ENV_SECRET_ANNOTATION, NETWORK_POLICY_ANNOTATION, NO_ENV_SECRET,
    PARAMS_ANNOTATION, POD_GROUP_ANNOTATION, VOLUME_ANNOTATION, VOLUME_FOLDER_ANNOTATION,
    config_map_name, network_policy_name, secret_name,
};
use crate::roles::ClusterSpec;

pub const SCRIPT_KEY: &str = "training-script.py";

pub const ENTRYPOINT_KEY: &str = "entrypoint.sh";

/// What an API server accepts in one ConfigMap (data and binaryData together).
pub const MAX_CONFIG_MAP_BYTES: usize = 1024 * 1024;

/// The run's ConfigMap key holding the `cluster` part of every `TF_CONFIG`, stored once
/// for the run instead of once per pod (which made a run's objects grow as N²).
pub const CLUSTER_KEY: &str = "tf-cluster.json";

pub(super) fn script_config_map(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
) -> Result<ConfigMap, UsageError> {
    let cluster_json = cluster.cluster_json();
    let (wait_key, wait) = super::wait_for_names::file(req);
    let files = req.script.len()
        + req.entrypoint.as_ref().map_or(0, Vec::len)
        + req.bundle.as_ref().map_or(0, |b| b.archive.len());
    if files + cluster_json.len() + wait.len() > MAX_CONFIG_MAP_BYTES {
        return Err(UsageError::new(format!(
            "the training script{} is {files} bytes and tf-spawner's own files (the cluster's addresses, the wait for their names) {} bytes; a ConfigMap holds at most {MAX_CONFIG_MAP_BYTES} bytes (load large files from storage instead)",
            match (req.entrypoint.is_some(), req.bundle.is_some()) {
                (_, true) => ", entrypoint and --dir",
                (true, false) => " and entrypoint",
                (false, false) => "",
            },
            cluster_json.len() + wait.len()
        )));
    }
    let mut data = BTreeMap::from([
        (CLUSTER_KEY.to_string(), cluster_json),
        (wait_key.to_string(), wait.to_string()),
    ]);
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

pub(super) fn env_secret(req: &SpawnRequest) -> Secret {
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
