//! Following the pods of a run: a list in pages, then one watch from the list's
//! resourceVersion, filtered by the run's label selector. A run of hundreds of pods
//! costs a list and a long-lived watch, not a request per pod per second.
//!
//! The follow is a stream ([`events`]), made as `kube::runtime::watcher`'s is: a state
//! machine (`machine.rs`) unfolded one step at a time, each step taken only when the
//! reader asks for the next event. `Empty` (a list is due) → `InitPage` (the pages,
//! each handed on as it comes) → `Watching` (a watch to open from a resourceVersion) →
//! `Streaming` (its events) → … So the next page is asked for only once the reader has
//! taken the one before: a slow reader of a run of 10,000 pods holds one page of them,
//! never a queue of pages (there is no task and no channel in between).
//!
//! When a watch ends (the server closes it every few minutes) it is reopened from the
//! last version seen; when the version is too old (410 Gone) the pods are listed again.
//! When the API server cannot be reached (refused, reset, timeouts, 5xx, 429 beyond the
//! request's retries) the machine goes to `Backoff` and then tries the same state
//! again, until the server answers or the outage lasts longer than
//! `RetryPolicy::give_up`; the reader hears [`PodEvent::Lost`] and [`PodEvent::Back`].
//! Answers that will not change by waiting (401, 403, a missing namespace) end the
//! follow at once.
//!
//! A connection can also freeze without breaking (a proxy or a node that holds it open
//! and passes nothing). The watch asks for bookmarks and for a `timeoutSeconds` below
//! the idle bound (the defaults-file key `idle_timeout`, [`RetryPolicy::idle`](super::retry::RetryPolicy)),
//! so a live watch is never silent that long: one that is is taken as frozen, dropped,
//! and the pods are listed afresh (a list is a plain request, under
//! `--request-timeout`; an API server that does not answer it is an outage as above).
//!
//! The watch only reports [`PodEvent`]s; what they mean for the run (the verdict
//! `Tracker`, pods left after a delete) is the reader's to fold.
//!
//! Why not `kube::runtime::watcher`, which also lists in pages, watches, relists and
//! backs off: it needs kube's `runtime` feature (another crate and its dependencies in
//! the build), its requests bypass our [`RetryPolicy`](super::retry::RetryPolicy)
//! (`--retries`, `--request-timeout`, Retry-After), and it retries every error behind
//! its own backoff, without end, instead of failing at once with a message that names
//! the cause (401, 403, a missing namespace) or giving up past a bound the user set.

mod link;
mod machine;
#[cfg(test)]
mod tests;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{Result, anyhow};
use futures::stream::{BoxStream, Stream, StreamExt};

use link::Heard;
pub use link::outage;
pub use machine::PodEvent;

use super::Cluster;

/// The follow of the pods matching `selector`, as a stream: each event with its "more
/// at hand" (the pages of a list before its end, a burst of watch events: a reader can
/// wait for the last one before working out what they mean), then the error the follow
/// ended with, if any. Nothing is asked of the API server until the stream is read, and
/// each request only when the reader asks for the event after the last one it had.
pub fn events(cluster: &Cluster, selector: &str) -> Events {
    let heard = Heard::new();
    let machine = machine::Machine::new(cluster.clone(), selector, heard.clone());
    let stream = futures::stream::unfold(machine, |mut machine| async move {
        let event = machine.next().await?;
        Some((event, machine))
    });
    Events {
        stream: stream.boxed(),
        heard,
    }
}

/// See [`events`]. A [`Stream`]; [`Events::next`] is its `next` (cancel-safe, for
/// `select!`: a step under way is kept for the next call).
pub struct Events {
    stream: BoxStream<'static, Result<(PodEvent, bool)>>,
    heard: Heard,
}

impl Events {
    /// How long ago the API server last answered the follow.
    pub fn heard_ago(&self) -> Duration {
        self.heard.ago()
    }

    /// The next event; `None` once the follow has ended.
    pub async fn next(&mut self) -> Option<Result<(PodEvent, bool)>> {
        self.stream.next().await
    }

    /// The next event, or the error that ended the follow (it ends with no other).
    pub async fn next_event(&mut self) -> Result<(PodEvent, bool)> {
        match self.next().await {
            Some(event) => event,
            None => Err(anyhow!("the follow of the pods ended")),
        }
    }
}

impl Stream for Events {
    type Item = Result<(PodEvent, bool)>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.stream.poll_next_unpin(cx)
    }
}
