//! The object store, its event history (for watches) and the pods' logs.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

const HISTORY: usize = 10_000;

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub resource: String,
    pub namespace: String,
    pub kind: &'static str,
    /// Shared with the store and every watch: an event costs no copy of its object.
    pub object: Arc<Value>,
    /// The state before a MODIFIED event, to tell a watch with a selector that an
    /// object entered or left it.
    pub prev: Option<Arc<Value>>,
}

#[derive(Debug, Clone)]
pub enum LogEvent {
    Line {
        namespace: String,
        pod: String,
        at: jiff::Timestamp,
        text: String,
    },
    Closed {
        namespace: String,
        pod: String,
    },
}

#[derive(Debug, Default)]
pub struct PodLog {
    pub lines: Vec<(jiff::Timestamp, String)>,
    pub closed: bool,
}

type Key = (String, String);

pub struct Store {
    /// Each object is shared with the events that carry it (see [`Event::object`]).
    objects: BTreeMap<String, BTreeMap<Key, Arc<Value>>>,
    rv: u64,
    history: VecDeque<Event>,
    /// Every event after this resourceVersion is still in `history`.
    history_floor: u64,
    events: broadcast::Sender<Event>,
    pub logs: HashMap<Key, PodLog>,
    pub log_events: broadcast::Sender<LogEvent>,
    /// What acts on every change of a namespace (the quota controller, `quota::sync`):
    /// handed in by the server, so that the store knows none of them.
    controllers: Vec<fn(&mut Store, &str)>,
}

impl Store {
    pub fn new() -> Store {
        Store {
            objects: BTreeMap::new(),
            rv: 1,
            history: VecDeque::new(),
            history_floor: 1,
            controllers: Vec::new(),
            events: broadcast::channel(16_384).0,
            logs: HashMap::new(),
            log_events: broadcast::channel(16_384).0,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn get(&self, resource: &str, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(resource)?
            .get(&(ns.to_string(), name.to_string()))
            .map(|o| &**o)
    }

    /// Objects of a resource, sorted by namespace and name; `ns` None = all.
    pub fn list(&self, resource: &str, ns: Option<&str>) -> Vec<Value> {
        let Some(map) = self.objects.get(resource) else {
            return vec![];
        };
        map.iter()
            .filter(|((n, _), _)| ns.is_none_or(|want| want == n))
            .map(|(_, v)| Value::clone(v))
            .collect()
    }

    /// Objects of a resource after `after` (namespace, name), in that order, without a
    /// copy; `ns` None = all namespaces. What a page of a list reads.
    pub fn list_after<'a>(
        &'a self,
        resource: &str,
        ns: Option<&'a str>,
        after: Option<(String, String)>,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        use std::ops::Bound;
        let start = match after {
            Some(key) => Bound::Excluded(key),
            None => Bound::Unbounded,
        };
        self.objects
            .get(resource)
            .into_iter()
            .flat_map(move |map| map.range((start.clone(), Bound::Unbounded)))
            .filter(move |((n, _), _)| ns.is_none_or(|want| want == n))
            .map(|(_, v)| &**v)
    }

    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.get("namespaces", "", ns).is_some()
    }

    pub fn namespaced_count(&self) -> usize {
        self.objects
            .iter()
            .filter(|(r, _)| r.as_str() != "namespaces")
            .map(|(_, m)| m.len())
            .sum()
    }

    fn emit(
        &mut self,
        resource: &str,
        ns: &str,
        kind: &'static str,
        object: Arc<Value>,
        prev: Option<Arc<Value>>,
    ) {
        let ev = Event {
            rv: self.rv,
            resource: resource.to_string(),
            namespace: ns.to_string(),
            kind,
            object,
            prev,
        };
        self.history.push_back(ev.clone());
        while self.history.len() > HISTORY {
            if let Some(old) = self.history.pop_front() {
                self.history_floor = old.rv;
            }
        }
        // No receivers is fine.
        let _ = self.events.send(ev);
    }

    /// Adds a controller: called with the namespace after every change there.
    pub fn add_controller(&mut self, controller: fn(&mut Store, &str)) {
        self.controllers.push(controller);
    }

    /// The controllers act on a change in `ns`.
    fn changed(&mut self, ns: &str) {
        for controller in self.controllers.clone() {
            controller(self, ns);
        }
    }

