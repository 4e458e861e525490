//! Deleting a run: every pod, service, config map, secret, gang PodGroup (Volcano's,
//! scheduler-plugins') and NetworkPolicy labelled `training_attempt=TAG` in the
//! namespace, and nothing else. Every kind is deleted by the run's label, whatever the
//! run's ConfigMap records: an annotation anyone who may edit the ConfigMap can write
//! never makes `-d` skip what the label finds (issue 49).
//!
//! Pods and services: one list of their names (metadata only), then one DELETE per
//! object with its uid as a precondition, `--max-in-flight` at a time. A server works
//! through a collection DELETE one object at a time, and on a real v1.20 server that
//! took twice as long (`cargo bench --bench real_apiserver`: 1,000 pods in 6.3 s against
//! 3.1 s; 100 in 435 ms against 177 ms), and old servers refuse it for services anyway.
//! Config maps and secrets (one each per run): one collection DELETE, or a list and
//! single DELETEs where the server refuses it. (`ops::delete::wait_gone` then follows
//! the pods that linger for their grace period with one list and one watch.)
//!
//! What the ConfigMap records (its Secret [`ENV_SECRET_ANNOTATION`], its gang
//! [`POD_GROUP_ANNOTATION`], its NetworkPolicy [`NETWORK_POLICY_ANNOTATION`]; the
//! ConfigMap's DELETE answers with them) only says how to read a refusal: a kind the
//! record says the run has must be deleted, so a 403 on it is an error; for a kind the
//! record says it lacks (or without a record, for the optional kinds), a 403 (these
//! credentials have no rights on it: many have none on secrets or PodGroups) or a 404
//! (the cluster has no such API) means there is nothing this credential could delete,
//! without a word.
use anyhow::{Result, anyhow};
use futures::{StreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, ListParams};

use super::retry::{CallError, Plain, retry};
use super::{Cluster, Kind, ObjectRef, RunObject};
use crate::labels::{
    ENV_SECRET_ANNOTATION, EXPERIMENT_LABEL, HELPER_LABEL, NETWORK_POLICY_ANNOTATION,
    NO_ENV_SECRET, POD_GROUP_ANNOTATION, config_map_name, whole_run_selector,
};
use crate::plan::podgroup::{Gang, with_pod_group_type};

/// What a delete removed, and what it could not.
#[derive(Debug, Default)]
pub struct Deleted {
    pub removed: Vec<ObjectRef>,
    /// Kinds whose deletion failed, with the reason.
    pub failed: Vec<(Kind, String)>,
    /// What the user should know although nothing failed (for stderr).
    pub notes: Vec<String>,
}

/// One deleted object.
#[derive(Debug)]
struct Gone {
    name: String,
    /// The object's [`ENV_SECRET_ANNOTATION`], if it has one.
    env_secret: Option<String>,
    /// The object's [`POD_GROUP_ANNOTATION`], if it has one.
    pod_group: Option<String>,
    /// The object's [`NETWORK_POLICY_ANNOTATION`], if it has one.
    network_policy: Option<String>,
}

/// Why one kind could not be deleted.
#[derive(Debug)]
struct KindFailed {
    why: String,
    /// The server answered 403: this credential may not do it.
    forbidden: bool,
}

/// What the run's ConfigMap says about its Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SecretRecord {
    /// The run was spawned without `-e`.
    None,
    /// The run has a Secret.
    Some,
    /// No record: no ConfigMap of the run was deleted (it was gone already, or its
    /// delete failed), or an older tf-spawner made it.
    Unknown,
}

impl SecretRecord {
    /// From the records deleted (none: unknown): a Secret if any run has one.
    fn of(records: Option<&[&Gone]>) -> SecretRecord {
        let Some(records) = records else {
            return SecretRecord::Unknown;
        };
        let mut out = SecretRecord::None;
        for r in records {
            match r.env_secret.as_deref() {
                Some(NO_ENV_SECRET) => {}
                Some(_) => return SecretRecord::Some,
                None => out = SecretRecord::Unknown,
            }
        }
        out
    }
}

