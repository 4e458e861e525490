//! `GET .../pods/NAME/log`: plain text, streamed while following; 204 and no body for a
//! pod that is not bound to a node; 400 while a bound pod's container waits to start.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::context::{Ctx, Reply, Shared};
use crate::status::ApiError;
use crate::store::LogEvent;

fn render(at: &jiff::Timestamp, text: &str, timestamps: bool) -> String {
    if timestamps {
        format!("{} {text}", at.strftime("%Y-%m-%dT%H:%M:%S%.fZ"))
    } else {
        text.to_string()
    }
}

fn container_names(pod: &Value) -> Vec<String> {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|l| pod["spec"][l].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// The query of a log request.
struct LogQuery<'a> {
    container: Option<&'a str>,
    follow: bool,
    timestamps: bool,
    tail: Option<i64>,
    since: Option<i64>,
    /// `sinceTime` (RFC 3339, whole seconds as the API sends it): lines at or after it.
    since_time: Option<jiff::Timestamp>,
    limit: Option<i64>,
}

impl<'a> LogQuery<'a> {
    fn parse(c: &'a Ctx) -> Result<LogQuery<'a>, ApiError> {
        let q = |k: &str| c.query.get(k).map(String::as_str);
        let bool_q = |k: &str| matches!(q(k), Some("true") | Some("1"));
        let num_q = |k: &str| -> Result<Option<i64>, ApiError> {
            q(k).map(|v| {
                v.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid value for {k}: {v:?}")))
            })
            .transpose()
        };
        Ok(LogQuery {
            container: q("container"),
            follow: bool_q("follow"),
            timestamps: bool_q("timestamps"),
            tail: num_q("tailLines")?,
            since: num_q("sinceSeconds")?,
            since_time: q("sinceTime")
                .map(|t| {
                    t.parse::<jiff::Timestamp>().map_err(|_| {
                        ApiError::bad_request(format!("invalid value for sinceTime: {t:?}"))
                    })
                })
                .transpose()?,
            limit: num_q("limitBytes")?,
        })
    }
}

pub fn get(sh: &Arc<Shared>, c: &Ctx, ns: &str, name: &str) -> Result<Reply, ApiError> {
    let query = LogQuery::parse(c)?;
    let st = sh.store.lock().unwrap_or_else(|e| e.into_inner());
    let pod = st
        .get("pods", ns, name)
        .ok_or_else(|| ApiError::not_found("pods", name))?;
    let container = container_of(pod, name, query.container)?;
    // A pod no node has taken has no kubelet to ask: a real server answers 204 without
    // a body, whatever the pod's status says.
    if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        return Ok(Reply::NoContent);
    }
    let key = (ns.to_string(), name.to_string());
    let log = st.logs.get(&key);
    if let Some(reason) = waiting(pod, &container)
        && log.is_none_or(|l| l.lines.is_empty())
    {
        return Err(ApiError::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: {reason}"
        )));
    }
    let cutoff = query
        .since
        .map(|s| jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s))
        .or(query.since_time);
    let mut lines: Vec<&(jiff::Timestamp, String)> = log
        .map(|l| {
            l.lines
                .iter()
                .filter(|(at, _)| cutoff.is_none_or(|c| *at >= c))
                .collect()
        })
        .unwrap_or_default();
    if let Some(n) = query.tail {
        let n = n.max(0) as usize;
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    let mut text: String = lines
        .iter()
        .map(|(at, t)| render(at, t, query.timestamps))
        .collect();
    let mut budget = query.limit.map(|l| l.max(0) as usize);
    if let Some(b) = budget {
        truncate_bytes(&mut text, b);
        budget = Some(b - text.len());
    }
    // A running container that has printed nothing yet is followed as one that has: a
    // kubelet ends a follow when the container ends (`Store::put` closes the log then).
    let closed = log.is_some_and(|l| l.closed);
    if !query.follow || closed || budget == Some(0) {
        return Ok(Reply::Text(200, text));
    }
    let rx = st.log_events.subscribe();
    drop(st);
    let (tx, body) = mpsc::channel::<Bytes>(256);
    tokio::spawn(follow(key, text, budget, query.timestamps, rx, tx));
    Ok(Reply::Stream(200, "text/plain", body))
}

/// The container a log request names, or the pod's only one.
fn container_of(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let containers = container_names(pod);
    match asked {
        Some(ctr) if !containers.iter().any(|x| x == ctr) => Err(ApiError::bad_request(format!(
            "container {ctr} is not valid for pod {name}"
        ))),
        Some(ctr) => Ok(ctr.to_string()),
        None if pod["spec"]["containers"].as_array().map_or(0, Vec::len) > 1 => {
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )))
        }
        None => Ok(containers.first().cloned().unwrap_or_default()),
    }
}

/// Why the container has not started, if it has not: its waiting reason, or
/// `ContainerCreating` for a Pending pod.
fn waiting(pod: &Value, container: &str) -> Option<String> {
    let waiting = pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == container))
        .and_then(|c| c["state"].get("waiting"))
        .map(|w| {
            w["reason"]
                .as_str()
                .unwrap_or("ContainerCreating")
                .to_string()
        });
    match waiting {
        Some(reason) => Some(reason),
        None if pod["status"]["phase"].as_str() == Some("Pending") => {
            Some("ContainerCreating".to_string())
        }
        None => None,
    }
}

/// Streams `text`, then the pod's new lines, until the log closes, the reader goes
/// away, or the byte budget is spent.
async fn follow(
    (ns, pod): (String, String),
    text: String,
    mut budget: Option<usize>,
    timestamps: bool,
    mut rx: broadcast::Receiver<LogEvent>,
    tx: mpsc::Sender<Bytes>,
) {
    if !text.is_empty() && tx.send(Bytes::from(text)).await.is_err() {
        return;
    }
    loop {
        let ev = tokio::select! {
            ev = rx.recv() => ev,
            _ = tx.closed() => return,
        };
        let mut chunk = match ev {
            Ok(LogEvent::Line {
                namespace,
                pod: p,
                at,
                text,
            }) if namespace == ns && p == pod => render(&at, &text, timestamps),
            Ok(LogEvent::Closed { namespace, pod: p }) if namespace == ns && p == pod => return,
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if let Some(b) = budget.as_mut() {
            truncate_bytes(&mut chunk, *b);
            *b -= chunk.len();
        }
        if tx.send(Bytes::from(chunk)).await.is_err() || budget == Some(0) {
            return;
        }
    }
}

fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}
