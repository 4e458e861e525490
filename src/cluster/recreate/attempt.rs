//! A restart's pods, pure: a stored pod as a template ([`template`]: what the servers
//! wrote taken out), the next attempt's pod made from one ([`next_attempt`]: its
//! attempt, invocation, cause, port and what is left of the run's deadline), and the
//! attempt a pod belongs to ([`attempt_of`]).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::deadline::deadline_left;
use crate::labels::{
    ATTEMPT_LABEL, ATTEMPT_VAR, INVOCATION_ANNOTATION, NODE_NAME_ANNOTATION,
    RESTARTED_BY_ANNOTATION, RESTARTED_FOR_ANNOTATION, STOPPED_AFTER_TASK_ANNOTATION,
    STOPPED_ANNOTATION,
};
use crate::plan::PORT_NAME;

/// A stored pod without what the API server, the scheduler and the kubelet wrote into
/// it: uid, resourceVersion, timestamps, managedFields, status, and the node the
/// scheduler bound it to (kept only when the template named it, see
/// [`NODE_NAME_ANNOTATION`]). What admission plugins added (the service account's
/// token volume, default tolerations, the priority of a priority class) is accepted
/// again as it is.
pub fn template(mut pod: Pod) -> Pod {
    let meta = &mut pod.metadata;
    meta.uid = None;
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    meta.managed_fields = None;
    meta.generation = None;
    meta.self_link = None;
    // Stopped after a verdict: its lowered deadline (1 s) is not the run's; the next
    // attempt's is set from [`DEADLINE_AT_ANNOTATION`].
    let stopped = meta.annotations.as_mut().is_some_and(|a| {
        a.remove(STOPPED_AFTER_TASK_ANNOTATION);
        a.remove(STOPPED_ANNOTATION).is_some()
    });
    let pinned = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(NODE_NAME_ANNOTATION))
        .cloned();
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = pinned;
        if stopped {
            spec.active_deadline_seconds = None;
        }
    }
    pod.status = None;
    pod
}

/// The pod of `attempt` made from `template`: the attempt in its [`ATTEMPT_LABEL`] and
/// the TF container's [`ATTEMPT_VAR`], and the restart's `invocation` (so that a retried
/// create knows its own pod, and a rollback deletes nothing else), and the failure it
/// is for (`cause`, [`RESTARTED_FOR_ANNOTATION`]), its TF container's port `port`
/// when known (the one its `TF_CONFIG` names). A run with a deadline gets what is
/// left of it at `now` as the pods' `activeDeadlineSeconds` (at least 1).
pub fn next_attempt(template: &Pod, next: &Next, now: Timestamp) -> Pod {
    let Next {
        attempt,
        invocation,
        cause,
        by,
        port: _,
    } = *next;
    let mut pod = template.clone();
    if let (Some(left), Some(spec)) = (deadline_left(template, now), pod.spec.as_mut()) {
        spec.active_deadline_seconds = Some(i64::try_from(left.max(1)).unwrap_or(i64::MAX));
    }
    let meta = &mut pod.metadata;
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(ATTEMPT_LABEL.to_string(), attempt.to_string());
    let annotations = meta.annotations.get_or_insert_with(Default::default);
    annotations.insert(INVOCATION_ANNOTATION.to_string(), invocation.to_string());
    annotations.insert(RESTARTED_FOR_ANNOTATION.to_string(), cause.to_string());
    annotations.insert(RESTARTED_BY_ANNOTATION.to_string(), by.to_string());
    if let Some(spec) = pod.spec.as_mut() {
        let at = crate::labels::tf_container_at(&spec.containers);
        if let Some(c) = spec.containers.get_mut(at) {
            crate::labels::set_env(c, ATTEMPT_VAR, &attempt.to_string());
            if let Some(port) = next.port {
                set_port(c, port);
            }
        }
    }
    pod
}

/// The attempt [`next_attempt`] makes: its number, the restart's invocation, the
/// failure it is for, and the port its tasks listen on when known.
#[derive(Debug, Clone, Copy)]
pub struct Next<'a> {
    pub attempt: u32,
    pub invocation: &'a str,
    pub cause: &'a str,
    /// Who restarts it ([`RESTARTED_BY_ANNOTATION`]).
    pub by: &'a str,
    pub port: Option<u16>,
}

/// The container's TensorFlow port (named [`PORT_NAME`]) moved to `port`, and the
/// coordinator's address a framework's variable holds (`framework.rs`: worker 0 on the
/// run's port) with it; `TF_CONFIG` reads its addresses from the run's ConfigMap.
fn set_port(c: &mut k8s_openapi::api::core::v1::Container, port: u16) {
    for p in c.ports.iter_mut().flatten() {
        if p.name.as_deref() == Some(PORT_NAME) {
            p.container_port = i32::from(port);
        }
    }
    for var in c.env.iter_mut().flatten() {
        if !crate::framework::Framework::coordinator_vars().any(|v| v == var.name) {
            continue;
        }
        if let Some(value) = var.value.as_mut()
            && let Some((host, _)) = value.rsplit_once(':')
        {
            *value = format!("{host}:{port}");
        }
    }
}

/// The attempt a pod belongs to: its [`ATTEMPT_LABEL`], 0 without one.
pub fn attempt_of(pod: &Pod) -> u32 {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ATTEMPT_LABEL))
        .and_then(|a| a.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar};

    use super::*;

    fn var(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.to_string(),
            value: Some(value.to_string()),
            value_from: None,
        }
    }

    #[test]
    fn a_port_move_takes_the_coordinator_address_with_it() {
        let mut c = Container {
            ports: Some(vec![ContainerPort {
                name: Some(PORT_NAME.to_string()),
                container_port: 1999,
                ..ContainerPort::default()
            }]),
            env: Some(vec![
                var("KERAS_DISTRIBUTION_JOB_ADDRESSES", "t-worker-0.ns.svc:1999"),
                var("KERAS_DISTRIBUTION_NUM_PROCESSES", "2"),
                var("JAX_COORDINATOR_ADDRESS", "t-worker-0.ns.svc:1999"),
                var("MY_ADDRESS", "elsewhere:1999"),
            ]),
            ..Container::default()
        };
        set_port(&mut c, 2000);
        let env: Vec<(String, String)> = c
            .env
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.value.unwrap()))
            .collect();
        assert_eq!(
            env,
            [
                ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "t-worker-0.ns.svc:2000"),
                ("KERAS_DISTRIBUTION_NUM_PROCESSES", "2"),
                ("JAX_COORDINATOR_ADDRESS", "t-worker-0.ns.svc:2000"),
                ("MY_ADDRESS", "elsewhere:1999"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
        assert_eq!(c.ports.unwrap()[0].container_port, 2000);
    }
}
