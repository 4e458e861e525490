//! How the server behaves ([`Options`]), its users, the store keys of the optional APIs
//! and a recorded request: the plain types every module reads (a leaf: it uses none).

use std::time::Duration;

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
    /// Serve Kueue's LocalQueue API (`kueue.x-k8s.io`, store key [`KUEUE_LOCALQUEUES`])
    /// in the versions [`Options::kueue_versions`] names.
    pub kueue_api: bool,
    /// The versions of `kueue.x-k8s.io` served with [`Options::kueue_api`]: `v1beta2`
    /// and `v1beta1` by default (Kueue v0.15 to v0.19); `["v1beta2"]` is Kueue v0.20 on
    /// (kubernetes-sigs/kueue PR #14558), `["v1beta1"]` older Kueue.
    pub kueue_versions: Vec<&'static str>,
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
/// The store key of Jobs (`batch/v1`, built in: always served; no controller runs them
/// here).
pub const JOBS: &str = "jobs.batch";
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
            kueue_versions: vec!["v1beta2", "v1beta1"],
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
