//! Creating a plan, all or nothing: config first, then the gang's PodGroup (`--gang`),
//! then services, then pods, each stage
//! with a bounded number of requests in flight. Every attempt is written in a
//! [`Ledger`] before it is sent, so that whatever stops the spawn (an error, Ctrl-C)
//! can delete exactly what this invocation created, and nothing else.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use futures::{StreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use super::retry::{AsyncRecover, CallError, retry};
use super::{Cluster, Kind, ObjectRef, RunObject};
use crate::labels::{INVOCATION_ANNOTATION, whole_run_selector};
use crate::plan::Plan;
use crate::plan::podgroup::{Gang, PodGroup, with_pod_group_type};

/// What became of one create request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Sent, no final answer yet (or never: the spawn was interrupted).
    InFlight,
    Created {
        uid: String,
    },
    /// Refused, and no attempt can have been carried out.
    Refused,
    /// Failed after an attempt whose outcome is unknown (a dropped connection…).
    Unknown,
}

/// Every create this invocation sent, in order.
#[derive(Debug)]
pub struct Ledger {
    /// The plan's invocation id (see [`INVOCATION_ANNOTATION`]).
    invocation: String,
    entries: Mutex<Vec<(ObjectRef, Outcome)>>,
}

impl Ledger {
    pub fn new(plan: &Plan) -> Ledger {
        Ledger {
            invocation: plan.invocation.clone(),
            entries: Mutex::default(),
        }
    }

    /// The ledger of a restart's creates (`cluster/recreate/`): its own invocation id,
    /// written on the pods it re-creates.
    pub fn for_invocation(invocation: &str) -> Ledger {
        Ledger {
            invocation: invocation.to_string(),
            entries: Mutex::default(),
        }
    }

    fn open(&self, object: ObjectRef) -> usize {
        let mut entries = self.entries.lock().expect("ledger lock");
        entries.push((object, Outcome::InFlight));
        entries.len() - 1
    }

    fn close(&self, at: usize, outcome: Outcome) {
        self.entries.lock().expect("ledger lock")[at].1 = outcome;
    }

    fn snapshot(&self) -> Vec<(ObjectRef, Outcome)> {
        self.entries.lock().expect("ledger lock").clone()
    }
}

/// Objects labelled with the run's tag that already exist, a few per kind; PodGroups of
/// the `gangs`' kinds, none where the cluster lacks that API (a 404 on the list);
/// NetworkPolicies with `network_policy` (credentials without rights on them have made
/// none).
pub async fn existing(
    cluster: &Cluster,
    tag: &str,
    gangs: &[Gang],
    network_policy: bool,
) -> Result<Vec<ObjectRef>> {
    existing_selected(cluster, &whole_run_selector(tag), gangs, network_policy).await
}

/// The objects `selector` finds, of every kind a run has (`-d --experiment`'s list).
pub async fn existing_selected(
    cluster: &Cluster,
    selector: &str,
    gangs: &[Gang],
    network_policy: bool,
) -> Result<Vec<ObjectRef>> {
    let network_policies = async {
        match network_policy {
            true => optional_names::<NetworkPolicy>(cluster, selector).await,
            false => Ok(Vec::new()),
        }
    };
    let pod_groups = async {
        let mut found = Vec::new();
        for &gang in gangs {
            let result =
                with_pod_group_type!(gang, K => optional_names::<K>(cluster, selector).await);
            found.extend(result?);
        }
        Ok(found)
    };
    let (jobs, pods, services, config_maps, secrets, pod_groups, policies) = tokio::try_join!(
        optional_names::<Job>(cluster, selector),
        names::<Pod>(cluster, selector),
        names::<Service>(cluster, selector),
        names::<ConfigMap>(cluster, selector),
        secret_names(cluster, selector),
        pod_groups,
        network_policies,
    )?;
    Ok([
        jobs,
        pods,
        services,
        config_maps,
        secrets,
        pod_groups,
        policies,
    ]
    .concat())
}

