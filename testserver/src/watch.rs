//! `?watch=true`: a chunked stream of one JSON event per line.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::context::{Ctx, Reply, Shared, selectors};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::Event;

fn line(kind: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({ "type": kind, "object": object })).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn gone(rv: u64, floor: u64) -> Bytes {
    let status = ApiError::expired(format!("too old resource version: {rv} ({floor})")).to_json();
    line("ERROR", &status)
}

struct Filter {
    resource: String,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, o: &Value) -> bool {
        self.labels.matches(o) && self.fields.matches(o)
    }

    /// The event a watcher with this filter sees, if any. An object that leaves
    /// the selector is seen as DELETED, one that enters it as ADDED.
    fn translate(&self, ev: &Event) -> Option<&'static str> {
        if ev.resource != self.resource || self.ns.as_ref().is_some_and(|n| *n != ev.namespace) {
            return None;
        }
        let now = self.matches(&ev.object);
        match (ev.kind, &ev.prev) {
            ("MODIFIED", Some(prev)) => match (self.matches(prev), now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            },
            (kind, _) => now.then_some(kind),
        }
    }
}

pub fn start(
    sh: &Arc<Shared>,
    c: &Ctx,
    resource: &str,
    ns: Option<&str>,
) -> Result<Reply, ApiError> {
    let (labels, fields) = selectors(c, resource)?;
    let filter = Filter {
        resource: resource.to_string(),
        ns: ns.map(str::to_string),
        labels,
        fields,
    };
    let since = match c.query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}")))?,
        ),
    };
    let timeout = c
        .query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|t| *t > 0)
        .map(Duration::from_secs);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut first = Vec::new();
    let events = {
        let st = sh.store.lock().unwrap_or_else(|e| e.into_inner());
        match st.subscribe(since) {
            Err(floor) => {
                first.push(gone(since.unwrap_or(0), floor));
                None
            }
            Ok((past, live)) => {
                if since.is_none() {
                    for o in st.list(resource, ns).iter().filter(|o| filter.matches(o)) {
                        first.push(line("ADDED", o));
                    }
                }
                for ev in &past {
                    if let Some(kind) = filter.translate(ev) {
                        first.push(line(kind, &ev.object));
                    }
                }
                Some(live)
            }
        }
    };
    tokio::spawn(stream(first, events, filter, timeout, tx));
    Ok(Reply::Stream(200, "application/json", rx))
}

/// Sends the first events, then the live ones that match, until `timeout`, the
/// reader goes away, or the history is lost.
async fn stream(
    first: Vec<Bytes>,
    events: Option<broadcast::Receiver<Event>>,
    filter: Filter,
    timeout: Option<Duration>,
    tx: mpsc::Sender<Bytes>,
) {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    for b in first {
        if tx.send(b).await.is_err() {
            return;
        }
    }
    let Some(mut live) = events else { return };
    loop {
        let next = async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d, live.recv()).await.ok(),
                None => Some(live.recv().await),
            }
        };
        let msg = tokio::select! {
            m = next => m,
            _ = tx.closed() => return,
        };
        let b = match msg {
            None => return, // timeoutSeconds elapsed
            Some(Ok(ev)) => match filter.translate(&ev) {
                Some(kind) => line(kind, &ev.object),
                None => continue,
            },
            Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                let _ = tx.send(gone(0, 0)).await;
                return;
            }
            Some(Err(broadcast::error::RecvError::Closed)) => return,
        };
        if tx.send(b).await.is_err() {
            return;
        }
    }
}
