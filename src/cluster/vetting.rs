//! A restart record ([`super::recreate::RestartRecord`], in the run's ConfigMap) checked before
//! `wait --restarts` takes it up. Anyone who may edit the namespace may edit the
//! ConfigMap: a forged record must not make the follower create, under its own
//! identity, a pod tf-spawner would not make for this run (issue 49: a privileged pod
//! mounting the host's `/`, named and labelled to be invisible to `-d` and `status`).
//!
//! So each recorded pod is checked field by field against what tf-spawner makes: its
//! name is the run's task name its replica labels say (`TAG-worker-1`), it carries the
//! run's label and not a helper's, no owner, finalizer or other namespace; and it asks
//! for no privilege ([`privileges`]: host namespaces, a host path, a privileged
//! container, an added capability, a host port, a node of its own, a service account
//! other than the namespace's default, an unconfined profile, and every field beyond
//! those the plan sets: node selectors, affinity, tolerations, priority classes, SELinux
//! and AppArmor options…) that none of the run's pods read from the API server has: a
//! run whose own template asked for one keeps it while a pod of the run with it is
//! there. The first disagreement refuses the record, in words for one line.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, SecurityContext};

#[cfg(doc)]
use super::recreate::RestartRecord;
use super::recreate::Templates;
use crate::labels::{HELPER_LABEL, INDEX_LABEL, ROLE_LABEL, RUN_LABEL};
use crate::roles::{Role, Task};

/// `Ok` when every pod of `recorded` (a restart's [`RestartRecord`], or the pods the spawn
/// recorded, `plan/pods_record.rs`) is one tf-spawner would make for run `tag` in
/// `namespace`, asking for no privilege the run's pods read from the server (`live`)
/// do not have; else what disagrees.
pub fn vet(
    recorded: &Templates,
    tag: &str,
    namespace: &str,
    live: &Templates,
) -> Result<(), String> {
    let allowed: BTreeSet<String> = live.values().flat_map(privileges).collect();
    for (name, pod) in recorded {
        vet_identity(name, pod, tag, namespace)?;
        if let Some(extra) = privileges(pod).into_iter().find(|p| !allowed.contains(p)) {
            let shown: String = extra.chars().take(200).collect();
            let more = if shown.len() < extra.len() { "…" } else { "" };
            return Err(format!(
                "pod {name} asks for {shown}{more}, which no pod of the run has"
            ));
        }
    }
    Ok(())
}

/// The recorded pod's name, labels and metadata are those of one of the run's tasks.
fn vet_identity(name: &str, pod: &Pod, tag: &str, namespace: &str) -> Result<(), String> {
    let meta = &pod.metadata;
    let label = |k: &str| {
        meta.labels
            .as_ref()
            .and_then(|l| l.get(k))
            .map(String::as_str)
    };
    let task = label(ROLE_LABEL)
        .and_then(Role::parse)
        .zip(label(INDEX_LABEL).and_then(|i| i.parse().ok()))
        .map(|(role, index)| Task { role, index });
    let expected = task.map(|t| t.name(tag));
    if expected.as_deref() != Some(name) || meta.name.as_deref() != Some(name) {
        return Err(format!(
            "pod {name} is not named as the task its labels say ({})",
            expected.as_deref().unwrap_or("no task")
        ));
    }
    if label(RUN_LABEL) != Some(tag) || label(HELPER_LABEL).is_some() {
        return Err(format!("pod {name} does not carry the run's labels"));
    }
    if meta.namespace.as_deref().is_some_and(|n| n != namespace) {
        return Err(format!("pod {name} names another namespace"));
    }
    let owned = meta
        .owner_references
        .as_ref()
        .is_some_and(|o| !o.is_empty());
    let finalized = meta.finalizers.as_ref().is_some_and(|f| !f.is_empty());
    if owned || finalized || meta.generate_name.is_some() {
        return Err(format!(
            "pod {name} has owners, finalizers or a generated name, which tf-spawner never sets"
        ));
    }
    Ok(())
}

/// What a pod asks for beyond the fields tf-spawner's plan sets, each in words:
/// `hostNetwork true`, `hostPath /`, `a privileged container (x)`, `capability
/// SYS_ADMIN`, `nodeSelector {"a":"b"}`, `priorityClassName "x"`… An allow-list: every
/// field of the pod's spec and of its containers is either one the plan sets with a value
/// that gives nothing ([`POD_FREE`], [`CONTAINER_FREE`], their security contexts', the
/// volumes' kinds and the node-lost tolerations), or named here with its value, which a
/// live pod of the run must have too.
pub fn privileges(pod: &Pod) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(spec) = &pod.spec else {
        return out;
    };
    let Ok(serde_json::Value::Object(json)) = serde_json::to_value(spec) else {
        return out;
    };
    pod_privileges(spec, &json, &mut out);
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        container_privileges(c, &mut out);
    }
    out
}

