//! The queues a run names, checked before its first create, and Kueue's hold on its
//! first pod, checked after it (docs/shared-clusters.md):
//!
//! - `--queue`: the Kueue LocalQueue must exist in the namespace: a pod naming a
//!   missing one waits, gated, for ever. It is read in the newest version of
//!   `kueue.x-k8s.io` the cluster serves ([`KUEUE_VERSIONS`]), found by one discovery
//!   of the group (`GET /apis/kueue.x-k8s.io`): Kueue v0.3 to v0.14 serve `v1beta1`,
//!   v0.15 to v0.19 `v1beta2` beside it, v0.20 on only `v1beta2`
//!   (kubernetes-sigs/kueue PR #14558).
//! - `--volcano-queue`: the Volcano Queue (`scheduling.volcano.sh/v1beta1`,
//!   cluster-scoped) must exist and be open: Volcano's PodGroup webhook refuses a group
//!   in a missing queue or one whose state is not `Open` (from v1.12,
//!   `pkg/webhooks/admission/podgroups/validate/validate_podgroup.go::checkQueueState`);
//!   older Volcano leaves it pending.
//! - After the first pod's create: Kueue's webhook marks every pod it takes with the
//!   label `kueue.x-k8s.io/managed=true` and the scheduling gate
//!   `kueue.x-k8s.io/admission` (`pkg/controller/jobs/pod/pod_webhook.go::Default`), and
//!   takes only pods of namespaces its `managedJobsNamespaceSelector` (or the older
//!   `podOptions.namespaceSelector`) matches, and only when its `pod` integration is
//!   enabled (off by default up to v0.15). A pod without them runs at once, unqueued.
//!
//! A missing object and a missing API both answer 404: discovery of the group/version
//! tells them apart, as for PodGroups (for Kueue, the group's discovery comes first). Credentials that may not read the queue (403)
//! are warned about, and the spawn goes on: many teams may create pods but not read
//! Kueue's or Volcano's objects.

use anyhow::{Result, anyhow};
use k8s_openapi::api::core::v1::Pod;
use kube::api::GetParams;
use serde_json::Value;

use super::Cluster;
use super::retry::{CallError, Plain, retry};
use crate::labels::{KUEUE_ADMISSION_GATE, KUEUE_MANAGED_LABEL};

const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// The versions of [`KUEUE_GROUP`] a LocalQueue is read in, newest first. What is read
/// (the object's existence, `status.conditions` of type `Active`) is the same in both
/// (kubernetes-sigs/kueue `apis/kueue/v1beta2/localqueue_types.go` and
/// `apis/kueue/v1beta1/localqueue_types.go`, `LocalQueueActive`); Kueue v0.15 to v0.19
/// mark v1beta1 deprecated (`config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml`).
const KUEUE_VERSIONS: &[&str] = &["v1beta2", "v1beta1"];
const VOLCANO_API: &str = "scheduling.volcano.sh/v1beta1";

/// What a check found that does not stop the spawn (printed as a note).
pub type Warning = String;

