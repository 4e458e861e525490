//! ResourceQuota, as a real API server and its controller manager keep it:
//!
//! - **The controller** (`pkg/controller/resourcequota/resource_quota_controller.go::
//!   syncResourceQuota`): `status.hard` is `spec.hard`, and `status.used` the sum, over
//!   the namespace's objects a quota's scopes match, of each object's usage, for every
//!   resource in `hard` (zero included). The real one recalculates after a pod is deleted
//!   or ends (its replenishment) and every resync; [`sync`] recalculates after every
//!   change in a namespace with quotas (the state it converges to, without its delay).
//! - **The admission plugin** (`staging/src/k8s.io/apiserver/pkg/admission/plugin/
//!   resourcequota/controller.go::CheckRequest`): [`admit`], on every create, in the
//!   order of the quotas' names: a quota matches an object when it tracks one of the
//!   resources the object's evaluator counts and all of its scopes match; a pod must then
//!   set `cpu`/`memory` requests or limits the quota tracks on every container ("failed
//!   quota: q: must specify …"); every tracked resource needs a `status.used` ("status
//!   unknown for quota"); and `used + requested ≤ hard` for each resource the object uses
//!   ("exceeded quota: q, requested: …, used: …, limited: …").
//! - **What an object uses** (`pkg/quota/v1/evaluator/core/pods.go::PodUsageFunc` and
//!   `podComputeUsageHelper`, `services.go::Usage`, `registry.go`'s legacy counts,
//!   `staging/src/k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go` for the rest): a pod
//!   `count/pods` always, and while it has not ended `pods`, `cpu`/`requests.cpu`,
//!   `limits.cpu`, the same for `memory` and `ephemeral-storage`, `hugepages-*` and
//!   `requests.hugepages-*`, and `requests.<name>` of each extended resource (requests
//!   as the API server defaults them from the limits); its requests and limits are the
//!   larger of the containers' sum and each init container (restartable ones, sidecars,
//!   adding to both), plus the overhead (`component-helpers/resource/helpers.go::
//!   PodRequests`, `PodLimits`). A service `count/services`, `services`, and its node
//!   ports and load balancers; configmaps, secrets and resourcequotas `count/R` and `R`;
//!   anything else `count/R` (`count/podgroups.scheduling.volcano.sh`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::quantity::Qty;
use crate::status::ApiError;
use crate::store::Store;

const QUOTAS: &str = "resourcequotas";

/// Resource name → quantity.
pub type Usage = BTreeMap<String, Qty>;

/// Whether `ns` has a quota (then every change there is recounted).
pub fn any_in(st: &Store, ns: &str) -> bool {
    st.list_after(QUOTAS, Some(ns), None).next().is_some()
}

/// The controller: every quota of `ns` with `status.hard` from its spec and
/// `status.used` counted from the objects there; a quota whose status changes is
/// stored again (watchers see MODIFIED). Called by the store after each change in `ns`.
pub fn sync(st: &mut Store, ns: &str) {
    if ns.is_empty() || !any_in(st, ns) {
        return;
    }
    for mut quota in st.list(QUOTAS, Some(ns)) {
        let hard: Usage = quantities(&quota["spec"]["hard"]);
        let mut used: Usage = hard.keys().map(|k| (k.clone(), Qty::default())).collect();
        for (resource, _, namespaced) in crate::objects::all_resources() {
            if !namespaced || resource == "events" || resource == "endpoints" {
                continue;
            }
            for obj in st.list_after(resource, Some(ns), None) {
                if !scopes_match(&quota, resource, obj) {
                    continue;
                }
                for (name, q) in usage(resource, obj) {
                    if let Some(u) = used.get_mut(&name) {
                        *u = u.add(q);
                    }
                }
            }
        }
        let status = json!({ "hard": written(&hard), "used": written(&used) });
        if quota["status"] != status {
            quota["status"] = status;
            st.put_quietly(QUOTAS, ns, quota);
        }
    }
}

fn quantities(map: &Value) -> Usage {
    map.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Qty::of(v)?)))
        .collect()
}

