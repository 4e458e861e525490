//! Creating a planned run, all or nothing: refused when the run exists; on an error or
//! a signal, what this invocation created is deleted again.

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::apply::{self, Ledger};
use crate::errors::ExitError;
use crate::output;
use crate::plan::helper_pod;
use crate::plan::{OutputVolume, Plan};
use crate::{preflight, signals};

/// Creates every object of `plan`, at most `max_in_flight` requests at once.
pub(crate) async fn create(cluster: &Cluster, plan: &Plan, max_in_flight: usize) -> Result<()> {
    // A gang's PodGroup API must be there before anything is created.
    let gang = plan.pod_group.as_ref().map(|g| g.gang());
    if let Some(gang) = gang {
        cluster.check_pod_group_api(gang).await?;
    }
    check_queues(cluster, plan).await?;
    if let Some(volume) = &plan.volume {
        check_claim(cluster, volume, plan).await?;
    }
    let gangs: Vec<_> = gang.into_iter().collect();
    let policy = plan.network_policy.is_some();
    // The quota and node reads go with the lists of an existing run: no added round trip.
    let (existing, room) = tokio::join!(
        apply::existing(cluster, &plan.tag, &gangs, policy),
        check_room(cluster, plan)
    );
    refuse_taken(cluster, plan, &existing?).await?;
    room?;

    // Its pods recorded in its ConfigMap, for a restart after they vanish (plan/pods_record.rs).
    let recorded = crate::plan::pods_record::with_pods_record(plan)
        .map_err(|why| {
            output::note(&format!(
                "run {}: {why}; wait --restarts cannot re-create a pod that vanishes before a wait reads it",
                plan.tag
            ));
        })
        .ok();
    let plan = recorded.as_ref().unwrap_or(plan);
    let ledger = Ledger::new(plan);
    let outcome = tokio::select! {
        result = apply::create(cluster, plan, &ledger, max_in_flight) => result.map_err(Stop::Failed),
        code = signals::stop_requested() => Err(Stop::Signal(code)),
    };
    let Err(stop) = outcome else {
        return Ok(());
    };
    Err(undone(cluster, plan, &ledger, stop, &gangs).await)
}

/// Rolls back what this spawn made after `stop`, and says why it stopped: when another
/// spawn of the tag made the run's first object between the tag check and the creates
/// ([`apply::AlreadyThere`]), as the tag check says it (exit 7).
async fn undone(
    cluster: &Cluster,
    plan: &Plan,
    ledger: &Ledger,
    stop: Stop,
    gangs: &[crate::plan::podgroup::Gang],
) -> anyhow::Error {
    let left = apply::roll_back(cluster, ledger).await;
    let rollback = apply::rollback_report(&left, &plan.tag, &plan.namespace);
    let err = match stop {
        Stop::Failed(e) if e.is::<apply::AlreadyThere>() && rollback.is_none() => {
            let policy = plan.network_policy.is_some();
            match apply::existing(cluster, &plan.tag, gangs, policy).await {
                Ok(there) => refuse_taken(cluster, plan, &there).await.err().unwrap_or(e),
                Err(_) => e,
            }
        }
        Stop::Failed(e) => e,
        Stop::Signal(code) => {
            ExitError::new(code, "interrupted; the objects created so far were deleted").into()
        }
    };
    match rollback {
        Some(r) => err.context(r.to_string()),
        None => err,
    }
}

/// The tag check's refusal (exit 7) when objects of the run are there.
async fn refuse_taken(
    cluster: &Cluster,
    plan: &Plan,
    existing: &[crate::cluster::ObjectRef],
) -> Result<()> {
    if existing.is_empty() {
        return Ok(());
    }
    let record = crate::cluster::record::read(cluster, &plan.tag)
        .await
        .ok()
        .flatten();
    let taken = in_use(plan, existing, record.as_ref());
    Err(ExitError::new(crate::errors::EXIT_TAG_TAKEN, taken).into())
}

/// `--queue` and `--volcano-queue`: the queues must be there (see `cluster/queues.rs`);
/// what cannot be checked is a note.
async fn check_queues(cluster: &Cluster, plan: &Plan) -> Result<()> {
    if let Some(queue) = &plan.kueue_queue
        && let Some(warning) = cluster.check_local_queue(queue).await?
    {
        crate::output::note(&warning);
    }
    if let Some(queue) = &plan.volcano_queue
        && let Some(warning) = cluster.check_volcano_queue(queue).await?
    {
        crate::output::note(&warning);
    }
    Ok(())
}

/// `--volume`'s claim must exist. A claim only one node can mount (ReadWriteOnce) is
/// shared by the run's pods only when they land on one node: said once, as a note. A
/// ReadWriteOncePod claim cannot be shared by two pods at all.
async fn check_claim(cluster: &Cluster, volume: &OutputVolume, plan: &Plan) -> Result<()> {
    let (claim, ns, pods) = (&volume.claim, cluster.namespace(), plan.pods.len());
    let Some(found) = cluster.claim(claim).await? else {
        anyhow::bail!(
            "--volume: persistentvolumeclaim '{claim}' does not exist in namespace '{ns}'; create it first, or name an existing claim"
        );
    };
    let spec = found.spec.unwrap_or_default();
    let modes = spec.access_modes.unwrap_or_default();
    if pods > 1 && modes.iter().all(|m| m == "ReadWriteOncePod") && !modes.is_empty() {
        anyhow::bail!(
            "--volume: persistentvolumeclaim '{claim}' is ReadWriteOncePod: only one pod can mount it, and the run has {pods}; use a ReadWriteMany claim"
        );
    }
    if pods > 1 && helper_pod::one_node_only(&modes) {
        output::note(&format!(
            "persistentvolumeclaim '{claim}' is {}: the run's {pods} pods can all mount it only if they land on one node; on several nodes, use a ReadWriteMany claim",
            modes.join(",")
        ));
    }
    host_path_as_another_user(cluster, claim, spec.volume_name.as_deref(), plan).await;
    Ok(())
}