/// What a delete removes: one run's objects (`-d -t TAG`), or every object of an
/// experiment's runs (`-d --experiment NAME`), in one pass per kind.
#[derive(Debug, Clone, Copy)]
pub enum Selected<'a> {
    Run(&'a str),
    /// The run but its supervisor's Job, pod and Secret: the `--cleanup` its supervisor
    /// does ([`delete_run_as_supervisor`]).
    RunButSupervisor(&'a str),
    Experiment(&'a str),
}

impl Selected<'_> {
    /// `run 'T'`, `experiment 'N'`.
    pub fn what(&self) -> String {
        match self {
            Selected::Run(tag) | Selected::RunButSupervisor(tag) => format!("run '{tag}'"),
            Selected::Experiment(name) => format!("experiment '{name}'"),
        }
    }

    pub fn selector(&self) -> String {
        match self {
            Selected::Run(tag) => whole_run_selector(tag),
            Selected::RunButSupervisor(tag) => format!(
                "{},{HELPER_LABEL}!={}",
                whole_run_selector(tag),
                crate::plan::supervisor::SUPERVISOR
            ),
            Selected::Experiment(name) => format!("{EXPERIMENT_LABEL}={name}"),
        }
    }

    /// The deleted ConfigMaps that are runs' records: the run's own, or each run's of
    /// the experiment (they carry [`ENV_SECRET_ANNOTATION`]); `None` when there is none.
    fn records<'g>(&self, config_maps: &'g Result<Vec<Gone>, KindFailed>) -> Option<Vec<&'g Gone>> {
        let gone = config_maps.as_ref().ok()?;
        let found: Vec<&Gone> = match self {
            Selected::Run(tag) | Selected::RunButSupervisor(tag) => {
                let name = config_map_name(tag);
                gone.iter().filter(|o| o.name == name).collect()
            }
            Selected::Experiment(_) => gone.iter().filter(|o| o.env_secret.is_some()).collect(),
        };
        (!found.is_empty()).then_some(found)
    }
}

pub async fn delete_run(cluster: &Cluster, tag: &str, max_in_flight: usize) -> Deleted {
    delete_selected(cluster, Selected::Run(tag), max_in_flight).await
}

/// The run deleted by its own supervisor (`--detach --cleanup`): everything else first,
/// then its Secret and, last, its Job, whose pod (this process) then ends.
pub async fn delete_run_as_supervisor(
    cluster: &Cluster,
    tag: &str,
    max_in_flight: usize,
) -> Deleted {
    let mut deleted =
        delete_selected(cluster, Selected::RunButSupervisor(tag), max_in_flight).await;
    let own = format!(
        "{},{HELPER_LABEL}={}",
        whole_run_selector(tag),
        crate::plan::supervisor::SUPERVISOR
    );
    let secrets = delete_one_by_one::<Secret>(cluster, &own, max_in_flight).await;
    let jobs = delete_one_by_one::<Job>(cluster, &own, max_in_flight).await;
    deleted.add([(Kind::Secret, secrets), (Kind::Job, jobs)].into_iter());
    deleted
}

/// Deletes every object `which` selects.
pub async fn delete_selected(
    cluster: &Cluster,
    which: Selected<'_>,
    max_in_flight: usize,
) -> Deleted {
    // The supervisors before anything else (`spawn --detach`): one still following
    // would take the deletes below for a failure and restart the run.
    let jobs = match which {
        Selected::RunButSupervisor(_) => Ok(Vec::new()),
        _ => stop_supervisors(cluster, &which.selector(), max_in_flight).await,
    };
    let mut out = Deleted::default();
    out.add([(Kind::Job, jobs)].into_iter());
    let rest = delete_the_rest(cluster, which, max_in_flight).await;
    out.removed.extend(rest.removed);
    out.failed.extend(rest.failed);
    out.notes.extend(rest.notes);
    out
}

