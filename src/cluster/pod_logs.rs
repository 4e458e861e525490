//! Reading pod logs: `GET .../pods/NAME/log?container=…`, whole or streamed.

use std::time::Duration;

use futures::AsyncBufRead;
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
    /// request parameter: how `ops/logs.rs` shows them).
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
    Ok(Box::pin(reader))
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

#[cfg(test)]
mod tests {
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
