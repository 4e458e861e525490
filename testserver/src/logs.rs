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

pub fn get(sh: &Arc<Shared>, c: &Ctx, ns: &str, name: &str) -> Result<Reply, ApiError> {
    let q = |k: &str| c.query.get(k).map(String::as_str);
    let bool_q = |k: &str| matches!(q(k), Some("true") | Some("1"));
    let num_q = |k: &str| -> Result<Option<i64>, ApiError> {
        q(k).map(|v| {
            v.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid value for {k}: {v:?}")))
        })
        .transpose()
    };
    let (follow, timestamps) = (bool_q("follow"), bool_q("timestamps"));
    let tail = num_q("tailLines")?;
    let since = num_q("sinceSeconds")?;
    let limit = num_q("limitBytes")?;

    let st = sh.store.lock().unwrap_or_else(|e| e.into_inner());
    let pod = st
        .get("pods", ns, name)
        .ok_or_else(|| ApiError::not_found("pods", name))?;
    let containers = container_names(pod);
    let container = match q("container") {
        Some(ctr) if !containers.iter().any(|x| x == ctr) => {
            return Err(ApiError::bad_request(format!(
                "container {ctr} is not valid for pod {name}"
            )));
        }
        Some(ctr) => ctr.to_string(),
        None if pod["spec"]["containers"].as_array().map_or(0, Vec::len) > 1 => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
        None => containers.first().cloned().unwrap_or_default(),
    };
    // A pod no node has taken has no kubelet to ask: a real server answers 204 without
    // a body, whatever the pod's status says.
    if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        return Ok(Reply::NoContent);
    }
    let key = (ns.to_string(), name.to_string());
    let log = st.logs.get(&key);
    let waiting = pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == container.as_str()))
        .and_then(|c| c["state"].get("waiting"))
        .map(|w| {
            w["reason"]
                .as_str()
                .unwrap_or("ContainerCreating")
                .to_string()
        });
    let never_ran = log.is_none_or(|l| l.lines.is_empty());
    let reason = match waiting {
        Some(reason) => Some(reason),
        None if pod["status"]["phase"].as_str() == Some("Pending") => {
            Some("ContainerCreating".to_string())
        }
        None => None,
    };
    if let Some(reason) = reason
        && never_ran
    {
        return Err(ApiError::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: {reason}"
        )));
    }
    let cutoff = since.map(|s| jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s));
    let mut lines: Vec<&(jiff::Timestamp, String)> = log
        .map(|l| {
            l.lines
                .iter()
                .filter(|(at, _)| cutoff.is_none_or(|c| *at >= c))
                .collect()
        })
        .unwrap_or_default();
    if let Some(n) = tail {
        let n = n.max(0) as usize;
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    let mut text: String = lines
        .iter()
        .map(|(at, t)| render(at, t, timestamps))
        .collect();
    let mut budget = limit.map(|l| l.max(0) as usize);
    if let Some(b) = budget {
        truncate_bytes(&mut text, b);
        budget = Some(b - text.len());
    }
    let closed = log.is_none_or(|l| l.closed);
    if !follow || closed || budget == Some(0) {
        return Ok(Reply::Text(200, text));
    }
    let mut rx = st.log_events.subscribe();
    drop(st);
    let (tx, body) = mpsc::channel::<Bytes>(256);
    let (ns, pod) = key;
    tokio::spawn(async move {
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
    });
    Ok(Reply::Stream(200, "text/plain", body))
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
