//! Following the pods of a run: one list, then one watch from the list's
//! resourceVersion, filtered by the run's label selector. A run of hundreds of pods
//! costs a list and a long-lived watch, not a request per pod per second. When the
//! watch ends (the server closes it every few minutes, or answers 410 Gone because the
//! version is too old) the pods are listed again and a new watch starts.

use std::time::{Duration, Instant};

use anyhow::Result;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, WatchEvent, WatchParams};

use super::Cluster;
use super::retry::{Plain, retry};
use crate::verdict::{PodView, Tracker};

/// How long the server keeps one watch open (kubectl's default is about 5 minutes).
const WATCH_SECONDS: u32 = 290;
/// A watch that ends sooner than this without news is not reopened at once.
const QUICK_END: Duration = Duration::from_secs(1);

/// Feeds `tracker` with the pods matching `selector` until `decide` returns a value.
/// `decide` is called after the first list and after every change.
pub async fn follow<T>(
    cluster: &Cluster,
    selector: &str,
    tracker: &mut Tracker,
    mut decide: impl FnMut(&Tracker) -> Option<T>,
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
        tracker.replace(list.items.iter().map(PodView::from_pod).collect());
        if let Some(done) = decide(tracker) {
            return Ok(done);
        }
        let mut version = list.metadata.resource_version.unwrap_or_default();

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
                match event {
                    WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                        remember(&mut version, &pod);
                        tracker.update(PodView::from_pod(&pod));
                    }
                    WatchEvent::Deleted(pod) => {
                        remember(&mut version, &pod);
                        tracker.remove(pod.metadata.name.as_deref().unwrap_or_default());
                    }
                    WatchEvent::Bookmark(b) => {
                        version = b.metadata.resource_version;
                        continue;
                    }
                    WatchEvent::Error(status) => {
                        // 410 Gone: the version is too old; anything else: start over too.
                        tracing::debug!(code = status.code, message = %status.message, "watch error");
                        relist = true;
                        break;
                    }
                }
                news = true;
                if let Some(done) = decide(tracker) {
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

fn remember(version: &mut String, pod: &Pod) {
    if let Some(v) = &pod.metadata.resource_version {
        version.clone_from(v);
    }
}
