//! An in-process fake kube-apiserver (core/v1) for tf-spawner's tests.
//!
//! The server runs on its own tokio runtime, so tests can be plain `#[test]`
//! functions or async ones. It answers like a real kube-apiserver: the same
//! validation, the same `Status` errors, watches, logs, RBAC-like 403s, and it
//! can inject faults and latency.

mod clock;
mod context;
mod delay;
mod discovery;
mod events;
mod faults;
mod logs;
mod objects;
mod options;
mod podsecurity;
mod quantity;
mod quota;
mod routes;
mod schedulers;
mod seed;
mod selector;
mod server;
mod status;
mod store;
mod tls;
mod validate;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

pub use events::Reporter;

use context::Shared;
pub use faults::{Fault, FaultAction};
use store::Store;

pub use options::{
    COSCHEDULING_PODGROUPS, GANG_PODGROUPS, JOBS, KUEUE_LOCALQUEUES, LEGACY_COSCHEDULING_PODGROUPS,
    NETWORK_POLICIES, Options, RecordedRequest, User, VOLCANO_PODGROUPS, VOLCANO_QUEUES,
};

impl RecordedRequest {
    /// A decoded query parameter.
    pub fn param(&self, key: &str) -> Option<String> {
        server::parse_query(&self.query).remove(key)
    }
}

