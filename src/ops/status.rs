//! A run's pods, listed once (in pages, each folded into the run's tracker), and the
//! latest events of those still pending.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Cluster;
use crate::cluster::events::{self, PodEvent};
use crate::cluster::record::Record;
use crate::labels::{helper_selector, run_selector};
use crate::metrics::early::STOPPED_EARLY;
use crate::output;
use crate::plan::helper_pod::Found;
use crate::verdict::{Phase, PodView, Tracker, Verdict};

/// The run's pods, listed once; an error when there are none.
pub(crate) async fn snapshot(cluster: &Cluster, tag: &str, all_workers: bool) -> Result<Tracker> {
    let tracker = pods(cluster, tag, all_workers).await?;
    if tracker.is_empty() {
        bail!("{}", no_run(cluster, tag).await);
    }
    Ok(tracker)
}

/// Why there is no run `tag`: no pods, or, when `tag` names an experiment, what it is
/// and how to see its runs.
pub(crate) async fn no_run(cluster: &Cluster, tag: &str) -> String {
    match experiment_note(cluster, tag).await {
        Some(text) => text,
        None => no_pods(cluster, tag),
    }
}

/// Runs an experiment's line names at most.
const TAGS_NAMED: usize = 5;

/// `'grid' is an experiment, not a run: 4 runs planned, 3 started (grid-1, …)…`; `None`
/// when no run and no record has that experiment (or they cannot be read).
async fn experiment_note(cluster: &Cluster, name: &str) -> Option<String> {
    if crate::labels::label_value_problem(name).is_some() {
        return None;
    }
    let (runs, planned) = tokio::join!(
        crate::cluster::record::of_experiment(cluster, name),
        crate::cluster::experiment::planned(cluster, name)
    );
    let mut tags: Vec<String> = runs
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.tag)
        .collect();
    let planned = planned.ok().flatten();
    if tags.is_empty() && planned.is_none() {
        return None;
    }
    tags.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    let started = match tags.len() {
        0 => "none started".to_string(),
        1 => "1 started".to_string(),
        n => format!("{n} started"),
    };
    let counted = match planned.map(|p| p.runs.len()) {
        Some(n) => format!(
            "{n} run{} planned, {started}",
            if n == 1 { "" } else { "s" }
        ),
        None if tags.len() == 1 => "1 run".to_string(),
        None => format!("{} runs", tags.len()),
    };
    let mut named: Vec<&str> = tags.iter().take(TAGS_NAMED).map(String::as_str).collect();
    if tags.len() > TAGS_NAMED {
        named.push("…");
    }
    let named = if named.is_empty() {
        String::new()
    } else {
        format!(" ({})", named.join(", "))
    };
    let one = tags.first().map_or_else(String::new, |t| {
        format!("; one run: {} status {t}", output::name())
    });
    Some(format!(
        "'{name}' is an experiment, not a run: {counted}{named} (its runs: {me} list --experiment {name}; their metrics: {me} compare {name}{one})",
        me = output::name()
    ))
}

fn no_pods(cluster: &Cluster, tag: &str) -> String {
    format!(
        "no pods labelled {} in namespace '{}' (the runs there: tf-spawner list -n {})",
        crate::labels::whole_run_selector(tag),
        cluster.namespace(),
        cluster.namespace()
    )
}

/// The run's pods, listed once (none is no error).
pub(crate) async fn pods(cluster: &Cluster, tag: &str, all_workers: bool) -> Result<Tracker> {
    let mut tracker = Tracker::new(tag, all_workers);
    cluster
        .list_pages::<Pod>(&run_selector(tag), false, |pods, first| {
            if first {
                // A list that starts over (an expired continue token) starts afresh.
                tracker = Tracker::new(tag, all_workers);
            }
            for pod in &pods {
                tracker.update(PodView::from_pod(pod));
            }
        })
        .await
        .map_err(|e| cluster.explain("listing pods", &e))?;
    tracker.at(crate::duration::now());
    Ok(tracker)
}

/// What `status` knows of a run: its tasks' pods, its record (its ConfigMap,
/// `cluster/record.rs`) and its helper pods (`cp`, `tensorboard`).
pub(crate) struct Known {
    pub tracker: Tracker,
    pub record: Option<Record>,
    pub helpers: Vec<Found>,
}

