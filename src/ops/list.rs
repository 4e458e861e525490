//! The runs (tags) in a namespace, or in all of them,
//! with their pods' phases per role, verdict and age. One list, in pages.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::cluster::Cluster;
use crate::cluster::record::{self, Record};
use crate::cluster::retry::CallError;
use crate::duration::age;
use crate::labels::{HELPER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL};
use crate::output;
use crate::verdict::{PodView, RoleCounts, RoleSummary, Tracker};

/// `list -o json`: the documented, stable shape.
#[derive(Debug, Serialize)]
pub struct ListJson {
    pub runs: Vec<RunJson>,
    /// `list --experiment NAME`: the runs its record planned that never started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_started: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
pub struct RunJson {
    pub namespace: String,
    pub tag: String,
    /// Pending, Running, Succeeded, Failed or Cancelled (a wait's `--on-cancel stop`
    /// recorded; Unknown: no pods and no recorded verdict).
    pub verdict: &'static str,
    /// Age of the run (its ConfigMap), else of its oldest pod.
    pub age_seconds: Option<u64>,
    /// Per role (chief, ps, worker, evaluator): total, pending, queued, running,
    /// succeeded, failed.
    pub roles: BTreeMap<String, RoleCounts>,
    /// The queue (Kueue LocalQueue) the run's queued pods wait in; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Pods being deleted (kubectl's Terminating), counted in `roles` by their phase.
    pub terminating: u32,
    /// The run's attempt: 0 until a restart (`wait --restarts`), then the latest one's.
    pub attempt: u32,
    /// The run's pods there now (0: only its record, the ConfigMap, is left).
    pub pods: u32,
    /// The verdict `wait` recorded on the run's ConfigMap (`Failed: …`), else null; when
    /// there is one, `verdict` is its.
    pub recorded_verdict: Option<String>,
    /// The run's helper pods (`cp`, `tensorboard`) by kind: not tasks, not in `pods`.
    pub helpers: BTreeMap<String, u32>,
    /// The experiment the run belongs to (`tf-spawner sweep`), else null.
    pub experiment: Option<String>,
    /// Who follows the run now (a `wait`, or its supervisor: `spawn --detach`) and when it
    /// last checked in, as `status -o json` says; null when nobody does.
    pub follower: Option<crate::cluster::follower::FollowerJson>,
    /// The training's last metrics and epochs done, as recorded at the run's verdict
    /// (`compare` shows the rest), else null.
    pub metrics: Option<BTreeMap<String, f64>>,
    pub epochs_done: Option<u32>,
    /// What the run held (docs/reference.md, "What a run cost"), as `status -o json`
    /// says it; null when no pod of it ran.
    pub cost: Option<crate::metrics::cost::Cost>,
    /// The metric the table shows (`val_loss`, else `loss`, else the first).
    #[serde(skip)]
    pub headline: Option<(String, f64)>,
    /// The table's FOLLOWED BY cell: where the follower runs, when it checked in.
    #[serde(skip)]
    pub followed_by: Option<String>,
    /// Its ConfigMap is there (the table's words for a run without pods).
    #[serde(skip)]
    pub recorded: bool,
}

/// The runs in the cluster's namespace, or in every namespace. One list, in pages,
/// each page folded into the runs' trackers.
pub(crate) async fn list(cluster: &Cluster, all_namespaces: bool) -> Result<Vec<RunJson>> {
    // The tasks and the helper pods (cp, tensorboard), which are counted apart.
    let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY},{RUN_LABEL}");
    let mut runs = Runs::default();
    let pods = cluster.list_pages::<Pod>(&selector, all_namespaces, |pods, first| {
        if first {
            runs = Runs::default();
        }
        for pod in &pods {
            runs.add(pod);
        }
    });
    let (listed, records) = tokio::join!(pods, record::all(cluster, all_namespaces));
    listed.map_err(|e| listing_error(cluster, all_namespaces, "pods", &e))?;
    // Credentials that may read pods and not config maps still list the runs with pods.
    match records {
        Ok(records) => runs.records = records,
        Err(e) if e.code() == Some(403) => {}
        Err(e) => return Err(listing_error(cluster, all_namespaces, "config maps", &e)),
    }
    let now = crate::duration::now();
    Ok(runs.finish(now))
}

fn listing_error(
    cluster: &Cluster,
    all_namespaces: bool,
    what: &str,
    e: &CallError,
) -> anyhow::Error {
    match e.code() {
        Some(403) if all_namespaces => anyhow!(
            "listing {what} in all namespaces is forbidden for these credentials ({}); list one namespace with -n NAMESPACE instead of -A",
            e.status().map(|s| s.message.trim()).unwrap_or_default()
        ),
        _ if all_namespaces => cluster.explain(&format!("listing {what} in all namespaces"), e),
        _ => cluster.explain(&format!("listing {what}"), e),
    }
}

