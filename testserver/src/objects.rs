//! Resource kinds, metadata filled on create, defaulting, and merge patches.

use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use rand::Rng;
use serde_json::{Map, Value, json};

use crate::clock::now_rfc3339;
use crate::status::ApiError;

/// (resource, kind, namespaced)
const RESOURCES: &[(&str, &str, bool)] = &[
    ("pods", "Pod", true),
    ("services", "Service", true),
    ("configmaps", "ConfigMap", true),
    ("secrets", "Secret", true),
    ("endpoints", "Endpoints", true),
    ("events", "Event", true),
    ("persistentvolumeclaims", "PersistentVolumeClaim", true),
    ("resourcequotas", "ResourceQuota", true),
    ("namespaces", "Namespace", false),
    ("nodes", "Node", false),
    ("persistentvolumes", "PersistentVolume", false),
    (crate::options::VOLCANO_PODGROUPS, "PodGroup", true),
    (crate::options::COSCHEDULING_PODGROUPS, "PodGroup", true),
    (crate::options::KUEUE_LOCALQUEUES, "LocalQueue", true),
    (crate::options::VOLCANO_QUEUES, "Queue", false),
    (
        crate::options::LEGACY_COSCHEDULING_PODGROUPS,
        "PodGroup",
        true,
    ),
    (crate::options::NETWORK_POLICIES, "NetworkPolicy", true),
    (crate::options::JOBS, "Job", true),
];

/// Custom resources (served when `Options` enables them): (store key, group, version,
/// plural). The store key is `plural.group`, as kubectl names them. A resource served in
/// several versions has a row for each, newest (the storage version) first.
pub const CUSTOM: &[(&str, &str, &str, &str)] = &[
    (
        crate::options::VOLCANO_PODGROUPS,
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
    ),
    (
        crate::options::COSCHEDULING_PODGROUPS,
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
    ),
    (
        crate::options::KUEUE_LOCALQUEUES,
        "kueue.x-k8s.io",
        "v1beta2",
        "localqueues",
    ),
    (
        crate::options::KUEUE_LOCALQUEUES,
        "kueue.x-k8s.io",
        "v1beta1",
        "localqueues",
    ),
    (
        crate::options::VOLCANO_QUEUES,
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
    ),
    (
        crate::options::LEGACY_COSCHEDULING_PODGROUPS,
        "scheduling.sigs.k8s.io",
        "v1alpha1",
        "podgroups",
    ),
    // Built in (not a custom resource), served by every server.
    (
        crate::options::NETWORK_POLICIES,
        "networking.k8s.io",
        "v1",
        "networkpolicies",
    ),
    (crate::options::JOBS, "batch", "v1", "jobs"),
];

/// The `apiVersion` of a resource's objects: `v1`, or a custom resource's
/// `group/version` (its storage version, where it has several).
pub fn api_version_of(resource: &str) -> String {
    CUSTOM
        .iter()
        .find(|(r, _, _, _)| *r == resource)
        .map_or_else(|| "v1".to_string(), |(_, g, v, _)| format!("{g}/{v}"))
}

/// Whether a resource is served by core `/api/v1`.
pub fn is_core(resource: &str) -> bool {
    !CUSTOM.iter().any(|(r, _, _, _)| *r == resource)
}

pub fn kind_of(resource: &str) -> Option<&'static str> {
    RESOURCES
        .iter()
        .find(|(r, _, _)| *r == resource)
        .map(|(_, k, _)| *k)
}

pub fn is_namespaced(resource: &str) -> bool {
    RESOURCES.iter().any(|(r, _, n)| *r == resource && *n)
}

pub fn all_resources() -> impl Iterator<Item = (&'static str, &'static str, bool)> {
    RESOURCES.iter().copied()
}

/// A body whose kind or apiVersion does not fit the URL is refused like a real
/// server refuses to decode it. Absent fields are taken from the URL.
pub fn check_type(resource: &str, obj: &mut Value) -> Result<(), ApiError> {
    let kind = kind_of(resource).unwrap_or("Unknown");
    let api_version = api_version_of(resource);
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind})"
        )));
    }
    let served = |v: &str| {
        v == api_version
            || CUSTOM
                .iter()
                .any(|(r, g, ver, _)| *r == resource && v == format!("{g}/{ver}"))
    };
    match obj.get("apiVersion").and_then(Value::as_str) {
        None => {}
        Some(v) if served(v) => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({other}) does not match the expected API version ({api_version})"
            )));
        }
    }
    match obj.get("kind").and_then(Value::as_str) {
        None => {}
        Some(k) if k == kind => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "{other} in version \"{api_version}\" cannot be handled as a {kind}: the object provided is unrecognized (must be of type {kind})"
            )));
        }
    }
    obj["kind"] = json!(kind);
    obj["apiVersion"] = json!(api_version);
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    Ok(())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

