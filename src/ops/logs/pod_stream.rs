//! One pod's followed log: opened once its container has started, each line sent
//! with its prefix, and opened again where it stopped when the stream breaks
//! ([`Cursor`]), until the container ends or the pod goes away.

use std::time::Duration;

use futures::AsyncBufReadExt;
use tokio::sync::{mpsc, watch};

use k8s_openapi::jiff::Timestamp;

use crate::cluster::Cluster;
use crate::cluster::pod_logs::{self, LogOptions};
use crate::output::Styled;
use crate::verdict::PodView;

use super::lines::{note, shown};

/// A pod that is not ready for its log is retried at least this often while following.
const RETRY: Duration = Duration::from_secs(2);

/// Follows one pod's log until its container ends, the pod goes away, or the task is
/// aborted. Sends prefixed lines.
pub(super) async fn follow_pod(
    cluster: Cluster,
    pod: PodView,
    options: LogOptions,
    prefix: Styled,
    tx: mpsc::Sender<Styled>,
    mut state: watch::Receiver<Option<PodView>>,
) {
    let mut params = options.params(pod.setup.container.as_deref());
    params.follow = true;
    // Timestamps always, to resume where a broken stream stopped (see `Cursor`).
    params.timestamps = true;
    let mut cursor = Cursor::new(options.timestamps);
    loop {
        if !until_started(&mut state).await {
            return;
        }
        match pod_logs::open(&cluster, &pod.name, &params).await {
            Ok(reader) => {
                let to = (&prefix, &tx);
                if !send_lines(reader, &pod.name, to, &mut cursor, options.raw).await {
                    return;
                }
                // The stream ended: done if the container has; otherwise (a dropped
                // connection, a restarted API server) go on from the last line.
                let current = state.borrow().clone();
                match current {
                    Some(v) if !v.state().finished() => {
                        cursor.resume(&mut params);
                        wait_for_change(&mut state).await;
                        if state.borrow().is_none() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
            Err(e) if pod_logs::not_started(&e) => {
                wait_for_change(&mut state).await;
                if state.borrow().is_none() {
                    return;
                }
            }
            Err(e) if e.code() == Some(404) => return,
            // The API server is away: the run's watch decides how long to wait for it.
            Err(e) if crate::cluster::watch::outage(&e) => {
                wait_for_change(&mut state).await;
                if state.borrow().is_none() {
                    return;
                }
            }
            Err(e) => {
                note(&format!("cannot read the log of pod {}: {e}", pod.name));
                return;
            }
        }
    }
}

/// Where a followed log stands, so that a stream that broke is opened again from where
/// it stopped, with no line lost or printed twice: streams are read with timestamps
/// (removed again unless asked for); the next one asks for `sinceTime`, the last
/// line's second (the API's precision), and skips what it sends again: lines before
/// the last one's timestamp, and as many lines at that timestamp as were printed.
pub(in crate::ops) struct Cursor {
    show_timestamps: bool,
    /// The last printed line's timestamp and how many printed lines carried it.
    last: Option<(Timestamp, usize)>,
    /// What the current stream sends again, to skip.
    skip: Option<(Timestamp, usize)>,
}

impl Cursor {
    pub(in crate::ops) fn new(show_timestamps: bool) -> Cursor {
        Cursor {
            show_timestamps,
            last: None,
            skip: None,
        }
    }

    /// The line to print, or `None` for a line printed before.
    fn line<'a>(&mut self, raw: &'a str) -> Option<&'a str> {
        let Some((at, text)) = raw
            .split_once(' ')
            .and_then(|(at, text)| Some((at.parse::<Timestamp>().ok()?, text)))
        else {
            return Some(raw);
        };
        if !self.keep(at) {
            return None;
        }
        Some(if self.show_timestamps { raw } else { text })
    }

    /// Whether a line with timestamp `at` is new (else the resumed stream sent it
    /// before); a new one is counted as printed.
    pub(in crate::ops) fn keep(&mut self, at: Timestamp) -> bool {
        if let Some((before, n)) = &mut self.skip {
            if at < *before || (at == *before && *n > 0) {
                *n = n.saturating_sub(usize::from(at == *before));
                return false;
            }
            self.skip = None;
        }
        match &mut self.last {
            Some((last, n)) if *last == at => *n += 1,
            _ => self.last = Some((at, 1)),
        }
        true
    }

    /// Makes `params` ask for the log from the last printed line on.
    pub(in crate::ops) fn resume(&mut self, params: &mut kube::api::LogParams) {
        let Some((last, n)) = self.last else {
            // Nothing printed yet: the same request again.
            return;
        };
        let second = Timestamp::from_second(last.as_second()).unwrap_or(last);
        params.since_time = Some(second);
        params.since_seconds = None;
        params.tail_lines = None;
        self.skip = Some((last, n));
    }
}

/// Waits until the pod's status says its container has started; `false` if the pod is
/// gone or ended without starting.
pub(in crate::ops) async fn until_started(state: &mut watch::Receiver<Option<PodView>>) -> bool {
    loop {
        let current = state.borrow().clone();
        match current {
            None => return false,
            Some(v) if v.started => return true,
            Some(v) if v.state().finished() => return false,
            Some(_) => wait_for_change(state).await,
        }
    }
}

/// Sends the stream's lines, prefixed, until it ends; `false` once nobody listens.
async fn send_lines(
    mut reader: impl futures::AsyncBufRead + Unpin,
    pod: &str,
    (prefix, tx): (&Styled, &mpsc::Sender<Styled>),
    cursor: &mut Cursor,
    raw: bool,
) -> bool {
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => return true,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let Some(text) = cursor.line(text.trim_end_matches(['\n', '\r'])) else {
                    continue;
                };
                if pod_logs::kubelet_notice(text) {
                    note(&format!("pod {pod}: its container's log is gone ({text})"));
                    continue;
                }
                let mut line = prefix.clone();
                line.push(&shown(text, raw));
                line.push_plain("\n");
                if tx.send(line).await.is_err() {
                    return false;
                }
            }
            Err(e) => {
                tracing::debug!(pod = %pod, error = %e, "log stream broke");
                return true;
            }
        }
    }
}

/// Returns when the pod's state changes, or after [`RETRY`].
pub(in crate::ops) async fn wait_for_change(state: &mut watch::Receiver<Option<PodView>>) {
    let _ = tokio::time::timeout(RETRY, state.changed()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_stream_skips_what_was_printed() {
        let mut params = kube::api::LogParams::default();
        let mut c = Cursor::new(false);
        assert_eq!(c.line("2024-01-01T00:00:01.5Z a"), Some("a"));
        assert_eq!(c.line("2024-01-01T00:00:02.25Z b"), Some("b"));
        assert_eq!(c.line("2024-01-01T00:00:02.25Z c"), Some("c"));
        c.resume(&mut params);
        assert_eq!(
            params.since_time,
            Some("2024-01-01T00:00:02Z".parse().unwrap())
        );
        // The server sends again from the second: what was printed is skipped.
        assert_eq!(c.line("2024-01-01T00:00:02.1Z x"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z b"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z c"), None);
        assert_eq!(c.line("2024-01-01T00:00:02.25Z d"), Some("d"));
        assert_eq!(c.line("2024-01-01T00:00:03Z e"), Some("e"));
        // Asked for, the timestamps stay; a line without one passes.
        let mut shown = Cursor::new(true);
        assert_eq!(
            shown.line("2024-01-01T00:00:03Z e"),
            Some("2024-01-01T00:00:03Z e")
        );
        assert_eq!(shown.line("no timestamp"), Some("no timestamp"));
    }
}
