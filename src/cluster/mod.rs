//! Everything that talks to the Kubernetes API lives under this module.

mod api_proxy;
pub mod apilog;
pub mod apply;
pub mod attempt_logs;
pub mod connect;
pub mod events;
pub mod experiment;
mod fallback;
pub mod follower;
pub mod pager;
pub mod pod_logs;
pub mod preflight_reads;
pub mod queues;
pub mod record;
pub mod recreate;
pub mod remove;
pub mod retry;
mod rights;
pub mod stop;
pub mod vetting;
pub mod volume;
pub mod watch;

use std::fmt;

use anyhow::Result;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use retry::{CallError, Plain, RetryPolicy, retry};

use crate::plan::podgroup::{CoschedulingPodGroup, Gang, VolcanoPodGroup};
use crate::plan::security::{Owner, refusal};

/// The kinds of object a run is made of, in the order they are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `spawn --detach`'s supervisor (`batch/v1`): deleted first, so that it cannot
    /// restart a run being deleted.
    Job,
    Pod,
    Service,
    ConfigMap,
    Secret,
    /// `--gang`'s PodGroup, of that gang's API.
    PodGroup(Gang),
    /// `--network-policy`'s NetworkPolicy (`networking.k8s.io/v1`).
    NetworkPolicy,
}

impl Kind {
    /// kubectl's name for the kind (`pod/NAME`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Job => "job",
            Kind::Pod => "pod",
            Kind::Service => "service",
            Kind::ConfigMap => "configmap",
            Kind::Secret => "secret",
            Kind::PodGroup(_) => "podgroup",
            Kind::NetworkPolicy => "networkpolicy",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Job => "jobs",
            Kind::Pod => "pods",
            Kind::Service => "services",
            Kind::ConfigMap => "configmaps",
            Kind::Secret => "secrets",
            Kind::PodGroup(_) => "podgroups",
            Kind::NetworkPolicy => "networkpolicies",
        }
    }
}

/// `kind/name`, as kubectl prints it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    pub kind: Kind,
    pub name: String,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

/// A namespaced core/v1 object type tf-spawner manages.
pub trait RunObject:
    kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Serialize
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
    const KIND: Kind;
}

impl RunObject for Job {
    const KIND: Kind = Kind::Job;
}
impl RunObject for Pod {
    const KIND: Kind = Kind::Pod;
}
impl RunObject for Service {
    const KIND: Kind = Kind::Service;
}
impl RunObject for ConfigMap {
    const KIND: Kind = Kind::ConfigMap;
}
impl RunObject for Secret {
    const KIND: Kind = Kind::Secret;
}
impl RunObject for NetworkPolicy {
    const KIND: Kind = Kind::NetworkPolicy;
}
impl RunObject for VolcanoPodGroup {
    const KIND: Kind = Kind::PodGroup(Gang::Volcano);
}
impl RunObject for CoschedulingPodGroup {
    const KIND: Kind = Kind::PodGroup(Gang::Coscheduling);
}

/// An object as the server answered a create: its uid; the rest is skipped unparsed.
#[derive(Debug, serde::Deserialize)]
struct Stored {
    metadata: StoredMeta,
}

#[derive(Debug, serde::Deserialize)]
struct StoredMeta {
    #[serde(default)]
    uid: Option<String>,
}

/// `name` as one segment of an API URL (kube pastes names into paths unescaped): a
/// name the API server could store, else an error before anything is sent. Every
/// method that puts an object's name into a URL passes it through here.
pub(crate) fn checked(name: &str) -> Result<&str, CallError> {
    match crate::labels::segment_problem(name) {
        None => Ok(name),
        Some(problem) => Err(CallError::Api(kube::Error::BuildRequest(
            kube::core::request::Error::Validation(format!("the name {name:?} {problem}")),
        ))),
    }
}

/// A connection to one namespace of one cluster.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    namespace: String,
    server: String,
    policy: RetryPolicy,
}

