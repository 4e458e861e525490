//! The PodSecurity admission plugin (built in and on since Kubernetes 1.23): a
//! namespace labelled `pod-security.kubernetes.io/enforce=baseline|restricted` refuses
//! a pod that fails a check of that level, with one 403 naming every failed check.
//!
//! Modelled on k8s.io/pod-security-admission (kubernetes/kubernetes,
//! `staging/src/k8s.io/pod-security-admission`): `admission/admission.go` (the message
//! `violates PodSecurity "LEVEL:VERSION": …`), `policy/checks.go`
//! (`AggregateCheckResult.ForbiddenDetail`: `reason (detail), …`), `policy/registry.go`
//! (`restricted` runs the baseline checks but those marked `Overlap`, which a restricted
//! check replaces), and one function per `policy/check_*.go` below. The order of the
//! reasons and the details' wording are those a v1.36 server answers (checked with
//! pods that fail every check, `kubectl create` on the project's v1.36 plane), which
//! differ from older sources in places (`hostNetwork=true`, `volumes "a" use restricted
//! volume types "nfs"`).
//! Left out: AppArmor, SELinux, procMount, sysctls, probes' hosts, Windows host
//! processes, the deprecated seccomp annotations, user namespaces: fields tf-spawner
//! never writes. The enforce-version label is read as `latest`.

use serde_json::Value;

use crate::status::ApiError;

/// The namespace label naming the enforced level.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";

/// A check's failure: its reason and detail (`CheckResult`).
type Failure = (String, String);
type Check = fn(&Value) -> Option<Failure>;

/// A check's level: baseline's run at both levels, except those a restricted check
/// replaces (`Overlap: true`), which run at baseline only.
#[derive(PartialEq)]
enum Level {
    Baseline,
    BaselineOnly,
    Restricted,
}

/// Every check, in the order a v1.36 server reports them (the files' order).
const CHECKS: &[(Check, Level)] = &[
    (capabilities_baseline, Level::BaselineOnly),
    (host_namespaces, Level::Baseline),
    (host_path_volumes, Level::BaselineOnly),
    (host_ports, Level::Baseline),
    (privileged, Level::Baseline),
    (seccomp_baseline, Level::BaselineOnly),
    (allow_privilege_escalation, Level::Restricted),
    (capabilities_restricted, Level::Restricted),
    (restricted_volumes, Level::Restricted),
    (run_as_non_root, Level::Restricted),
    (run_as_user, Level::Restricted),
    (seccomp_restricted, Level::Restricted),
];

/// Admits or refuses `pod` (as sent, after defaulting) in a namespace with `labels`.
pub fn admit(namespace_labels: &Value, pod: &Value) -> Result<(), ApiError> {
    let level = match namespace_labels.get(ENFORCE_LABEL).and_then(Value::as_str) {
        Some(level @ ("baseline" | "restricted")) => level,
        _ => return Ok(()),
    };
    let version = namespace_labels
        .get(ENFORCE_VERSION_LABEL)
        .and_then(Value::as_str)
        .unwrap_or("latest");
    let restricted = level == "restricted";
    let spec = &pod["spec"];
    let failures: Vec<String> = CHECKS
        .iter()
        .filter(|(_, l)| match l {
            Level::Baseline => true,
            Level::BaselineOnly => !restricted,
            Level::Restricted => restricted,
        })
        .filter_map(|(check, _)| check(spec))
        .map(|(reason, detail)| {
            if detail.is_empty() {
                reason
            } else {
                format!("{reason} ({detail})")
            }
        })
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    Err(ApiError::new(
        403,
        "Forbidden",
        format!(
            "pods {name:?} is forbidden: violates PodSecurity \"{level}:{version}\": {}",
            failures.join(", ")
        ),
    )
    .with_details(name, "pods"))
}

/// Every container and init container (`visitContainers`).
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers"]
        .into_iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten()
}

fn name(container: &Value) -> &str {
    container["name"].as_str().unwrap_or("")
}

/// `pluralize` and `joinQuote`: `container "a"`, `containers "a", "b"`.
fn these(one: &str, many: &str, names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let word = if names.len() == 1 { one } else { many };
    format!("{word} {}", quoted.join(", "))
}

fn containers_where(spec: &Value, bad: impl Fn(&Value) -> bool) -> Vec<String> {
    containers(spec)
        .filter(|c| bad(c))
        .map(|c| name(c).to_string())
        .collect()
}

fn sc<'a>(container: &'a Value, field: &str) -> Option<&'a Value> {
    container.get("securityContext")?.get(field)
}