/// Fields of a pod's spec the plan sets (or the API server defaults) that give the pod
/// nothing beyond an ordinary pod of the namespace, whatever their value; the fields
/// checked one by one below are here too.
const POD_FREE: &[&str] = &[
    "containers",
    "initContainers",
    "volumes",
    "restartPolicy",
    "shareProcessNamespace",
    "activeDeadlineSeconds",
    "terminationGracePeriodSeconds",
    "dnsPolicy",
    "enableServiceLinks",
    "schedulerName",
    "hostname",
    "subdomain",
    "serviceAccount",
    "serviceAccountName",
    "securityContext",
    "tolerations",
    // Set by the server's admission from the priority class (checked: the server refuses
    // a pod whose priority is not its class's) and the runtime class (checked).
    "priority",
    "preemptionPolicy",
    "overhead",
    // Holds a pod back from scheduling (Kueue's), gives nothing.
    "schedulingGates",
];

/// A pod security context's fields that give nothing (`seccompProfile` checked apart).
const POD_SECURITY_FREE: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "fsGroup",
    "fsGroupChangePolicy",
    "supplementalGroups",
    "seccompProfile",
];

/// A container's fields that give nothing (`ports`, `securityContext` checked apart).
const CONTAINER_FREE: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "env",
    "envFrom",
    "volumeMounts",
    "resources",
    "ports",
    "imagePullPolicy",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "stdin",
    "stdinOnce",
    "tty",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "restartPolicy",
    "resizePolicy",
    "securityContext",
];

/// A container security context's fields that give nothing with any value (`privileged`,
/// `capabilities`, `allowPrivilegeEscalation`, `seccompProfile` checked apart).
const CONTAINER_SECURITY_FREE: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "readOnlyRootFilesystem",
    "privileged",
    "capabilities",
    "allowPrivilegeEscalation",
    "seccompProfile",
];

/// The kinds of volume the plan makes, or a template commonly has, that reach nothing
/// beyond the namespace (`hostPath` is named apart).
const VOLUME_FREE: &[&str] = &[
    "name",
    "configMap",
    "secret",
    "emptyDir",
    "persistentVolumeClaim",
    "projected",
    "downwardAPI",
    "ephemeral",
];

/// The taints the plan tolerates (`--node-lost-after`), as the server's
/// DefaultTolerationSeconds admission does too.
const NODE_LOST_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// Each field of `object` not in `free`, with its value: `PREFIXkey VALUE`. An unset,
/// empty or `false` field asks for nothing (every boolean of a pod turns a power on).
fn beyond(object: &serde_json::Value, free: &[&str], prefix: &str, out: &mut BTreeSet<String>) {
    use serde_json::Value;
    let nothing = |v: &Value| match v {
        Value::Null | Value::Bool(false) => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        Value::Number(_) | Value::Bool(true) => false,
    };
    for (key, value) in object.as_object().into_iter().flatten() {
        if !free.contains(&key.as_str()) && !nothing(value) {
            out.insert(format!("{prefix}{key} {value}"));
        }
    }
}

fn pod_privileges(
    spec: &PodSpec,
    json: &serde_json::Map<String, serde_json::Value>,
    out: &mut BTreeSet<String>,
) {
    beyond(&serde_json::Value::Object(json.clone()), POD_FREE, "", out);
    let accounts = [&spec.service_account_name, &spec.service_account];
    for account in accounts.into_iter().flatten() {
        if account != "default" {
            out.insert(format!("serviceAccountName {account}"));
        }
    }
    for volume in spec.volumes.iter().flatten() {
        if let Some(host) = &volume.host_path {
            out.insert(format!("hostPath {}", host.path));
        } else if let Ok(v) = serde_json::to_value(volume) {
            beyond(
                &v,
                VOLUME_FREE,
                &format!("volume {} of kind ", volume.name),
                out,
            );
        }
    }
    if let Some(sc) = json.get("securityContext") {
        beyond(sc, POD_SECURITY_FREE, "securityContext.", out);
    }
    let seccomp = spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    if seccomp.is_some_and(|p| p.type_ == "Unconfined") {
        out.insert("an Unconfined seccomp profile".to_string());
    }
    for t in spec.tolerations.iter().flatten() {
        let node_lost = t
            .key
            .as_deref()
            .is_some_and(|k| NODE_LOST_TAINTS.contains(&k))
            && t.operator.as_deref().is_none_or(|o| o == "Exists")
            && t.effect.as_deref() == Some("NoExecute");
        if !node_lost && let Ok(v) = serde_json::to_value(t) {
            out.insert(format!("toleration {v}"));
        }
    }
}

fn container_privileges(c: &Container, out: &mut BTreeSet<String>) {
    let name = &c.name;
    if let Ok(v) = serde_json::to_value(c) {
        beyond(&v, CONTAINER_FREE, &format!("container {name}'s "), out);
        if let Some(sc) = v.get("securityContext") {
            beyond(
                sc,
                CONTAINER_SECURITY_FREE,
                &format!("container {name}'s securityContext."),
                out,
            );
        }
    }
    if let Some(sc) = &c.security_context {
        security_privileges(name, sc, out);
    }
    for port in c.ports.iter().flatten() {
        if let Some(host) = port.host_port {
            out.insert(format!("hostPort {host}"));
        }
    }
}

