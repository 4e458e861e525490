//! The follow's state machine (see `mod.rs`). [`Machine::next`] takes steps until one
//! has events for the reader, and takes none while the reader has not asked: a step
//! makes at most one request (a page, a watch opened, the watch's next event), so what
//! is held between two reads is at most one page.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::FutureExt;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};

use super::link::{Heard, Link, Pause};
use crate::cluster::Cluster;
use crate::cluster::pager;
use crate::cluster::retry::{CallError, Plain, retry};

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

/// The `timeoutSeconds` a watch asks for under the idle bound `idle`: the server ends
/// the watch a tenth of the bound (at least a second) before a silent one would pass
/// it, and never later than [`WATCH_SECONDS`].
pub(super) fn watch_seconds(idle: Duration) -> u32 {
    let idle = u32::try_from(idle.as_secs()).unwrap_or(u32::MAX);
    let margin = (idle / 10).max(1);
    idle.saturating_sub(margin).clamp(1, WATCH_SECONDS)
}

type WatchItem = kube::Result<WatchEvent<Pod>>;

/// Where the follow is.
enum State {
    /// A list is due.
    Empty,
    /// Listing: the next page's continue token (`None`: the first page).
    InitPage { token: Option<String> },
    /// A watch to open from a resourceVersion.
    Watching { version: String },
    /// A watch open: its next event to read.
    Streaming(Box<Open>),
    /// Waiting before trying `then` (again).
    Backoff { then: Box<State>, delay: Duration },
}

/// An open watch.
struct Open {
    stream: BoxStream<'static, WatchItem>,
    /// The last version seen.
    version: String,
    /// When the watch was asked for.
    opened: Instant,
    /// It delivered an event (a bookmark is none).
    news: bool,
    /// The item read ahead to tell whether more is at hand: `Some(None)`, the stream
    /// ended; `None`, nothing was ready.
    peeked: Option<Option<WatchItem>>,
}

/// The follow: its state, and the events of its last step not yet read.
pub(super) struct Machine {
    cluster: Cluster,
    api: Api<Pod>,
    selector: String,
    params: WatchParams,
    link: Link,
    /// `None`: the follow ended (its error handed on).
    state: Option<State>,
    /// At most a step's: `Back` or `Lost`, a page, the list's end.
    ready: VecDeque<(PodEvent, bool)>,
}

impl Machine {
    pub(super) fn new(cluster: Cluster, selector: &str, heard: Heard) -> Machine {
        // Bookmarks are asked for too (`allowWatchBookmarks`, kube's default).
        let params = WatchParams::default()
            .labels(selector)
            .timeout(watch_seconds(cluster.policy.idle));
        Machine {
            api: cluster.api::<Pod>(),
            cluster,
            selector: selector.to_string(),
            params,
            link: Link::new(heard),
            state: Some(State::Empty),
            ready: VecDeque::new(),
        }
    }