/// `check_hostNamespaces.go`.
fn host_namespaces(spec: &Value) -> Option<Failure> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|f| spec[*f] == true)
        .map(|f| format!("{f}=true"))
        .collect();
    (!set.is_empty()).then(|| ("host namespaces".into(), set.join(", ")))
}

/// `check_hostPorts.go`.
fn host_ports(spec: &Value) -> Option<Failure> {
    let port = |p: &Value| p["hostPort"].as_i64().filter(|h| *h != 0);
    let bad = containers_where(spec, |c| {
        c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| port(p).is_some())
    });
    if bad.is_empty() {
        return None;
    }
    let mut ports: Vec<String> = Vec::new();
    for p in containers(spec)
        .filter_map(|c| c["ports"].as_array())
        .flatten()
    {
        if let Some(p) = port(p).map(|p| p.to_string())
            && !ports.contains(&p)
        {
            ports.push(p);
        }
    }
    let (uses, word) = match (bad.len(), ports.len()) {
        (1, 1) => ("uses", "hostPort"),
        (1, _) => ("uses", "hostPorts"),
        (_, 1) => ("use", "hostPort"),
        _ => ("use", "hostPorts"),
    };
    Some((
        "hostPort".into(),
        format!(
            "{} {uses} {word} {}",
            these("container", "containers", &bad),
            ports.join(", ")
        ),
    ))
}

/// `check_privileged.go`.
fn privileged(spec: &Value) -> Option<Failure> {
    let bad = containers_where(spec, |c| sc(c, "privileged") == Some(&Value::Bool(true)));
    (!bad.is_empty()).then(|| {
        (
            "privileged".into(),
            format!(
                "{} must not set securityContext.privileged=true",
                these("container", "containers", &bad)
            ),
        )
    })
}

/// What a container adds to its capabilities.
fn added(container: &Value) -> Vec<String> {
    sc(container, "capabilities")
        .and_then(|c| c["add"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// Containers adding a capability outside `allowed`, and those capabilities (sorted).
fn adding_beyond(spec: &Value, allowed: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut caps = Vec::new();
    let bad = containers_where(spec, |c| {
        added(c).iter().any(|cap| !allowed.contains(&cap.as_str()))
    });
    for c in containers(spec) {
        caps.extend(
            added(c)
                .into_iter()
                .filter(|cap| !allowed.contains(&cap.as_str())),
        );
    }
    caps.sort();
    caps.dedup();
    (bad, caps)
}

/// `check_capabilities_baseline.go`.
fn capabilities_baseline(spec: &Value) -> Option<Failure> {
    const ALLOWED: &[&str] = &[
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ];
    let (bad, caps) = adding_beyond(spec, ALLOWED);
    (!bad.is_empty()).then(|| {
        (
            "non-default capabilities".into(),
            format!(
                "{} must not include {} in securityContext.capabilities.add",
                these("container", "containers", &bad),
                quoted(&caps)
            ),
        )
    })
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `check_hostPathVolumes.go`.
fn host_path_volumes(spec: &Value) -> Option<Failure> {
    let bad: Vec<String> = volumes(spec)
        .filter(|v| v.get("hostPath").is_some())
        .map(|v| v["name"].as_str().unwrap_or("").to_string())
        .collect();
    (!bad.is_empty()).then(|| ("hostPath volumes".into(), these("volume", "volumes", &bad)))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec["volumes"].as_array().into_iter().flatten()
}

/// The seccomp profile types the checks allow (`validSeccomp`).
fn valid_seccomp(profile: &Value) -> bool {
    matches!(
        profile["type"].as_str(),
        Some("RuntimeDefault" | "Localhost")
    )
}

/// Who sets a seccomp profile of a forbidden type (`pod`, `containers "a"`), and the
/// types; plus the containers that set none.
fn seccomp_setters(spec: &Value) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut setters = Vec::new();
    let mut types = Vec::new();
    let pod = spec
        .get("securityContext")
        .and_then(|s| s.get("seccompProfile"));
    let type_of = |p: &Value| p["type"].as_str().unwrap_or("").to_string();
    if let Some(p) = pod.filter(|p| !valid_seccomp(p)) {
        setters.push("pod".to_string());
        types.push(type_of(p));
    }
    let pod_set = pod.is_some_and(valid_seccomp);
    let mut explicit = Vec::new();
    let mut unset = Vec::new();
    for c in containers(spec) {
        match sc(c, "seccompProfile") {
            Some(p) if !valid_seccomp(p) => {
                explicit.push(name(c).to_string());
                types.push(type_of(p));
            }
            Some(_) => {}
            None if !pod_set => unset.push(name(c).to_string()),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(these("container", "containers", &explicit));
    }
    types.sort();
    types.dedup();
    (setters, types, unset)
}

/// `check_seccompProfile_baseline.go` (1.19+): a forbidden type set anywhere.
fn seccomp_baseline(spec: &Value) -> Option<Failure> {
    let (setters, types, _) = seccomp_setters(spec);
    (!setters.is_empty()).then(|| {
        (
            "seccompProfile".into(),
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                quoted(&types)
            ),
        )
    })
}

/// `check_seccompProfile_restricted.go`: a forbidden type, or none set.
fn seccomp_restricted(spec: &Value) -> Option<Failure> {
    if let Some(failure) = seccomp_baseline(spec) {
        return Some(failure);
    }
    let (_, _, unset) = seccomp_setters(spec);
    (!unset.is_empty()).then(|| {
        (
            "seccompProfile".into(),
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                these("container", "containers", &unset)
            ),
        )
    })
}

/// `check_allowPrivilegeEscalation.go`.
fn allow_privilege_escalation(spec: &Value) -> Option<Failure> {
    let bad = containers_where(spec, |c| {
        sc(c, "allowPrivilegeEscalation") != Some(&Value::Bool(false))
    });
    (!bad.is_empty()).then(|| {
        (
            "allowPrivilegeEscalation != false".into(),
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                these("container", "containers", &bad)
            ),
        )
    })
}

/// `check_capabilities_restricted.go`.
fn capabilities_restricted(spec: &Value) -> Option<Failure> {
    let drops_all = |c: &Value| {
        sc(c, "capabilities")
            .and_then(|caps| caps["drop"].as_array())
            .is_some_and(|d| d.iter().any(|x| x == "ALL"))
    };
    let missing = containers_where(spec, |c| !drops_all(c));
    let (adding, caps) = adding_beyond(spec, &["NET_BIND_SERVICE"]);
    let mut details = Vec::new();
    if !missing.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            these("container", "containers", &missing)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            these("container", "containers", &adding),
            quoted(&caps)
        ));
    }
    (!details.is_empty()).then(|| ("unrestricted capabilities".into(), details.join("; ")))
}

