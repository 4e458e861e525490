//! Deleting a run, and `-d --wait`: following its pods until they are gone.

use std::cell::Cell;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cluster::Cluster;
use crate::errors::{EXIT_TIMEOUT, ExitError};
use crate::labels::whole_run_selector;
use crate::{output, signals};

pub(crate) use crate::cluster::apply::{existing, existing_selected};
pub(crate) use crate::cluster::remove::{Deleted, Selected, failure, failure_of};

/// Deletes every object of run `tag` (see `cluster/remove.rs`).
pub(crate) async fn delete(cluster: &Cluster, tag: &str, max_in_flight: usize) -> Deleted {
    crate::cluster::remove::delete_run(cluster, tag, max_in_flight).await
}

/// Deletes run `tag` from its own supervisor: itself last (see `cluster/remove.rs`).
pub(crate) async fn delete_as_supervisor(
    cluster: &Cluster,
    tag: &str,
    max_in_flight: usize,
) -> Deleted {
    crate::cluster::remove::delete_run_as_supervisor(cluster, tag, max_in_flight).await
}

/// Deletes every object of experiment `name`'s runs (`-d --experiment`), one pass per
/// kind by the experiment's label: a sweep starting runs meanwhile is not left with half
/// of them.
pub(crate) async fn delete_experiment(
    cluster: &Cluster,
    name: &str,
    max_in_flight: usize,
) -> Deleted {
    crate::cluster::remove::delete_selected(cluster, Selected::Experiment(name), max_in_flight)
        .await
}

/// `-d --wait`: until the pods that linger for their grace period are gone, or the
/// `--timeout` (exit 4, counted from `started`, when the command began), or a signal.
pub(crate) async fn wait_gone(
    cluster: &Cluster,
    tag: &str,
    timeout: Option<Duration>,
    started: Instant,
) -> Result<()> {
    let start = Instant::now();
    let first: Cell<Option<usize>> = Cell::new(None);
    let left = Cell::new(0);
    let follow = pods_left(cluster, tag, |n| {
        if first.get().is_none() {
            first.set(Some(n));
            if n > 0 {
                output::eprint(&format!("waiting for {} to terminate…\n", pods(n)));
            }
        }
        left.set(n);
    });
    let deadline = async {
        match timeout {
            Some(d) => tokio::time::sleep_until((started + d).into()).await,
            None => std::future::pending().await,
        }
    };
    let stopped = tokio::select! {
        done = follow => {
            done?;
            None
        }
        () = deadline => Some(EXIT_TIMEOUT),
        code = signals::stop_requested() => Some(code),
    };
    let waited = first.get().unwrap_or(0);
    match stopped {
        None => {
            if waited > 0 {
                output::print(&format!(
                    "{} of run '{tag}' terminated in {:.1}s\n",
                    pods(waited),
                    start.elapsed().as_secs_f64()
                ))?;
            }
            Ok(())
        }
        Some(code) => Err(ExitError::new(
            code,
            still_there(cluster, tag, timeout, code, &first, &left),
        )
        .into()),
    }
}

/// Why `-d --wait` stopped early, and what may be left.
fn still_there(
    cluster: &Cluster,
    tag: &str,
    timeout: Option<Duration>,
    code: u8,
    first: &Cell<Option<usize>>,
    left: &Cell<usize>,
) -> String {
    let ns = cluster.namespace();
    let why = if code == EXIT_TIMEOUT {
        format!(
            "timed out after {}",
            humantime::format_duration(timeout.unwrap_or_default())
        )
    } else {
        "interrupted".to_string()
    };
    format!(
        "{why}: the run's objects were deleted, but {} (see: kubectl get pods -n {ns} -l {})",
        match first.get() {
            Some(_) => format!("{} still terminating", are(left.get())),
            None => "its pods may still be terminating".to_string(),
        },
        whole_run_selector(tag)
    )
}

/// Waits until no pod labelled with the run's tag is left. A DELETE only marks a pod
/// that runs on a node (`deletionTimestamp`); the kubelet removes it after its grace
/// period. Services, config maps and secrets go at once, so pods are all there is to
/// wait for. Costs one list and one watch however many pods there are.
/// `on_count` hears how many pods are left: after the list, then after every change.
async fn pods_left(cluster: &Cluster, tag: &str, on_count: impl FnMut(usize)) -> Result<()> {
    super::until_gone(cluster, &whole_run_selector(tag), |_| true, on_count).await
}

fn pods(n: usize) -> String {
    if n == 1 {
        "1 pod".to_string()
    } else {
        format!("{n} pods")
    }
}

fn are(n: usize) -> String {
    if n == 1 {
        "1 pod is".to_string()
    } else {
        format!("{n} pods are")
    }
}

/// What `-d --finished --older-than AGE` deletes: the runs whose verdict is final
/// (Succeeded or Failed) and that were made at least AGE ago, each experiment whole or
/// not at all — all its runs and its record, when every run of it is such a run and its
/// record is as old (an experiment's record with no run left goes too), so that no
/// `sweep --resume` finds a record whose runs are gone.
pub(crate) struct OldRuns {
    pub runs: Vec<crate::ops::list::RunJson>,
    /// The experiments' records that go with them.
    pub records: Vec<crate::cluster::experiment::Listed>,
    /// Each experiment kept whole, and why: `run lrs-3 is Running`.
    pub kept: Vec<(String, String)>,
}

pub(crate) async fn old_runs(cluster: &Cluster, age: Duration) -> Result<OldRuns> {
    let all = crate::ops::list::list(cluster, false).await?;
    let records = crate::cluster::experiment::records(cluster).await?;
    let old = |secs: Option<u64>| secs.is_some_and(|a| a >= age.as_secs());
    let shown = crate::duration::age(age.as_secs());
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut keep = |name: &str, why: String| {
        if !kept.iter().any(|(n, _)| n == name) {
            kept.push((name.to_string(), why));
        }
    };
    for run in &all {
        let Some(name) = &run.experiment else {
            continue;
        };
        if !matches!(run.verdict, "Succeeded" | "Failed" | "Cancelled") {
            keep(name, format!("run {} is {}", run.tag, run.verdict));
        } else if !old(run.age_seconds) {
            keep(name, format!("run {} is younger than {shown}", run.tag));
        }
    }
    for record in &records {
        if !old(record.age_seconds) {
            keep(&record.name, format!("it began less than {shown} ago"));
        }
    }
    let is_kept = |name: Option<&String>| name.is_some_and(|n| kept.iter().any(|(k, _)| k == n));
    let runs = all
        .into_iter()
        .filter(|r| matches!(r.verdict, "Succeeded" | "Failed" | "Cancelled") && old(r.age_seconds))
        .filter(|r| !is_kept(r.experiment.as_ref()))
        .collect();
    let records = records
        .into_iter()
        .filter(|r| !is_kept(Some(&r.name)))
        .collect();
    Ok(OldRuns {
        runs,
        records,
        kept,
    })
}

/// Deletes an experiment's record as listed (if still that one): what was deleted.
pub(crate) async fn remove_record(
    cluster: &Cluster,
    record: &crate::cluster::experiment::Listed,
) -> Result<crate::cluster::ObjectRef> {
    crate::cluster::experiment::remove(cluster, &record.name, &record.uid).await?;
    Ok(crate::cluster::ObjectRef {
        kind: crate::cluster::Kind::ConfigMap,
        name: crate::labels::experiment_record_name(&record.name),
    })
}