/// Every kind but the supervisors' Jobs, of what `which` selects.
async fn delete_the_rest(cluster: &Cluster, which: Selected<'_>, max_in_flight: usize) -> Deleted {
    let selector = which.selector();
    // The ConfigMap first: its answer says whether there are secrets and PodGroups, and
    // a spawn of the tag at the same time checks that its ConfigMap is still there once
    // its pods are made (`apply::create`). Listed only after the ConfigMap is gone, the
    // pods and services that spawn made before it looked are found here; one made
    // after, the spawn finds its ConfigMap gone and deletes it again. No pod is left
    // without its ConfigMap (stuck in ContainerCreating).
    let config_maps = delete_kind::<ConfigMap>(cluster, &selector, max_in_flight).await;
    let (record, gangs, policy) = what_else(which, &config_maps);
    let secrets = async {
        match delete_kind::<Secret>(cluster, &selector, max_in_flight).await {
            Err(e) if e.forbidden && record == SecretRecord::None => Ok(Vec::new()),
            other => other,
        }
    };
    let pod_groups = delete_pod_groups_of_run(cluster, &selector, gangs.as_deref());
    let policies = delete_network_policy_of_run(cluster, &selector, policy);
    let (pods, services, secrets, (pod_groups, policies)) = tokio::join!(
        delete_one_by_one::<Pod>(cluster, &selector, max_in_flight),
        delete_one_by_one::<Service>(cluster, &selector, max_in_flight),
        secrets,
        async { tokio::join!(pod_groups, policies) },
    );
    let mut out = Deleted::default();
    // Without a record, a credential that may not touch secrets cannot tell whether a
    // secret of the run is left. When nothing else of the run was there either, there is
    // no run to speak of: not an error, but said. When something was, the run may well
    // have a secret: an error, as for any kind that could not be deleted.
    let nothing_else = [&pods, &services, &config_maps, &policies]
        .into_iter()
        .chain(pod_groups.iter().map(|(_, r)| r))
        .all(|r| r.as_ref().is_ok_and(Vec::is_empty));
    let secrets = match secrets {
        Err(e) if e.forbidden && record == SecretRecord::Unknown && nothing_else => {
            out.notes.push(format!(
                "nothing else of {} was found, and its secrets could not be looked for: {}",
                which.what(),
                e.why
            ));
            Ok(Vec::new())
        }
        other => other,
    };
    let kinds = [
        (Kind::Pod, pods),
        (Kind::Service, services),
        (Kind::ConfigMap, config_maps),
        (Kind::Secret, secrets),
        (Kind::NetworkPolicy, policies),
    ];
    out.add(kinds.into_iter().chain(pod_groups));
    out
}

impl Deleted {
    /// Each kind's outcome: its objects removed (sorted by name), or why it failed.
    fn add(&mut self, kinds: impl Iterator<Item = (Kind, Result<Vec<Gone>, KindFailed>)>) {
        for (kind, result) in kinds {
            match result {
                Ok(gone) => {
                    let mut names: Vec<String> = gone.into_iter().map(|o| o.name).collect();
                    names.sort();
                    self.removed
                        .extend(names.into_iter().map(|name| ObjectRef { kind, name }));
                }
                Err(e) => self.failed.push((kind, e.why)),
            }
        }
    }
}

/// How long `-d` waits for a supervisor's pod to end (it stops at its SIGTERM, within
/// `ops::wait::CANCEL_BOUND`; a pod on a lost node never says so).
const SUPERVISOR_GONE: std::time::Duration = std::time::Duration::from_secs(40);

