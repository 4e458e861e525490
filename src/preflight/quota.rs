//! The namespace's ResourceQuotas against what a run creates, as the API server's quota
//! admission will judge each create (`staging/src/k8s.io/apiserver/pkg/admission/plugin/
//! resourcequota/controller.go::CheckRequest`), but for the whole run at once and
//! before anything exists:
//!
//! - a quota applies to an object when it tracks a resource the object's evaluator
//!   counts and all of its scopes match (scopes match pods only);
//! - a pod must set, on every container, the `cpu`/`memory` requests or limits such a
//!   quota tracks (`pkg/quota/v1/evaluator/core/pods.go::Constraints`);
//! - for every tracked resource, what the run uses must fit in `hard − used` (both from
//!   the quota's status, which the quota controller keeps).
//!
//! What an object uses is the evaluators' count (`pods.go::PodUsageFunc`,
//! `services.go::Usage`, `registry.go`, `generic/evaluator.go`): see [`pod_usage`] and
//! [`object_usage`]. A quota whose status the controller has not filled in yet is left
//! to the server (it refuses the create: "status unknown for quota").

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, ResourceQuota};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{RolePods, RunObjects, pods_of};
use crate::plan::quantity;

type Usage = BTreeMap<String, i128>;

/// `Ok` when every quota leaves room for the run; else the one line saying which quota,
/// what the run needs and what is left (or which limits a quota demands).
pub fn check(quotas: &[ResourceQuota], run: &RunObjects, namespace: &str) -> Result<(), String> {
    let mut quotas: Vec<&ResourceQuota> = quotas.iter().collect();
    quotas.sort_by_key(|q| q.metadata.name.clone());
    for quota in quotas {
        check_one(quota, run, namespace)?;
    }
    Ok(())
}

fn check_one(quota: &ResourceQuota, run: &RunObjects, ns: &str) -> Result<(), String> {
    let name = quota.metadata.name.as_deref().unwrap_or_default();
    let status = quota.status.as_ref();
    let hard = read(status.and_then(|s| s.hard.as_ref()));
    let used = read(status.and_then(|s| s.used.as_ref()));
    if hard.is_empty() || hard.keys().any(|k| !used.contains_key(k)) {
        return Ok(());
    }
    let mut needs = Usage::new();
    for pods in &run.pods {
        let tracked: Vec<&String> = hard.keys().filter(|k| counts("pods", k)).collect();
        if tracked.is_empty() || !scopes_match(quota, Some(&pods.spec)) {
            continue;
        }
        if let Some(missing) = missing_requirements(pods, &tracked, &run.tf_container) {
            return Err(format!(
                "resource quota '{name}' in namespace '{ns}' {missing}; nothing was created"
            ));
        }
        add(&mut needs, &pod_usage(&pods.spec), pods.count);
    }
    if scopes_match(quota, None) {
        add_other_objects(&mut needs, run);
    }
    let short = shortfalls(&hard, &used, &needs);
    if short.is_empty() {
        return Ok(());
    }
    Err(format!(
        "resource quota '{name}' in namespace '{ns}' leaves too little for this run: {}; nothing was created (kubectl describe resourcequota {name} -n {ns})",
        short.join("; ")
    ))
}

/// How many runs like `run` the quotas leave room for at once, now: the fewest of
/// every tracked resource's `(hard − used) / a run's need`, and that limit in words
/// (`the quota 'q' leaves 4 requests.nvidia.com/gpu, a run needs 2`). `None`: no quota
/// bounds such runs.
pub fn room(quotas: &[ResourceQuota], run: &RunObjects) -> Option<(u64, String)> {
    let mut best: Option<(u64, String)> = None;
    for quota in quotas {
        let name = quota.metadata.name.as_deref().unwrap_or_default();
        let status = quota.status.as_ref();
        let hard = read(status.and_then(|s| s.hard.as_ref()));
        let used = read(status.and_then(|s| s.used.as_ref()));
        if hard.is_empty() || hard.keys().any(|k| !used.contains_key(k)) {
            continue;
        }
        let needs = needs_of(quota, run, &hard);
        for (k, limit) in &hard {
            let Some(need) = needs.get(k).copied().filter(|n| *n > 0) else {
                continue;
            };
            let left = (limit - used[k]).max(0);
            let fits = u64::try_from(left / need).unwrap_or(u64::MAX);
            if best.as_ref().is_none_or(|(n, _)| fits < *n) {
                let why = format!(
                    "the quota '{name}' leaves {} {k}, a run needs {}",
                    quantity::show(k, left),
                    quantity::show(k, need)
                );
                best = Some((fits, why));
            }
        }
    }
    best
}