pub struct TestServer {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    port: u16,
    tls: bool,
    ca_pem: String,
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(Options::default())
    }

    pub fn start_with(opts: Options) -> TestServer {
        let tls = tls::generate();
        let mut admin = [0u8; 16];
        rand::Rng::fill(&mut rand::rng(), &mut admin);
        let admin_token: String = admin.iter().map(|b| format!("{b:02x}")).collect();
        let mut store = Store::new();
        // The controllers that act on every change (a callback: the store knows none).
        store.add_controller(quota::sync);
        for ns in &opts.namespaces {
            seed::add_namespace(&mut store, ns);
        }
        let use_tls = opts.tls;
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            opts,
            admin_token,
            requests: Mutex::new(vec![]),
            faults: Mutex::new(vec![]),
            latency_ns: std::sync::atomic::AtomicU64::new(0),
            cluster_ips: objects::ClusterIps::default(),
            delays: delay::Delays::start(),
            up: tokio::sync::watch::channel(true).0,
            connections: std::sync::atomic::AtomicUsize::new(0),
            listening: std::sync::atomic::AtomicBool::new(true),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("local addr").port();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kube-testserver")
            .enable_all()
            .build()
            .expect("tokio runtime");
        let acceptor = use_tls.then(|| tokio_rustls::TlsAcceptor::from(tls.config.clone()));
        let sh = shared.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            server::serve(listener, sh, acceptor).await;
        });
        TestServer {
            shared,
            runtime: Some(runtime),
            port,
            tls: use_tls,
            ca_pem: tls.ca_pem,
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    pub fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    pub fn admin_token(&self) -> String {
        self.shared.admin_token.clone()
    }

    fn token_of(&self, user: &str) -> String {
        if user == "admin" {
            return self.admin_token();
        }
        self.shared
            .opts
            .users
            .iter()
            .find(|u| u.name == user)
            .map(|u| u.token.clone())
            .unwrap_or_else(|| panic!("kube-testserver: unknown user {user:?}"))
    }

    /// Writes `dir/kubeconfig` (admin) or `dir/kubeconfig-<user>` with one context
    /// "test", and returns its path.
    pub fn write_kubeconfig(&self, dir: &Path, user: &str, namespace: Option<&str>) -> PathBuf {
        let token = self.token_of(user);
        let ca = if self.tls {
            let data = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
            format!("\n    certificate-authority-data: {data}")
        } else {
            String::new()
        };
        let ns = namespace.map_or(String::new(), |n| format!("\n    namespace: {n}"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {url}{ca}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}{ns}\ncurrent-context: test\nusers:\n- name: {user}\n  user:\n    token: {token}\npreferences: {{}}\n",
            url = self.url(),
        );
        let file = if user == "admin" {
            "kubeconfig".to_string()
        } else {
            format!("kubeconfig-{user}")
        };
        let path = dir.join(file);
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.shared.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Objects of a resource in a namespace ("" for cluster-scoped resources).
    pub fn list(&self, resource: &str, namespace: &str) -> Vec<Value> {
        self.store().list(resource, Some(namespace))
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        self.store().get(resource, namespace, name).cloned()
    }

    /// Seeds an object without validation: metadata is filled as on a create
    /// (a pod keeps a `status` it brings), the namespace is created if needed, and
    /// watchers see ADDED.
    pub fn insert(&self, resource: &str, namespace: &str, obj: Value) {
        seed::seed(&self.shared, resource, namespace, obj);
    }

    pub fn create_namespace(&self, name: &str) {
        let mut st = self.store();
        if !st.namespace_exists(name) {
            seed::add_namespace(&mut st, name);
        }
    }

    /// All namespaced objects of every resource.
    pub fn object_count(&self) -> usize {
        self.store().namespaced_count()
    }

    /// Stops answering, as a killed kube-apiserver: the port refuses connections and
    /// every open one (watches, followed logs) is cut. The store is kept (etcd's data).
    /// Returns once the port is closed and no connection is left, so that nothing
    /// changed afterwards reaches a client before `resume`.
    pub fn stop(&self) {
        use std::sync::atomic::Ordering;
        self.shared.up.send_replace(false);
        let start = std::time::Instant::now();
        while self.shared.listening.load(Ordering::SeqCst)
            || self.shared.connections.load(Ordering::SeqCst) > 0
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the server does not stop"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Connections open now (a benchmark's measure of a client's streams).
    pub fn open_connections(&self) -> usize {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Answers again on the same port, after [`TestServer::stop`].
    pub fn resume(&self) {
        self.shared.up.send_replace(true);
    }

    /// Compacts the history, as etcd does every few minutes: watches from an earlier
    /// resourceVersion and continue tokens holding one get 410 Gone.
    pub fn compact(&self) {
        self.store().compact();
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn clear_requests(&self) {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    pub fn add_fault(&self, f: Fault) {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(faults::FaultState { fault: f, seen: 0 });
    }

    pub fn clear_faults(&self) {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Added before every answer.
    pub fn set_latency(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.shared
            .latency_ns
            .store(ns, std::sync::atomic::Ordering::Relaxed);
    }

    /// Replaces a pod's status (watchers see MODIFIED). A missing pod is ignored.
    pub fn set_pod_status(&self, namespace: &str, name: &str, status: Value) {
        let mut st = self.store();
        if let Some(mut pod) = st.get("pods", namespace, name).cloned() {
            pod["status"] = status;
            st.put("pods", namespace, pod);
        }
    }

    /// Sets a pod's `metadata.creationTimestamp` (RFC 3339), as if it had been created
    /// then (watchers see MODIFIED). A missing pod is ignored.
    pub fn set_pod_created(&self, namespace: &str, name: &str, created: &str) {
        self.set_created("pods", namespace, name, created);
    }

    /// Sets any object's `metadata.creationTimestamp`, as [`Self::set_pod_created`].
    pub fn set_created(&self, resource: &str, namespace: &str, name: &str, created: &str) {
        let mut st = self.store();
        if let Some(mut obj) = st.get(resource, namespace, name).cloned() {
            obj["metadata"]["creationTimestamp"] = json!(created);
            st.put(resource, namespace, obj);
        }
    }

    /// Binds a pod to a node (sets `spec.nodeName`), as the scheduler does through
    /// `pods/NAME/binding`; watchers see MODIFIED. Only a bound pod has a log to read
    /// (unbound ones answer 204) and lingers for its grace period when deleted. A pod
    /// is bound once: a missing or already bound pod is left as it is.
    pub fn bind_pod(&self, namespace: &str, name: &str, node: &str) {
        let mut st = self.store();
        if let Some(mut pod) = st.get("pods", namespace, name).cloned()
            && pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty)
        {
            pod["spec"]["nodeName"] = json!(node);
            st.put("pods", namespace, pod);
        }
    }

    /// Removes a pod's scheduling gates, as Kueue does when it admits the pod's group
    /// (watchers see MODIFIED); the `SchedulingGated` condition goes with them.
    pub fn remove_scheduling_gates(&self, namespace: &str, name: &str) {
        let mut st = self.store();
        if let Some(mut pod) = st.get("pods", namespace, name).cloned() {
            if let Some(spec) = pod["spec"].as_object_mut() {
                spec.remove("schedulingGates");
            }
            if let Some(conditions) = pod["status"]["conditions"].as_array_mut() {
                conditions.retain(|c| c["reason"] != objects::SCHEDULING_GATED);
            }
            st.put("pods", namespace, pod);
        }
    }

    /// Whether Kueue would call pod group `group` finished and release its quota (its
    /// finish rule, see `schedulers.rs`).
    pub fn kueue_group_finished(&self, namespace: &str, group: &str) -> bool {
        schedulers::kueue_group_finished(&self.store(), namespace, group)
    }

    /// One pass of a gang scheduler with `free` places of one pod each: binds the pods
    /// it places and returns their names (see `schedulers.rs::place`).
    pub fn place_gangs(&self, namespace: &str, free: usize) -> Vec<String> {
        schedulers::place(&mut self.store(), namespace, free)
    }

    /// Deletes a pod as a DELETE request without options does (someone's `kubectl
    /// delete`, a preemption, a drain): a pod on a node gets a `deletionTimestamp` and
    /// is removed after the simulated grace period; watchers see MODIFIED, then DELETED.
    pub fn delete_pod(&self, namespace: &str, name: &str) {
        let _in_runtime = self.runtime.as_ref().expect("the server runs").enter();
        let mut st = routes::lock(&self.shared);
        routes::delete_one(&self.shared, &mut st, "pods", namespace, name, None);
    }

    /// Sets `status.phase`, keeping the rest of the status.
    pub fn set_pod_phase(&self, namespace: &str, name: &str, phase: &str) {
        let mut st = self.store();
        if let Some(mut pod) = st.get("pods", namespace, name).cloned() {
            pod["status"]["phase"] = json!(phase);
            st.put("pods", namespace, pod);
        }
    }

    /// Marks the pod as being deleted (`deletionTimestamp`) and keeps it so, as a
    /// kubelet that has not yet stopped its containers: `Terminating` in kubectl.
    pub fn mark_terminating(&self, namespace: &str, name: &str) {
        let mut st = self.store();
        if let Some(mut pod) = st.get("pods", namespace, name).cloned() {
            pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            pod["metadata"]["deletionGracePeriodSeconds"] = json!(30);
            st.put("pods", namespace, pod);
        }
    }

    /// Records an Event about the pod as the kubelet or the scheduler writes it (see
    /// `events.rs`), seen `count` times; false when there is no such pod.
    pub fn record_pod_event(
        &self,
        namespace: &str,
        pod: &str,
        by: Reporter,
        (kind, reason, message): (&str, &str, &str),
        count: u32,
    ) -> bool {
        let Some(stored) = self.get("pods", namespace, pod) else {
            return false;
        };
        let event = events::about_pod(&stored, by, kind, reason, message, count);
        self.insert("events", namespace, event);
        true
    }

    /// Appends to the pod's container log (each line stamped with the current time).
    pub fn append_log(&self, namespace: &str, pod: &str, text: &str) {
        self.store().append_log(namespace, pod, text);
    }

    /// Ends the followers' streams, as when the container exits.
    pub fn close_log(&self, namespace: &str, pod: &str) {
        self.store().close_log(namespace, pod);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