impl Cluster {
    /// A client for `namespace`; no request is made. A namespace that is not a valid
    /// namespace name (a segment of every URL) is refused: the settings refuse it first,
    /// naming where it came from.
    pub fn new(config: kube::Config, namespace: String, policy: RetryPolicy) -> Result<Cluster> {
        if let Some(problem) = crate::labels::namespace_problem(&namespace) {
            return Err(crate::errors::UsageError::new(format!(
                "namespace {namespace:?} {problem}"
            ))
            .into());
        }
        // Errors name the server, and the proxy it is reached through.
        let server = match &config.proxy_url {
            Some(proxy) => format!(
                "{} (through the proxy {})",
                config.cluster_url,
                api_proxy::shown(&proxy.to_string())
            ),
            None => config.cluster_url.to_string(),
        };
        let auth = &config.auth_info;
        let credentials = auth.token.is_some()
            || auth.token_file.is_some()
            || auth.exec.is_some()
            || auth.auth_provider.is_some()
            || auth.password.is_some();
        if credentials && api_proxy::token_in_clear(&config.cluster_url) {
            crate::output::warning(&format!(
                "the API server {} is reached over plain http://: the credentials (bearer token or password) cross the network unencrypted; use its https:// address",
                config.cluster_url
            ));
        }
        let client = connect::client(config)?;
        Ok(Cluster {
            client,
            namespace,
            server,
            policy,
        })
    }

