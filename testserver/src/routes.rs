//! URL routing, authorization and the object handlers (list, get, create,
//! update, patch, delete, deletecollection).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::context::{Ctx, Identity, Reply, Shared, selectors};
use crate::objects::{self, kind_of};
use crate::status::{ApiError, Cause, success_status};
use crate::store::Store;
use crate::validate;

/// Simulated grace period of a pod bound to a node.
const POD_GRACE: Duration = Duration::from_secs(1);

type Res = Result<Reply, ApiError>;

struct Target<'a> {
    resource: &'a str,
    ns: Option<&'a str>,
    name: Option<&'a str>,
    sub: Option<&'a str>,
}

pub fn route(sh: &Arc<Shared>, c: &Ctx) -> Res {
    let segs: Vec<&str> = c.path.split('/').filter(|s| !s.is_empty()).collect();
    let discovery = |v: Value| {
        if c.method == "GET" {
            Ok(Reply::Json(200, v))
        } else {
            Err(ApiError::method_not_allowed())
        }
    };
    match segs.as_slice() {
        ["version"] => discovery(version()),
        ["healthz"] | ["livez"] | ["readyz"] => Ok(Reply::Text(200, "ok".into())),
        ["api"] => discovery(json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443" }]
        })),
        ["apis"] => discovery(json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": [] })),
        ["api", "v1"] => discovery(api_v1(sh.opts.collection_delete_services)),
        ["apis", group] => {
            match crate::discovery::api_group(group, |v| !custom_resources(sh, group, v).is_empty())
            {
                Some(found) => discovery(found),
                None => Err(ApiError::no_such_path()),
            }
        }
        ["api", "v1", rest @ ..] => {
            let t = match *rest {
                ["namespaces"] => target("namespaces", None, None, None),
                ["namespaces", n] => target("namespaces", None, Some(n), None),
                ["namespaces", ns, r] => target(r, Some(ns), None, None),
                ["namespaces", ns, r, n] => target(r, Some(ns), Some(n), None),
                ["namespaces", ns, r, n, s] => target(r, Some(ns), Some(n), Some(s)),
                [r] => target(r, None, None, None),
                [r, n] if !objects::is_namespaced(r) => target(r, None, Some(n), None),
                _ => return Err(ApiError::no_such_path()),
            };
            if !objects::is_core(t.resource) {
                return Err(ApiError::no_such_path());
            }
            resource_route(sh, c, t)
        }
        ["apis", group, version, rest @ ..] => {
            let served = custom_resources(sh, group, version);
            if served.is_empty() {
                return Err(ApiError::no_such_path());
            }
            let key = |plural: &str| {
                served
                    .iter()
                    .find(|(_, p)| *p == plural)
                    .map(|(r, _)| *r)
                    .ok_or_else(ApiError::no_such_path)
            };
            let t = match *rest {
                [] => return discovery(custom_discovery(group, version, &served)),
                ["namespaces", ns, p] => target(key(p)?, Some(ns), None, None),
                ["namespaces", ns, p, n] => target(key(p)?, Some(ns), Some(n), None),
                [p] => target(key(p)?, None, None, None),
                [p, n] if !objects::is_namespaced(key(p)?) => target(key(p)?, None, Some(n), None),
                _ => return Err(ApiError::no_such_path()),
            };
            let api_version = format!("{group}/{version}");
            resource_route(sh, c, t).map(|r| crate::discovery::in_version(r, &api_version))
        }
        _ => Err(ApiError::no_such_path()),
    }
}

/// The custom resources the options serve in `group/version`: (store key, plural).
fn custom_resources(sh: &Shared, group: &str, version: &str) -> Vec<(&'static str, &'static str)> {
    objects::CUSTOM
        .iter()
        .filter(|(_, g, v, _)| *g == group && *v == version)
        .map(|(r, _, _, p)| (*r, *p))
        .filter(|(r, _)| match *r {
            crate::options::VOLCANO_PODGROUPS | crate::options::VOLCANO_QUEUES => {
                sh.opts.volcano_api
            }
            crate::options::COSCHEDULING_PODGROUPS => sh.opts.coscheduling_api,
            crate::options::KUEUE_LOCALQUEUES => {
                sh.opts.kueue_api && sh.opts.kueue_versions.contains(&version)
            }
            crate::options::LEGACY_COSCHEDULING_PODGROUPS => sh.opts.legacy_coscheduling_api,
            crate::options::NETWORK_POLICIES | crate::options::JOBS => true,
            _ => false,
        })
        .collect()
}