/// Like [`names`], for a custom resource: a 404 (no such API) or a 403 (no rights on
/// it: then the credentials cannot have made one either) finds none.
async fn optional_names<K: RunObject>(cluster: &Cluster, selector: &str) -> Result<Vec<ObjectRef>> {
    match cluster.list::<K>(selector).await {
        Err(e) if matches!(e.code(), Some(403 | 404)) => Ok(Vec::new()),
        result => to_refs(cluster, result),
    }
}

/// Like [`names`], but credentials without rights on secrets (403) see none: they can
/// still run without an env file, and with one the secret's create is refused (403) and
/// the spawn rolled back.
async fn secret_names(cluster: &Cluster, selector: &str) -> Result<Vec<ObjectRef>> {
    match cluster.list::<Secret>(selector).await {
        Err(e) if e.code() == Some(403) => Ok(Vec::new()),
        result => to_refs(cluster, result),
    }
}

async fn names<K: RunObject>(cluster: &Cluster, selector: &str) -> Result<Vec<ObjectRef>> {
    to_refs(cluster, cluster.list::<K>(selector).await)
}

fn to_refs<K: RunObject>(
    cluster: &Cluster,
    result: Result<Vec<K>, CallError>,
) -> Result<Vec<ObjectRef>> {
    let items =
        result.map_err(|e| cluster.explain(&format!("listing {}", K::KIND.plural()), &e))?;
    Ok(items
        .iter()
        .map(|o| ObjectRef {
            kind: K::KIND,
            name: o.meta().name.clone().unwrap_or_default(),
        })
        .collect())
}

/// Creates every object of `plan`. On error the ledger tells what to roll back.
pub async fn create(
    cluster: &Cluster,
    plan: &Plan,
    ledger: &Ledger,
    max_in_flight: usize,
) -> Result<()> {
    let max_in_flight = max_in_flight.max(1);
    // The ConfigMap alone first: of two spawns of one tag at once, the one whose
    // ConfigMap the server stores wins, and the other is refused (409) before it has
    // made anything ([`AlreadyThere`]).
    let config = stream::iter([Obj::ConfigMap(&plan.config_map)]);
    run_stage(cluster, ledger, config, max_in_flight).await?;
    let secret = stream::iter(plan.secret.as_ref().map(Obj::Secret));
    run_stage(cluster, ledger, secret, max_in_flight).await?;
    if let Some(policy) = &plan.network_policy {
        let obj = Obj::NetworkPolicy(policy);
        run_stage(cluster, ledger, stream::iter([obj]), max_in_flight).await?;
    }
    if let Some(group) = &plan.pod_group {
        let obj = Obj::PodGroup(group);
        run_stage(cluster, ledger, stream::iter([obj]), max_in_flight).await?;
    }
    run_stage(
        cluster,
        ledger,
        stream::iter(plan.services.iter().map(|s| Obj::Service(Box::new(s)))),
        max_in_flight,
    )
    .await?;
    let mut pods = plan.pods.iter();
    if let Some(queue) = &plan.kueue_queue
        && let Some(first) = pods.next()
    {
        // `--queue`: the first pod alone, to see that Kueue holds it before the others
        // are sent (see `queues.rs`).
        let stored = create_probe(cluster, ledger, &first).await?;
        super::queues::check_kueue_hold(&stored, queue, &plan.namespace)?;
    }
    run_stage(
        cluster,
        ledger,
        stream::iter(pods.map(|p| Obj::Pod(Box::new(p)))),
        max_in_flight,
    )
    .await?;
    if let Some(supervisor) = &plan.supervisor {
        // Last: it follows a run that is whole; its settings before it.
        let secret = stream::iter([Obj::Secret(&supervisor.secret)]);
        run_stage(cluster, ledger, secret, max_in_flight).await?;
        let job = stream::iter([Obj::Job(&supervisor.job)]);
        run_stage(cluster, ledger, job, max_in_flight).await?;
    }
    config_map_still_there(cluster, plan).await
}