/// The run's pods, its record and its helper pods; an error when none of them is
/// there. A run is known while any of it exists.
pub(crate) async fn known(cluster: &Cluster, tag: &str, all_workers: bool) -> Result<Known> {
    let (tracker, record, helpers) = tokio::join!(
        pods(cluster, tag, all_workers),
        crate::cluster::record::read(cluster, tag),
        helpers(cluster, tag)
    );
    let tracker = tracker?;
    let helpers = helpers?;
    let record = match record {
        Ok(record) => record,
        // Credentials that may read pods and not config maps still see the pods.
        Err(e) if !tracker.is_empty() || !helpers.is_empty() => {
            output::note(&format!("the run's record is not shown: {e:#}"));
            None
        }
        Err(e) => return Err(e),
    };
    if tracker.is_empty() && record.is_none() && helpers.is_empty() {
        bail!("{}", no_run(cluster, tag).await);
    }
    Ok(Known {
        tracker,
        record,
        helpers,
    })
}

/// The run's helper pods, by name.
async fn helpers(cluster: &Cluster, tag: &str) -> Result<Vec<Found>> {
    let now = u64::try_from(crate::duration::now()).unwrap_or(0);
    let mut found = Vec::new();
    cluster
        .list_pages::<Pod>(&helper_selector(tag), false, |pods, first| {
            if first {
                found.clear();
            }
            found.extend(pods.iter().filter_map(|p| Found::of(p, now)));
        })
        .await
        .map_err(|e| cluster.explain("listing the run's helper pods", &e))?;
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The newest events of each pending pod of the run (one paged list of the namespace's
/// Events), by pod name. Events are a help, not the answer: when they cannot be read
/// (RBAC may allow pods and not events) a note says so and the status goes on.
pub(crate) async fn pending_events(
    cluster: &Cluster,
    tracker: &Tracker,
    record: Option<&Record>,
) -> BTreeMap<String, Vec<PodEvent>> {
    // A pod stopped before it started keeps telling why (while the events last).
    let pending: BTreeMap<String, Option<i64>> = tracker
        .live()
        .filter(|v| v.phase == Phase::Pending || never_started(v, record).is_some())
        .map(|v| (v.name.clone(), v.times.created))
        .collect();
    match events::of_pods(cluster, &pending).await {
        Ok(found) => found,
        Err(e) => {
            let why = cluster.explain("listing events", &e);
            output::note(&format!("the pending pods' events are not shown: {why}"));
            BTreeMap::new()
        }
    }
}

/// Why pod `v` never started, when tf-spawner stopped it after the verdict before it
/// did: what the run's record says (the kubelet's end of the pod hides it), else its
/// waiting reason while it has not ended.
pub(crate) fn never_started(v: &PodView, record: Option<&Record>) -> Option<String> {
    v.times.stopped_at?;
    if let Some(why) = record.and_then(|r| r.why_not_started(&v.label())) {
        return Some(why.to_string());
    }
    (!v.started).then(|| {
        v.waiting
            .as_ref()
            .map_or_else(|| "Pending".to_string(), ToString::to_string)
    })
}

/// The run's verdict (its name) and why it failed: the one `wait` recorded on the run's
/// ConfigMap once the pods no longer tell it (all gone, the verdict would only name a pod
/// stopped or deleted since, or tf-spawner stopped pods for that verdict: a pod it stopped
/// before it started may read Pending again, `ErrImagePull`, while it ends), so every
/// command tells wait's account; else the pods' (a run left running with
/// `--keep-running` is judged again, `--all-workers` or not). A restart clears it. A
/// recorded `Succeeded` never overrides pods that say otherwise while they exist
/// ([`Tracker::contradicts_success`]): the record is only as trustworthy as whoever may
/// edit the ConfigMap.
pub(crate) fn verdict_of(
    tracker: &Tracker,
    record: Option<&Record>,
) -> (&'static str, Option<String>) {
    let live = (!tracker.is_empty()).then(|| tracker.verdict());
    let lost = match &live {
        None => true,
        Some(Verdict::Failed(f)) => f.kind.is_after_the_fact(),
        Some(_) => false,
    } || tracker.live().any(|v| v.times.stopped_at.is_some());
    if lost
        && let Some(recorded) = record.and_then(|r| r.verdict.as_deref())
        && !(recorded == "Succeeded" && tracker.contradicts_success())
    {
        return match recorded.split_once(": ") {
            Some(("Failed", why)) => ("Failed", Some(why.to_string())),
            Some((STOPPED_EARLY, why)) => (STOPPED_EARLY, Some(why.to_string())),
            // A wait cancelled with --on-cancel stop: what the run's end was.
            Some(("Cancelled", why)) => ("Cancelled", Some(why.to_string())),
            _ if recorded == "Succeeded" => ("Succeeded", None),
            _ => ("Failed", Some(recorded.to_string())),
        };
    }
    match live {
        None => ("Unknown", None),
        Some(Verdict::Failed(f)) => ("Failed", Some(f.to_string())),
        Some(v) => (v.name(), None),
    }
}
