//! Reading pod logs: `GET .../pods/NAME/log?container=…`, whole or streamed. A stream
//! that delivers nothing for the idle bound (`idle_timeout`) fails with `TimedOut`,
//! as a broken one does: its reader opens it again from where it stopped (a log has no
//! bookmarks; a quiet task costs one request per bound).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{AsyncBufRead, AsyncRead};
use k8s_openapi::api::core::v1::Pod;
use kube::api::LogParams;

use super::Cluster;
use super::retry::{CallError, Plain, retry};

/// What part of a log to read.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    pub follow: bool,
    pub since: Option<Duration>,
    pub tail: Option<u64>,
    pub timestamps: bool,
    /// `logs --raw`: the lines as the pod wrote them, escape sequences and all (not a
    /// request parameter: how `ops/logs/lines.rs` shows them).
    pub raw: bool,
}

impl LogOptions {
    pub fn params(&self, container: Option<&str>) -> LogParams {
        LogParams {
            container: container.map(String::from),
            follow: self.follow,
            since_seconds: self
                .since
                .map(|d| i64::try_from(d.as_secs().max(1)).unwrap_or(i64::MAX)),
            tail_lines: self.tail.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            timestamps: self.timestamps,
            ..LogParams::default()
        }
    }
}

/// The whole log (or its tail), with retries.
pub async fn fetch(cluster: &Cluster, pod: &str, params: &LogParams) -> Result<String, CallError> {
    let api = cluster.api::<Pod>();
    let pod = super::checked(pod)?;
    retry(&cluster.policy, || api.logs(pod, params), Plain).await
}

/// A stream of the log; with `follow` it lasts until the container ends.
pub async fn open(
    cluster: &Cluster,
    pod: &str,
    params: &LogParams,
) -> Result<impl AsyncBufRead + Unpin + use<>, CallError> {
    let api = cluster.api::<Pod>();
    let pod = super::checked(pod)?;
    let reader = retry(&cluster.policy, || api.log_stream(pod, params), Plain).await?;
    Ok(Idle::new(Box::pin(reader), cluster.policy.idle))
}

/// A stream that fails with `TimedOut` once `idle` passes with nothing read.
struct Idle<R> {
    inner: R,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl<R> Idle<R> {
    fn new(inner: R, idle: Duration) -> Idle<R> {
        Idle {
            inner,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
        }
    }
}

/// After an answer: the bound counts afresh. While waiting: `TimedOut` once it passed.
fn idle_poll<T>(
    answer: Poll<io::Result<T>>,
    idle: Duration,
    timer: &mut Pin<Box<tokio::time::Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<T>> {
    match answer {
        Poll::Ready(r) => {
            timer.as_mut().reset(tokio::time::Instant::now() + idle);
            Poll::Ready(r)
        }
        Poll::Pending => match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the log stream said nothing for {} (idle_timeout)",
                    crate::duration::age(idle.as_secs())
                ),
            ))),
            Poll::Pending => Poll::Pending,
        },
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Idle<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let Idle { inner, idle, timer } = self.get_mut();
        idle_poll(Pin::new(inner).poll_read(cx, buf), *idle, timer, cx)
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for Idle<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let Idle { inner, idle, timer } = self.get_mut();
        idle_poll(Pin::new(inner).poll_fill_buf(cx), *idle, timer, cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        Pin::new(&mut self.get_mut().inner).consume(amt);
    }
}

/// The API's answer while the container has not started yet (400 "… is waiting to
/// start: ContainerCreating", or "PodInitializing").
pub fn not_started(err: &CallError) -> bool {
    err.code() == Some(400)
}

/// The kubelet's answer, in place of a log, for a container it no longer has (a pod
/// deleted or evicted, its containers removed): `unable to retrieve container logs for
/// containerd://…`. It is not a line the training printed.
pub fn kubelet_notice(line: &str) -> bool {
    line.strip_prefix("unable to retrieve container logs for ")
        .is_some_and(|rest| rest.contains("://"))
}

/// Why a log read whole is not the task's log: the kubelet's notice alone (see
/// [`kubelet_notice`]) in place of its lines.
pub fn unserved(text: &str) -> Option<&str> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next()?.trim();
    (kubelet_notice(first) && lines.next().is_none()).then_some(first)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::{AsyncReadExt, io::Cursor};

    #[test]
    fn a_log_that_is_only_the_kubelets_notice_is_not_a_log() {
        let notice = "unable to retrieve container logs for containerd://4f1c2a";
        assert_eq!(super::unserved(&format!("{notice}\n")), Some(notice));
        assert_eq!(super::unserved("epoch 1\nloss 0.3\n"), None);
        assert_eq!(super::unserved(&format!("epoch 1\n{notice}\n")), None);
        assert_eq!(super::unserved(""), None);
    }

    #[tokio::test]
    async fn a_stream_that_says_nothing_for_the_bound_fails_and_one_that_talks_does_not() {
        // A stream with something to read is read as it is.
        let mut talks =
            super::Idle::new(Cursor::new(b"line\n".to_vec()), Duration::from_millis(200));
        let mut text = String::new();
        talks.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "line\n");
        // One that never answers fails once the bound has passed.
        let mut silent = super::Idle::new(
            futures::io::empty().chain(Pending),
            Duration::from_millis(200),
        );
        let started = tokio::time::Instant::now();
        let err = silent.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    /// A reader that never answers.
    struct Pending;

    impl futures::AsyncRead for Pending {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut [u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            std::task::Poll::Pending
        }
    }

    #[test]
    fn the_kubelets_notice_is_told_from_log_lines() {
        assert!(super::kubelet_notice(
            "unable to retrieve container logs for containerd://4f1c2a"
        ));
        assert!(super::kubelet_notice(
            "unable to retrieve container logs for docker://4f1c2a"
        ));
        assert!(!super::kubelet_notice(
            "epoch 3: unable to retrieve container logs for"
        ));
        assert!(!super::kubelet_notice("loss 0.25"));
    }
}