/// `check_restrictedVolumes.go`: only these volume sources; the others are named by
/// their field (`hostPath`, `nfs`; `unknown` for a volume without a source).
fn restricted_volumes(spec: &Value) -> Option<Failure> {
    const ALLOWED: &[&str] = &[
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    ];
    let mut names = Vec::new();
    let mut types = Vec::new();
    for v in volumes(spec) {
        let source = v.as_object().and_then(|o| o.keys().find(|k| *k != "name"));
        if source.is_some_and(|k| ALLOWED.contains(&k.as_str())) {
            continue;
        }
        names.push(v["name"].as_str().unwrap_or("").to_string());
        types.push(source.map_or("unknown".to_string(), String::clone));
    }
    types.sort();
    types.dedup();
    (!names.is_empty()).then(|| {
        (
            "restricted volume types".into(),
            format!(
                "{} use restricted volume types {}",
                these("volume", "volumes", &names),
                quoted(&types)
            ),
        )
    })
}

/// `check_runAsNonRoot.go`.
fn run_as_non_root(spec: &Value) -> Option<Failure> {
    let pod = spec
        .get("securityContext")
        .and_then(|s| s.get("runAsNonRoot"));
    let mut setters = Vec::new();
    if pod == Some(&Value::Bool(false)) {
        setters.push("pod".to_string());
    }
    let pod_true = pod == Some(&Value::Bool(true));
    let explicit = containers_where(spec, |c| sc(c, "runAsNonRoot") == Some(&Value::Bool(false)));
    let implicit = containers_where(spec, |c| sc(c, "runAsNonRoot").is_none() && !pod_true);
    if !explicit.is_empty() {
        setters.push(these("container", "containers", &explicit));
    }
    let reason = "runAsNonRoot != true".to_string();
    if !setters.is_empty() {
        let detail = format!(
            "{} must not set securityContext.runAsNonRoot=false",
            setters.join(" and ")
        );
        return Some((reason, detail));
    }
    (!implicit.is_empty()).then(|| {
        let detail = format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            these("container", "containers", &implicit)
        );
        (reason, detail)
    })
}

