//! Following the pods of a run: one list, then one watch from the list's
//! resourceVersion, filtered by the run's label selector. A run of hundreds of pods
//! costs a list and a long-lived watch, not a request per pod per second. When the
//! watch ends (the server closes it every few minutes, or answers 410 Gone because the
//! version is too old) the pods are listed again and a new watch starts.
//!
//! The watch only reports [`PodEvent`]s; what they mean for the run (the verdict
//! `Tracker`, pods left after a delete) is the caller's to fold.
//!
//! Why not `kube::runtime::watcher`, which also lists, watches and relists: it needs
//! kube's `runtime` feature (another crate and its dependencies in the build), its
//! requests bypass our [`RetryPolicy`](super::retry::RetryPolicy) (`--retries`,
//! `--request-timeout`, Retry-After), and it retries every error behind its own backoff
//! instead of failing at once with a message that names the cause (401, 403, a missing
//! namespace); its initial list is paginated, so a run of more pods than a page costs
//! more than the one list `tests/it/perf.rs` holds us to.

use std::time::{Duration, Instant};

use anyhow::Result;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, WatchEvent, WatchParams};

use super::Cluster;
use super::retry::{Plain, retry};

/// What the watch saw.
#[derive(Debug)]
pub enum PodEvent {
    /// A (re)list: every pod there is now, replacing what was seen before.
    Listed(Vec<Pod>),
    /// A pod was added or changed.
    Changed(Box<Pod>),
    /// A pod was deleted (its name).
    Deleted(String),
}

/// How long the server keeps one watch open (kubectl's default is about 5 minutes).
const WATCH_SECONDS: u32 = 290;
/// A watch that ends sooner than this without news is not reopened at once.
const QUICK_END: Duration = Duration::from_secs(1);

/// Hands every event about the pods matching `selector` to `on_event` until it returns
/// a value: first the list, then each change.
pub async fn follow<T>(
    cluster: &Cluster,
    selector: &str,
    mut on_event: impl FnMut(PodEvent) -> Option<T>,
) -> Result<T> {
    let api = cluster.api::<Pod>();
    let list_params = ListParams::default().labels(selector);
    let watch_params = WatchParams::default()
        .labels(selector)
        .timeout(WATCH_SECONDS);
    loop {
        let list = retry(&cluster.policy, || api.list(&list_params), Plain)
            .await
            .map_err(|e| cluster.explain("listing pods", &e))?;
        let mut version = list.metadata.resource_version.unwrap_or_default();
        if let Some(done) = on_event(PodEvent::Listed(list.items)) {
            return Ok(done);
        }

        // Watch from `version` until the stream ends or the version expires.
        loop {
            let opened = Instant::now();
            let mut news = false;
            let stream = retry(
                &cluster.policy,
                || api.watch(&watch_params, &version),
                Plain,
            )
            .await
            .map_err(|e| cluster.explain("watching pods", &e))?;
            let mut stream = std::pin::pin!(stream.into_stream());
            let mut relist = false;
            while let Some(event) = stream.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::debug!(error = %e, "watch stream broke");
                        relist = true;
                        break;
                    }
                };
                let event = match translate(event, &mut version) {
                    Step::Event(event) => event,
                    Step::Skip => continue,
                    Step::Relist => {
                        relist = true;
                        break;
                    }
                };
                news = true;
                if let Some(done) = on_event(event) {
                    return Ok(done);
                }
            }
            if !news && opened.elapsed() < QUICK_END {
                tokio::time::sleep(QUICK_END).await;
            }
            if relist || version.is_empty() {
                break;
            }
        }
    }
}

/// What one watch event means for the loop.
enum Step {
    Event(PodEvent),
    /// Nothing for the caller (a bookmark).
    Skip,
    /// The watch cannot go on: list again.
    Relist,
}

/// The caller's event for a watch event, keeping `version` up to date.
fn translate(event: WatchEvent<Pod>, version: &mut String) -> Step {
    match event {
        WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
            remember(version, &pod);
            Step::Event(PodEvent::Changed(Box::new(pod)))
        }
        WatchEvent::Deleted(pod) => {
            remember(version, &pod);
            Step::Event(PodEvent::Deleted(pod.metadata.name.unwrap_or_default()))
        }
        WatchEvent::Bookmark(b) => {
            *version = b.metadata.resource_version;
            Step::Skip
        }
        WatchEvent::Error(status) => {
            // 410 Gone: the version is too old; anything else: start over too.
            tracing::debug!(code = status.code, message = %status.message, "watch error");
            Step::Relist
        }
    }
}

fn remember(version: &mut String, pod: &Pod) {
    if let Some(v) = &pod.metadata.resource_version {
        version.clone_from(v);
    }
}
