//! What every pod tf-spawner makes (the run's tasks, the helper pods of `cp` and
//! `tensorboard`) carries by default, so that a namespace enforcing Pod Security
//! `restricted` admits it: no privilege escalation, no capabilities, the runtime's
//! default seccomp profile. None of them costs a TensorFlow task anything (see
//! docs/shared-clusters.md, "Restricted namespaces"); a field the template sets is kept
//! as written.
//!
//! The checks these fields meet are those of k8s.io/pod-security-admission
//! (`policy/check_allowPrivilegeEscalation.go`, `check_capabilities_restricted.go`,
//! `check_seccompProfile_restricted.go`); `restricted` also asks for `runAsNonRoot`,
//! which only the user can choose (an image's files may belong to root).

use k8s_openapi::api::core::v1::{
    Capabilities, Container, PodSecurityContext, PodSpec, SeccompProfile, SecurityContext,
};

/// The seccomp profile every pod gets unless its template names one.
pub const SECCOMP_DEFAULT: &str = "RuntimeDefault";

/// Sets the defaults on the pod and each of its containers (init containers too) where
/// the template leaves the field unset. A Windows pod (`spec.os.name: windows`) is left
/// as it is: the API refuses these Linux fields on it.
pub fn harden(spec: &mut PodSpec) {
    if spec.os.as_ref().is_some_and(|os| os.name == "windows") {
        return;
    }
    let pod = spec
        .security_context
        .get_or_insert_with(PodSecurityContext::default);
    pod.seccomp_profile.get_or_insert_with(|| SeccompProfile {
        type_: SECCOMP_DEFAULT.to_string(),
        localhost_profile: None,
    });
    let init = spec.init_containers.iter_mut().flatten();
    for container in spec.containers.iter_mut().chain(init) {
        harden_container(container);
    }
}

/// `allowPrivilegeEscalation: false` and `capabilities: {drop: [ALL]}`, each unless set.
/// A privileged container, or one adding `SYS_ADMIN`, keeps its escalation (the API
/// refuses `false` with either) and its capabilities.
fn harden_container(container: &mut Container) {
    let sc = container
        .security_context
        .get_or_insert_with(SecurityContext::default);
    let privileged = sc.privileged == Some(true);
    let sys_admin = sc
        .capabilities
        .as_ref()
        .and_then(|c| c.add.as_ref())
        .is_some_and(|add| add.iter().any(|c| c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN"));
    if sc.allow_privilege_escalation.is_none() && !privileged && !sys_admin {
        sc.allow_privilege_escalation = Some(false);
    }
    if sc.capabilities.is_none() && !privileged {
        sc.capabilities = Some(Capabilities {
            add: None,
            drop: Some(vec!["ALL".to_string()]),
        });
    }
}

/// Who a refused pod belongs to: what fixes it differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A task of the run: its template and the spawn's flags.
    Task,
    /// A helper pod of `cp` or `tensorboard`: it runs as the run's pods do.
    Helper,
}

/// The one line for a pod the PodSecurity admission refused (a 403 whose message says
/// `violates PodSecurity "LEVEL:VERSION": REASONS`): the level, the reasons, and what
/// fixes them. `None` for any other message.
pub fn refusal(message: &str, namespace: &str, owner: Owner) -> Option<String> {
    let (_, rest) = message.split_once("violates PodSecurity \"")?;
    let (level, reasons) = rest.split_once("\": ")?;
    let level = level.split(':').next().unwrap_or(level);
    let fix = if needs_non_root(reasons) {
        match owner {
            Owner::Task => NON_ROOT_FIX,
            Owner::Helper => HELPER_NON_ROOT_FIX,
        }
    } else {
        match owner {
            Owner::Task => TEMPLATE_FIX,
            Owner::Helper => HELPER_TEMPLATE_FIX,
        }
    };
    Some(format!(
        "namespace '{namespace}' enforces Pod Security \"{level}\": {}; {fix}",
        reasons.trim_end()
    ))
}

/// Whether the refusal is about the user the pod runs as (`runAsNonRoot != true`,
/// `runAsUser=0`): the one `restricted` check tf-spawner cannot meet by itself.
fn needs_non_root(reasons: &str) -> bool {
    reasons.contains("runAsNonRoot != true") || reasons.contains("runAsUser=0")
}

const NON_ROOT_FIX: &str = "run the tasks as a non-root user: set securityContext.runAsNonRoot: true and runAsUser in the pod template (--pod-file)";
const HELPER_NON_ROOT_FIX: &str = "the helper pod runs as the run's pods do, and they run as root: spawn the run as a non-root user (docs/shared-clusters.md)";
const TEMPLATE_FIX: &str = "the pod template (--pod-file) asks for what the namespace forbids: remove those fields from it";
const HELPER_TEMPLATE_FIX: &str =
    "the namespace forbids what the helper pod needs (see docs/shared-clusters.md)";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> PodSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_bare_pod_gets_every_default_in_each_container() {
        let mut s = spec(json!({
            "containers": [{"name": "tensorflow"}, {"name": "sidecar"}],
            "initContainers": [{"name": "fetch"}],
        }));
        harden(&mut s);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        for c in [
            &v["containers"][0],
            &v["containers"][1],
            &v["initContainers"][0],
        ] {
            assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
            assert_eq!(
                c["securityContext"]["capabilities"],
                json!({"drop": ["ALL"]})
            );
        }
    }

    #[test]
    fn what_the_template_sets_is_kept() {
        let mut s = spec(json!({
            "securityContext": {"seccompProfile": {"type": "Unconfined"}, "runAsUser": 0},
            "containers": [
                {"name": "a", "securityContext": {"allowPrivilegeEscalation": true,
                    "capabilities": {"add": ["NET_ADMIN"]}}},
                {"name": "b", "securityContext": {"privileged": true}},
                {"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}},
            ],
        }));
        let before = serde_json::to_value(&s).unwrap();
        harden(&mut s);
        assert_eq!(serde_json::to_value(&s).unwrap(), before);
    }

    #[test]
    fn a_windows_pod_is_left_alone() {
        let mut s = spec(json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]}));
        let before = s.clone();
        harden(&mut s);
        assert_eq!(s, before);
    }
}
