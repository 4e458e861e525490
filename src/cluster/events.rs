//! The latest Events of some pods (what `kubectl describe pod` shows under Events:
//! the scheduler's FailedScheduling, the kubelet's Failed / BackOff pulling an image),
//! in one paged list of the namespace's core/v1 Events (served from 1.0 to 1.36; the
//! events.k8s.io/v1 ones the scheduler writes are listed there too).
//!
//! One pod: the field selector `involvedObject.kind=Pod,involvedObject.name=NAME`, as
//! `kubectl describe` asks. Several: `involvedObject.kind=Pod` (field selectors have no
//! set of names), the pods picked out here. Either way each page is folded into at most
//! [`KEEP`] events per pod before the next is read.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

use super::Cluster;
use super::pager;
use super::retry::CallError;

/// Events kept per pod: the newest.
pub const KEEP: usize = 5;

/// One Event about a pod, as `kubectl describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEvent {
    /// Normal or Warning.
    pub kind: String,
    pub reason: String,
    pub message: String,
    /// How many times it happened (a series' count, else the event's count, else 1).
    pub count: u32,
    /// When it last happened (seconds since the epoch), if the event says.
    pub last_seen: Option<i64>,
}

impl PodEvent {
    fn from_event(e: &Event) -> PodEvent {
        let series = e.series.as_ref();
        let last_seen = series
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|t| t.0.as_second())
            .or_else(|| e.last_timestamp.as_ref().map(|t| t.0.as_second()))
            .or_else(|| e.event_time.as_ref().map(|t| t.0.as_second()))
            .or_else(|| {
                e.metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| t.0.as_second())
            });
        let count = series
            .and_then(|s| s.count)
            .or(e.count)
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c > 0)
            .unwrap_or(1);
        PodEvent {
            kind: e.type_.clone().unwrap_or_else(|| "Normal".into()),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            count,
            last_seen,
        }
    }
}

/// For each pod (name, and when it was created, to leave out the events of an
/// earlier pod of the same name), its newest [`KEEP`] events, newest first.
pub async fn of_pods(
    cluster: &Cluster,
    pods: &BTreeMap<String, Option<i64>>,
) -> Result<BTreeMap<String, Vec<PodEvent>>, CallError> {
    let mut found: BTreeMap<String, Vec<PodEvent>> = BTreeMap::new();
    if pods.is_empty() {
        return Ok(found);
    }
    let fields = match pods.keys().next() {
        Some(name) if pods.len() == 1 => {
            format!("involvedObject.kind=Pod,involvedObject.name={name}")
        }
        _ => "involvedObject.kind=Pod".to_string(),
    };
    let api: Api<Event> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let params = ListParams::default().fields(&fields);
    pager::list_pages_with(&cluster.policy, &api, &params, |events, first| {
        if first {
            found.clear();
        }
        for event in &events {
            fold(&mut found, pods, event);
        }
    })
    .await?;
    Ok(found)
}

/// Adds one event to its pod's newest [`KEEP`], if it is about one of `pods`.
fn fold(
    found: &mut BTreeMap<String, Vec<PodEvent>>,
    pods: &BTreeMap<String, Option<i64>>,
    e: &Event,
) {
    let about = &e.involved_object;
    if about.kind.as_deref() != Some("Pod") {
        return;
    }
    let Some(name) = about.name.as_deref() else {
        return;
    };
    let Some(created) = pods.get(name) else {
        return;
    };
    let event = PodEvent::from_event(e);
    if let (Some(created), Some(seen)) = (created, event.last_seen)
        && seen < *created
    {
        return;
    }
    let kept = found.entry(name.to_string()).or_default();
    // Newest first; an event without a time last. Of events in the same second, the
    // one listed later first: a list is in name order, and client-go names an event
    // `POD.%x` of the time in nanoseconds.
    let at = kept
        .partition_point(|k| k.last_seen.unwrap_or(i64::MIN) > event.last_seen.unwrap_or(i64::MIN));
    kept.insert(at, event);
    kept.truncate(KEEP);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(name: &str, reason: &str, extra: serde_json::Value) -> Event {
        let mut e = json!({
            "metadata": {"name": format!("{name}.{reason}"), "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": "ns"},
            "reason": reason,
            "message": format!("{reason} happened"),
            "type": "Warning",
        });
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        serde_json::from_value(e).unwrap()
    }

    #[test]
    fn the_newest_few_of_each_pod_are_kept_from_either_api() {
        let pods: BTreeMap<String, Option<i64>> = [
            ("t-worker-0".to_string(), Some(1_000)),
            ("t-worker-1".to_string(), None),
        ]
        .into();
        let mut found = BTreeMap::new();
        // The kubelet writes core/v1 events: lastTimestamp and count.
        for (i, reason) in ["Scheduled", "Pulling", "Failed", "BackOff"]
            .iter()
            .enumerate()
        {
            let at = format!("1970-01-01T00:{:02}:00Z", 20 + i);
            let extra = json!({"lastTimestamp": at, "count": i + 1});
            fold(&mut found, &pods, &event("t-worker-0", reason, extra));
        }
        // The scheduler writes events.k8s.io/v1: eventTime and a series, no lastTimestamp.
        let scheduler = json!({
            "eventTime": "1970-01-01T00:30:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "1970-01-01T00:40:00.000000Z"},
            "reportingComponent": "default-scheduler",
        });
        fold(
            &mut found,
            &pods,
            &event("t-worker-1", "FailedScheduling", scheduler),
        );
        // Another pod's, a node's, and one from before the pod was created: left out.
        fold(&mut found, &pods, &event("other", "Failed", json!({})));
        let mut node = event("t-worker-1", "NodeNotReady", json!({}));
        node.involved_object.kind = Some("Node".into());
        fold(&mut found, &pods, &node);
        let old = json!({"lastTimestamp": "1970-01-01T00:10:00Z"});
        fold(&mut found, &pods, &event("t-worker-0", "Killing", old));

        let w0: Vec<(&str, u32)> = found["t-worker-0"]
            .iter()
            .map(|e| (e.reason.as_str(), e.count))
            .collect();
        assert_eq!(
            w0,
            [
                ("BackOff", 4),
                ("Failed", 3),
                ("Pulling", 2),
                ("Scheduled", 1)
            ]
        );
        let w1 = &found["t-worker-1"];
        assert_eq!(w1.len(), 1);
        assert_eq!(
            (w1[0].reason.as_str(), w1[0].count, w1[0].last_seen),
            ("FailedScheduling", 7, Some(2_400))
        );
        assert_eq!(found.len(), 2);
    }
}
