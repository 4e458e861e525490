//! An in-process fake kube-apiserver (core/v1) for tf-spawner's tests.
//!
//! The server runs on its own tokio runtime, so tests can be plain `#[test]`
//! functions or async ones. It answers like a real kube-apiserver: the same
//! validation, the same `Status` errors, watches, logs, RBAC-like 403s, and it
//! can inject faults and latency.

mod context;
mod delay;
mod events;
mod faults;
mod logs;
mod objects;
mod podsecurity;
mod quantity;
mod quota;
mod routes;
mod schedulers;
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

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Serve HTTPS (default) or plain HTTP.
    pub tls: bool,
    /// `DELETE .../services?labelSelector=` allowed (true, newer servers) or 405 (false, 1.20).
    pub collection_delete_services: bool,
    /// A single DELETE of a service/configmap/secret answers a `Status` (1.20) instead of the object.
    pub single_delete_returns_status: bool,
    /// Namespaces that exist at start.
    pub namespaces: Vec<String>,
    /// Users besides the built-in `admin`.
    pub users: Vec<User>,
    /// Pods keep `spec.schedulingGates` (true, 1.26 and later: a gated pod gets the
    /// `PodScheduled=False, reason SchedulingGated` condition and waits until its gates
    /// are removed) or the field is dropped as unknown (false, 1.20).
    pub scheduling_gates: bool,
    /// A mutating admission webhook: every new pod carrying the label key gets the
    /// scheduling gate, as Kueue's webhook gates pods with `kueue.x-k8s.io/queue-name`
    /// (`("kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/admission")`).
    pub gate_pods_labelled: Vec<(String, String)>,
    /// Serve Volcano's PodGroup API (`scheduling.volcano.sh/v1beta1`, store key
    /// [`VOLCANO_PODGROUPS`]); without it, its paths are 404 as on a cluster without
    /// the CRD.
    pub volcano_api: bool,
    /// Serve scheduler-plugins' PodGroup API (`scheduling.x-k8s.io/v1alpha1`, store key
    /// [`COSCHEDULING_PODGROUPS`]).
    pub coscheduling_api: bool,
    /// Serve Kueue's LocalQueue API (`kueue.x-k8s.io/v1beta1`, store key
    /// [`KUEUE_LOCALQUEUES`]).
    pub kueue_api: bool,
    /// Kueue's pod webhook (its `pod` integration on) for these namespaces (its
    /// `managedJobsNamespaceSelector`): see `schedulers.rs`.
    pub kueue_namespaces: Vec<String>,
    /// Serve scheduler-plugins' PodGroup API as it was before v0.25
    /// (`scheduling.sigs.k8s.io/v1alpha1`).
    pub legacy_coscheduling_api: bool,
    /// ResourceQuota admission's "must specify" names each missing resource's containers
    /// (`limits.cpu for: tensorflow; …`, 1.21 on) or lists the resources alone
    /// (`limits.cpu,limits.memory`, 1.20): see `quota.rs`.
    pub quota_names_containers: bool,
    /// The PodSecurity admission plugin (1.23 on; not in 1.20): pods in a namespace
    /// labelled `pod-security.kubernetes.io/enforce` are checked (`podsecurity.rs`).
    pub pod_security: bool,
}