/// What the run uses of what `quota` tracks (its pods' scopes matched).
fn needs_of(quota: &ResourceQuota, run: &RunObjects, hard: &Usage) -> Usage {
    let mut needs = Usage::new();
    for pods in &run.pods {
        let tracked = hard.keys().any(|k| counts("pods", k));
        if tracked && scopes_match(quota, Some(&pods.spec)) {
            add(&mut needs, &pod_usage(&pods.spec), pods.count);
        }
    }
    if scopes_match(quota, None) {
        add_other_objects(&mut needs, run);
    }
    needs
}

/// A quota's `hard` or `used`, as exact amounts.
fn read(m: Option<&BTreeMap<String, Quantity>>) -> Usage {
    m.into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), quantity::parse(&q.0)?)))
        .collect()
}

/// What the run's objects other than pods use (services, config maps, secrets, the
/// gang's PodGroup).
fn add_other_objects(needs: &mut Usage, run: &RunObjects) {
    for (resource, count) in [
        ("services", run.services),
        ("configmaps", run.config_maps),
        ("secrets", run.secrets),
    ] {
        add(needs, &object_usage(resource), count);
    }
    if let Some(resource) = &run.pod_group {
        add(needs, &object_usage(resource), 1);
    }
}

/// Each tracked resource the run needs more of than the quota has left, in words.
fn shortfalls(hard: &Usage, used: &Usage, needs: &Usage) -> Vec<String> {
    hard.iter()
        .filter_map(|(k, limit)| {
            let need = *needs.get(k)?;
            let left = limit - used[k];
            (need > 0 && need > left).then(|| {
                format!(
                    "{k}: the run needs {}, {} left ({} hard, {} used)",
                    quantity::show(k, need),
                    quantity::show(k, left.max(0)),
                    quantity::show(k, *limit),
                    quantity::show(k, used[k])
                )
            })
        })
        .collect()
}

fn add(into: &mut Usage, usage: &Usage, times: u32) {
    for (k, v) in usage {
        *into.entry(k.clone()).or_default() += v * i128::from(times);
    }
}

/// Whether the evaluator of `resource` counts the quota resource `name`
/// (`MatchingResources`).
fn counts(resource: &str, name: &str) -> bool {
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
        _ => object_usage(resource).contains_key(name),
    }
}

/// An extended resource (`nvidia.com/gpu`): a domain outside `kubernetes.io/`. Quotas
/// count it as `requests.<name>` only.
fn extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// What one of the run's pods uses while it runs.
pub fn pod_usage(spec: &PodSpec) -> Usage {
    let mut u = Usage::from([
        ("count/pods".to_string(), quantity::ONE),
        ("pods".to_string(), quantity::ONE),
    ]);
    let requests = quantity::pod_requests(spec);
    let limits = quantity::pod_limits(spec);
    for base in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(v) = requests.get(base) {
            u.insert(base.to_string(), *v);
            u.insert(format!("requests.{base}"), *v);
        }
        if let Some(v) = limits.get(base) {
            u.insert(format!("limits.{base}"), *v);
        }
    }
    for (name, v) in &requests {
        if name.starts_with("hugepages-") {
            u.insert(name.clone(), *v);
            u.insert(format!("requests.{name}"), *v);
        } else if extended(name) {
            u.insert(format!("requests.{name}"), *v);
        }
    }
    u
}

/// What one object of another kind uses: a ClusterIP service `count/services` and
/// `services`; a configmap or secret `count/R` and `R`; anything else `count/R`.
fn object_usage(resource: &str) -> Usage {
    let names: Vec<String> = match resource {
        "services" => vec!["count/services".into(), "services".into()],
        "configmaps" | "secrets" => vec![format!("count/{resource}"), resource.to_string()],
        _ => vec![format!("count/{resource}")],
    };
    names.into_iter().map(|n| (n, quantity::ONE)).collect()
}