/// Deletes the supervisors' Jobs (a refusal or no such API: none this credential could
/// have made), then their pods, and waits until those pods are gone (at most
/// [`SUPERVISOR_GONE`]). The Jobs deleted.
async fn stop_supervisors(
    cluster: &Cluster,
    selector: &str,
    max_in_flight: usize,
) -> Result<Vec<Gone>, KindFailed> {
    let jobs = delete_optional::<Job>(cluster, selector, true).await?;
    if jobs.is_empty() {
        return Ok(jobs);
    }
    let pods = format!(
        "{selector},{HELPER_LABEL}={}",
        crate::plan::supervisor::SUPERVISOR
    );
    delete_one_by_one::<Pod>(cluster, &pods, max_in_flight).await?;
    let began = std::time::Instant::now();
    while began.elapsed() < SUPERVISOR_GONE {
        match cluster.list_metadata::<Pod>(&pods).await {
            Ok(left) if !left.is_empty() => {
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            _ => break,
        }
    }
    Ok(jobs)
}

/// One collection DELETE of the run's objects of kind `K`, with retries.
async fn collection_delete<K: RunObject>(
    cluster: &Cluster,
    selector: &str,
) -> Result<Vec<Gone>, CallError> {
    let list_params = ListParams::default().labels(selector);
    // batch/v1 orphans a Job's pods by default, holding the Job with a finalizer until it
    // has (seen on v1.20): in the background, the Job goes at once and its pods after.
    let delete_params = DeleteParams {
        propagation_policy: (K::KIND == Kind::Job)
            .then_some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    retry(
        &cluster.policy,
        || delete_collection::<K>(cluster, &delete_params, &list_params),
        Plain,
    )
    .await
}

async fn delete_kind<K: RunObject>(
    cluster: &Cluster,
    selector: &str,
    max_in_flight: usize,
) -> Result<Vec<Gone>, KindFailed> {
    match collection_delete::<K>(cluster, selector).await {
        Ok(gone) => Ok(gone),
        Err(e) if matches!(e.code(), Some(405) | Some(404)) => {
            delete_one_by_one::<K>(cluster, selector, max_in_flight).await
        }
        Err(e) => Err(explain::<K>(cluster, &e)),
    }
}

/// The run's NetworkPolicies, by label; a refusal is an error only when the record says
/// it has one (`policy`: what the ConfigMap says, `None` without a record).
async fn delete_network_policy_of_run(
    cluster: &Cluster,
    selector: &str,
    policy: Option<bool>,
) -> Result<Vec<Gone>, KindFailed> {
    delete_optional::<NetworkPolicy>(cluster, selector, policy != Some(true)).await
}

/// The run's PodGroups of every gang's kind (`Gang::ALL`), by label; a refusal is an
/// error only for the gang the record names (`gangs`: none, for most runs).
async fn delete_pod_groups_of_run(
    cluster: &Cluster,
    selector: &str,
    gangs: Option<&[Gang]>,
) -> Vec<(Kind, Result<Vec<Gone>, KindFailed>)> {
    futures::future::join_all(Gang::ALL.into_iter().map(|gang| async move {
        let recorded = gangs.is_some_and(|g| g.contains(&gang));
        let result = with_pod_group_type!(gang, K => {
            delete_optional::<K>(cluster, selector, !recorded).await
        });
        (Kind::PodGroup(gang), result)
    }))
    .await
}

/// What the deleted ConfigMaps record of the runs' other objects: whether they have a
/// Secret, the gangs of their PodGroups, whether they have a NetworkPolicy.
fn what_else(
    which: Selected<'_>,
    config_maps: &Result<Vec<Gone>, KindFailed>,
) -> (SecretRecord, Option<Vec<Gang>>, Option<bool>) {
    let records = which.records(config_maps);
    let policy = records
        .as_ref()
        .map(|r| r.iter().any(|o| o.network_policy.is_some()));
    (
        SecretRecord::of(records.as_deref()),
        gangs_of(records.as_deref()),
        policy,
    )
}

/// The gangs whose PodGroups the runs' ConfigMaps record: `Some(&[])` for runs without
/// one, `None` when no ConfigMap of a run was deleted (no record). Whether a run has a
/// NetworkPolicy is recorded the same way ([`NETWORK_POLICY_ANNOTATION`]; a ConfigMap
/// without it, from a run without one or an older tf-spawner, says no).
fn gangs_of(records: Option<&[&Gone]>) -> Option<Vec<Gang>> {
    let mut gangs: Vec<Gang> = Vec::new();
    for gang in records?
        .iter()
        .filter_map(|o| o.pod_group.as_deref().and_then(Gang::parse))
    {
        if !gangs.contains(&gang) {
            gangs.push(gang);
        }
    }
    Some(gangs)
}

/// One collection DELETE of a kind a run may not have (a PodGroup kind, NetworkPolicies).
/// A 404 means the cluster has no such API: nothing to delete. Unless the record says
/// the run has one (`guessing`), a 403 means the same for these credentials.
async fn delete_optional<K: RunObject>(
    cluster: &Cluster,
    selector: &str,
    guessing: bool,
) -> Result<Vec<Gone>, KindFailed> {
    match collection_delete::<K>(cluster, selector).await {
        Ok(gone) => Ok(gone),
        Err(e) if e.code() == Some(404) => Ok(Vec::new()),
        Err(e) if guessing && e.code() == Some(403) => Ok(Vec::new()),
        Err(e) => Err(explain::<K>(cluster, &e)),
    }
}

/// A collection DELETE, answered with the deleted objects (or a `Status`, which says
/// nothing about them). Only their names and annotations are needed, so it asks for
/// metadata only (servers since 1.15 honour it; others send whole objects, which parse
/// the same): whole pods carry every pod's `TF_CONFIG`, O(N²) bytes — 44 MB for 1,000
/// workers.
async fn delete_collection<K: RunObject>(
    cluster: &Cluster,
    dp: &DeleteParams,
    lp: &ListParams,
) -> Result<Vec<Gone>, kube::Error> {
    let url = K::url_path(&(), Some(&cluster.namespace));
    let mut request = kube::core::Request::new(url)
        .delete_collection(dp, lp)
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("delete_collection");
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(METADATA_ONLY),
    );
    let response = cluster
        .client
        .send(request.map(kube::client::Body::from))
        .await?;
    let code = response.status();
    let body = response.into_body().collect_bytes().await?;
    if code.is_client_error() || code.is_server_error() {
        let status = serde_json::from_slice::<kube::core::Status>(&body).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&body);
            kube::core::Status::failure(text.trim(), "Failed to parse error data")
        });
        return Err(kube::Error::Api(status.with_code(code.as_u16()).boxed()));
    }
    let answer: DeletedList = serde_json::from_slice(&body).map_err(kube::Error::SerdeError)?;
    Ok(answer
        .items
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| {
            let mut annotations = o.metadata.annotations.unwrap_or_default();
            Some(Gone {
                name: o.metadata.name?,
                env_secret: annotations.remove(ENV_SECRET_ANNOTATION),
                pod_group: annotations.remove(POD_GROUP_ANNOTATION),
                network_policy: annotations.remove(NETWORK_POLICY_ANNOTATION),
            })
        })
        .collect())
}