fn written(usage: &Usage) -> Value {
    usage
        .iter()
        .map(|(k, q)| (k.clone(), json!(q.to_string())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The admission plugin on the create of `obj` (see the module's doc); nothing is
/// charged here: the store's [`sync`] counts the object once it is stored.
pub fn admit(
    st: &Store,
    resource: &str,
    ns: &str,
    obj: &Value,
    opts: &crate::options::Options,
) -> Result<(), ApiError> {
    if !any_in(st, ns) {
        return Ok(());
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let forbidden = |why: String| {
        ApiError::new(
            403,
            "Forbidden",
            format!("{resource} {name:?} is forbidden: {why}"),
        )
        .with_details(name, resource)
    };
    let wanted = usage(resource, obj);
    let mut interesting = Vec::new();
    for quota in st.list(QUOTAS, Some(ns)) {
        let qname = quota["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let hard = quantities(&quota["status"]["hard"]);
        let tracked: Vec<&String> = hard.keys().filter(|k| counts(resource, k)).collect();
        if tracked.is_empty() || !scopes_match(&quota, resource, obj) {
            continue;
        }
        if resource == "pods"
            && let Some(missing) = missing_requirements(obj, &tracked, opts.quota_names_containers)
        {
            return Err(forbidden(format!(
                "failed quota: {qname}: must specify {missing}"
            )));
        }
        let used = quantities(&quota["status"]["used"]);
        if tracked.iter().any(|k| !used.contains_key(*k)) {
            let mut names: Vec<&str> = tracked.iter().map(|s| s.as_str()).collect();
            names.sort_unstable();
            return Err(forbidden(format!(
                "status unknown for quota: {qname}, resources: {}",
                names.join(",")
            )));
        }
        interesting.push((qname, hard, used));
    }
    for (qname, hard, used) in interesting {
        let exceeded: Vec<&String> = wanted
            .iter()
            .filter(|(k, q)| q.nanos != 0 && hard.contains_key(*k))
            .filter(|(k, q)| {
                used.get(*k).copied().unwrap_or_default().add(**q).nanos > hard[*k].nanos
            })
            .map(|(k, _)| k)
            .collect();
        if !exceeded.is_empty() {
            let show = |from: &Usage| {
                exceeded
                    .iter()
                    .map(|k| format!("{k}={}", from.get(*k).copied().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return Err(forbidden(format!(
                "exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
                show(&wanted),
                show(&used),
                show(&hard)
            )));
        }
    }
    Ok(())
}

/// Whether the evaluator of `resource` counts the quota resource `name`
/// (`MatchingResources`).
fn counts(resource: &str, name: &str) -> bool {
    let count = format!("count/{resource}");
    match resource {
        "pods" => {
            matches!(
                name,
                "count/pods"
                    | "pods"
                    | "cpu"
                    | "memory"
                    | "ephemeral-storage"
                    | "requests.cpu"
                    | "requests.memory"
                    | "requests.ephemeral-storage"
                    | "limits.cpu"
                    | "limits.memory"
                    | "limits.ephemeral-storage"
            ) || name.starts_with("hugepages-")
                || name.starts_with("requests.hugepages-")
                || name.strip_prefix("requests.").is_some_and(extended)
        }
        "services" => matches!(
            name,
            "count/services" | "services" | "services.nodeports" | "services.loadbalancers"
        ),
        "configmaps" | "secrets" | "resourcequotas" | "persistentvolumeclaims" => {
            name == count || name == resource
        }
        _ => name == count,
    }
}

/// An extended resource: outside `kubernetes.io/`, with a domain (`nvidia.com/gpu`).
fn extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// What one object uses (see the module's doc).
pub fn usage(resource: &str, obj: &Value) -> Usage {
    let one =
        |names: &[&str]| -> Usage { names.iter().map(|n| (n.to_string(), Qty::ONE)).collect() };
    match resource {
        "pods" => pod_usage(obj),
        "services" => {
            let mut u = one(&["count/services", "services"]);
            let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len) as i128;
            let (node_ports, balancers) = match obj["spec"]["type"].as_str() {
                Some("NodePort") => (ports, 0),
                Some("LoadBalancer") => (ports, 1),
                _ => (0, 0),
            };
            u.insert("services.nodeports".into(), whole(node_ports));
            u.insert("services.loadbalancers".into(), whole(balancers));
            u
        }
        "configmaps" | "secrets" | "resourcequotas" | "persistentvolumeclaims" => {
            one(&[&format!("count/{resource}"), resource])
        }
        _ => one(&[&format!("count/{resource}")]),
    }
}

fn whole(n: i128) -> Qty {
    Qty {
        nanos: n * Qty::ONE.nanos,
        binary: false,
    }
}

fn pod_usage(pod: &Value) -> Usage {
    let mut u = Usage::from([("count/pods".to_string(), Qty::ONE)]);
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return u;
    }
    u.insert("pods".into(), Qty::ONE);
    let requests = pod_total(pod, "requests");
    let limits = pod_total(pod, "limits");
    for base in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(base) {
            u.insert(base.into(), *q);
            u.insert(format!("requests.{base}"), *q);
        }
        if let Some(q) = limits.get(base) {
            u.insert(format!("limits.{base}"), *q);
        }
    }
    for (name, q) in &requests {
        if name.starts_with("hugepages-") {
            u.insert(name.clone(), *q);
            u.insert(format!("requests.{name}"), *q);
        } else if extended(name) {
            u.insert(format!("requests.{name}"), *q);
        }
    }
    u
}

/// A pod's requests or limits: the larger of the containers' sum and each init container
/// (with the restartable init containers before it), plus the overhead (for limits, only
/// where a limit is set).
fn pod_total(pod: &Value, part: &str) -> Usage {
    let of = |c: &Value| quantities(&c["resources"][part]);
    let add = |into: &mut Usage, from: &Usage| {
        for (k, q) in from {
            let e = into.entry(k.clone()).or_default();
            *e = e.add(*q);
        }
    };
    let spec = &pod["spec"];
    let mut total = Usage::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        add(&mut total, &of(c));
    }
    let (mut sidecars, mut init) = (Usage::new(), Usage::new());
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        let mine = of(c);
        let during = if c["restartPolicy"] == "Always" {
            add(&mut total, &mine);
            add(&mut sidecars, &mine);
            sidecars.clone()
        } else {
            let mut both = mine;
            add(&mut both, &sidecars);
            both
        };
        for (k, q) in during {
            let e = init.entry(k).or_default();
            *e = e.max(q);
        }
    }
    for (k, q) in init {
        let e = total.entry(k).or_default();
        *e = e.max(q);
    }
    for (k, q) in quantities(&spec["overhead"]) {
        if part == "requests" || total.contains_key(&k) {
            let e = total.entry(k).or_default();
            *e = e.add(q);
        }
    }
    total
}

/// `Constraints`: of the tracked `cpu`/`memory` resources, those some container does not
/// set (its requests after defaulting from the limits, or its limits), with the
/// containers, as the message names them: `limits.cpu for: a,b; limits.memory for: a`
/// (1.21 on), or `limits.cpu,limits.memory` (1.20).
fn missing_requirements(pod: &Value, tracked: &[&String], name_containers: bool) -> Option<String> {
    let required: Vec<&str> = tracked
        .iter()
        .map(|s| s.as_str())
        .filter(|k| {
            matches!(
                *k,
                "cpu"
                    | "memory"
                    | "requests.cpu"
                    | "requests.memory"
                    | "limits.cpu"
                    | "limits.memory"
            )
        })
        .collect();
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let spec = &pod["spec"];
    let all = spec["containers"].as_array().into_iter().flatten();
    for c in all.chain(spec["initContainers"].as_array().into_iter().flatten()) {
        let has = |part: &str, r: &str| c["resources"][part].get(r).is_some();
        for k in &required {
            let set = match *k {
                "cpu" | "requests.cpu" => has("requests", "cpu"),
                "memory" | "requests.memory" => has("requests", "memory"),
                "limits.cpu" => has("limits", "cpu"),
                _ => has("limits", "memory"),
            };
            if !set {
                let name = c["name"].as_str().unwrap_or_default().to_string();
                let names = missing.entry(k).or_default();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    if !name_containers {
        return Some(missing.keys().copied().collect::<Vec<_>>().join(","));
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(k, mut names)| {
            names.sort();
            format!("{k} for: {}", names.join(","))
        })
        .collect();
    Some(parts.join("; "))
}

/// Whether every scope of the quota matches the object (`podMatchesScopeFunc`; objects
/// other than pods match no scope).
fn scopes_match(quota: &Value, resource: &str, obj: &Value) -> bool {
    let mut selectors: Vec<Value> = quota["spec"]["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| json!({ "scopeName": s, "operator": "Exists" }))
        .collect();
    selectors.extend(
        quota["spec"]["scopeSelector"]["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
            .cloned(),
    );
    selectors
        .iter()
        .all(|s| resource == "pods" && pod_scope(s, obj))
}

fn pod_scope(selector: &Value, pod: &Value) -> bool {
    let spec = &pod["spec"];
    let terminating = spec["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0);
    let best_effort = ["containers", "initContainers"].iter().all(|list| {
        spec[*list].as_array().into_iter().flatten().all(|c| {
            ["requests", "limits"].iter().all(|part| {
                c["resources"][part].get("cpu").is_none()
                    && c["resources"][part].get("memory").is_none()
            })
        })
    });
    let class = spec["priorityClassName"].as_str().unwrap_or_default();
    let values: Vec<&str> = selector["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match selector["scopeName"].as_str().unwrap_or_default() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => match selector["operator"].as_str().unwrap_or_default() {
            "Exists" => !class.is_empty(),
            "DoesNotExist" => class.is_empty(),
            "In" => !class.is_empty() && values.contains(&class),
            "NotIn" => class.is_empty() || !values.contains(&class),
            _ => false,
        },
        "CrossNamespacePodAffinity" => {
            let affinity = &spec["affinity"];
            ["podAffinity", "podAntiAffinity"].iter().any(|a| {
                let terms = &affinity[*a];
                let req = terms["requiredDuringSchedulingIgnoredDuringExecution"].as_array();
                let pref = terms["preferredDuringSchedulingIgnoredDuringExecution"].as_array();
                req.into_iter()
                    .flatten()
                    .chain(pref.into_iter().flatten().map(|w| &w["podAffinityTerm"]))
                    .any(|t| {
                        t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
                    })
            })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: Value) -> Value {
        json!({ "metadata": { "name": "p" }, "spec": { "containers": containers }, "status": { "phase": "Pending" } })
    }

    #[test]
    fn a_pod_uses_its_requests_limits_and_extended_resources() {
        let p = pod(json!([
            { "name": "a", "resources": { "requests": { "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1" },
                                          "limits": { "cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1" } } },
            { "name": "b", "resources": { "requests": { "cpu": "500m" } } }
        ]));
        let u = usage("pods", &p);
        let show = |k: &str| u.get(k).map(|q| q.to_string());
        assert_eq!(show("pods").as_deref(), Some("1"));
        assert_eq!(show("requests.cpu").as_deref(), Some("1500m"));
        assert_eq!(show("cpu").as_deref(), Some("1500m"));
        assert_eq!(show("limits.cpu").as_deref(), Some("2"));
        assert_eq!(show("requests.memory").as_deref(), Some("1Gi"));
        assert_eq!(show("requests.nvidia.com/gpu").as_deref(), Some("1"));
        assert_eq!(
            show("limits.nvidia.com/gpu"),
            None,
            "extended resources: requests only"
        );
        let mut ended = p.clone();
        ended["status"]["phase"] = json!("Succeeded");
        assert_eq!(
            usage("pods", &ended).keys().collect::<Vec<_>>(),
            vec!["count/pods"]
        );
    }

    #[test]
    fn init_containers_count_as_the_largest_and_sidecars_add_up() {
        let mut p = pod(json!([{ "name": "a", "resources": { "requests": { "memory": "1Gi" } } }]));
        p["spec"]["initContainers"] = json!([
            { "name": "side", "restartPolicy": "Always", "resources": { "requests": { "memory": "1Gi" } } },
            { "name": "init", "resources": { "requests": { "memory": "3Gi" } } }
        ]);
        // Containers 1Gi + sidecar 1Gi = 2Gi; while init runs: 3Gi + the sidecar's 1Gi = 4Gi.
        assert_eq!(usage("pods", &p)["requests.memory"].to_string(), "4Gi");
    }

    #[test]
    fn missing_limits_are_named_per_container() {
        let p = pod(
            json!([{ "name": "tensorflow" }, { "name": "side", "resources": { "limits": { "cpu": "1" } } }]),
        );
        let tracked = [
            "limits.cpu".to_string(),
            "limits.memory".to_string(),
            "pods".to_string(),
        ];
        let tracked: Vec<&String> = tracked.iter().collect();
        assert_eq!(
            missing_requirements(&p, &tracked, true).as_deref(),
            Some("limits.cpu for: tensorflow; limits.memory for: side,tensorflow")
        );
        assert_eq!(
            missing_requirements(&p, &tracked, false).as_deref(),
            Some("limits.cpu,limits.memory")
        );
    }
}