/// `check_runAsUser.go`.
fn run_as_user(spec: &Value) -> Option<Failure> {
    let root = |v: Option<&Value>| v.and_then(Value::as_i64) == Some(0);
    let mut setters = Vec::new();
    if root(spec.get("securityContext").and_then(|s| s.get("runAsUser"))) {
        setters.push("pod".to_string());
    }
    let bad = containers_where(spec, |c| root(sc(c, "runAsUser")));
    if !bad.is_empty() {
        setters.push(these("container", "containers", &bad));
    }
    (!setters.is_empty()).then(|| {
        (
            "runAsUser=0".into(),
            format!("{} must not set runAsUser=0", setters.join(" and ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(level: &str, pod: Value) -> Option<String> {
        admit(&json!({ ENFORCE_LABEL: level }), &pod)
            .err()
            .map(|e| e.to_json()["message"].as_str().unwrap().to_string())
    }

    #[test]
    fn a_bare_pod_is_refused_by_restricted_with_the_real_message() {
        let pod =
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "tensorflow"}]}});
        assert_eq!(
            refusal("restricted", pod.clone()).unwrap(),
            "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"tensorflow\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"tensorflow\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"tensorflow\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"tensorflow\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        assert_eq!(refusal("baseline", pod.clone()), None);
        assert_eq!(refusal("privileged", pod), None);
    }

    #[test]
    fn a_hardened_non_root_pod_passes_restricted() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000,
                "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "s", "configMap": {"name": "c"}}],
            "containers": [{"name": "t", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}});
        assert_eq!(refusal("restricted", pod), None);
    }

    /// Two pods that fail every check we model, and what the v1.36 plane answered for
    /// them (`kubectl create` in namespaces enforcing each level).
    fn every_check_fails() -> [Value; 2] {
        [
            json!({"metadata": {"name": "p"}, "spec": {
                "hostNetwork": true,
                "volumes": [{"name": "hp", "hostPath": {"path": "/"}},
                            {"name": "nf", "nfs": {"server": "x", "path": "/"}}],
                "securityContext": {"seccompProfile": {"type": "Unconfined"}, "runAsUser": 0},
                "containers": [
                    {"name": "t", "ports": [{"containerPort": 8080, "hostPort": 8080}],
                     "securityContext": {"privileged": true,
                        "capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}}},
                    {"name": "u", "securityContext": {"runAsNonRoot": false}}]}}),
            json!({"metadata": {"name": "p2"}, "spec": {
                "hostPID": true, "hostIPC": true,
                "volumes": [{"name": "c1", "cephfs": {"monitors": ["a"]}},
                            {"name": "g1", "gitRepo": {"repository": "x"}},
                            {"name": "e1", "emptyDir": {}}],
                "containers": [
                    {"name": "t", "ports": [{"containerPort": 80, "hostPort": 8080},
                                            {"containerPort": 81, "hostPort": 8081}]},
                    {"name": "u", "ports": [{"containerPort": 82, "hostPort": 8082}]}]}}),
        ]
    }

    #[test]
    fn the_messages_are_those_of_a_real_v1_36_server() {
        let [p, p2] = every_check_fails();
        assert_eq!(
            refusal("restricted", p.clone()).unwrap(),
            r#"pods "p" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), hostPort (container "t" uses hostPort 8080), privileged (container "t" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (containers "t", "u" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "t", "u" must set securityContext.capabilities.drop=["ALL"]; container "t" must not include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add), restricted volume types (volumes "hp", "nf" use restricted volume types "hostPath", "nfs"), runAsNonRoot != true (container "u" must not set securityContext.runAsNonRoot=false), runAsUser=0 (pod must not set runAsUser=0), seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")"#
        );
        assert_eq!(
            refusal("baseline", p).unwrap(),
            r#"pods "p" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "t" must not include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add), host namespaces (hostNetwork=true), hostPath volumes (volume "hp"), hostPort (container "t" uses hostPort 8080), privileged (container "t" must not set securityContext.privileged=true), seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")"#
        );
        assert_eq!(
            refusal("restricted", p2.clone()).unwrap(),
            r#"pods "p2" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostPID=true, hostIPC=true), hostPort (containers "t", "u" use hostPorts 8080, 8081, 8082), allowPrivilegeEscalation != false (containers "t", "u" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "t", "u" must set securityContext.capabilities.drop=["ALL"]), restricted volume types (volumes "c1", "g1" use restricted volume types "cephfs", "gitRepo"), runAsNonRoot != true (pod or containers "t", "u" must set securityContext.runAsNonRoot=true), seccompProfile (pod or containers "t", "u" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        );
        assert_eq!(
            refusal("baseline", p2).unwrap(),
            r#"pods "p2" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true, hostIPC=true), hostPort (containers "t", "u" use hostPorts 8080, 8081, 8082)"#
        );
    }
}