/// Creates a supervisor alone (`sweep --resume NAME --detach`: the experiment's record
/// and runs are there already): its Secret, then its Job; on error, what was made is
/// deleted again, and the error says what could not be.
pub async fn create_supervisor(
    cluster: &Cluster,
    supervisor: &crate::plan::supervisor::Supervisor,
    invocation: &str,
) -> Result<()> {
    let ledger = Ledger::for_invocation(invocation);
    let made = async {
        run_stage(
            cluster,
            &ledger,
            stream::iter([Obj::Secret(&supervisor.secret)]),
            1,
        )
        .await?;
        run_stage(
            cluster,
            &ledger,
            stream::iter([Obj::Job(&supervisor.job)]),
            1,
        )
        .await
    };
    let Err(e) = made.await else {
        return Ok(());
    };
    let left = roll_back(cluster, &ledger).await;
    if left.is_empty() {
        return Err(e);
    }
    let names: Vec<String> = left.iter().map(|(o, why)| format!("{o} ({why})")).collect();
    Err(e.context(format!(
        "rollback could not delete {}; remove them with kubectl delete",
        names.join(", ")
    )))
}

/// After the pods: the run's ConfigMap is still the one this spawn made (its
/// invocation). A `-d` of the tag at the same time deletes the ConfigMap before it lists
/// the pods (`remove.rs`): had it come between this spawn's creates, pods it never saw
/// would wait for their ConfigMap for ever (ContainerCreating). An error here rolls the
/// spawn back. One GET of its metadata.
async fn config_map_still_there(cluster: &Cluster, plan: &Plan) -> Result<()> {
    let name = plan.config_map.metadata.name.clone().unwrap_or_default();
    let api: kube::Api<ConfigMap> =
        kube::Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let found = retry(
        &cluster.policy,
        || api.get_metadata_opt(&name),
        super::retry::Plain,
    )
    .await
    .map_err(|e| cluster.explain(&format!("reading configmap/{name}"), &e))?;
    let ours = found.is_some_and(|m| {
        m.metadata
            .annotations
            .and_then(|mut a| a.remove(INVOCATION_ANNOTATION))
            .is_some_and(|i| i == plan.invocation)
    });
    if ours {
        return Ok(());
    }
    let tag = &plan.tag;
    Err(anyhow!(
        "run '{tag}' was deleted while it was being spawned (a tf-spawner -d -t {tag} at the same time?): its configmap/{name} is gone, and its pods could never start"
    ))
}

/// Creates `pods` (a restart's, see `cluster/recreate/`), at most `max_in_flight` at
/// once, each written in the ledger first. On error the ledger tells what to roll back.
pub async fn create_pods(
    cluster: &Cluster,
    pods: &[Pod],
    ledger: &Ledger,
    max_in_flight: usize,
) -> Result<()> {
    let objects = stream::iter(pods.iter().map(|p| Obj::Pod(Box::new(p.clone()))));
    run_stage(cluster, ledger, objects, max_in_flight.max(1)).await
}

/// Creates one pod like [`create_one`], and returns it as the server stored it (after
/// the admission webhooks).
async fn create_probe(cluster: &Cluster, ledger: &Ledger, pod: &Pod) -> Result<Pod> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let object = ObjectRef {
        kind: Kind::Pod,
        name: name.clone(),
    };
    let at = ledger.open(object.clone());
    let api = cluster.api::<Pod>();
    let mut recover = FindOwn::<Pod> {
        api: api.clone(),
        name,
        invocation: invocation_of(pod),
        unknown: false,
    };
    let params = kube::api::PostParams::default();
    let result = retry(&cluster.policy, || api.create(&params, pod), &mut recover).await;
    match result {
        Ok(stored) => {
            let uid = stored.metadata.uid.clone().unwrap_or_default();
            ledger.close(at, Outcome::Created { uid });
            Ok(stored)
        }
        Err(err) => {
            let unknown = recover.unknown || err.outcome_unknown();
            let outcome = if unknown {
                Outcome::Unknown
            } else {
                Outcome::Refused
            };
            ledger.close(at, outcome);
            Err(cluster.explain(&format!("creating {object}"), &err))
        }
    }
}