fn custom_discovery(group: &str, version: &str, served: &[(&str, &str)]) -> Value {
    let resources: Vec<Value> = served
        .iter()
        .flat_map(|(r, plural)| {
            let kind = kind_of(r).unwrap_or("Unknown");
            let namespaced = objects::is_namespaced(r);
            let singular = kind.to_lowercase();
            let status = json!({ "name": format!("{plural}/status"), "singularName": "",
                "namespaced": namespaced, "kind": kind, "verbs": ["get", "patch", "update"] });
            [
                Some(json!({ "name": plural, "singularName": singular, "namespaced": namespaced, "kind": kind,
                  "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"] })),
                // NetworkPolicies have no status (1.20, and again since 1.28).
                (*r != crate::options::NETWORK_POLICIES).then_some(status),
            ]
        })
        .flatten()
        .collect();
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"),
        "resources": resources
    })
}

fn target<'a>(
    r: &'a str,
    ns: Option<&'a str>,
    name: Option<&'a str>,
    sub: Option<&'a str>,
) -> Target<'a> {
    Target {
        resource: r,
        ns,
        name,
        sub,
    }
}

fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0",
        "gitCommit": "60a317eadfcb839692a5551a5ee6cd3ad6ba6ee1", "gitTreeState": "clean",
        "buildDate": "2025-04-23T13:04:18Z", "goVersion": "go1.24.2", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

fn api_v1(collection_delete_services: bool) -> Value {
    let full = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let mut resources = Vec::new();
    for (r, kind, namespaced) in objects::all_resources().filter(|(r, _, _)| objects::is_core(r)) {
        let verbs: Vec<&str> = full
            .iter()
            .copied()
            .filter(|v| {
                !(*v == "deletecollection"
                    && ((r == "services" && !collection_delete_services) || r == "namespaces"))
            })
            .collect();
        let singular = kind.to_lowercase();
        resources.push(
            json!({ "name": r, "singularName": singular, "namespaced": namespaced,
            "kind": kind, "verbs": verbs }),
        );
        if matches!(r, "pods" | "services" | "namespaces") {
            resources.push(
                json!({ "name": format!("{r}/status"), "singularName": "", "namespaced": namespaced,
                "kind": kind, "verbs": ["get", "patch", "update"] }),
            );
        }
        if r == "pods" {
            resources.push(
                json!({ "name": "pods/log", "singularName": "", "namespaced": true,
                "kind": "Pod", "verbs": ["get"] }),
            );
        }
    }
    json!({ "kind": "APIResourceList", "groupVersion": "v1", "resources": resources })
}

fn truthy(q: &HashMap<String, String>, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "true" || v == "1")
}

fn verb_of(c: &Ctx, t: &Target) -> Result<&'static str, ApiError> {
    Ok(match (c.method, t.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if truthy(&c.query, "watch") => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(ApiError::method_not_allowed()),
    })
}

fn authorize(sh: &Shared, user: &Identity, verb: &str, t: &Target) -> Result<(), ApiError> {
    let rbac_resource = match t.sub {
        Some(s) => format!("{}/{s}", t.resource),
        None => t.resource.to_string(),
    };
    // RBAC sees a namespace object's own name as its namespace.
    let ns = if t.resource == "namespaces" {
        t.name
    } else {
        t.ns
    };
    let in_scope = match &user.namespace {
        None => true,
        Some(own) => objects::is_namespaced(t.resource) && t.ns == Some(own.as_str()),
    };
    let denied = user
        .denied
        .iter()
        .any(|d| *d == rbac_resource || *d == t.resource);
    if in_scope && !denied {
        return Ok(());
    }
    let _ = sh;
    Err(ApiError::forbidden(
        &user.name,
        verb,
        &rbac_resource,
        t.name,
        ns,
    ))
}