/// The store key of Volcano's PodGroups (see [`Options::volcano_api`]).
pub const VOLCANO_PODGROUPS: &str = "podgroups.scheduling.volcano.sh";
/// The store key of scheduler-plugins' PodGroups (see [`Options::coscheduling_api`]).
pub const COSCHEDULING_PODGROUPS: &str = "podgroups.scheduling.x-k8s.io";
/// The store keys of every gang scheduler's PodGroups (tf-spawner's `Gang::ALL`), which
/// the schedulers' model (`schedulers.rs`) reads a group's `minMember` from.
pub const GANG_PODGROUPS: &[&str] = &[VOLCANO_PODGROUPS, COSCHEDULING_PODGROUPS];
/// The store key of Kueue's LocalQueues (see [`Options::kueue_api`]).
pub const KUEUE_LOCALQUEUES: &str = "localqueues.kueue.x-k8s.io";
/// The store key of Volcano's Queues (cluster-scoped; served with
/// [`Options::volcano_api`]).
pub const VOLCANO_QUEUES: &str = "queues.scheduling.volcano.sh";
/// The store key of scheduler-plugins' PodGroups before v0.25 (see
/// [`Options::legacy_coscheduling_api`]).
pub const LEGACY_COSCHEDULING_PODGROUPS: &str = "podgroups.scheduling.sigs.k8s.io";
/// The store key of NetworkPolicies (`networking.k8s.io/v1`, built in: always served).
pub const NETWORK_POLICIES: &str = "networkpolicies.networking.k8s.io";

impl Default for Options {
    fn default() -> Options {
        Options {
            tls: true,
            collection_delete_services: true,
            single_delete_returns_status: false,
            namespaces: vec!["default".to_string()],
            users: vec![],
            scheduling_gates: true,
            gate_pods_labelled: vec![],
            volcano_api: false,
            coscheduling_api: false,
            kueue_api: false,
            kueue_namespaces: vec![],
            legacy_coscheduling_api: false,
            quota_names_containers: true,
            pod_security: true,
        }
    }
}

impl Options {
    /// The observed behaviour of the project's 1.20 server.
    pub fn v1_20() -> Options {
        Options {
            collection_delete_services: false,
            single_delete_returns_status: true,
            scheduling_gates: false,
            quota_names_containers: false,
            pod_security: false,
            ..Options::default()
        }
    }
}

#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub token: String,
    /// None = all namespaces and cluster-scoped resources.
    pub namespace: Option<String>,
    /// Resources this user gets 403 on, e.g. `["secrets"]` or `["pods/log"]`.
    pub denied_resources: Vec<String>,
}

impl User {
    /// A user limited to one namespace, whose token is `<name>-token`.
    pub fn namespaced(name: &str, namespace: &str) -> User {
        User {
            name: name.to_string(),
            token: format!("{name}-token"),
            namespace: Some(namespace.to_string()),
            denied_resources: vec![],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// The raw (still percent-encoded) query string, "" when none.
    pub query: String,
    /// Final status code; 0 while still being handled or when the connection was dropped.
    pub status: u16,
    /// "" when the request was not authenticated.
    pub user: String,
    /// Time until the answer's head (for streams: until the stream started).
    pub duration: Duration,
    /// Bytes in the request's body (what the client sent).
    pub body_bytes: usize,
}

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
        for ns in &opts.namespaces {
            add_namespace(&mut store, ns);
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
    pub fn insert(&self, resource: &str, namespace: &str, mut obj: Value) {
        let mut st = self.store();
        if objects::is_namespaced(resource) && !st.namespace_exists(namespace) {
            add_namespace(&mut st, namespace);
        }
        if let Some(kind) = objects::kind_of(resource) {
            obj["kind"] = json!(kind);
            obj["apiVersion"] = json!(objects::api_version_of(resource));
        }
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        let given_status = obj.get("status").cloned();
        if resource == "secrets" {
            objects::normalize_secret(&mut obj);
        }
        objects::fill_new(&self.shared.cluster_ips, resource, namespace, &mut obj);
        if let (Some(s), "pods") = (given_status, resource) {
            objects::merge_patch(&mut obj["status"], &s);
        }
        st.put(resource, namespace, obj);
    }

    pub fn create_namespace(&self, name: &str) {
        let mut st = self.store();
        if !st.namespace_exists(name) {
            add_namespace(&mut st, name);
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

fn add_namespace(store: &mut Store, name: &str) {
    let mut ns = json!({ "kind": "Namespace", "apiVersion": "v1", "metadata": { "name": name } });
    // A namespace takes no cluster IP.
    objects::fill_new(&objects::ClusterIps::default(), "namespaces", "", &mut ns);
    store.put("namespaces", "", ns);
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