/// Asks for a `PartialObjectMetadataList`, falling back to the full list.
const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// What a collection DELETE answers, names and annotations only (a `Status` has no
/// items).
#[derive(serde::Deserialize)]
struct DeletedList {
    /// `null` in an empty `PartialObjectMetadataList`.
    #[serde(default)]
    items: Option<Vec<DeletedItem>>,
}

#[derive(serde::Deserialize)]
struct DeletedItem {
    metadata: DeletedMeta,
}

#[derive(serde::Deserialize)]
struct DeletedMeta {
    name: Option<String>,
    #[serde(default)]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

async fn delete_one_by_one<K: RunObject>(
    cluster: &Cluster,
    selector: &str,
    max_in_flight: usize,
) -> Result<Vec<Gone>, KindFailed> {
    let items = cluster
        .list_metadata::<K>(selector)
        .await
        .map_err(|e| explain::<K>(cluster, &e))?;
    let results: Vec<Result<Gone, KindFailed>> = stream::iter(items)
        .map(|meta| async move {
            let name = meta.name.clone().unwrap_or_default();
            let uid = meta.uid.clone().unwrap_or_default();
            let env_secret = meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(ENV_SECRET_ANNOTATION).cloned());
            match cluster.delete_exact::<K>(&name, &uid).await {
                Ok(()) => Ok(Gone {
                    name,
                    env_secret,
                    pod_group: None,
                    network_policy: None,
                }),
                Err(e) => Err(KindFailed {
                    why: format!("{}/{name}: {e}", K::KIND.as_str()),
                    forbidden: e.code() == Some(403),
                }),
            }
        })
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    let (ok, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    if let Some(Err(first)) = failed.into_iter().next() {
        return Err(first);
    }
    Ok(ok.into_iter().filter_map(Result::ok).collect())
}

fn explain<K: RunObject>(cluster: &Cluster, e: &CallError) -> KindFailed {
    KindFailed {
        why: cluster
            .explain(&format!("deleting {}", K::KIND.plural()), e)
            .to_string(),
        forbidden: e.code() == Some(403),
    }
}

/// The error for a delete that left objects behind.
pub fn failure(deleted: &Deleted, tag: &str, namespace: &str) -> Option<anyhow::Error> {
    failure_of(deleted, Selected::Run(tag), namespace)
}

/// The error for a delete of `which` that left objects behind.
pub fn failure_of(
    deleted: &Deleted,
    which: Selected<'_>,
    namespace: &str,
) -> Option<anyhow::Error> {
    if deleted.failed.is_empty() {
        return None;
    }
    let reasons: Vec<&str> = deleted.failed.iter().map(|(_, why)| why.as_str()).collect();
    let kinds: Vec<&str> = deleted.failed.iter().map(|(k, _)| k.plural()).collect();
    Some(anyhow!(
        "{}; {} of {} may be left in namespace '{namespace}' (see: kubectl get {} -n {namespace} -l {})",
        reasons.join("; "),
        kinds.join(", "),
        which.what(),
        kinds.join(","),
        which.selector()
    ))
}