/// `--run-as-user` and a claim bound to a `hostPath` volume: its plugin ignores
/// `fsGroup`, so the directory keeps its owner and the tasks' writes fail with
/// `Permission denied` (docs/hardened.md); a warning line at the spawn, not in the pod.
async fn host_path_as_another_user(
    cluster: &Cluster,
    claim: &str,
    bound: Option<&str>,
    plan: &Plan,
) {
    let user = plan.pods.iter().next().and_then(|p| {
        let spec = p.spec.as_ref()?;
        spec.security_context.as_ref()?.run_as_user
    });
    let (Some(user), Some(pv)) = (user, bound) else {
        return;
    };
    if let Some(path) = cluster.host_path_of(pv).await {
        output::warning(&format!(
            "persistentvolumeclaim '{claim}' is bound to a hostPath volume ({pv}: {path}), which ignores fsGroup: user {user} (--run-as-user) can write it only if the directory on the node is writable by that user (chown or chmod it), else the tasks fail with Permission denied (docs/hardened.md)"
        ));
    }
}

/// The page of nodes read for a run of the built-in size: more nodes are no small
/// cluster ([`preflight::nodes::NOW_NODES`]).
const SMALL_PAGE: u32 = 64;

/// The namespace's quotas must leave room for the whole run (else one line and nothing
/// is created); a pod no node could ever hold, or (on a small cluster) none can hold now
/// for what already runs, is a warning (`preflight/`). The quotas and the nodes are read
/// once each (a page of [`SMALL_PAGE`] for a run of the built-in size), the pods of
/// every namespace once on a small cluster.
async fn check_room(cluster: &Cluster, plan: &Plan) -> Result<()> {
    let run = preflight::RunObjects::of(plan);
    // A pod of the built-in size fits any node: only a small cluster is worth a look.
    let at_most = (!run.asks_more_than_the_default()).then_some(SMALL_PAGE);
    let (quotas, nodes) = tokio::join!(cluster.resource_quotas(), cluster.nodes(at_most));
    if let Some(quotas) = quotas? {
        preflight::quota::check(&quotas, &run, cluster.namespace())
            .map_err(|line| anyhow::Error::new(QuotaShort(line)))?;
    }
    let Some(nodes) = nodes else {
        return Ok(());
    };
    let warning = match preflight::nodes::check(&nodes, &run) {
        Some(never) => Some(never),
        None if preflight::nodes::small(&nodes) => cluster
            .live_pods()
            .await
            .and_then(|pods| preflight::nodes::check_now(&nodes, &pods, &run)),
        None => None,
    };
    if let Some(warning) = warning {
        output::warning(&warning);
    }
    Ok(())
}

/// The pre-flight's refusal for want of quota: a sweep waits for its runs to free
/// some and tries again (`ops/sweep/mod.rs`).
#[derive(Debug)]
pub(crate) struct QuotaShort(pub String);

impl std::fmt::Display for QuotaShort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QuotaShort {}

/// How many runs like `plan` the namespace's quotas hold at once now, and why that many
/// (`preflight::quota::room`); `None` when no quota bounds them or the quotas cannot be
/// read.
pub(crate) async fn room(cluster: &Cluster, plan: &Plan) -> Result<Option<(u64, String)>> {
    let run = preflight::RunObjects::of(plan);
    Ok(cluster
        .resource_quotas()
        .await?
        .and_then(|quotas| preflight::quota::room(&quotas, &run)))
}

enum Stop {
    Failed(anyhow::Error),
    Signal(u8),
}

/// The refusal of a tag in use: what is left of that run, and how to see and remove it.
fn in_use(
    plan: &crate::plan::Plan,
    existing: &[crate::cluster::ObjectRef],
    record: Option<&crate::cluster::record::Record>,
) -> String {
    let mut kinds: Vec<(crate::cluster::Kind, usize)> = Vec::new();
    for o in existing {
        match kinds.iter_mut().find(|(k, _)| *k == o.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((o.kind, 1)),
        }
    }
    let left: Vec<String> = kinds
        .iter()
        .map(|(k, n)| match n {
            1 => format!("1 {}", k.as_str()),
            n => format!("{n} {}", k.plural()),
        })
        .collect();
    let mut what = left.join(", ");
    if !existing.iter().any(|o| o.kind == crate::cluster::Kind::Pod) {
        what.push_str(", no pods");
    }
    if let Some(verdict) = record.and_then(|r| r.verdict.as_deref()) {
        what.push_str(&format!("; it ended {verdict}"));
    }
    let (tag, ns) = (&plan.tag, &plan.namespace);
    format!(
        "run '{tag}' already exists in namespace '{ns}' (left of it: {what}); see it with: tf-spawner status {tag} -n {ns}; delete it (its logs too), and wait until its pods are gone so the tag is free, with: tf-spawner -d --wait -t {tag} -n {ns}"
    )
}