fn resource_route(sh: &Arc<Shared>, c: &Ctx, t: Target) -> Res {
    if kind_of(t.resource).is_none() {
        return Err(ApiError::no_such_path());
    }
    let namespaced = objects::is_namespaced(t.resource);
    // A namespaced resource outside a namespace is only a cluster-wide list.
    if namespaced && t.ns.is_none() && (t.name.is_some() || c.method != "GET") {
        return Err(if t.name.is_some() {
            ApiError::no_such_path()
        } else {
            ApiError::method_not_allowed()
        });
    }
    if let Some(sub) = t.sub
        && !(t.resource == "pods" && matches!(sub, "status" | "log"))
    {
        return Err(ApiError::no_such_path());
    }
    let verb = verb_of(c, &t)?;
    authorize(sh, c.user, verb, &t)?;
    let ns = t.ns.unwrap_or("");
    match (verb, t.name, t.sub) {
        ("list", _, _) => list(sh, c, t.resource, t.ns),
        ("watch", _, _) => crate::watch::start(sh, c, t.resource, t.ns),
        ("create", _, _) => create(sh, c, t.resource, ns),
        ("deletecollection", _, _) => delete_collection(sh, c, t.resource, ns),
        ("get", Some(n), Some("log")) => crate::logs::get(sh, c, ns, n),
        ("get", Some(n), _) => get(sh, t.resource, ns, n),
        ("update", Some(n), sub) => update(sh, c, t.resource, ns, n, sub, None),
        ("patch", Some(n), sub) => {
            let patch = parse_body(c)?;
            update(sh, c, t.resource, ns, n, sub, Some(patch))
        }
        ("delete", Some(n), None) => delete(sh, c, t.resource, ns, n),
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn parse_body(c: &Ctx) -> Result<Value, ApiError> {
    if c.content_type.contains("yaml") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json (got {})",
                c.content_type
            ),
        ));
    }
    serde_json::from_slice(c.body)
        .map_err(|e| ApiError::bad_request(format!("the object provided is unrecognized: {e}")))
}

fn dry_run(c: &Ctx, body: Option<&Value>) -> bool {
    c.query.get("dryRun").is_some_and(|v| v == "All")
        || body
            .and_then(|b| b.get("dryRun"))
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"))
}

pub(crate) fn lock(sh: &Shared) -> std::sync::MutexGuard<'_, Store> {
    sh.store.lock().unwrap_or_else(|e| e.into_inner())
}

fn list_obj(resource: &str, rv: u64, items: Vec<Value>) -> Value {
    let kind = kind_of(resource).unwrap_or("Unknown");
    json!({
        "kind": format!("{kind}List"),
        "apiVersion": objects::api_version_of(resource),
        "metadata": { "resourceVersion": rv.to_string() },
        "items": items.into_iter().map(objects::strip_type).collect::<Vec<_>>(),
    })
}

/// A list, in pages when asked (`limit`, `continue`) as a real server pages: every page
/// carries the resourceVersion of the first (its token holds it, so a watch from it
/// misses nothing), `remainingItemCount` only without selectors (with one the server
/// cannot count what is left), and a token whose version is older than the history
/// (compacted) gets 410 `Expired` with a token to go on inconsistently.
fn list(sh: &Shared, c: &Ctx, resource: &str, ns: Option<&str>) -> Res {
    let (ls, fs) = selectors(c, resource)?;
    let st = lock(sh);
    let mut rv = st.current_rv();
    let mut after = None;
    if let Some(cont) = c.query.get("continue").filter(|s| !s.is_empty()) {
        let (from_rv, key) = Continue::decode(cont)?;
        if from_rv < st.history_floor() as i64 {
            let mut status = ApiError::expired(EXPIRED_CONTINUE).to_json();
            status["metadata"]["continue"] = json!(Continue::encode(-1, &key));
            return Ok(Reply::Json(410, status));
        }
        if from_rv != i64::MAX {
            rv = from_rv as u64;
        }
        // `NAMESPACE/NAME` (namespaces hold no `/`); compared as the pair, the store's order.
        let (n, name) = key.split_once('/').unwrap_or(("", key.as_str()));
        after = Some((n.to_string(), name.to_string()));
    }
    let limit = c
        .query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let mut matching = st
        .list_after(resource, ns, after)
        .filter(|o| ls.matches(o) && fs.matches(o));
    // Only the page is copied; the rest is counted when the count is answered.
    let items: Vec<Value> = matching.by_ref().take(limit).cloned().collect();
    let filtered = c.query.contains_key("labelSelector") || c.query.contains_key("fieldSelector");
    let mut rest = matching.peekable();
    let next = match rest.peek() {
        Some(_) => {
            let last = items.last().expect("a page before the rest");
            let key = format!(
                "{}/{}",
                last["metadata"]["namespace"].as_str().unwrap_or(""),
                last["metadata"]["name"].as_str().unwrap_or("")
            );
            let remaining = (!filtered).then(|| rest.count());
            Some((Continue::encode(rv as i64, &key), remaining))
        }
        None => None,
    };
    let mut out = list_obj(resource, rv, items);
    if let Some((token, remaining)) = next {
        out["metadata"]["continue"] = json!(token);
        if let Some(remaining) = remaining {
            out["metadata"]["remainingItemCount"] = json!(remaining);
        }
    }
    Ok(Reply::Json(200, out))
}