/// Pods grouped by namespace and tag, each group a run's tracker.
#[derive(Default)]
pub struct Runs {
    groups: BTreeMap<(String, String), Tracker>,
    /// The helper pods of each run, by kind.
    helpers: BTreeMap<(String, String), BTreeMap<String, u32>>,
    /// The runs' records (their ConfigMaps), pods or not.
    records: Vec<Record>,
}

impl Runs {
    /// Adds one pod to its run; a pod without a tag is not a run's.
    pub fn add(&mut self, pod: &Pod) {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let Some(tag) = pod.metadata.labels.as_ref().and_then(|l| l.get(RUN_LABEL)) else {
            return;
        };
        let key = (ns, tag.clone());
        if let Some(kind) = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HELPER_LABEL))
        {
            *self
                .helpers
                .entry(key)
                .or_default()
                .entry(kind.clone())
                .or_default() += 1;
            return;
        }
        self.groups
            .entry(key)
            .or_insert_with(|| Tracker::new(tag, false))
            .update(PodView::from_pod(pod));
    }

    /// The runs, sorted by namespace and tag: every run with pods or a record.
    pub fn finish(mut self, now: i64) -> Vec<RunJson> {
        let mut records: BTreeMap<(String, String), Record> = self
            .records
            .drain(..)
            .map(|r| ((r.namespace.clone(), r.tag.clone()), r))
            .collect();
        for key in records.keys().chain(self.helpers.keys()) {
            self.groups
                .entry(key.clone())
                .or_insert_with(|| Tracker::new(&key.1, false));
        }
        self.groups
            .into_iter()
            .map(|((namespace, tag), mut tracker)| {
                tracker.at(now);
                let key = (namespace.clone(), tag.clone());
                let record = records.remove(&key);
                let mut run = run_json(namespace, tag, &tracker, record, now);
                run.helpers = self.helpers.remove(&key).unwrap_or_default();
                run
            })
            .collect()
    }
}

fn run_json(
    namespace: String,
    tag: String,
    tracker: &Tracker,
    record: Option<Record>,
    now: i64,
) -> RunJson {
    let holder = record.as_ref().and_then(|r| r.follower.as_ref());
    let follower = holder.map(|h| h.json(now));
    let followed_by = holder.map(|h| output::escape_controls(&h.cell(now)));
    let pods_age = tracker.live().filter_map(|v| v.age(now)).max();
    let created = record.as_ref().and_then(|r| r.created);
    let age_seconds = created.map(|c| (now - c).max(0) as u64).or(pods_age);
    let terminating = tracker.live().filter(|v| v.terminating).count() as u32;
    let summary = tracker.summary();
    let verdict = super::status::verdict_of(tracker, record.as_ref()).0;
    let recorded = record.as_ref().and_then(|r| r.metrics.as_ref());
    let cost =
        crate::metrics::cost::so_far(recorded.and_then(|m| m.cost).as_ref(), tracker.live(), now);
    // A record of what the run held alone has no training's metrics.
    let metrics = recorded.filter(|m| m.epochs_done > 0 || !m.last.is_empty());
    RunJson {
        cost,
        experiment: record.as_ref().and_then(|r| r.experiment.clone()),
        headline: metrics
            .and_then(|m| m.headline())
            .map(|(n, v)| (n.to_string(), v)),
        epochs_done: metrics.map(|m| m.epochs_done),
        metrics: metrics.map(|m| m.last.clone()),
        namespace,
        verdict,
        age_seconds,
        queue: summary.iter().find_map(|r| r.queue.clone()),
        roles: summary
            .into_iter()
            .map(|r| (role_key(&r), r.counts))
            .collect(),
        tag,
        terminating,
        attempt: tracker.attempt(),
        pods: tracker.live().count() as u32,
        recorded: record.is_some(),
        follower,
        followed_by,
        recorded_verdict: record.and_then(|r| r.verdict),
        helpers: BTreeMap::new(),
    }
}
/// Groups pods by namespace and tag, sorted.
#[cfg(test)]
pub fn runs(pods: &[Pod], now: i64) -> Vec<RunJson> {
    let mut runs = Runs::default();
    for pod in pods {
        runs.add(pod);
    }
    runs.finish(now)
}

fn role_key(r: &RoleSummary) -> String {
    r.role.map_or("other", |r| r.as_str()).to_string()
}

/// `worker 2/4 running, 1 pending, 1 succeeded`: the non-zero counts of one role.
fn role_cell(role: &str, c: &RoleCounts, queue: Option<&str>) -> String {
    format!("{role} {}", crate::progress::counts_text(c, queue))
}

/// `helper pod: tensorboard`, `helper pods: tensorboard, 2 cp`: the run's helper pods,
/// after its tasks.
fn helpers_cell(helpers: &BTreeMap<String, u32>) -> Option<String> {
    let kinds: Vec<String> = helpers
        .iter()
        .rev()
        .map(|(kind, n)| match n {
            1 => kind.clone(),
            n => format!("{n} {kind}"),
        })
        .collect();
    let total: u32 = helpers.values().sum();
    let what = if total == 1 {
        "helper pod"
    } else {
        "helper pods"
    };
    (!kinds.is_empty()).then(|| format!("{what}: {}", kinds.join(", ")))
}

