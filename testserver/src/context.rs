//! What a request handler sees: the server's shared state, the caller's identity, the
//! request, and what a handler answers. Shared by `server.rs` (which serves) and
//! `routes.rs`, `watch.rs`, `logs.rs` (which answer), so that none of them imports
//! another in a circle: server → routes → {watch, logs} → context.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::faults::FaultState;
use crate::options::{Options, RecordedRequest};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::Store;

pub struct Identity {
    pub name: String,
    pub namespace: Option<String>,
    pub denied: Vec<String>,
}

pub struct Shared {
    pub store: Mutex<Store>,
    pub opts: Options,
    pub admin_token: String,
    pub requests: Mutex<Vec<RecordedRequest>>,
    pub faults: Mutex<Vec<FaultState>>,
    /// The added latency, in nanoseconds (read by every request: no lock).
    pub latency_ns: std::sync::atomic::AtomicU64,
    /// Service cluster IPs (outside the store: see `objects::fill_new`).
    pub cluster_ips: crate::objects::ClusterIps,
    /// Waits out the latency (see `delay.rs`).
    pub delays: crate::delay::Delays,
    /// `false` while the server is down (see `TestServer::stop`): no listener, and
    /// every open connection cut.
    pub up: tokio::sync::watch::Sender<bool>,
    /// Open connections and whether the port listens: `stop` returns once both say
    /// the server is down.
    pub connections: std::sync::atomic::AtomicUsize,
    pub listening: std::sync::atomic::AtomicBool,
}

pub struct Ctx<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: HashMap<String, String>,
    pub body: &'a [u8],
    pub content_type: &'a str,
    pub user: &'a Identity,
}

pub enum Reply {
    Json(u16, Value),
    /// An object as stored, answered without a copy.
    Stored(u16, std::sync::Arc<Value>),
    Text(u16, String),
    Stream(u16, &'static str, mpsc::Receiver<Bytes>),
    /// 204 without a body or a content type.
    NoContent,
}

/// The request's selectors; a field the resource cannot be selected by is refused
/// as a real server refuses it.
pub fn selectors(c: &Ctx, resource: &str) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let l = LabelSelector::parse(c.query.get("labelSelector").map_or("", String::as_str))?;
    let f = FieldSelector::parse(c.query.get("fieldSelector").map_or("", String::as_str))?;
    f.check(resource)?;
    Ok((l, f))
}
