//! The experiments (`tf-spawner sweep`) of a namespace, or of all of them, for `list
//! --experiments`; an experiment's runs for `list --experiment NAME`: the runs `list`
//! finds (its lists of pods and records) with the experiments' records (one more list:
//! their planned runs, to count and name those never started).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::cluster::Cluster;
use crate::cluster::experiment::{self, Planned};
use crate::duration::age;
use crate::ops::list::RunJson;
use crate::output;

/// `list --experiments -o json`: the documented shape.
#[derive(Debug, Serialize)]
pub struct ExperimentsJson {
    pub experiments: Vec<ExperimentJson>,
}

#[derive(Debug, Default, Serialize)]
pub struct ExperimentJson {
    pub namespace: String,
    pub name: String,
    /// The runs its record planned (null: no record left).
    pub planned: Option<usize>,
    /// Its runs there (a ConfigMap or a pod), and of those: succeeded, failed, stopped
    /// early (`sweep --early-stop`), not ended (Pending, Running, Unknown).
    pub runs: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub stopped_early: usize,
    pub unfinished: usize,
    /// The planned runs that are not there: never started (or deleted since).
    pub not_started: Vec<String>,
    /// Age of its record, else of its oldest run.
    pub age_seconds: Option<u64>,
}

fn entry<'a>(
    out: &'a mut BTreeMap<(String, String), ExperimentJson>,
    namespace: &str,
    name: &str,
) -> &'a mut ExperimentJson {
    let key = (namespace.to_string(), name.to_string());
    out.entry(key).or_insert_with(|| ExperimentJson {
        namespace: namespace.to_string(),
        name: name.to_string(),
        ..ExperimentJson::default()
    })
}

/// The runs (from `list`) and the experiments' records, grouped by experiment.
pub fn summarise(runs: &[RunJson], planned: &[Planned], now: i64) -> Vec<ExperimentJson> {
    let mut out = BTreeMap::new();
    for run in runs {
        let Some(name) = &run.experiment else {
            continue;
        };
        let e = entry(&mut out, &run.namespace, name);
        e.runs += 1;
        match run.verdict {
            "Succeeded" => e.succeeded += 1,
            "Failed" | "Cancelled" => e.failed += 1,
            crate::metrics::early::STOPPED_EARLY => e.stopped_early += 1,
            _ => e.unfinished += 1,
        }
        e.age_seconds = e.age_seconds.max(run.age_seconds);
    }
    for p in planned {
        let e = entry(&mut out, &p.namespace, &p.name);
        e.planned = Some(p.runs.len());
        e.not_started = not_started(runs, p);
        if let Some(created) = p.created {
            e.age_seconds = Some(u64::try_from(now - created).unwrap_or(0));
        }
    }
    out.into_values().collect()
}

/// The runs `p` planned that `runs` does not hold.
pub fn not_started(runs: &[RunJson], p: &Planned) -> Vec<String> {
    p.runs
        .iter()
        .map(|r| r.tag.clone())
        .filter(|t| {
            !runs
                .iter()
                .any(|r| r.namespace == p.namespace && &r.tag == t)
        })
        .collect()
}

/// The experiments of the namespace (or of all of them), from `list`'s runs.
pub async fn experiments(
    cluster: &Cluster,
    runs: &[RunJson],
    all_namespaces: bool,
) -> Result<Vec<ExperimentJson>> {
    let planned = match experiment::all_planned(cluster, all_namespaces).await {
        Ok(planned) => planned,
        // Credentials that may read pods and not config maps: the runs' experiments.
        Err(e) if e.code() == Some(403) => Vec::new(),
        Err(e) => return Err(cluster.explain("listing the experiments' records", &e)),
    };
    let now = crate::duration::now();
    Ok(summarise(runs, &planned, now))
}