pub fn new_uid() -> String {
    let b: [u8; 16] = rand::rng().random();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Service cluster IPs, handed out in order (10.96.0.11, …). Outside the store, so that
/// a create fills in its object without holding the store's lock.
#[derive(Debug, Default)]
pub struct ClusterIps(AtomicU32);

impl ClusterIps {
    pub fn next(&self) -> String {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 11;
        format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff)
    }
}

/// Fills what a create fills: name from generateName, uid, creationTimestamp,
/// namespace; then defaults. The resourceVersion is stamped by the store. A generated
/// name is not checked against the store: as on a real server, a taken one makes the
/// create fail with AlreadyExists (409).
pub fn fill_new(ips: &ClusterIps, resource: &str, ns: &str, obj: &mut Value) {
    let meta = &mut obj["metadata"];
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !has_name && let Some(prefix) = meta.get("generateName").and_then(Value::as_str) {
        meta["name"] = json!(format!("{prefix}{}", random_suffix()));
    }
    meta["uid"] = json!(new_uid());
    meta["creationTimestamp"] = json!(now_rfc3339());
    if let Some(m) = meta.as_object_mut() {
        m.remove("resourceVersion");
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        m.remove("managedFields");
        m.remove("selfLink");
        if ns.is_empty() {
            m.remove("namespace");
        } else {
            m.insert("namespace".into(), json!(ns));
        }
    }
    match resource {
        "pods" => {
            default_pod(obj);
            let qos = qos_class(obj);
            obj["status"] = json!({ "phase": "Pending", "qosClass": qos });
        }
        "services" => default_service(ips, obj, None),
        "namespaces" => {
            let name = obj["metadata"]["name"].clone();
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            obj["spec"] = json!({ "finalizers": ["kubernetes"] });
            obj["status"] = json!({ "phase": "Active" });
        }
        _ => {}
    }
}

fn set_default(obj: &mut Value, key: &str, v: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.entry(key.to_string()).or_insert(v);
    }
}

/// The `PodScheduled` reason of a pod held by scheduling gates.
pub const SCHEDULING_GATED: &str = "SchedulingGated";

/// What a create does with `spec.schedulingGates`: an admission webhook's gates
/// (`Options::gate_pods_labelled`) are added; a server that knows the field (1.26 on)
/// keeps them and marks the pod `PodScheduled=False, reason SchedulingGated`, as the
/// pod strategy does; a 1.20 server drops the field, unknown to it.
pub fn gate_new_pod(pod: &mut Value, opts: &crate::options::Options) {
    crate::schedulers::kueue_webhook(pod, opts);
    for (label, gate) in &opts.gate_pods_labelled {
        if pod["metadata"]["labels"].get(label).is_none() {
            continue;
        }
        if !pod["spec"]["schedulingGates"].is_array() {
            pod["spec"]["schedulingGates"] = json!([]);
        }
        let gates = pod["spec"]["schedulingGates"]
            .as_array_mut()
            .expect("just set");
        if !gates.iter().any(|g| g["name"] == gate.as_str()) {
            gates.push(json!({ "name": gate }));
        }
    }
    let gated = pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty());
    if !opts.scheduling_gates {
        if let Some(spec) = pod["spec"].as_object_mut() {
            spec.remove("schedulingGates");
        }
    } else if gated {
        pod["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": SCHEDULING_GATED,
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "lastProbeTime": null, "lastTransitionTime": now_rfc3339()
        }]);
    }
}

pub fn default_pod(pod: &mut Value) {
    if !pod.get("spec").is_some_and(Value::is_object) {
        pod["spec"] = json!({});
    }
    let spec = &mut pod["spec"];
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "priority", json!(0));
    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    // The DefaultTolerationSeconds admission plugin, on by default on real servers.
    if !spec.get("tolerations").is_some_and(Value::is_array) {
        spec["tolerations"] = json!([]);
    }
    let tolerations = spec["tolerations"].as_array_mut().expect("just set");
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let present = tolerations
            .iter()
            .any(|t| t["key"] == key && (t.get("effect").is_none() || t["effect"] == "NoExecute"));
        if !present {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    for list in ["initContainers", "containers"] {
        let Some(ctrs) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in ctrs.iter_mut().filter(|c| c.is_object()) {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let last = image.rsplit('/').next().unwrap_or("");
            let policy = if !last.contains(':') || last.ends_with(":latest") {
                "Always"
            } else {
                "IfNotPresent"
            };
            set_default(c, "imagePullPolicy", json!(policy));
            set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
            set_default(c, "terminationMessagePolicy", json!("File"));
            set_default(c, "resources", json!({}));
            if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut() {
                    set_default(p, "protocol", json!("TCP"));
                }
            }
            // Requests default to the limits.
            let res = &mut c["resources"];
            if let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() {
                if !res.get("requests").is_some_and(Value::is_object) {
                    res["requests"] = json!({});
                }
                for (k, v) in limits {
                    set_default(&mut res["requests"], &k, v);
                }
            }
        }
    }
}

