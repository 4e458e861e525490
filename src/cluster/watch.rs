//! Following the pods of a run: a list in pages, then one watch from the list's
//! resourceVersion, filtered by the run's label selector. A run of hundreds of pods
//! costs a list and a long-lived watch, not a request per pod per second.
//!
//! The follow is a state machine (as `kube::runtime::watcher`'s): [`State::Empty`]
//! (a list is due) → [`State::InitPage`] (the pages, each handed on as it comes) →
//! [`State::Watching`] (from a resourceVersion) → … When a watch ends (the server closes
//! it every few minutes) it is reopened from the last version seen; when the version
//! is too old (410 Gone) the pods are listed again. When the API server cannot be
//! reached (refused, reset, timeouts, 5xx, 429 beyond the request's retries) the
//! machine goes to [`State::Backoff`] and then tries the same state again, until the
//! server answers or the outage lasts longer than `RetryPolicy::give_up`; the caller
//! hears [`PodEvent::Lost`] and [`PodEvent::Back`]. Answers that will not change by
//! waiting (401, 403, a missing namespace) end the follow at once.
//!
//! A connection can also freeze without breaking (a proxy or a node that holds it open
//! and passes nothing). The watch asks for bookmarks and for a `timeoutSeconds` below
//! the idle bound (the defaults-file key `idle_timeout`, [`RetryPolicy::idle`](super::retry::RetryPolicy)),
//! so a live watch is never silent that long: one that is is taken as frozen, dropped,
//! and the pods are listed afresh (a list is a plain request, under
//! `--request-timeout`; an API server that does not answer it is an outage as above).
//!
//! The watch only reports [`PodEvent`]s; what they mean for the run (the verdict
//! `Tracker`, pods left after a delete) is the caller's to fold.
//!
//! Why not `kube::runtime::watcher`, which also lists in pages, watches, relists and
//! backs off: it needs kube's `runtime` feature (another crate and its dependencies in
//! the build), its requests bypass our [`RetryPolicy`](super::retry::RetryPolicy)
//! (`--retries`, `--request-timeout`, Retry-After), and it retries every error behind
//! its own backoff, without end, instead of failing at once with a message that names
//! the cause (401, 403, a missing namespace) or giving up past a bound the user set.

use std::ops::ControlFlow::{self, Break, Continue};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};
use rand::Rng;

use super::Cluster;
use super::pager;
use super::retry::{CallError, Plain, retry};

/// What the watch saw.
#[derive(Debug)]
pub enum PodEvent {
    /// A (re)list begins: the pods of the pages that follow replace what was seen.
    ListBegin,
    /// One page of the list.
    Page(Vec<Pod>),
    /// The list is complete: pods seen before and not in it are gone.
    ListEnd,
    /// A pod was added or changed.
    Changed(Box<Pod>),
    /// A pod was deleted (its name).
    Deleted(String),
    /// The API server stopped answering (the error); the follow keeps trying.
    Lost(String),
    /// It answers again, after this long.
    Back(Duration),
}

/// How long the server keeps one watch open at most (kubectl's default is about 5
/// minutes); less under a shorter idle bound ([`watch_seconds`]).
const WATCH_SECONDS: u32 = 290;
/// A watch that ends sooner than this without news is not reopened at once.
const QUICK_END: Duration = Duration::from_secs(1);
/// The first pause of an outage; it doubles up to [`MAX_BACKOFF`] (kube's watcher's).
const FIRST_BACKOFF: Duration = Duration::from_millis(800);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where the follow is.
#[derive(Debug)]
enum State {
    /// A list is due.
    Empty,
    /// Listing: the next page's continue token (`None`: the first page).
    InitPage { token: Option<String> },
    /// Watching from a resourceVersion.
    Watching { version: String },
    /// Waiting before trying `then` (again).
    Backoff { then: Box<State>, delay: Duration },
}

/// Hands every event about the pods matching `selector` to `on_event` until it returns
/// a value: the list's pages, then each change. `on_event`'s second argument says more
/// events are already at hand (the pages of a list before its end, a burst of watch
/// events): a caller can wait for the last one before working out what they mean.
pub async fn follow<T>(
    cluster: &Cluster,
    selector: &str,
    on_event: impl FnMut(PodEvent, bool) -> Option<T>,
) -> Result<T> {
    follow_heard(cluster, selector, Heard::new(), on_event).await
}