const ROLE_ORDER: [&str; 5] = ["chief", "ps", "worker", "evaluator", "other"];

/// The table; the EXPERIMENT and TRAINING columns only when a run has one.
pub fn render(runs: &[RunJson], namespaces: bool) -> String {
    let experiments = runs.iter().any(|r| r.experiment.is_some());
    let trained = runs.iter().any(|r| r.headline.is_some());
    let followed = runs.iter().any(|r| r.followed_by.is_some());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let mut row = vec![
                run.tag.clone(),
                verdict_cell(run),
                run.age_seconds.map_or_else(|| "-".into(), age),
            ];
            if namespaces {
                row.insert(0, run.namespace.clone());
            }
            if experiments {
                let name = run.experiment.as_deref().map(output::escape_controls);
                row.push(name.unwrap_or_else(|| "-".into()));
            }
            if trained {
                row.push(training_cell(run));
            }
            row.push(pods_cell(run));
            if followed {
                row.push(run.followed_by.clone().unwrap_or_else(|| "-".into()));
            }
            row
        })
        .collect();
    let mut headers = vec!["TAG", "VERDICT", "AGE"];
    if namespaces {
        headers.insert(0, "NAMESPACE");
    }
    if experiments {
        headers.push("EXPERIMENT");
    }
    if trained {
        headers.push("TRAINING");
    }
    headers.push("PODS");
    if followed {
        headers.push("FOLLOWED BY");
    }
    output::table(&headers, &rows)
}

/// `val_loss 0.0312, 12 epochs`: the recorded headline metric of a finished run.
fn training_cell(run: &RunJson) -> String {
    let Some((name, value)) = &run.headline else {
        return "-".into();
    };
    let epochs = match run.epochs_done {
        Some(1) => ", 1 epoch".to_string(),
        Some(n) => format!(", {n} epochs"),
        None => String::new(),
    };
    format!(
        "{} {}{epochs}",
        output::escape_controls(name),
        crate::metrics::number(*value)
    )
}

/// A run's PODS: its tasks by role, the ones terminating, what is left when no pod is,
/// its helper pods.
fn pods_cell(run: &RunJson) -> String {
    let mut pods: Vec<String> = ROLE_ORDER
        .iter()
        .filter_map(|role| {
            run.roles
                .get(*role)
                .map(|c| role_cell(role, c, run.queue.as_deref()))
        })
        .collect();
    if run.terminating > 0 {
        pods.push(format!("{} terminating", run.terminating));
    }
    let none = if run.helpers.is_empty() {
        "no pods left"
    } else {
        "no task pods left"
    };
    if run.pods == 0 && run.recorded {
        pods = vec![format!(
            "{none} (its ConfigMap and services remain: tf-spawner -d -t {} removes them)",
            run.tag
        )];
    } else if run.pods == 0 {
        pods = vec![format!(
            "{none} (tf-spawner -d -t {} removes the rest)",
            run.tag
        )];
    }
    if let Some(cell) = helpers_cell(&run.helpers) {
        pods.push(cell);
    }
    pods.join("; ")
}

/// A run's VERDICT: Terminating when every pod is being deleted (as kubectl would show
/// its pods), and the attempt of a restarted run.
fn verdict_cell(run: &RunJson) -> String {
    let total: u32 = run.roles.values().map(|c| c.total).sum();
    let mut verdict = if run.terminating > 0 && run.terminating == total {
        "Terminating".to_string()
    } else {
        run.verdict.to_string()
    };
    if run.attempt > 0 {
        verdict.push_str(&format!(" (attempt {})", run.attempt));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::tests::pod;

    #[test]
    fn groups_runs_and_counts_roles() {
        let mut pods: Vec<Pod> = [
            pod("worker-0", "Succeeded"),
            pod("worker-1", "Running"),
            pod("chief-0", "Running"),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let mut other: Pod = serde_json::from_value(pod("worker-0", "Pending")).unwrap();
        other.metadata.name = Some("u-worker-0".into());
        other
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(RUN_LABEL.into(), "u".into());
        pods.push(other);
        let runs = runs(&pods, 1704067200 + 120);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].tag, "t");
        assert_eq!(runs[0].verdict, "Running");
        assert_eq!(runs[0].age_seconds, Some(120));
        assert_eq!(runs[0].roles["worker"].succeeded, 1);
        assert_eq!(runs[1].verdict, "Pending");
        let text = render(&runs, false);
        assert!(
            text.contains(
                "t     Running   2m0s   chief 1/1 running; worker 1/2 running, 1 succeeded"
            ),
            "{text}"
        );
        assert!(
            text.contains("u     Pending   2m0s   worker 0/1 running, 1 pending"),
            "{text}"
        );
    }
}