fn qos_class(pod: &Value) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for list in ["initContainers", "containers"] {
        let Some(ctrs) = pod["spec"].get(list).and_then(Value::as_array) else {
            continue;
        };
        for c in ctrs {
            let req = c.pointer("/resources/requests").and_then(Value::as_object);
            let lim = c.pointer("/resources/limits").and_then(Value::as_object);
            if req.is_some_and(|m| !m.is_empty()) || lim.is_some_and(|m| !m.is_empty()) {
                any = true;
            }
            for r in ["cpu", "memory"] {
                let l = lim
                    .and_then(|m| m.get(r))
                    .and_then(crate::validate::parse_quantity);
                let q = req
                    .and_then(|m| m.get(r))
                    .and_then(crate::validate::parse_quantity);
                if l.is_none() || l != q {
                    guaranteed = false;
                }
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Service defaults; on update `old` carries the allocated cluster IP over.
pub fn default_service(ips: &ClusterIps, svc: &mut Value, old: Option<&Value>) {
    if !svc.get("spec").is_some_and(Value::is_object) {
        svc["spec"] = json!({});
    }
    let spec = &mut svc["spec"];
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let ty = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    if ty != "ExternalName" {
        let given = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
        let ip = if !given.is_empty() {
            given.to_string()
        } else if let Some(old_ip) = old
            .and_then(|o| o.pointer("/spec/clusterIP"))
            .and_then(Value::as_str)
        {
            old_ip.to_string()
        } else {
            ips.next()
        };
        spec["clusterIP"] = json!(ip);
        spec["clusterIPs"] = json!([ip]);
        set_default(spec, "ipFamilies", json!(["IPv4"]));
        set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            set_default(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                set_default(p, "targetPort", port);
            }
        }
    }
    set_default(svc, "status", json!({ "loadBalancer": {} }));
}

/// `stringData` is write-only: merged into `data` (base64) and dropped.
pub fn normalize_secret(secret: &mut Value) {
    set_default(secret, "type", json!("Opaque"));
    let Some(Value::Object(sd)) = secret.as_object_mut().and_then(|m| m.remove("stringData"))
    else {
        return;
    };
    if !secret.get("data").is_some_and(Value::is_object) {
        secret["data"] = json!({});
    }
    for (k, v) in sd {
        let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        secret["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// RFC 7386 JSON merge patch (also used for strategic merge and apply patches,
/// which behave the same for the maps this tool patches).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Items of a real List answer carry no kind/apiVersion.
pub fn strip_type(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    v
}

/// A list answered as `PartialObjectMetadataList` (Accept: `…;as=PartialObjectMetadataList`),
/// as real servers do for lists and collection deletes since 1.15: metadata only, and
/// `items: null` when there are none (Go's nil slice). Anything but a list is unchanged.
pub fn partial_metadata_list(list: Value) -> Value {
    let is_list = list["kind"].as_str().is_some_and(|k| k.ends_with("List"));
    if !is_list {
        return list;
    }
    let items: Vec<Value> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|o| {
                    json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"],
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list["metadata"],
        "items": if items.is_empty() { Value::Null } else { Value::Array(items) },
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn partial_metadata_lists_keep_only_metadata_and_are_null_when_empty() {
        let list = json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": "a"}, "spec": {"containers": []}}]});
        let partial = partial_metadata_list(list);
        assert_eq!(partial["kind"], "PartialObjectMetadataList");
        assert_eq!(
            partial["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
        let empty = partial_metadata_list(json!({"kind": "PodList", "metadata": {}, "items": []}));
        assert!(empty["items"].is_null());
        let pod = json!({"kind": "Pod", "metadata": {"name": "a"}});
        assert_eq!(partial_metadata_list(pod.clone()), pod);
    }

    use super::*;

    #[test]
    fn merge_patch_rules() {
        let mut t = json!({ "a": 1, "m": { "x": 1, "y": 2 } });
        merge_patch(&mut t, &json!({ "a": null, "m": { "y": 3, "z": 4 } }));
        assert_eq!(t, json!({ "m": { "x": 1, "y": 3, "z": 4 } }));
    }

    #[test]
    fn qos() {
        let mut p = json!({ "spec": { "containers": [{ "name": "c", "image": "i",
            "resources": { "limits": { "cpu": "1", "memory": "1Gi" } } }] } });
        default_pod(&mut p);
        assert_eq!(qos_class(&p), "Guaranteed");
        let p = json!({ "spec": { "containers": [{ "name": "c", "image": "i" }] } });
        assert_eq!(qos_class(&p), "BestEffort");
    }
}