    /// The next event and whether more are at hand, after as many steps as that takes;
    /// then the error that ended the follow, and `None` after it.
    pub(super) async fn next(&mut self) -> Option<Result<(PodEvent, bool)>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            let state = self.state.take()?;
            match self.step(state).await {
                Ok(next) => self.state = Some(next),
                Err(e) => return Some(Err(e)),
            }
        }
    }

    async fn step(&mut self, state: State) -> Result<State> {
        Ok(match state {
            State::Empty => {
                self.ready.push_back((PodEvent::ListBegin, true));
                State::InitPage { token: None }
            }
            State::InitPage { token } => self.list_page(token).await?,
            State::Watching { version } => self.open(version).await?,
            State::Streaming(open) => self.read(open).await,
            State::Backoff { then, delay } => {
                tokio::time::sleep(delay).await;
                *then
            }
        })
    }

    /// `InitPage`: one page of the list (after `Back`, if the link was down), then the
    /// next page, or at the list's end the list's end and the watch from its version.
    async fn list_page(&mut self, token: Option<String>) -> Result<State> {
        let asked = Instant::now();
        let policy = &self.cluster.policy;
        let list = match pager::page(policy, &self.api, &self.selector, token.as_deref()).await {
            Ok(list) => list,
            // An expired continue token: the list starts over.
            Err(e) if pager::expired(&e) => return Ok(State::Empty),
            Err(e) => return self.down("listing pods", e, asked, State::InitPage { token }),
        };
        self.up();
        let next = pager::next_token(&list);
        let version = list.metadata.resource_version.unwrap_or_default();
        self.ready.push_back((PodEvent::Page(list.items), true));
        Ok(match next {
            Some(token) => State::InitPage { token: Some(token) },
            None => {
                self.ready.push_back((PodEvent::ListEnd, false));
                State::Watching { version }
            }
        })
    }

    /// `Watching`: the watch from `version` opened (after `Back`, if the link was down).
    async fn open(&mut self, version: String) -> Result<State> {
        let opened = Instant::now();
        let (api, params) = (&self.api, &self.params);
        let stream = match retry(&self.cluster.policy, || api.watch(params, &version), Plain).await
        {
            Ok(stream) => stream,
            Err(e) if pager::expired(&e) => return Ok(State::Empty),
            Err(e) => return self.down("watching pods", e, opened, State::Watching { version }),
        };
        self.up();
        Ok(State::Streaming(Box::new(Open {
            stream: stream.into_stream().boxed(),
            version,
            opened,
            news: false,
            peeked: None,
        })))
    }

    /// `Streaming`: the watch's next event (bookmarks only noted), or how it ended:
    /// opened again (after a pause if it ended at once without news), or the pods
    /// listed again (its version expired, or it said nothing for the idle bound).
    async fn read(&mut self, mut open: Box<Open>) -> State {
        let idle = self.cluster.policy.idle;
        loop {
            let item = match open.peeked.take() {
                Some(item) => item,
                None => match tokio::time::timeout(idle, open.stream.next()).await {
                    Ok(item) => item,
                    Err(_) => return frozen(idle),
                },
            };
            let Some(item) = item else {
                return closed(*open);
            };
            self.link.heard.now();
            let event = match item {
                Ok(event) => event,
                Err(e) => {
                    // A connection that broke mid-stream: resume from the version.
                    tracing::debug!(error = %e, "watch stream broke");
                    return closed(*open);
                }
            };
            // More at hand? Then the reader may wait for it before deciding.
            open.peeked = open.stream.next().now_or_never();
            let more = matches!(open.peeked, Some(Some(_)));
            match translate(event, &mut open.version) {
                Step::Event(event) => {
                    open.news = true;
                    self.ready.push_back((event, more));
                    return State::Streaming(open);
                }
                Step::Skip => {}
                Step::Relist => return State::Empty,
            }
        }
    }

    /// An answer came: `Back` if the link was down.
    fn up(&mut self) {
        if let Some(after) = self.link.up() {
            self.ready.push_back((PodEvent::Back(after), true));
        }
    }

    /// `doing` failed: a pause, then `again` (`Lost` if the link was up), or the error
    /// that ends the follow.
    fn down(&mut self, doing: &str, err: CallError, asked: Instant, again: State) -> Result<State> {
        let Pause { delay, lost } = self.link.down(&self.cluster, doing, err, asked)?;
        if let Some(why) = lost {
            self.ready.push_back((PodEvent::Lost(why), true));
        }
        Ok(State::Backoff {
            then: Box::new(again),
            delay,
        })
    }
}

/// A watch that ended (or broke): opened again from its last version, after a pause if
/// it ended soon and without news.
fn closed(open: Open) -> State {
    let again = State::Watching {
        version: open.version,
    };
    if !open.news && open.opened.elapsed() < QUICK_END {
        State::Backoff {
            then: Box::new(again),
            delay: QUICK_END,
        }
    } else {
        again
    }
}

/// Nothing came (no event, no bookmark) for the idle bound: the connection is taken as
/// frozen, and the pods listed again (what it missed is in the list).
fn frozen(idle: Duration) -> State {
    tracing::debug!(
        idle = ?idle,
        "the watch said nothing past its idle bound: listing again"
    );
    State::Empty
}

/// What one watch event means for the follow.
enum Step {
    Event(PodEvent),
    /// Nothing for the reader (a bookmark).
    Skip,
    /// The watch cannot go on: list again.
    Relist,
}

/// The reader's event for a watch event, keeping `version` up to date.
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