fn security_privileges(name: &str, sc: &SecurityContext, out: &mut BTreeSet<String>) {
    if sc.privileged == Some(true) {
        out.insert(format!("a privileged container ({name})"));
    }
    if sc.allow_privilege_escalation == Some(true) {
        out.insert(format!("privilege escalation ({name})"));
    }
    let added = sc.capabilities.as_ref().and_then(|c| c.add.as_ref());
    for cap in added.into_iter().flatten() {
        out.insert(format!("capability {cap}"));
    }
    if sc
        .seccomp_profile
        .as_ref()
        .is_some_and(|p| p.type_ == "Unconfined")
    {
        out.insert("an Unconfined seccomp profile".to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, extra: serde_json::Value) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "labels": {
                "training_attempt": "t", "tf-spawner/replica-type": "worker",
                "tf-spawner/replica-index": "1"
            }},
            "spec": {"serviceAccountName": "default", "containers": [
                {"name": "tensorflow", "image": "tf"}
            ]}
        });
        json_patch(&mut v, extra);
        serde_json::from_value(v).unwrap()
    }

    fn json_patch(into: &mut serde_json::Value, patch: serde_json::Value) {
        match (into, patch) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    json_patch(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    fn record(pods: Vec<Pod>) -> crate::cluster::recreate::RestartRecord {
        crate::cluster::recreate::RestartRecord {
            attempt: 1,
            cause: None,
            port: None,
            templates: pods
                .into_iter()
                .map(|p| (p.metadata.name.clone().unwrap(), p))
                .collect(),
        }
    }

    #[test]
    fn the_runs_own_pod_passes() {
        let r = record(vec![pod("t-worker-1", json!({}))]);
        assert_eq!(vet(&r.templates, "t", "ns", &Templates::new()), Ok(()));
    }

    #[test]
    fn a_forged_pod_is_refused_for_what_gives_it_away() {
        for (name, extra, why) in [
            ("evil", json!({}), "is not named as the task"),
            (
                "t-worker-1",
                json!({"metadata": {"labels": {"training_attempt": "u"}}}),
                "labels",
            ),
            (
                "t-worker-1",
                json!({"metadata": {"labels": {"tf-spawner/helper": "cp"}}}),
                "labels",
            ),
            (
                "t-worker-1",
                json!({"metadata": {"namespace": "kube-system"}}),
                "namespace",
            ),
            (
                "t-worker-1",
                json!({"spec": {"hostNetwork": true}}),
                "hostNetwork",
            ),
            (
                "t-worker-1",
                json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}),
                "hostPath /",
            ),
            (
                "t-worker-1",
                json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf", "securityContext": {"privileged": true}}]}}),
                "privileged",
            ),
            (
                "t-worker-1",
                json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}}),
                "SYS_ADMIN",
            ),
            (
                "t-worker-1",
                json!({"spec": {"nodeName": "control-plane"}}),
                "nodeName",
            ),
            (
                "t-worker-1",
                json!({"spec": {"serviceAccountName": "admin"}}),
                "serviceAccountName admin",
            ),
            // Issue 57: what the deny-list let through.
            (
                "t-worker-1",
                json!({"spec": {"nodeSelector": {"node-role.kubernetes.io/control-plane": ""}}}),
                "nodeSelector",
            ),
            (
                "t-worker-1",
                json!({"spec": {"tolerations": [{"operator": "Exists"}]}}),
                r#"toleration {"operator":"Exists"}"#,
            ),
            (
                "t-worker-1",
                json!({"spec": {"priorityClassName": "system-cluster-critical"}}),
                r#"priorityClassName "system-cluster-critical""#,
            ),
            (
                "t-worker-1",
                json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}}),
                "securityContext.appArmorProfile",
            ),
            (
                "t-worker-1",
                json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf", "securityContext": {"seLinuxOptions": {"type": "spc_t"}}}]}}),
                "container tensorflow's securityContext.seLinuxOptions",
            ),
            (
                "t-worker-1",
                json!({"spec": {"volumes": [{"name": "n", "nfs": {"server": "x", "path": "/"}}]}}),
                "volume n of kind nfs",
            ),
        ] {
            let r = record(vec![pod(name, extra.clone())]);
            let e = vet(&r.templates, "t", "ns", &Templates::new()).unwrap_err();
            assert!(e.contains(why), "{extra}: {e}");
        }
    }

    /// The node-lost tolerations the plan (and the server's admission) sets pass.
    #[test]
    fn the_node_lost_tolerations_pass() {
        let t = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
        ]}});
        let r = record(vec![pod("t-worker-1", t)]);
        assert_eq!(vet(&r.templates, "t", "ns", &Templates::new()), Ok(()));
    }

    #[test]
    fn a_privilege_the_runs_live_pods_have_is_kept() {
        let privileged = json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf", "securityContext": {"privileged": true}}]}});
        let live: Templates = [(
            "t-worker-0".to_string(),
            pod("t-worker-0", privileged.clone()),
        )]
        .into();
        let r = record(vec![pod("t-worker-1", privileged)]);
        assert_eq!(vet(&r.templates, "t", "ns", &live), Ok(()));
    }
}