    /// The namespace every request is made in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn api<K: RunObject>(&self) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Sends one create of `obj` (no retry: the caller, [`apply`], retries and knows
    /// when a create may have landed) and returns the new object's uid. The server
    /// answers with the whole object as stored (a pod with every default filled in); only
    /// the uid is parsed, not a typed copy of each of N pods.
    async fn create_once<K: RunObject>(&self, obj: &K) -> Result<Option<String>, kube::Error> {
        let url = K::url_path(&(), Some(&self.namespace));
        let body = serde_json::to_vec(obj).map_err(kube::Error::SerdeError)?;
        let mut request = kube::core::Request::new(url)
            .create(&kube::api::PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("create");
        let answer: Stored = self.client.request(request).await?;
        Ok(answer.metadata.uid)
    }

    /// Whether the namespace is known not to exist (a GET of it answered 404); `false`
    /// when it exists or this cannot be told (no right to read namespaces, an error):
    /// for "no runs there" versus "no such namespace" (`list -n typo`).
    pub async fn namespace_missing(&self) -> bool {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        matches!(
            retry(&self.policy, || api.get_opt(&self.namespace), Plain).await,
            Ok(None)
        )
    }

    /// Lists objects of one kind matching a label selector, with retries.
    pub async fn list<K: RunObject>(&self, selector: &str) -> Result<Vec<K>, CallError> {
        let api = self.api::<K>();
        let params = ListParams::default().labels(selector);
        let list = retry(&self.policy, || api.list(&params), Plain).await?;
        Ok(list.items)
    }

    /// The metadata (names, uids, annotations) of the objects of one kind matching
    /// `selector`: a `PartialObjectMetadataList`, whatever the size of the objects.
    pub async fn list_metadata<K: RunObject>(
        &self,
        selector: &str,
    ) -> Result<Vec<ObjectMeta>, CallError> {
        let api = self.api::<K>();
        let params = ListParams::default().labels(selector);
        let list = retry(&self.policy, || api.list_metadata(&params), Plain).await?;
        Ok(list.items.into_iter().map(|o| o.metadata).collect())
    }

    /// [`Cluster::list_metadata`] in the cluster's namespace or, with `all_namespaces`, in
    /// every namespace the credentials can read.
    pub async fn list_metadata_in<K: RunObject>(
        &self,
        selector: &str,
        all_namespaces: bool,
    ) -> Result<Vec<ObjectMeta>, CallError> {
        if !all_namespaces {
            return self.list_metadata::<K>(selector).await;
        }
        let api: Api<K> = Api::all(self.client.clone());
        let params = ListParams::default().labels(selector);
        let list = retry(&self.policy, || api.list_metadata(&params), Plain).await?;
        Ok(list.items.into_iter().map(|o| o.metadata).collect())
    }

    /// Lists objects of one kind matching a label selector in pages (see [`pager`]),
    /// in the cluster's namespace or, with `all_namespaces`, in every namespace the
    /// credentials can read: `on_page(items, first)` gets each page; `first` says a
    /// list (re)starts and earlier pages are to be forgotten.
    pub async fn list_pages<K: RunObject>(
        &self,
        selector: &str,
        all_namespaces: bool,
        on_page: impl FnMut(Vec<K>, bool),
    ) -> Result<(), CallError> {
        let api: Api<K> = if all_namespaces {
            Api::all(self.client.clone())
        } else {
            self.api::<K>()
        };
        pager::list_pages(&self.policy, &api, selector, on_page).await
    }

    /// Deletes one object if it is still the one with `uid`; a missing object is fine.
    pub async fn delete_exact<K: RunObject>(&self, name: &str, uid: &str) -> Result<(), CallError> {
        self.delete_exact_within::<K>(name, uid, None).await
    }

    /// [`Cluster::delete_exact`] with a grace period; `Some(0)` removes the object from
    /// the API at once, without its kubelet's confirmation (a force deletion: for pods
    /// whose node stopped reporting, which nobody can confirm).
    pub async fn delete_exact_within<K: RunObject>(
        &self,
        name: &str,
        uid: &str,
        grace_seconds: Option<u32>,
    ) -> Result<(), CallError> {
        let api = self.api::<K>();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            grace_period_seconds: grace_seconds,
            // batch/v1 orphans a Job's pods by default; its pod goes with it.
            propagation_policy: (K::KIND == Kind::Job)
                .then_some(kube::api::PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        let name = checked(name)?;
        match retry(&self.policy, || api.delete(name, &params), Plain).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(404) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// A JSON merge patch of one object (retried: applying it twice is applying it once).
    pub async fn merge_patch<K: RunObject>(
        &self,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), CallError> {
        let api = self.api::<K>();
        let params = PatchParams::default();
        let patch = Patch::Merge(patch);
        let name = checked(name)?;
        retry(&self.policy, || api.patch(name, &params, &patch), Plain)
            .await
            .map(|_| ())
    }

    /// Fails with one clear error when `gang`'s PodGroup API is not served (a discovery
    /// GET of `/apis/GROUP/VERSION`: 404, or no `podgroups` in it).
    pub async fn check_pod_group_api(&self, gang: Gang) -> Result<()> {
        let version = gang.api_version();
        let found = retry(
            &self.policy,
            || self.client.list_api_group_resources(version),
            Plain,
        )
        .await;
        match found {
            Ok(list) if list.resources.iter().any(|r| r.name == "podgroups") => Ok(()),
            Ok(_) => Err(self.not_installed(gang).await),
            Err(e) if e.code() == Some(404) => Err(self.not_installed(gang).await),
            Err(e) => Err(self.explain(&format!("looking up {}", gang.api_title()), &e)),
        }
    }

    /// `gang`'s API is not served: one error, naming an older scheduler-plugins when that
    /// is what is installed (before v0.25 its API group was `scheduling.sigs.k8s.io`,
    /// and the pods' label `pod-group.scheduling.sigs.k8s.io`, which tf-spawner does
    /// not write).
    async fn not_installed(&self, gang: Gang) -> anyhow::Error {
        let legacy = gang == Gang::Coscheduling
            && self
                .client
                .list_api_group_resources(LEGACY_COSCHEDULING_API)
                .await
                .is_ok_and(|l| l.resources.iter().any(|r| r.name == "podgroups"));
        if legacy {
            return anyhow::anyhow!(
                "this cluster has scheduler-plugins before v0.25 (its PodGroup API {LEGACY_COSCHEDULING_API}); --gang coscheduling needs v0.25 or later ({})",
                gang.api_version()
            );
        }
        anyhow::anyhow!("{} is not installed on this cluster", gang.api_title())
    }

    /// An error about this cluster, phrased for a user.
    pub fn explain(&self, doing: &str, err: &CallError) -> anyhow::Error {
        self.explain_for(doing, err, Owner::Task)
    }

    /// [`Self::explain`], for an error about a pod of `owner`: a Pod Security refusal
    /// names what fixes it (`plan::security::refusal`).
    pub fn explain_for(&self, doing: &str, err: &CallError, owner: Owner) -> anyhow::Error {
        if err.code() == Some(403)
            && let Some(status) = err.status()
            && let Some(line) = refusal(&status.message, &self.namespace, owner)
        {
            return anyhow::anyhow!("{doing}: {line}");
        }
        if err.code() == Some(403)
            && let Some(status) = err.status()
            && let Some(line) = rights::missing_right(&status.message, &self.namespace)
        {
            return anyhow::anyhow!("{doing}: {line}");
        }
        match err.code() {
            Some(401) => anyhow::anyhow!(
                "{doing}: the API server at {} rejected the credentials (401 Unauthorized); check the kubeconfig's user or token",
                self.server
            ),
            Some(404)
                if err
                    .status()
                    .is_some_and(|s| s.message.starts_with("namespaces ")) =>
            {
                anyhow::anyhow!(
                    "{doing}: namespace '{}' does not exist (choose another with -n)",
                    self.namespace
                )
            }
            None if err.unanswered() => anyhow::anyhow!(
                "{doing}: cannot reach the Kubernetes API server at {}: {err}",
                self.server
            ),
            _ => anyhow::anyhow!("{doing}: {err}"),
        }
    }
}

/// scheduler-plugins' PodGroup API before v0.25.
const LEGACY_COSCHEDULING_API: &str = "scheduling.sigs.k8s.io/v1alpha1";