/// [`follow`], noting in `heard` each answer of the API server.
async fn follow_heard<T>(
    cluster: &Cluster,
    selector: &str,
    heard: Heard,
    mut on_event: impl FnMut(PodEvent, bool) -> Option<T>,
) -> Result<T> {
    let api = cluster.api::<Pod>();
    // Bookmarks are asked for too (`allowWatchBookmarks`, kube's default).
    let watch_params = WatchParams::default()
        .labels(selector)
        .timeout(watch_seconds(cluster.policy.idle));
    let mut link = Link::new(cluster, heard);
    let mut state = State::Empty;
    loop {
        let next = match state {
            State::Empty => match on_event(PodEvent::ListBegin, true) {
                Some(done) => Break(done),
                None => Continue(State::InitPage { token: None }),
            },
            State::InitPage { token } => {
                list_page(cluster, &api, selector, token, &mut link, &mut on_event).await?
            }
            State::Watching { version } => {
                let end = watch(
                    cluster,
                    &api,
                    &watch_params,
                    version,
                    &mut link,
                    &mut on_event,
                )
                .await;
                after_watch(end, &mut link, &mut on_event)?
            }
            State::Backoff { then, delay } => {
                tokio::time::sleep(delay).await;
                Continue(*then)
            }
        };
        state = match next {
            Break(done) => return Ok(done),
            Continue(state) => state,
        };
    }
}

/// The follow of [`follow`] as a stream, read with [`Events::next`]: each event with
/// its "more at hand", then the error the follow ended with, if any. The follow runs in
/// a task of its own, ended when the stream is dropped.
pub fn events(cluster: &Cluster, selector: &str) -> Events {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (cluster, selector) = (cluster.clone(), selector.to_string());
    let heard = Heard::new();
    let noted = heard.clone();
    let task = tokio::spawn(async move {
        let ended = follow_heard(&cluster, &selector, noted, |event, more| {
            // The reader is gone: nobody follows any more.
            tx.send(Ok((event, more))).err().map(|_| ())
        })
        .await;
        if let Err(e) = ended {
            let _ = tx.send(Err(e));
        }
    });
    Events { rx, task, heard }
}

/// See [`events`].
pub struct Events {
    rx: tokio::sync::mpsc::UnboundedReceiver<Result<(PodEvent, bool)>>,
    task: tokio::task::JoinHandle<()>,
    heard: Heard,
}

/// When the API server last answered the follow (a page, a watch opened, a watch event
/// or bookmark): how old what the follow knows may be (`wait`'s heartbeat says it).
#[derive(Debug, Clone)]
pub struct Heard(std::sync::Arc<std::sync::Mutex<Instant>>);

impl Heard {
    fn new() -> Heard {
        Heard(std::sync::Arc::new(std::sync::Mutex::new(Instant::now())))
    }

    fn now(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn ago(&self) -> Duration {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }
}

impl Events {
    /// How long ago the API server last answered the follow.
    pub fn heard_ago(&self) -> Duration {
        self.heard.ago()
    }