impl Cluster {
    /// GET of one object by URL (`None`: 404), with retries.
    async fn get_json(&self, collection: &str, name: &str) -> Result<Option<Value>, CallError> {
        let name = super::checked(name)?;
        let answer = retry(
            &self.policy,
            || {
                let request = kube::core::Request::new(collection)
                    .get(name, &GetParams::default())
                    .map_err(kube::Error::BuildRequest);
                async move { self.client.request::<Value>(request?).await }
            },
            Plain,
        )
        .await;
        match answer {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `group/version` serves `plural` (discovery; 404: no such API).
    async fn serves(&self, api_version: &str, plural: &str) -> Result<bool, CallError> {
        let found = retry(
            &self.policy,
            || self.client.list_api_group_resources(api_version),
            Plain,
        )
        .await;
        match found {
            Ok(list) => Ok(list.resources.iter().any(|r| r.name == plural)),
            Err(e) if e.code() == Some(404) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `--queue NAME`: the LocalQueue must exist in the namespace.
    pub async fn check_local_queue(&self, name: &str) -> Result<Option<Warning>> {
        let ns = &self.namespace;
        let doing = format!("checking Kueue LocalQueue '{name}'");
        let cannot_read = || {
            Ok(Some(format!(
                "cannot check Kueue LocalQueue '{name}' (these credentials may not read localqueues.kueue.x-k8s.io in namespace '{ns}'); going on"
            )))
        };
        let not_installed = |api: &str| {
            Err(anyhow!(
                "--queue {name}: Kueue is not installed on this cluster (no LocalQueue API {api}); a Volcano queue is --volcano-queue"
            ))
        };
        let any = format!("{KUEUE_GROUP}/{}", KUEUE_VERSIONS.join(" or "));
        let version = match self.get_json("/apis", KUEUE_GROUP).await {
            Ok(Some(group)) => newest_served(&group),
            Ok(None) => return not_installed(&any),
            Err(e) if e.code() == Some(403) => return cannot_read(),
            Err(e) => return Err(self.explain(&doing, &e)),
        };
        let api = match version {
            Ok(version) => format!("{KUEUE_GROUP}/{version}"),
            Err(served) if served.is_empty() => return not_installed(&any),
            Err(served) => {
                return Err(anyhow!(
                    "--queue {name}: this cluster's Kueue serves {KUEUE_GROUP} {served}, and tf-spawner reads LocalQueues in {} only: a newer tf-spawner is needed",
                    KUEUE_VERSIONS.join(" or ")
                ));
            }
        };
        let path = format!("/apis/{api}/namespaces/{ns}/localqueues");
        match self.get_json(&path, name).await {
            Ok(Some(queue)) => local_queue_state(name, &queue).map(|()| None),
            Err(e) if e.code() == Some(403) => cannot_read(),
            Err(e) => Err(self.explain(&doing, &e)),
            Ok(None) => match self.serves(&api, "localqueues").await {
                Ok(true) => Err(anyhow!(
                    "Kueue LocalQueue '{name}' does not exist in namespace '{ns}': its pods would wait for ever (the LocalQueues there: kubectl get localqueues -n {ns}; a Volcano queue is --volcano-queue)"
                )),
                Ok(false) => not_installed(&api),
                Err(e) => Err(self.explain(&doing, &e)),
            },
        }
    }

    /// `--volcano-queue NAME`: the Volcano Queue must exist and be open.
    pub async fn check_volcano_queue(&self, name: &str) -> Result<Option<Warning>> {
        let path = format!("/apis/{VOLCANO_API}/queues");
        let doing = format!("checking Volcano queue '{name}'");
        match self.get_json(&path, name).await {
            Ok(Some(queue)) => volcano_queue_state(name, &queue).map(|()| None),
            Err(e) if e.code() == Some(403) => Ok(Some(format!(
                "cannot check Volcano queue '{name}' (these credentials may not read queues.scheduling.volcano.sh); going on"
            ))),
            Err(e) => Err(self.explain(&doing, &e)),
            Ok(None) => match self.serves(VOLCANO_API, "queues").await {
                Ok(true) => Err(anyhow!(
                    "Volcano queue '{name}' does not exist (the queues: kubectl get queues.scheduling.volcano.sh)"
                )),
                Ok(false) => Err(anyhow!(
                    "--volcano-queue {name}: Volcano's Queue API ({VOLCANO_API}) is not installed on this cluster"
                )),
                Err(e) => Err(self.explain(&doing, &e)),
            },
        }
    }
}

/// The newest of [`KUEUE_VERSIONS`] an `APIGroup` (discovery of `/apis/GROUP`) lists,
/// or the versions it lists (none of them known).
fn newest_served(group: &Value) -> Result<&'static str, String> {
    let listed: Vec<&str> = group["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect();
    KUEUE_VERSIONS
        .iter()
        .find(|known| listed.contains(known))
        .copied()
        .ok_or_else(|| listed.join(", "))
}

/// A LocalQueue admits nothing while Kueue reports its condition `Active` false: its
/// ClusterQueue does not exist or is inactive, or it is stopped
/// (`pkg/controller/core/localqueue_controller.go`). Without the condition (Kueue has
/// not looked at it yet) it counts as active.
fn local_queue_state(name: &str, queue: &Value) -> Result<()> {
    let conditions = queue["status"]["conditions"].as_array();
    let inactive = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Active" && c["status"] == "False");
    match inactive {
        None => Ok(()),
        Some(c) => Err(anyhow!(
            "Kueue LocalQueue '{name}' is not active ({}: {}): its pods would wait until it is",
            c["reason"].as_str().unwrap_or("no reason"),
            c["message"].as_str().unwrap_or("no message")
        )),
    }
}

/// A Volcano queue takes new PodGroups when `status.state` is `Open`; `Closed` and
/// `Closing` refuse them. A queue whose state Volcano's queue controller has not set yet
/// (just created) is let through: it becomes `Open`
/// (`staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/types.go`, `QueueState`).
fn volcano_queue_state(name: &str, queue: &Value) -> Result<()> {
    match queue["status"]["state"].as_str() {
        None | Some("" | "Open") => Ok(()),
        Some(state) => Err(anyhow!(
            "Volcano queue '{name}' is {state}: it takes no new PodGroups (kubectl get queues.scheduling.volcano.sh {name})"
        )),
    }
}

/// Kueue's hold on a pod as the create answered it: an error when Kueue did not take
/// the pod (the run would start unqueued), naming the likely cause.
pub fn check_kueue_hold(pod: &Pod, queue: &str, namespace: &str) -> Result<()> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let managed = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(KUEUE_MANAGED_LABEL))
        .is_some_and(|v| v == "true");
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.name == KUEUE_ADMISSION_GATE));
    match (managed, gated) {
        (true, true) => Ok(()),
        (false, _) => Err(anyhow!(
            "--queue {queue}: Kueue did not take pod {name} (no {KUEUE_MANAGED_LABEL} label, no {KUEUE_ADMISSION_GATE} scheduling gate), so the run would start unqueued: Kueue does not manage namespace '{namespace}' (its managedJobsNamespaceSelector), or its pod integration is off (integrations.frameworks: pod); nothing was left"
        )),
        (true, false) => Err(anyhow!(
            "--queue {queue}: the API server dropped Kueue's scheduling gate from pod {name}, so the run would start unqueued: scheduling gates need Kubernetes 1.27 or later (1.26 with the PodSchedulingReadiness feature gate); nothing was left"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group(versions: &[&str]) -> Value {
        let v: Vec<Value> = versions.iter().map(|v| json!({ "version": v })).collect();
        json!({ "kind": "APIGroup", "versions": v })
    }

    #[test]
    fn the_newest_known_kueue_version_served_is_read() {
        assert_eq!(
            newest_served(&group(&["v1beta2", "v1beta1"])),
            Ok("v1beta2")
        );
        assert_eq!(
            newest_served(&group(&["v1beta1", "v1beta2"])),
            Ok("v1beta2")
        );
        assert_eq!(newest_served(&group(&["v1beta2"])), Ok("v1beta2"));
        assert_eq!(newest_served(&group(&["v1beta1"])), Ok("v1beta1"));
        assert_eq!(
            newest_served(&group(&["v1", "v1alpha1"])),
            Err("v1, v1alpha1".into())
        );
        assert_eq!(newest_served(&group(&[])), Err(String::new()));
    }
}
