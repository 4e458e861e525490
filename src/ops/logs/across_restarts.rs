//! `logs -f` across restarts: each attempt followed to its end (`follow.rs`), then
//! the next one a restart (`wait --restarts`, in this process or another) begins.

use std::time::Duration;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::pod_logs::LogOptions;
use crate::verdict::retryable::RestartOn;
use crate::verdict::{Tracker, Verdict};

use super::follow::follow;
use super::lines::{Prefixes, note};
use super::pick::Pick;

/// How long `logs -f` looks for a restart once a run is over with a failure the default
/// `--restart-on` retries (a `wait --restarts` records its restart at once).
const RESTART_LINGER: Duration = Duration::from_secs(5);
/// How often it looks, and how often it looks for a restart's pods.
const RESTART_POLL: Duration = Duration::from_secs(1);

/// `logs -f`: follows each attempt to its end, and the next one a restart (`wait
/// --restarts`, in this process or another) begins, saying so.
pub(super) async fn across_restarts(
    cluster: &Cluster,
    tag: &str,
    options: &LogOptions,
    pick: &Pick,
    mut tracker: Tracker,
    prefixes: &mut Prefixes,
) -> Result<()> {
    loop {
        let attempt = tracker.attempt();
        let Some(verdict) = follow(cluster, tag, options, pick, tracker, prefixes).await? else {
            return Ok(());
        };
        let linger = match &verdict {
            Verdict::Failed(f) if RestartOn::default().retries(&f.kind) => RESTART_LINGER,
            Verdict::Failed(_) => Duration::ZERO,
            _ => return Ok(()),
        };
        let Some(next) = restart_begun(cluster, tag, attempt, linger).await? else {
            return Ok(());
        };
        note(&format!(
            "run {tag}: attempt {next} begins (a restart of wait --restarts)"
        ));
        match attempt_pods(cluster, tag, next).await? {
            Some(t) => tracker = t,
            None => {
                note(&format!(
                    "run {tag}: the restart created no pods of attempt {next} (see: tf-spawner status -t {tag})"
                ));
                return Ok(());
            }
        }
    }
}

/// The attempt after `attempt` that a restart has begun (recorded on the run's
/// ConfigMap, or its pods there), looked for up to `linger` (at least once).
async fn restart_begun(
    cluster: &Cluster,
    tag: &str,
    attempt: u32,
    linger: Duration,
) -> Result<Option<u32>> {
    let until = tokio::time::Instant::now() + linger;
    loop {
        let record = crate::cluster::record::read(cluster, tag).await?;
        if let Some(n) = record.and_then(|r| r.restarting).filter(|n| *n > attempt) {
            return Ok(Some(n));
        }
        let now = crate::ops::status::pods(cluster, tag, false)
            .await?
            .attempt();
        if now > attempt {
            return Ok(Some(now));
        }
        if tokio::time::Instant::now() >= until {
            return Ok(None);
        }
        tokio::time::sleep(RESTART_POLL).await;
    }
}

/// The run's pods once the restart to attempt `n` has created them all (its record
/// is cleared only then); `None` when it is no longer recorded and they are not there
/// (it failed, or was stopped). Not at its first pod: a follow of the attempt's first
/// pods alone would take the tasks not created yet for gone, and end.
async fn attempt_pods(cluster: &Cluster, tag: &str, n: u32) -> Result<Option<Tracker>> {
    loop {
        // The record first: once it no longer says `n`, the pods listed after it are
        // every pod the restart made.
        let record = crate::cluster::record::read(cluster, tag).await?;
        let restarting = record.and_then(|r| r.restarting) == Some(n);
        let tracker = crate::ops::status::pods(cluster, tag, false).await?;
        if !restarting {
            return Ok((tracker.attempt() >= n).then_some(tracker));
        }
        tokio::time::sleep(RESTART_POLL).await;
    }
}