    /// The next event; `None` once the follow has ended. Cancel-safe (for `select!`).
    pub async fn next(&mut self) -> Option<Result<(PodEvent, bool)>> {
        self.rx.recv().await
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The `timeoutSeconds` a watch asks for under the idle bound `idle`: the server ends
/// the watch a tenth of the bound (at least a second) before a silent one would pass
/// it, and never later than [`WATCH_SECONDS`].
fn watch_seconds(idle: Duration) -> u32 {
    let idle = u32::try_from(idle.as_secs()).unwrap_or(u32::MAX);
    let margin = (idle / 10).max(1);
    idle.saturating_sub(margin).clamp(1, WATCH_SECONDS)
}

/// `InitPage`: one page of the list handed over (after the link's `Back`, if it was
/// down), then the next page, or at the list's end the watch from its resourceVersion.
async fn list_page<T>(
    cluster: &Cluster,
    api: &Api<Pod>,
    selector: &str,
    token: Option<String>,
    link: &mut Link<'_>,
    on_event: &mut impl FnMut(PodEvent, bool) -> Option<T>,
) -> Result<ControlFlow<T, State>> {
    let asked = Instant::now();
    let list = match pager::page(&cluster.policy, api, selector, token.as_deref()).await {
        Ok(list) => list,
        // An expired continue token: the list starts over.
        Err(e) if pager::expired(&e) => return Ok(Continue(State::Empty)),
        Err(e) => {
            let again = State::InitPage { token };
            return link
                .down("listing pods", e, asked, again, on_event)
                .map(Continue);
        }
    };
    if let Some(back) = link.up() {
        on_event(back, true);
    }
    let next = pager::next_token(&list);
    let version = list.metadata.resource_version.unwrap_or_default();
    if let Some(done) = on_event(PodEvent::Page(list.items), true) {
        return Ok(Break(done));
    }
    Ok(match next {
        Some(token) => Continue(State::InitPage { token: Some(token) }),
        None => match on_event(PodEvent::ListEnd, false) {
            Some(done) => Break(done),
            None => Continue(State::Watching { version }),
        },
    })
}

/// `Watching`, after a watch request ended: watch again (after a pause if it ended
/// at once), list afresh (its version expired), or the link is down.
fn after_watch<T>(
    end: WatchEnd<T>,
    link: &mut Link<'_>,
    on_event: &mut impl FnMut(PodEvent, bool) -> Option<T>,
) -> Result<ControlFlow<T, State>> {
    Ok(Continue(match end {
        WatchEnd::Done(done) => return Ok(Break(done)),
        WatchEnd::Closed { version, quick } => {
            let again = State::Watching { version };
            if quick {
                State::Backoff {
                    then: Box::new(again),
                    delay: QUICK_END,
                }
            } else {
                again
            }
        }
        WatchEnd::Expired => State::Empty,
        WatchEnd::Frozen(idle) => {
            tracing::debug!(
                idle = ?idle,
                "the watch said nothing past its idle bound: listing again"
            );
            State::Empty
        }
        WatchEnd::Failed(e, version, asked) => {
            let again = State::Watching { version };
            link.down("watching pods", e, asked, again, on_event)?
        }
    }))
}

/// How one watch request ended.
enum WatchEnd<T> {
    /// The caller has its answer.
    Done(T),
    /// The stream ended (or broke) after `version`; `quick`: soon and without news.
    Closed { version: String, quick: bool },
    /// The version is too old (410 Gone, or an error event): list again.
    Expired,
    /// Nothing came (no event, no bookmark) for the idle bound: the connection is
    /// taken as frozen, and the pods listed again (what it missed is in the list).
    Frozen(Duration),
    /// The watch from this version, asked for then, could not be opened.
    Failed(CallError, String, Instant),
}

/// Opens one watch from `version` and hands its events on until it ends.
async fn watch<T>(
    cluster: &Cluster,
    api: &Api<Pod>,
    params: &WatchParams,
    mut version: String,
    link: &mut Link<'_>,
    on_event: &mut impl FnMut(PodEvent, bool) -> Option<T>,
) -> WatchEnd<T> {
    let opened = Instant::now();
    let stream = match retry(&cluster.policy, || api.watch(params, &version), Plain).await {
        Ok(stream) => stream,
        Err(e) if pager::expired(&e) => return WatchEnd::Expired,
        Err(e) => return WatchEnd::Failed(e, version, opened),
    };
    if let Some(back) = link.up() {
        on_event(back, true);
    }
    let mut stream = std::pin::pin!(stream.into_stream());
    let mut news = false;
    let idle = cluster.policy.idle;
    let Ok(mut next) = tokio::time::timeout(idle, stream.next()).await else {
        return WatchEnd::Frozen(idle);
    };
    while let Some(item) = next.take() {
        link.heard.now();
        let event = match item {
            Ok(event) => event,
            Err(e) => {
                // A connection that broke mid-stream: resume from `version`.
                tracing::debug!(error = %e, "watch stream broke");
                break;
            }
        };
        // More at hand? Then the caller may wait for it before deciding.
        let peeked = stream.next().now_or_never();
        let more = matches!(peeked, Some(Some(_)));
        let event = match translate(event, &mut version) {
            Step::Event(event) => event,
            Step::Skip => {
                let Ok(item) = tokio::time::timeout(idle, next_of(peeked, &mut stream)).await
                else {
                    return WatchEnd::Frozen(idle);
                };
                next = item;
                continue;
            }
            Step::Relist => return WatchEnd::Expired,
        };
        news = true;
        if let Some(done) = on_event(event, more) {
            return WatchEnd::Done(done);
        }
        let Ok(item) = tokio::time::timeout(idle, next_of(peeked, &mut stream)).await else {
            return WatchEnd::Frozen(idle);
        };
        next = item;
    }
    let quick = !news && opened.elapsed() < QUICK_END;
    WatchEnd::Closed { version, quick }
}

/// The item peeked at, else the stream's next one.
async fn next_of<S: futures::Stream + Unpin>(
    peeked: Option<Option<S::Item>>,
    stream: &mut S,
) -> Option<S::Item> {
    match peeked {
        Some(item) => item,
        None => stream.next().await,
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

/// The connection to the API server as the follow has seen it: up, or down since when.
struct Link<'a> {
    cluster: &'a Cluster,
    /// Since when nothing answers, on the monotonic clock and the wall clock.
    down_since: Option<(Instant, k8s_openapi::jiff::Timestamp)>,
    backoff: Duration,
    heard: Heard,
}

impl<'a> Link<'a> {
    fn new(cluster: &'a Cluster, heard: Heard) -> Link<'a> {
        Link {
            cluster,
            down_since: None,
            backoff: FIRST_BACKOFF,
            heard,
        }
    }

    /// An answer came: the outage, if there was one, is over.
    fn up(&mut self) -> Option<PodEvent> {
        self.heard.now();
        self.backoff = FIRST_BACKOFF;
        let (since, _) = self.down_since.take()?;
        Some(PodEvent::Back(since.elapsed()))
    }

    /// `doing` failed with `err`: the state to go to (a pause, then `again`), or the
    /// error that ends the follow (an answer that waiting will not change, or an outage
    /// past the bound).
    fn down<T>(
        &mut self,
        doing: &str,
        err: CallError,
        asked: Instant,
        again: State,
        on_event: &mut impl FnMut(PodEvent, bool) -> Option<T>,
    ) -> Result<State> {
        if !outage(&err) {
            return Err(self.cluster.explain(doing, &err));
        }
        let policy = &self.cluster.policy;
        let first = self.down_since.is_none();
        // Since the first attempt of the request that failed (its retries took time).
        let (since, wall) = *self.down_since.get_or_insert_with(|| {
            let ago =
                k8s_openapi::jiff::SignedDuration::try_from(asked.elapsed()).unwrap_or_default();
            (asked, k8s_openapi::jiff::Timestamp::now() - ago)
        });
        if since.elapsed() >= policy.give_up {
            return Err(anyhow!(
                "{doing}: cannot reach the Kubernetes API server at {} since {} UTC ({} ago; gave up after {}, see --give-up-after): {err}",
                self.cluster.server,
                wall.strftime("%H:%M:%S"),
                crate::duration::age(since.elapsed().as_secs()),
                crate::duration::age(policy.give_up.as_secs()),
            ));
        }
        if first {
            on_event(PodEvent::Lost(format!("{doing}: {err}")), true);
        }
        let jitter = rand::rng().random_range(0.0..0.25);
        let left = policy.give_up.saturating_sub(since.elapsed());
        let delay = self.backoff.mul_f64(1.0 + jitter).min(left);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Ok(State::Backoff {
            then: Box::new(again),
            delay,
        })
    }
}

/// Whether an error means the server is (for now) out of reach, as opposed to an answer.
pub fn outage(err: &CallError) -> bool {
    err.unanswered() || matches!(err.code(), Some(429 | 500 | 502 | 503 | 504))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::watch_seconds;

    #[test]
    fn a_watch_asks_the_server_to_end_it_before_the_idle_bound() {
        assert_eq!(watch_seconds(Duration::from_secs(300)), 270);
        assert_eq!(watch_seconds(Duration::from_secs(3600)), 290);
        assert_eq!(watch_seconds(Duration::from_secs(10)), 9);
        assert_eq!(watch_seconds(Duration::from_secs(2)), 1);
        for s in 2..400 {
            assert!(u64::from(watch_seconds(Duration::from_secs(s))) < s, "{s}");
        }
    }
}
