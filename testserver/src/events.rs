//! Events about pods as the cluster's components write them, for `status` to read
//! back. Two writers, two shapes (both listed through core/v1 `events`):
//!
//! - the kubelet records through core/v1 (client-go's `record` package): `source`
//!   with its component and host, `firstTimestamp`/`lastTimestamp`, `count`;
//! - the scheduler (since 1.19) records through events.k8s.io/v1
//!   (`k8s.io/client-go/tools/events`): `eventTime` (micro-seconds), `reportingComponent`,
//!   a `series` once repeated, and read through core/v1 it has no `lastTimestamp`, no `count`
//!   and an empty `source`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

/// Who writes the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    Kubelet,
    Scheduler,
}

/// The time in nanoseconds, made unique: events are named `POD.%x` of it, as
/// client-go names them, so that a list (in name order) gives them in the order
/// they were made.
fn unique_nanos(now: jiff::Timestamp) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let nanos = u64::try_from(now.as_nanosecond()).unwrap_or(0);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = nanos.max(last + 1);
        match LAST.compare_exchange(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// An Event about `pod` (as stored: its name, namespace and uid), seen `count` times.
pub fn about_pod(
    pod: &Value,
    by: Reporter,
    kind: &str,
    reason: &str,
    message: &str,
    count: u32,
) -> Value {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let now = jiff::Timestamp::now();
    let seconds = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let micros = now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let mut event = json!({
        "metadata": {"name": format!("{name}.{:x}", unique_nanos(now)), "namespace": namespace},
        "involvedObject": {
            "kind": "Pod", "apiVersion": "v1", "name": name, "namespace": namespace,
            "uid": pod["metadata"]["uid"],
        },
        "type": kind,
        "reason": reason,
        "message": message,
    });
    match by {
        Reporter::Kubelet => {
            event["source"] = json!({"component": "kubelet", "host": "node-1"});
            event["firstTimestamp"] = json!(seconds);
            event["lastTimestamp"] = json!(seconds);
            event["count"] = json!(count);
            event["involvedObject"]["fieldPath"] = json!("spec.containers{tensorflow}");
        }
        Reporter::Scheduler => {
            event["source"] = json!({});
            event["eventTime"] = json!(micros);
            event["reportingComponent"] = json!("default-scheduler");
            event["reportingInstance"] = json!("default-scheduler-node-1");
            event["action"] = json!("Scheduling");
            if count > 1 {
                event["series"] = json!({"count": count, "lastObservedTime": micros});
            }
        }
    }
    event
}