/// A real server's message for a continue token older than its history.
const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A continue token: base64url (no padding) of
/// `{"v":"meta.k8s.io/v1","rv":RV,"start":KEY}`, as a real server makes it (`rv` -1: an
/// inconsistent continuation).
struct Continue;

impl Continue {
    fn encode(rv: i64, after: &str) -> String {
        let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": after});
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
    }

    /// The version and the key the token goes on after.
    fn decode(token: &str) -> Result<(i64, String), ApiError> {
        let bad = || ApiError::bad_request("continue key is not valid: invalid continue token");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|_| bad())?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        let rv = value["rv"].as_i64().ok_or_else(bad)?;
        let after = value["start"].as_str().ok_or_else(bad)?.to_string();
        // -1: go on from the current state.
        Ok((if rv < 0 { i64::MAX } else { rv }, after))
    }
}

fn get(sh: &Shared, resource: &str, ns: &str, name: &str) -> Res {
    let st = lock(sh);
    st.get(resource, ns, name)
        .map(|o| Reply::Json(200, o.clone()))
        .ok_or_else(|| ApiError::not_found(resource, name))
}

/// Checks kind/apiVersion and namespace, and decodes what a real server decodes
/// before validation (base64 maps, stringData).
fn decode_object(resource: &str, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    objects::check_type(resource, obj)?;
    let kind = kind_of(resource).unwrap_or("");
    if let Some(body_ns) = obj["metadata"].get("namespace").and_then(Value::as_str)
        && !body_ns.is_empty()
        && !ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match resource {
        "secrets" => {
            validate::check_base64_maps(obj, kind, &["data"])?;
            objects::normalize_secret(obj);
        }
        "configmaps" => validate::check_base64_maps(obj, kind, &["binaryData"])?,
        _ => {}
    }
    Ok(())
}

