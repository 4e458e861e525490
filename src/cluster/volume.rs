//! The API calls behind `--volume`, `cp` and `tensorboard`: the claim's lookup, the run's
//! recorded volume, helper pods (create, wait until running, delete), a command's output
//! through exec, and a port-forward.

use anyhow::{Result, anyhow, bail};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, PodSecurityContext};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::Cluster;
use super::retry::{CallError, Plain, retry};
use crate::labels::{VOLUME_ANNOTATION, VOLUME_FOLDER_ANNOTATION, config_map_name, run_selector};
use crate::plan::OutputVolume;
use crate::plan::security::Owner;

/// What the run's pods tell a helper pod: their image, the node of the first one
/// placed, and the user they run as.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPlacement {
    pub image: Option<String>,
    pub node: Option<String>,
    /// The user the run's pods run as (`helper::run_as_the_run`).
    pub security: Option<PodSecurityContext>,
}

/// How a command run through exec ended.
#[derive(Debug)]
pub struct Exited {
    /// 0, or the remote exit code; `None` when the status did not say.
    pub code: Option<i32>,
    /// The status's message when it is not a plain success.
    pub message: Option<String>,
    /// What the command wrote on stderr (the first 64 KiB).
    pub stderr: String,
}

impl Cluster {
    /// The claim `name`, or `None` when there is none in the namespace.
    pub async fn claim(&self, name: &str) -> Result<Option<PersistentVolumeClaim>> {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &self.namespace);
        let got = match super::checked(name) {
            Ok(name) => retry(&self.policy, || api.get_opt(name), Plain).await,
            Err(e) => Err(e),
        };
        got.map_err(|e| self.explain(&format!("looking up persistentvolumeclaim/{name}"), &e))
    }

    /// The host path behind the persistent volume `name` (a `hostPath` volume), if it is
    /// one; `None` when it is another kind, or cannot be read (persistent volumes are
    /// cluster-scoped: a namespace's credentials seldom may).
    pub async fn host_path_of(&self, name: &str) -> Option<String> {
        let api: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(self.client.clone());
        let name = super::checked(name).ok()?;
        let found = retry(&self.policy, || api.get_opt(name), Plain)
            .await
            .ok()??;
        found.spec?.host_path.map(|h| h.path)
    }

    /// The volume run `tag` was spawned with (its ConfigMap's [`VOLUME_ANNOTATION`]):
    /// `Ok(None)` for a run without one; an error when there is no such run.
    pub async fn run_volume(&self, tag: &str) -> Result<Option<OutputVolume>> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let name = config_map_name(tag);
        let found = retry(&self.policy, || api.get_metadata_opt(&name), Plain)
            .await
            .map_err(|e| self.explain(&format!("looking up run '{tag}'"), &e))?;
        let Some(found) = found else {
            bail!(
                "no run '{tag}' in namespace '{}' (its configmap/{name} is missing; see: tf-spawner list)",
                self.namespace
            );
        };
        let annotations = found.metadata.annotations.as_ref();
        let refused = |why: String| {
            anyhow::anyhow!(
                "run '{tag}': the volume recorded on configmap/{name} is refused: {why} (tf-spawner never records that: someone who may edit the namespace changed it; put back what the run was spawned with, or read the claim with a pod of your own)"
            )
        };
        let folder = annotations
            .and_then(|a| a.get(VOLUME_FOLDER_ANNOTATION))
            .cloned();
        if let Some(f) = &folder {
            OutputVolume::check_folder(f).map_err(refused)?;
        }
        let Some(text) = annotations.and_then(|a| a.get(VOLUME_ANNOTATION)) else {
            return Ok(None);
        };
        let volume = OutputVolume::from_annotation(text).map_err(refused)?;
        Ok(Some(OutputVolume { folder, ..volume }))
    }

    /// The ConfigMap `name` whole, if it exists.
    pub async fn config_map(&self, name: &str) -> Result<Option<ConfigMap>> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let got = match super::checked(name) {
            Ok(name) => retry(&self.policy, || api.get_opt(name), Plain).await,
            Err(e) => Err(e),
        };
        got.map_err(|e| self.explain(&format!("reading configmap/{name}"), &e))
    }

    /// A JSON merge patch of ConfigMap `name` (retried: a merge patch gives the same
    /// object however often it lands).
    pub async fn patch_config_map(
        &self,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), super::retry::CallError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let (params, patch) = (PatchParams::default(), Patch::Merge(patch));
        let name = super::checked(name)?;
        retry(&self.policy, || api.patch(name, &params, &patch), Plain)
            .await
            .map(drop)
    }

    /// The image and node of the run's pods (the first placed one's node).
    pub async fn run_placement(&self, tag: &str) -> Result<RunPlacement> {
        let pods = self
            .list::<Pod>(&run_selector(tag))
            .await
            .map_err(|e| self.explain("listing pods", &e))?;
        let spec = |p: &Pod| p.spec.clone().unwrap_or_default();
        Ok(RunPlacement {
            image: pods
                .iter()
                .find_map(|p| spec(p).containers.first().and_then(|c| c.image.clone())),
            node: pods.iter().find_map(|p| spec(p).node_name),
            security: pods.iter().find_map(|p| spec(p).security_context),
        })
    }

    /// Creates a helper pod (no retry of a create that may have landed: its name is
    /// its own): the pod as stored, or `None` when a pod of that name exists (409).
    pub async fn create_helper(&self, pod: &Pod) -> Result<Option<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let name = pod.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), pod).await {
            Ok(pod) => Ok(Some(pod)),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(e) => Err(self.explain_for(
                &format!("creating pod/{name}"),
                &CallError::Api(e),
                Owner::Helper,
            )),
        }
    }

    /// The helper pod `name`, if it exists.
    pub async fn pod(&self, name: &str) -> Result<Option<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let got = match super::checked(name) {
            Ok(name) => retry(&self.policy, || api.get_opt(name), Plain).await,
            Err(e) => Err(e),
        };
        got.map_err(|e| self.explain(&format!("reading pod/{name}"), &e))
    }

    /// Deletes the helper pod `name` at once (grace period 0: it holds nothing worth a
    /// clean stop), only if it is still the pod of uid `uid` (and, given, of resource
    /// version `version`: nobody changed it since it was read). `Ok(false)` when a
    /// precondition failed (409): the pod is someone else's now, or in use; a missing
    /// pod is fine.
    pub async fn delete_helper(
        &self,
        name: &str,
        uid: &str,
        version: Option<&str>,
    ) -> Result<bool> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: version.map(str::to_string),
            }),
            ..DeleteParams::default()
        };
        let name = super::checked(name).map_err(|e| self.explain("deleting a pod", &e))?;
        match retry(&self.policy, || api.delete(name, &params), Plain).await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == Some(404) => Ok(true),
            Err(e) if e.code() == Some(409) => Ok(false),
            Err(e) => Err(self.explain(&format!("deleting pod/{name}"), &e)),
        }
    }

    /// Sets (or, with `None`, removes) annotations of pod `name` if it is still at
    /// resource version `version` (a merge patch carrying it: optimistic concurrency).
    /// `Ok(None)` when it changed meanwhile (409).
    pub async fn annotate_pod(
        &self,
        name: &str,
        version: &str,
        annotations: &[(&str, Option<String>)],
    ) -> Result<Option<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let values: serde_json::Map<String, serde_json::Value> = annotations
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    v.clone().map_or(serde_json::Value::Null, Into::into),
                )
            })
            .collect();
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": version, "annotations": values}
        });
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        let name = super::checked(name).map_err(|e| self.explain("updating a pod", &e))?;
        match retry(&self.policy, || api.patch(name, &params, &patch), Plain).await {
            Ok(pod) => Ok(Some(pod)),
            Err(e) if e.code() == Some(409) => Ok(None),
            Err(e) => Err(self.explain(&format!("updating pod/{name}"), &e)),
        }
    }

    /// Runs `command` in the helper pod's first container, copying its stdout to `out`
    /// as it comes; returns how it ended.
    pub async fn exec_to(
        &self,
        pod: &str,
        command: Vec<String>,
        out: &mut (impl AsyncWrite + Unpin),
    ) -> Result<Exited> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = AttachParams::default().stdout(true).stderr(true);
        let pod = super::checked(pod).map_err(|e| anyhow!("exec in a pod: {e}"))?;
        let mut process = api
            .exec(pod, command, &params)
            .await
            .map_err(|e| anyhow!("exec in pod/{pod}: {}", in_words(&e)))?;
        let (Some(mut stdout), Some(stderr), Some(status)) =
            (process.stdout(), process.stderr(), process.take_status())
        else {
            bail!("exec in pod/{pod}: no output streams");
        };
        let read_err = read_some(stderr, 64 * 1024);
        let copy = tokio::io::copy(&mut stdout, out);
        let (copied, stderr) = tokio::join!(copy, read_err);
        copied.map_err(|e| anyhow!("reading the output of pod/{pod}: {e}"))?;
        let status = status.await;
        process
            .join()
            .await
            .map_err(|e| anyhow!("exec in pod/{pod}: {e}"))?;
        Ok(exited(status, stderr))
    }

    /// Opens a connection to `port` of pod `pod` and copies bytes both ways between it
    /// and `local` until either side closes.
    pub async fn forward(
        &self,
        pod: &str,
        port: u16,
        local: &mut (impl AsyncRead + AsyncWrite + Unpin),
    ) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pod = super::checked(pod).map_err(|e| anyhow!("port-forward to a pod: {e}"))?;
        let mut forwarder = api
            .portforward(pod, &[port])
            .await
            .map_err(|e| anyhow!("port-forward to pod/{pod}: {}", in_words(&e)))?;
        let mut upstream = forwarder
            .take_stream(port)
            .ok_or_else(|| anyhow!("port-forward to pod/{pod}: no stream for port {port}"))?;
        let copied = tokio::io::copy_bidirectional(local, &mut upstream).await;
        drop(upstream);
        forwarder.abort();
        copied
            .map(drop)
            .map_err(|e| anyhow!("port-forward to pod/{pod}: {e}"))
    }
}

/// A client error in our words: the API server's message, not the client's `Debug` of
/// its `Status`.
fn in_words(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => format!("{} ({})", s.message, s.code),
        e => e.to_string(),
    }
}

/// Up to `limit` bytes of a stream, as text; the rest is read and dropped.
async fn read_some(mut from: impl AsyncRead + Unpin, limit: usize) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The exec's Status: `Success`, or a failure whose `ExitCode` cause carries the code
/// ("command terminated with non-zero exit code").
fn exited(status: Option<Status>, stderr: String) -> Exited {
    let Some(status) = status else {
        return Exited {
            code: None,
            message: Some("the exec ended without a status".to_string()),
            stderr,
        };
    };
    if status.status.as_deref() == Some("Success") {
        return Exited {
            code: Some(0),
            message: None,
            stderr,
        };
    }
    let code = status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
        })
        .and_then(|c| c.message.as_deref()?.parse::<i32>().ok());
    Exited {
        code,
        message: status.message,
        stderr,
    }
}