/// The cpu/memory requirements a quota tracking them puts on every container that the
/// role's pods do not meet, as a sentence: `requires limits.cpu and limits.memory on every
/// container, and the worker pods' container tensorflow sets neither: …`.
fn missing_requirements(pods: &RolePods, tracked: &[&String], tf: &str) -> Option<String> {
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
    let spec = &pods.spec;
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        let (requests, limits) = (
            quantity::container_requests(c),
            quantity::container_limits(c),
        );
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|k| {
                let (map, base) = match *k {
                    "cpu" | "requests.cpu" => (&requests, "cpu"),
                    "memory" | "requests.memory" => (&requests, "memory"),
                    "limits.cpu" => (&limits, "cpu"),
                    _ => (&limits, "memory"),
                };
                !map.contains_key(base)
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        let how = if c.name == tf {
            flags_for(pods.role, &missing)
        } else {
            format!("set them in the pod template's container {}", c.name)
        };
        let whose = pods_of(pods.role, pods.count);
        // `the worker pods'`, `the worker's pod's`.
        let mark = if whose.ends_with('s') { "'" } else { "'s" };
        return Some(format!(
            "requires {} on every container, and {whose}{mark} container {} does not set {}: {how}",
            missing.join(" and "),
            c.name,
            if missing.len() == 1 { "it" } else { "them" },
        ));
    }
    None
}

/// The flags that set the missing requests and limits of `role`'s TF container.
fn flags_for(role: crate::roles::Role, missing: &[&str]) -> String {
    let ps = role == crate::roles::Role::Ps;
    let mut flags: Vec<&str> = Vec::new();
    for k in missing {
        let flag = match (k.contains("cpu"), ps) {
            (true, false) => "--cpu",
            (true, true) => "--ps-cpu",
            (false, false) => "--memory",
            (false, true) => "--ps-memory",
        };
        if !flags.contains(&flag) {
            flags.push(flag);
        }
    }
    let given = flags.join(" and ");
    if ps {
        format!("give {given} (or --cpu and --memory, which they default to)")
    } else {
        format!("give {given} (they set requests and limits)")
    }
}

/// Whether every scope of the quota matches a pod of `spec` (`None`: an object that is
/// not a pod, which no scope matches).
fn scopes_match(quota: &ResourceQuota, pod: Option<&PodSpec>) -> bool {
    let spec = quota.spec.as_ref();
    let scopes = spec.and_then(|s| s.scopes.as_ref()).into_iter().flatten();
    let selectors = spec
        .and_then(|s| s.scope_selector.as_ref())
        .and_then(|s| s.match_expressions.as_ref())
        .into_iter()
        .flatten();
    let mut all = scopes
        .map(|s| (s.as_str(), "Exists", Vec::new()))
        .chain(selectors.map(|e| {
            (
                e.scope_name.as_str(),
                e.operator.as_str(),
                e.values.clone().unwrap_or_default(),
            )
        }));
    all.all(|(scope, op, values)| pod.is_some_and(|p| pod_scope(p, scope, op, &values)))
}

/// One scope on a pod (`pods.go::podMatchesScopeFunc`).
fn pod_scope(spec: &PodSpec, scope: &str, op: &str, values: &[String]) -> bool {
    let terminating = spec.active_deadline_seconds.is_some_and(|s| s >= 0);
    let containers = || {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
    };
    let best_effort = containers().all(|c| {
        let asks = |m: &BTreeMap<String, i128>| m.contains_key("cpu") || m.contains_key("memory");
        !asks(&quantity::container_requests(c)) && !asks(&quantity::container_limits(c))
    });
    let class = spec.priority_class_name.as_deref().unwrap_or_default();
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => match op {
            "Exists" => !class.is_empty(),
            "DoesNotExist" => class.is_empty(),
            "In" => !class.is_empty() && values.iter().any(|v| v == class),
            "NotIn" => class.is_empty() || !values.iter().any(|v| v == class),
            _ => false,
        },
        "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
        _ => false,
    }
}

fn cross_namespace_affinity(spec: &PodSpec) -> bool {
    let Some(affinity) = &spec.affinity else {
        return false;
    };
    let across = |t: &k8s_openapi::api::core::v1::PodAffinityTerm| {
        t.namespaces.as_ref().is_some_and(|n| !n.is_empty()) || t.namespace_selector.is_some()
    };
    let pa = affinity.pod_affinity.as_ref().map(|a| {
        (
            &a.required_during_scheduling_ignored_during_execution,
            &a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    let anti = affinity.pod_anti_affinity.as_ref().map(|a| {
        (
            &a.required_during_scheduling_ignored_during_execution,
            &a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    [pa, anti].into_iter().flatten().any(|(req, pref)| {
        req.iter().flatten().any(across)
            || pref.iter().flatten().any(|w| across(&w.pod_affinity_term))
    })
}

#[cfg(test)]
mod tests;