enum Obj<'a> {
    ConfigMap(&'a ConfigMap),
    Secret(&'a Secret),
    /// Built as it is sent, like pods (see `plan::Services`).
    Service(Box<Service>),
    PodGroup(&'a PodGroup),
    NetworkPolicy(&'a NetworkPolicy),
    /// Built as it is sent (see `plan::Pods`).
    Pod(Box<Pod>),
    Job(&'a Job),
}

/// Creates `objects`, at most `max_in_flight` at once. After the first error no new
/// create starts, but those already sent are let finish, so that the ledger knows their
/// outcome: a create dropped on the wire could land after the rollback looked for it.
async fn run_stage<'a>(
    cluster: &Cluster,
    ledger: &Ledger,
    objects: impl futures::Stream<Item = Obj<'a>>,
    max_in_flight: usize,
) -> Result<()> {
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::default();
    let failed = || first_error.lock().expect("error lock").is_some();
    objects
        .for_each_concurrent(max_in_flight, |obj| async {
            if failed() {
                return;
            }
            let result = match obj {
                Obj::ConfigMap(o) => create_one(cluster, ledger, o).await,
                Obj::Secret(o) => create_one(cluster, ledger, o).await,
                Obj::Service(o) => create_one(cluster, ledger, &*o).await,
                Obj::PodGroup(PodGroup::Volcano(o)) => create_one(cluster, ledger, o).await,
                Obj::PodGroup(PodGroup::Coscheduling(o)) => create_one(cluster, ledger, o).await,
                Obj::NetworkPolicy(o) => create_one(cluster, ledger, o).await,
                Obj::Pod(o) => create_one(cluster, ledger, &*o).await,
                Obj::Job(o) => create_one(cluster, ledger, o).await,
            };
            if let Err(e) = result {
                first_error.lock().expect("error lock").get_or_insert(e);
            }
        })
        .await;
    match first_error.into_inner().expect("error lock") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn create_one<K: RunObject>(cluster: &Cluster, ledger: &Ledger, obj: &K) -> Result<()> {
    let name = obj.meta().name.clone().unwrap_or_default();
    let object = ObjectRef {
        kind: K::KIND,
        name: name.clone(),
    };
    let at = ledger.open(object.clone());
    let mut recover = FindOwn::<K> {
        api: cluster.api::<K>(),
        name: name.clone(),
        invocation: invocation_of(obj),
        unknown: false,
    };
    let result = retry(&cluster.policy, || cluster.create_once(obj), &mut recover).await;
    match result {
        Ok(created) => {
            let uid = created.unwrap_or_default();
            ledger.close(at, Outcome::Created { uid });
            Ok(())
        }
        Err(err) => {
            let unknown = recover.unknown || err.outcome_unknown();
            ledger.close(
                at,
                if unknown {
                    Outcome::Unknown
                } else {
                    Outcome::Refused
                },
            );
            if err.status().is_some_and(|s| s.reason == "AlreadyExists") {
                let line = cluster.explain(&format!("creating {object}"), &err);
                return Err(AlreadyThere(line.to_string()).into());
            }
            if K::KIND == Kind::NetworkPolicy && err.code() == Some(403) {
                return Err(anyhow!(
                    "creating {object}: these credentials may not create network policies in namespace '{}' ({err}); spawn without --network-policy, or ask the cluster's admins for the right",
                    cluster.namespace()
                ));
            }
            Err(cluster.explain(&format!("creating {object}"), &err))
        }
    }
}

fn invocation_of<K: RunObject>(obj: &K) -> Option<String> {
    obj.meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(INVOCATION_ANNOTATION).cloned())
}

/// A create refused (409 AlreadyExists) because an object of its name is there and is
/// not this invocation's: another spawn of the tag made it first (`ops/spawn.rs` reads
/// the run again and refuses as the tag check does).
#[derive(Debug)]
pub struct AlreadyThere(String);

impl std::fmt::Display for AlreadyThere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AlreadyThere {}

/// A create that answers 409 after an earlier attempt was lost may have landed: if the
/// object there carries this invocation's annotation, it is ours and the create is done.
struct FindOwn<K: RunObject> {
    api: kube::Api<K>,
    name: String,
    invocation: Option<String>,
    unknown: bool,
}

/// Recovers the created object's uid, as [`Cluster::create_once`] returns it.
impl<K: RunObject> AsyncRecover<Option<String>> for &mut FindOwn<K> {
    async fn recover(&mut self, err: CallError) -> Result<Option<String>, CallError> {
        self.unknown |= err.outcome_unknown();
        if err.code() == Some(409)
            && self.invocation.is_some()
            && let Ok(name) = super::checked(&self.name)
            && let Ok(Some(found)) = self.api.get_opt(name).await
            && invocation_of(&found) == self.invocation
        {
            return Ok(found.meta().uid.clone());
        }
        Err(err)
    }
}

/// Recovers the created object itself (for [`create_probe`]).
impl<K: RunObject> AsyncRecover<K> for &mut FindOwn<K> {
    async fn recover(&mut self, err: CallError) -> Result<K, CallError> {
        self.unknown |= err.outcome_unknown();
        if err.code() == Some(409)
            && self.invocation.is_some()
            && let Ok(name) = super::checked(&self.name)
            && let Ok(Some(found)) = self.api.get_opt(name).await
            && invocation_of(&found) == self.invocation
        {
            return Ok(found);
        }
        Err(err)
    }
}

/// Deletes what the ledger says this invocation created (or may have created), pods
/// first. Returns the objects it could not delete, with the reason.
pub async fn roll_back(cluster: &Cluster, ledger: &Ledger) -> Vec<(ObjectRef, String)> {
    let mut entries: Vec<(ObjectRef, Outcome)> = ledger
        .snapshot()
        .into_iter()
        .filter(|(_, o)| *o != Outcome::Refused)
        .collect();
    entries.sort_by_key(|(r, _)| r.kind);
    let invocation = Some(ledger.invocation.clone());
    let results = stream::iter(entries)
        .map(|(object, outcome)| {
            let invocation = invocation.clone();
            async move {
                let result = match object.kind {
                    Kind::Job => undo::<Job>(cluster, &object, &outcome, &invocation).await,
                    Kind::Pod => undo::<Pod>(cluster, &object, &outcome, &invocation).await,
                    Kind::Service => undo::<Service>(cluster, &object, &outcome, &invocation).await,
                    Kind::ConfigMap => {
                        undo::<ConfigMap>(cluster, &object, &outcome, &invocation).await
                    }
                    Kind::Secret => undo::<Secret>(cluster, &object, &outcome, &invocation).await,
                    Kind::PodGroup(gang) => with_pod_group_type!(gang, K => {
                        undo::<K>(cluster, &object, &outcome, &invocation).await
                    }),
                    Kind::NetworkPolicy => {
                        undo::<NetworkPolicy>(cluster, &object, &outcome, &invocation).await
                    }
                };
                result.err().map(|e| (object, e.to_string()))
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let mut left: Vec<_> = results.into_iter().flatten().collect();
    left.sort();
    left
}

async fn undo<K: RunObject>(
    cluster: &Cluster,
    object: &ObjectRef,
    outcome: &Outcome,
    invocation: &Option<String>,
) -> Result<(), CallError> {
    let uid = match outcome {
        Outcome::Created { uid } => uid.clone(),
        _ => {
            // Maybe created: only if the object there is ours.
            let api = cluster.api::<K>();
            let name = super::checked(&object.name)?;
            let found = retry(&cluster.policy, || api.get_opt(name), super::retry::Plain).await?;
            match found {
                Some(o) if invocation.is_some() && invocation_of(&o) == *invocation => {
                    o.meta().uid.clone().unwrap_or_default()
                }
                _ => return Ok(()),
            }
        }
    };
    cluster.delete_exact::<K>(&object.name, &uid).await
}

/// The one-line report of a failed spawn and its rollback.
pub fn rollback_report(
    left: &[(ObjectRef, String)],
    tag: &str,
    namespace: &str,
) -> Option<anyhow::Error> {
    if left.is_empty() {
        return None;
    }
    let names: Vec<String> = left.iter().map(|(o, why)| format!("{o} ({why})")).collect();
    Some(anyhow!(
        "rollback could not delete {}; remove them with: tf-spawner -d -t {tag} -n {namespace}",
        names.join(", ")
    ))
}