    /// Stores `obj` (new or replacing), stamping a fresh resourceVersion, and emits
    /// ADDED or MODIFIED; then the controllers act (the quotas are counted again,
    /// `quota.rs`). Returns the stored object.
    pub fn put(&mut self, resource: &str, ns: &str, obj: Value) -> Arc<Value> {
        let stored = self.put_quietly(resource, ns, obj);
        self.changed(ns);
        stored
    }

    /// [`Store::put`] without the controllers: how the quota controller stores a
    /// quota's status.
    pub fn put_quietly(&mut self, resource: &str, ns: &str, mut obj: Value) -> Arc<Value> {
        self.rv += 1;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let obj = Arc::new(obj);
        let prev = self
            .objects
            .entry(resource.to_string())
            .or_default()
            .insert((ns.to_string(), name), obj.clone());
        let kind = if prev.is_some() { "MODIFIED" } else { "ADDED" };
        self.emit(resource, ns, kind, obj.clone(), prev);
        // As on a real server, following a container's log ends when the container does.
        if resource == "pods" && pod_finished(&obj) {
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let closed = self
                .logs
                .get(&(ns.to_string(), name.clone()))
                .is_some_and(|l| l.closed);
            if !closed {
                self.close_log(ns, &name);
            }
        }
        obj
    }

    pub fn remove(&mut self, resource: &str, ns: &str, name: &str) -> Option<Value> {
        let mut obj = self
            .objects
            .get_mut(resource)?
            .remove(&(ns.to_string(), name.to_string()))?;
        self.rv += 1;
        Arc::make_mut(&mut obj)["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        self.emit(resource, ns, "DELETED", obj.clone(), None);
        if resource == "pods" {
            self.logs.remove(&(ns.to_string(), name.to_string()));
            let _ = self.log_events.send(LogEvent::Closed {
                namespace: ns.to_string(),
                pod: name.to_string(),
            });
        }
        self.changed(ns);
        Some(Arc::unwrap_or_clone(obj))
    }

    /// The oldest resourceVersion a watch or a continue token may still start from.
    pub fn history_floor(&self) -> u64 {
        self.history_floor
    }

    /// What etcd's compaction does: the history so far is gone, so a watch from an
    /// earlier version, or a continue token holding one, gets 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.history_floor = self.rv;
    }

    /// Subscribes to future events and returns the past events after `since`
    /// (None = nothing from the past). Err(floor) when `since` is too old.
    pub fn subscribe(
        &self,
        since: Option<u64>,
    ) -> Result<(Vec<Event>, broadcast::Receiver<Event>), u64> {
        let rx = self.events.subscribe();
        let past = match since {
            None => vec![],
            Some(rv) if rv < self.history_floor => return Err(self.history_floor),
            Some(rv) => self.history.iter().filter(|e| e.rv > rv).cloned().collect(),
        };
        Ok((past, rx))
    }

    pub fn append_log(&mut self, ns: &str, pod: &str, text: &str) {
        let at = jiff::Timestamp::now();
        let log = self
            .logs
            .entry((ns.to_string(), pod.to_string()))
            .or_default();
        for line in text.split_inclusive('\n') {
            log.lines.push((at, line.to_string()));
            let _ = self.log_events.send(LogEvent::Line {
                namespace: ns.to_string(),
                pod: pod.to_string(),
                at,
                text: line.to_string(),
            });
        }
    }

    pub fn close_log(&mut self, ns: &str, pod: &str) {
        self.logs
            .entry((ns.to_string(), pod.to_string()))
            .or_default()
            .closed = true;
        let _ = self.log_events.send(LogEvent::Closed {
            namespace: ns.to_string(),
            pod: pod.to_string(),
        });
    }
}

/// Whether a pod's phase is final, or all its containers have terminated.
fn pod_finished(pod: &Value) -> bool {
    let status = &pod["status"];
    let statuses = status["containerStatuses"].as_array();
    if matches!(status["phase"].as_str(), Some("Succeeded" | "Failed")) {
        // A v1.20 kubelet says a pod it stops `Failed` at once, its containers still
        // `running` (their SIGTERM handlers run): their logs end when a test says they
        // ended (`close_log`).
        let said_running =
            statuses.is_some_and(|cs| cs.iter().any(|c| c["state"].get("running").is_some()));
        return !said_running;
    }
    statuses.is_some_and(|cs| {
        !cs.is_empty() && cs.iter().all(|c| c["state"].get("terminated").is_some())
    })
}