fn create(sh: &Shared, c: &Ctx, resource: &str, ns: &str) -> Res {
    let mut obj = parse_body(c)?;
    decode_object(resource, ns, &mut obj)?;
    let dry = dry_run(c, None);
    if objects::is_namespaced(resource) && !lock(sh).namespace_exists(ns) {
        return Err(ApiError::not_found("namespaces", ns));
    }
    // Defaults and validation need no store: done without its lock, so that creates on
    // both of the server's threads do not take turns.
    objects::fill_new(&sh.cluster_ips, resource, ns, &mut obj);
    if resource == "pods" {
        objects::gate_new_pod(&mut obj, &sh.opts);
    }
    validate::validate(resource, kind_of(resource).unwrap_or(""), &obj)?;
    if resource == "pods" && sh.opts.pod_security {
        let labels = lock(sh)
            .get("namespaces", "", ns)
            .map(|n| n["metadata"]["labels"].clone())
            .unwrap_or_default();
        crate::podsecurity::admit(&labels, &obj)?;
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let mut st = lock(sh);
    if objects::is_namespaced(resource) && !st.namespace_exists(ns) {
        return Err(ApiError::not_found("namespaces", ns));
    }
    // Validating admission (ResourceQuota) comes before the store's AlreadyExists.
    crate::quota::admit(&st, resource, ns, &obj, &sh.opts)?;
    if st.get(resource, ns, &name).is_some() {
        return Err(ApiError::already_exists(resource, &name));
    }
    if dry {
        return Ok(Reply::Json(201, obj));
    }
    Ok(Reply::Stored(201, st.put(resource, ns, obj)))
}

/// PUT (patch None) or PATCH of an object or of a pod's status.
fn update(
    sh: &Shared,
    c: &Ctx,
    resource: &str,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    patch: Option<Value>,
) -> Res {
    let is_apply = c.content_type.contains("apply-patch");
    if patch.is_some() && c.content_type.contains("json-patch") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "json-patch is not supported by this test server",
        ));
    }
    let mut st = lock(sh);
    let Some(old) = st.get(resource, ns, name).cloned() else {
        if is_apply && sub.is_none() {
            drop(st);
            return create_from_apply(sh, c, resource, ns, name, patch.unwrap_or_default());
        }
        return Err(ApiError::not_found(resource, name));
    };
    let mut new = match patch {
        Some(p) => {
            let mut merged = old.clone();
            objects::merge_patch(&mut merged, &p);
            if let Some(rv) = p.pointer("/metadata/resourceVersion") {
                merged["metadata"]["resourceVersion"] = rv.clone();
            }
            merged
        }
        None => parse_body(c)?,
    };
    decode_object(resource, ns, &mut new)?;
    let body_name = new["metadata"]["name"].as_str().unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(rv) = new["metadata"]["resourceVersion"].as_str()
        && !rv.is_empty()
        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict(resource, name));
    }
    keep_server_fields(&old, &mut new);
    let kind = kind_of(resource).unwrap_or("");
    new = updated(&sh.cluster_ips, resource, sub, kind, name, &old, new)?;
    validate::validate(resource, kind, &new)?;
    if dry_run(c, None) {
        return Ok(Reply::Json(200, new));
    }
    Ok(Reply::Stored(200, st.put(resource, ns, new)))
}

