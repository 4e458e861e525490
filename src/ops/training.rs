//! The training's progress (`trainlog`) from the deciding task's log (the chief's, else
//! worker 0's): its tail read once (`status`: one request), or its log followed while a
//! run is followed (`wait`, `spawn --wait`: one stream, opened again after a break from
//! the last line read, with no line read twice, as `logs -f` does). A log that cannot be
//! read leaves the progress unknown: it is a help, never the run's verdict.

use futures::AsyncReadExt;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;

use super::logs::{Cursor, until_started, wait_for_change};
use crate::cluster::Cluster;
use crate::cluster::pod_logs::{self as logs, LogOptions};
use crate::roles::{Role, Task};
use crate::trainlog::{Feed, Millis, Training};
use crate::verdict::{PodView, Tracker};

/// The lines of the deciding task's log `status` reads: enough for the last epochs of
/// Keras' lines (one or two per epoch) among other output.
pub const TAIL_LINES: u64 = 500;
/// What one read takes from a log stream.
const CHUNK: usize = 8 * 1024;

/// The pod of the task that decides the run, if it is there.
pub fn deciding(tracker: &Tracker) -> Option<&PodView> {
    let task = Task::deciding(tracker.tasks().iter().any(|t| t.role == Role::Chief));
    tracker.live().find(|p| p.task == Some(task))
}

pub fn now_ms() -> Millis {
    crate::duration::now_ms()
}

/// The progress in the tail of the deciding task's log (one request; none before the
/// task has started).
pub(crate) async fn tail(cluster: &Cluster, tracker: &Tracker) -> Training {
    let mut training = Training::default();
    let Some(pod) = deciding(tracker).filter(|p| p.started) else {
        return training;
    };
    let options = LogOptions {
        tail: Some(TAIL_LINES),
        timestamps: true,
        ..LogOptions::default()
    };
    let params = options.params(pod.setup.container.as_deref());
    match logs::open(cluster, &pod.name, &params).await {
        Ok(mut reader) => {
            let mut feed = Feed::new(true);
            read_into(&mut reader, &mut feed, |_| true, &mut training, |_| {}).await;
            feed.finish(now_ms(), &mut training);
        }
        Err(e) => tracing::debug!(pod = %pod.name, error = %e, "no progress: the log"),
    }
    training
}

/// The progress in the deciding task's whole log (one request, read to its end), for a
/// run whose verdict is final; `None` when the task never started or its log cannot be
/// read.
pub(crate) async fn whole(cluster: &Cluster, tracker: &Tracker) -> Option<Training> {
    let pod = deciding(tracker).filter(|p| p.started)?;
    let options = LogOptions {
        timestamps: true,
        ..LogOptions::default()
    };
    let params = options.params(pod.setup.container.as_deref());
    match logs::open(cluster, &pod.name, &params).await {
        Ok(mut reader) => {
            let mut training = Training::default();
            let mut feed = Feed::new(true);
            read_into(&mut reader, &mut feed, |_| true, &mut training, |_| {}).await;
            feed.finish(now_ms(), &mut training);
            Some(training)
        }
        Err(e) => {
            tracing::debug!(pod = %pod.name, error = %e, "no metrics: the log");
            None
        }
    }
}

/// Reads `reader` to its end (or a broken stream) into `feed` and `training`, calling
/// `seen` after every chunk that changed it; `true` if the stream ended, `false` if it
/// broke.
async fn read_into(
    reader: &mut (impl futures::AsyncRead + Unpin),
    feed: &mut Feed,
    mut keep: impl FnMut(Timestamp) -> bool,
    training: &mut Training,
    mut seen: impl FnMut(&Training),
) -> bool {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => return true,
            Ok(n) => {
                let before = training.marks();
                feed.push(&buf[..n], now_ms(), &mut keep, training);
                if training.marks() != before {
                    seen(training);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "progress: the log stream broke");
                return false;
            }
        }
    }
}

/// Follows the deciding task's log: `pod` is its latest view (`None` until it is there,
/// and once it is deleted); what the log says goes to `out`. Returns once the log has
/// ended with the container (`true`: it was read to its end, every line once, across
/// any break), or the pod is gone or its log cannot be read (`false`).
pub(crate) async fn follow(
    cluster: Cluster,
    mut pod: watch::Receiver<Option<PodView>>,
    out: watch::Sender<Training>,
) -> bool {
    let mut cursor = Cursor::new(false);
    let mut training = Training::default();
    let mut feed = Feed::new(true);
    loop {
        // The deciding task's pod: wait until it is known and has started.
        let Some(view) = wait_for_start(&mut pod).await else {
            return false;
        };
        let mut params = LogOptions::default().params(view.setup.container.as_deref());
        params.follow = true;
        params.timestamps = true;
        cursor.resume(&mut params);
        match logs::open(&cluster, &view.name, &params).await {
            Ok(mut reader) => {
                let keep = |at: Timestamp| cursor.keep(at);
                let whole = read_into(&mut reader, &mut feed, keep, &mut training, |t| {
                    out.send_replace(t.clone());
                })
                .await;
                // A line cut by a break is read again whole.
                feed = Feed::new(true);
                // The server ends a followed log when the container ends, and the pod's
                // status says so a moment later; a broken stream is opened again even
                // then, for the lines it did not deliver.
                if whole {
                    if ended(&pod) {
                        return pod.borrow().is_some();
                    }
                    wait_for_change(&mut pod).await;
                    if ended(&pod) {
                        return pod.borrow().is_some();
                    }
                    continue;
                }
            }
            // Not started after all (a status not up to date), or the API server away
            // (the run's watch decides how long to wait for it): again on a change.
            Err(e) if logs::not_started(&e) || crate::cluster::watch::outage(&e) => {}
            // Gone, or not readable (RBAC without pods/log): no progress, as `logs -f`
            // gives up on such a pod.
            Err(e) => {
                tracing::debug!(pod = %view.name, error = %e, "progress: the log");
                return false;
            }
        }
        wait_for_change(&mut pod).await;
    }
}

/// Whether the deciding pod is gone or its container has ended.
fn ended(pod: &watch::Receiver<Option<PodView>>) -> bool {
    pod.borrow().as_ref().is_none_or(|v| v.state().finished())
}

/// Waits until the deciding pod is there and its container has started; `None` if it
/// went away or ended without starting.
async fn wait_for_start(pod: &mut watch::Receiver<Option<PodView>>) -> Option<PodView> {
    loop {
        if pod.borrow().is_some() {
            break;
        }
        pod.changed().await.ok()?;
    }
    if !until_started(pod).await {
        return None;
    }
    pod.borrow().clone()
}
