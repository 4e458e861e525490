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
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, PodSecurityContext, PodSpec,
    SeccompProfile, SecurityContext, Volume, VolumeMount,
};

/// `--run-as-user` and `--network-policy`: what a hardened cluster asks of a run
/// (docs/shared-clusters.md, "Restricted namespaces and network policies").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Hardening {
    /// `--run-as-user UID`: the tasks run as this user (and group), not as root.
    pub run_as_user: Option<i64>,
    /// `--network-policy`: the run gets a NetworkPolicy letting its tasks reach each
    /// other (`plan/network.rs`).
    pub network_policy: bool,
}

/// `--run-as-user` and the defaults file's `run_as_user`: a user id above 0 (root is what
/// `restricted` refuses) that the API accepts (an int64 it checks to be at most
/// 2147483647).
pub fn parse_uid(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(0) => Err(format!(
            "{text:?} is root, which a restricted namespace refuses; give a non-root user id such as 1000"
        )),
        Ok(uid) if (1..=i64::from(i32::MAX)).contains(&uid) => Ok(uid),
        _ => Err(format!(
            "{text:?} is not a user id from 1 to 2147483647 (such as 1000)"
        )),
    }
}

/// The home directory of a task run as a non-root user: an emptyDir (writable by any
/// user), since the image's own (`/root`) is not.
pub const HOME_DIR: &str = "/home/tf-spawner";
pub use super::mounts::HOME_VOLUME;

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

/// `--run-as-user UID`: the pod runs as `uid` (user and group), not as root
/// (`runAsNonRoot`); volumes that support it are made writable by the group
/// (`fsGroup`: the `--volume` claim). The flag wins over the template's pod-level
/// fields; a container's own fields, which Kubernetes puts first, are kept.
pub fn run_as(spec: &mut PodSpec, uid: i64) {
    let pod = spec
        .security_context
        .get_or_insert_with(PodSecurityContext::default);
    pod.run_as_non_root = Some(true);
    pod.run_as_user = Some(uid);
    pod.run_as_group = Some(uid);
    pod.fs_group = Some(uid);
}

/// A writable `HOME` for a container run as a non-root user (Keras, pip and TensorBoard
/// write under it), on [`HOME_VOLUME`]; the template's `HOME` is kept.
pub fn writable_home(spec: &mut PodSpec, container: usize) {
    let Some(c) = spec.containers.get_mut(container) else {
        return;
    };
    let env = c.env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == "HOME") {
        return;
    }
    env.push(EnvVar {
        name: "HOME".to_string(),
        value: Some(HOME_DIR.to_string()),
        value_from: None,
    });
    let home = VolumeMount {
        name: HOME_VOLUME.to_string(),
        mount_path: HOME_DIR.to_string(),
        ..VolumeMount::default()
    };
    super::mounts::replace(c, home);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != HOME_VOLUME);
    volumes.push(Volume {
        name: HOME_VOLUME.to_string(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    });
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

const NON_ROOT_FIX: &str =
    "run the tasks as a non-root user with --run-as-user UID (defaults key run_as_user)";
const HELPER_NON_ROOT_FIX: &str = "the helper pod runs as the run's pods do, and they run as root: spawn the run with --run-as-user UID (defaults key run_as_user)";
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