/// `list --experiment NAME`: its runs among `runs` (from `list`), and the runs its
/// record planned that never started; an error when it has neither run nor record.
pub async fn runs_of(
    cluster: &Cluster,
    mut runs: Vec<RunJson>,
    name: &str,
) -> Result<(Vec<RunJson>, Vec<String>)> {
    runs.retain(|r| r.experiment.as_deref() == Some(name));
    let planned = experiment::planned(cluster, name).await?;
    if runs.is_empty() && planned.is_none() {
        let ns = cluster.namespace();
        bail!(
            "no experiment '{name}' in namespace '{ns}' (the experiments there: {} list --experiments -n {ns})",
            output::name()
        );
    }
    let never = planned.map(|p| not_started(&runs, &p)).unwrap_or_default();
    Ok((runs, never))
}

/// The table of `list --experiments`.
pub fn render(experiments: &[ExperimentJson], namespaces: bool) -> String {
    let count = |n: usize| n.to_string();
    let rows: Vec<Vec<String>> = experiments
        .iter()
        .map(|e| {
            let mut row = vec![
                e.name.clone(),
                e.planned.map_or_else(|| count(e.runs), count),
                count(e.succeeded),
                count(e.failed),
                count(e.unfinished),
                e.planned
                    .map_or_else(|| "-".into(), |_| count(e.not_started.len())),
                e.age_seconds.map_or_else(|| "-".into(), age),
            ];
            if namespaces {
                row.insert(0, e.namespace.clone());
            }
            row
        })
        .collect();
    let mut headers = vec![
        "EXPERIMENT",
        "RUNS",
        "SUCCEEDED",
        "FAILED",
        "UNFINISHED",
        "NOT STARTED",
        "AGE",
    ];
    // A column of its own once a sweep stopped runs early.
    let mut rows = rows;
    if experiments.iter().any(|e| e.stopped_early > 0) {
        headers.insert(4, "STOPPED EARLY");
        for (row, e) in rows.iter_mut().zip(experiments) {
            row.insert(4 + usize::from(namespaces), count(e.stopped_early));
        }
    }
    if namespaces {
        headers.insert(0, "NAMESPACE");
    }
    output::table(&headers, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep::PlannedRun;

    fn run(tag: &str, experiment: Option<&str>, verdict: &'static str) -> RunJson {
        RunJson {
            namespace: "ns".into(),
            tag: tag.into(),
            verdict,
            age_seconds: Some(60),
            roles: BTreeMap::new(),
            queue: None,
            terminating: 0,
            attempt: 0,
            pods: 0,
            recorded_verdict: None,
            helpers: BTreeMap::new(),
            experiment: experiment.map(String::from),
            metrics: None,
            epochs_done: None,
            cost: None,
            headline: None,
            recorded: true,
            follower: None,
            followed_by: None,
        }
    }

    #[test]
    fn experiments_count_their_runs_and_name_those_never_started() {
        let runs = [
            run("g-1", Some("g"), "Succeeded"),
            run("g-2", Some("g"), "Failed"),
            run("g-3", Some("g"), "Running"),
            run("other", None, "Running"),
            run("h-1", Some("h"), "Succeeded"),
        ];
        let planned = Planned {
            namespace: "ns".into(),
            name: "g".into(),
            created: Some(1_000),
            runs: (1..=4)
                .map(|k| PlannedRun {
                    tag: format!("g-{k}"),
                    params: BTreeMap::new(),
                })
                .collect(),
            ended: BTreeMap::new(),
            follower: None,
            objective: None,
        };
        let found = summarise(&runs, &[planned], 1_000 + 120);
        assert_eq!(found.len(), 2);
        let g = &found[0];
        assert_eq!(
            (g.planned, g.runs, g.succeeded, g.failed, g.unfinished),
            (Some(4), 3, 1, 1, 1)
        );
        assert_eq!(g.not_started, ["g-4"]);
        assert_eq!(g.age_seconds, Some(120));
        assert_eq!(found[1].planned, None);
        let text = render(&found, false);
        assert!(
            text.contains(
                "g            4      1           1        1            1             2m0s"
            ),
            "{text}"
        );
        assert!(
            text.contains("h            1      1           0        0            -"),
            "{text}"
        );
    }
}