/// What the server keeps from the stored object whatever an update says.
fn keep_server_fields(old: &Value, new: &mut Value) {
    for k in [
        "uid",
        "creationTimestamp",
        "namespace",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old["metadata"].get(k) {
            Some(v) => new["metadata"][k] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
}

/// The object an update stores, by resource (and subresource).
fn updated(
    ips: &objects::ClusterIps,
    resource: &str,
    sub: Option<&str>,
    kind: &str,
    name: &str,
    old: &Value,
    mut new: Value,
) -> Result<Value, ApiError> {
    match (resource, sub) {
        ("pods", Some("status")) => {
            let status = new.get("status").cloned().unwrap_or(json!({}));
            new = old.clone();
            new["status"] = status;
        }
        ("pods", _) => {
            objects::default_pod(&mut new);
            new["status"] = old["status"].clone();
            check_pod_spec_update(old, &new, name)?;
        }
        ("services", _) => {
            let (old_ip, new_ip) = (
                old.pointer("/spec/clusterIP"),
                new.pointer("/spec/clusterIP"),
            );
            if let (Some(o), Some(n)) = (old_ip, new_ip)
                && !n.as_str().unwrap_or("").is_empty()
                && o != n
            {
                return Err(ApiError::invalid(
                    kind,
                    name,
                    vec![Cause::invalid(
                        "spec.clusterIPs[0]",
                        n,
                        "may not change once set",
                    )],
                ));
            }
            new["status"] = old["status"].clone();
            objects::default_service(ips, &mut new, Some(old));
        }
        ("namespaces", _) => {
            new["status"] = old["status"].clone();
        }
        _ => {}
    }
    Ok(new)
}

fn create_from_apply(
    sh: &Shared,
    c: &Ctx,
    resource: &str,
    ns: &str,
    name: &str,
    mut obj: Value,
) -> Res {
    objects::check_type(resource, &mut obj)?;
    obj["metadata"]["name"] = json!(name);
    let body = serde_json::to_vec(&obj).unwrap_or_default();
    let ctx = Ctx {
        method: "POST",
        path: c.path,
        query: c.query.clone(),
        body: &body,
        content_type: "application/json",
        user: c.user,
    };
    create(sh, &ctx, resource, ns)
}

/// A real server refuses pod spec changes other than images (and a few others).
fn check_pod_spec_update(old: &Value, new: &Value, name: &str) -> Result<(), ApiError> {
    if let Some(cause) = deadline_update(old, new) {
        return Err(ApiError::invalid("Pod", name, vec![cause]));
    }
    let mut a = old["spec"].clone();
    let mut b = new["spec"].clone();
    for spec in [&mut a, &mut b] {
        if let Some(m) = spec.as_object_mut() {
            m.remove("activeDeadlineSeconds");
            m.remove("tolerations");
            m.remove("schedulingGates");
        }
        for list in ["initContainers", "containers"] {
            if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
                for ctr in cs.iter_mut().filter_map(Value::as_object_mut) {
                    ctr.remove("image");
                }
            }
        }
    }
    // Scheduling gates may be removed, never added.
    let gates = |pod: &Value| -> Vec<Value> {
        pod["spec"]["schedulingGates"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let old_gates = gates(old);
    if a == b && gates(new).iter().all(|g| old_gates.contains(g)) {
        return Ok(());
    }
    Err(ApiError::invalid(
        "Pod",
        name,
        vec![Cause::forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        )],
    ))
}

/// What a real server says of a change of `spec.activeDeadlineSeconds` (kubernetes
/// pkg/apis/core/validation/validation.go, `ValidatePodUpdate`): it may be set, or
/// lowered, to a value in 0..=2147483647, never raised, never removed once set; and the
/// pod spec's own rule then refuses 0 (`ValidatePodSpec`: 1..=2147483647). v1.20 and
/// v1.36 answered so to `kubectl patch` (0 too).
fn deadline_update(old: &Value, new: &Value) -> Option<Cause> {
    const FIELD: &str = "spec.activeDeadlineSeconds";
    let before = old["spec"]["activeDeadlineSeconds"].as_i64();
    let after = &new["spec"]["activeDeadlineSeconds"];
    match (before, after.as_i64()) {
        (_, Some(n)) if !(0..=i64::from(i32::MAX)).contains(&n) => Some(Cause::invalid(
            FIELD,
            after,
            "must be between 0 and 2147483647, inclusive",
        )),
        (Some(b), Some(n)) if n > b => Some(Cause::invalid(
            FIELD,
            after,
            "must be less than or equal to previous value",
        )),
        (Some(_), None) => Some(Cause::invalid(
            FIELD,
            &Value::Null,
            "must not update from a positive integer to nil value",
        )),
        (_, Some(0)) => Some(Cause::invalid(
            FIELD,
            after,
            "must be between 1 and 2147483647, inclusive",
        )),
        _ => None,
    }
}

fn delete_options(c: &Ctx) -> Result<Value, ApiError> {
    if c.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    parse_body(c)
}

fn grace_of(c: &Ctx, opts: &Value) -> Option<i64> {
    c.query
        .get("gracePeriodSeconds")
        .and_then(|g| g.parse().ok())
        .or_else(|| opts.get("gracePeriodSeconds").and_then(Value::as_i64))
}

fn delete(sh: &Arc<Shared>, c: &Ctx, resource: &str, ns: &str, name: &str) -> Res {
    let opts = delete_options(c)?;
    let mut st = lock(sh);
    let Some(obj) = st.get(resource, ns, name).cloned() else {
        return Err(ApiError::not_found(resource, name));
    };
    if let Some(pre) = opts.get("preconditions") {
        let have_uid = obj["metadata"]["uid"].as_str().unwrap_or("");
        if let Some(want) = pre.get("uid").and_then(Value::as_str)
            && want != have_uid
        {
            let kind = objects::kind_of(resource).unwrap_or(resource);
            return Err(ApiError::uid_precondition(kind, name, want, have_uid));
        }
        if let Some(want) = pre.get("resourceVersion").and_then(Value::as_str)
            && Some(want) != obj["metadata"]["resourceVersion"].as_str()
        {
            return Err(ApiError::conflict(resource, name));
        }
    }
    if dry_run(c, Some(&opts)) {
        return Ok(Reply::Json(200, obj));
    }
    if resource == "namespaces" {
        for (r, _, namespaced) in objects::all_resources() {
            if namespaced {
                for o in st.list(r, Some(name)) {
                    let n = o["metadata"]["name"].as_str().unwrap_or("").to_string();
                    st.remove(r, name, &n);
                }
            }
        }
        let mut gone = st.remove(resource, "", name).unwrap_or(obj);
        gone["status"]["phase"] = json!("Terminating");
        return Ok(Reply::Json(200, gone));
    }
    let grace = grace_of(c, &opts);
    let out = delete_one(sh, &mut st, resource, ns, name, grace);
    if resource != "pods" && sh.opts.single_delete_returns_status {
        return Ok(Reply::Json(
            200,
            success_status(resource, name, &obj["metadata"]["uid"]),
        ));
    }
    Ok(Reply::Json(200, out))
}

/// Deletes one object; a pod bound to a node only gets a deletionTimestamp and is
/// removed after a (short) simulated grace period.
pub(crate) fn delete_one(
    sh: &Arc<Shared>,
    st: &mut Store,
    resource: &str,
    ns: &str,
    name: &str,
    grace: Option<i64>,
) -> Value {
    let obj = st.get(resource, ns, name).cloned().unwrap_or_default();
    let on_node = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let grace = grace
        .or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    if resource != "pods" || !on_node || grace <= 0 {
        return st.remove(resource, ns, name).unwrap_or(obj);
    }
    if obj["metadata"].get("deletionTimestamp").is_some() {
        return obj;
    }
    let mut obj = obj;
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
    obj["metadata"]["deletionTimestamp"] = json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    obj["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    let obj = st.put(resource, ns, obj);
    let uid = obj["metadata"]["uid"].clone();
    let (sh, ns, name) = (sh.clone(), ns.to_string(), name.to_string());
    let wait = POD_GRACE.min(Duration::from_secs(grace as u64));
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let mut st = lock(&sh);
        if st
            .get("pods", &ns, &name)
            .is_some_and(|p| p["metadata"]["uid"] == uid)
        {
            st.remove("pods", &ns, &name);
        }
    });
    Arc::unwrap_or_clone(obj)
}

fn delete_collection(sh: &Arc<Shared>, c: &Ctx, resource: &str, ns: &str) -> Res {
    if (resource == "services" && !sh.opts.collection_delete_services) || resource == "namespaces" {
        return Err(ApiError::method_not_allowed());
    }
    let (ls, fs) = selectors(c, resource)?;
    let opts = delete_options(c)?;
    let dry = dry_run(c, Some(&opts));
    let grace = grace_of(c, &opts);
    let mut st = lock(sh);
    let matching: Vec<Value> = st
        .list(resource, Some(ns))
        .into_iter()
        .filter(|o| ls.matches(o) && fs.matches(o))
        .collect();
    let mut deleted = Vec::new();
    for o in matching {
        if dry {
            deleted.push(o);
            continue;
        }
        let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
        deleted.push(delete_one(sh, &mut st, resource, ns, &name, grace));
    }
    Ok(Reply::Json(
        200,
        list_obj(resource, st.current_rv(), deleted),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_deadline_may_be_set_or_lowered_never_raised_nor_removed() {
        let pod = |d: Value| json!({"spec": {"activeDeadlineSeconds": d}});
        let message = |old, new| deadline_update(&pod(old), &pod(new)).map(|c| c.message);
        assert_eq!(message(Value::Null, json!(1)), None);
        assert_eq!(message(json!(3600), json!(1)), None);
        assert_eq!(
            message(json!(10), json!(20)).unwrap(),
            "Invalid value: 20: must be less than or equal to previous value"
        );
        assert_eq!(
            message(json!(10), Value::Null).unwrap(),
            "Invalid value: null: must not update from a positive integer to nil value"
        );
        assert_eq!(
            message(json!(10), json!(0)).unwrap(),
            "Invalid value: 0: must be between 1 and 2147483647, inclusive"
        );
        assert_eq!(
            message(Value::Null, json!(3_000_000_000_i64)).unwrap(),
            "Invalid value: 3000000000: must be between 0 and 2147483647, inclusive"
        );
    }
}
