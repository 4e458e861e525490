//! The TF container of a task pod: its image, its command (`start.rs`), the
//! arguments after `--`, its variables (`TF_CONFIG` and the cluster from the run's
//! ConfigMap, the task defaults, the `-e` Secret, a sweep's parameters), its port and the
//! script's mounts; every word escaped for the kubelet.

use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, Container, ContainerPort, EnvFromSource, EnvVar, EnvVarSource,
    SecretEnvSource, VolumeMount,
};

use super::config_map::CLUSTER_KEY;
use super::mounts::{self, SCRIPT_DIR, SCRIPT_VOLUME};
use super::request::SpawnRequest;
use crate::bundle::{WORK_DIR, WORK_VOLUME};
use crate::inputs::envfile::is_reserved;
use crate::labels::{ATTEMPT_VAR, config_map_name, secret_name, set_env};
use crate::roles::{CLUSTER_VAR, ClusterSpec, Task};

/// The image when neither `-i` nor the template names one.
pub const DEFAULT_IMAGE: &str = "tensorflow/tensorflow:2.15.0";

/// The image of a task with GPUs when neither `-i` nor the template names one: TensorFlow's
/// GPU image of [`DEFAULT_IMAGE`]'s version (docs/resources.md).
pub const DEFAULT_GPU_IMAGE: &str = "tensorflow/tensorflow:2.15.0-gpu";

/// The name of the TF container's port, which the services target (by name: a restart of
/// every task moves the port).
pub const PORT_NAME: &str = "tf-grpc";

/// The TF container: its image (with `gpu`, the task has GPUs), command, variables,
/// port and the script's mount.
pub(super) fn set_up_tf_container(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
    task: Task,
    c: &mut Container,
    gpu: bool,
) {
    let default = if gpu {
        DEFAULT_GPU_IMAGE
    } else {
        DEFAULT_IMAGE
    };
    c.image = req
        .image
        .clone()
        .or_else(|| c.image.clone().filter(|i| !i.trim().is_empty()))
        .or_else(|| Some(default.to_string()));
    let command = super::start::tf_command(req);
    c.command = Some(command.iter().map(|w| kubelet_literal(w)).collect());
    // Kubernetes appends `args` to `command` as argv words (no shell): the script (or
    // the entrypoint, as "$@") gets them unchanged, once escaped for the kubelet.
    c.args = (!req.script_args.is_empty())
        .then(|| req.script_args.iter().map(|a| kubelet_literal(a)).collect());

    set_tf_env(req, cluster, task, c);
    if let Some(experiment) = &req.experiment {
        // A sweep's run: its parameters (`plan/sweep.rs`), escaped as the arguments are:
        // the kubelet expands `$(VAR)` in a variable's value too, so `--param
        // 'p=$(SECRET)'` would read another variable (the `-e` secrets) into it.
        let env = c.env.get_or_insert_with(Vec::new);
        env.extend(experiment.variables().map(|(name, value)| EnvVar {
            name,
            value: Some(kubelet_literal(&value)),
            value_from: None,
        }));
    }
    set_port_and_mounts(req, c);
}

/// The TF container's variables: the cluster (from the run's ConfigMap), `TF_CONFIG`
/// and the task's, the task defaults, the `-e` Secret, the attempt.
fn set_tf_env(req: &SpawnRequest, cluster: &ClusterSpec, task: Task, c: &mut Container) {
    let env = c.env.get_or_insert_with(Vec::new);
    env.retain(|e| !is_reserved(&e.name));
    // The cluster comes from the run's ConfigMap; TF_CONFIG refers to it after it (the
    // kubelet expands `$(VAR)` from the variables defined before). The template's own
    // variables come first, so `$(…)` in them means what it always did.
    env.push(EnvVar {
        name: CLUSTER_VAR.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: config_map_name(&req.tag),
                key: CLUSTER_KEY.to_string(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    });
    let reference = format!("$({CLUSTER_VAR})");
    env.extend(
        cluster
            .env_around(&req.roles, task, &reference, req.framework)
            .into_iter()
            .map(|(name, value)| EnvVar {
                name: name.to_string(),
                value: Some(value),
                value_from: None,
            }),
    );

    let defaults = crate::roles::TASK_DEFAULTS
        .into_iter()
        .chain(req.framework.defaults());
    for (name, value) in defaults {
        let env = c.env.get_or_insert_with(Vec::new);
        if !env.iter().any(|e| e.name == name) && !req.env.contains_key(name) {
            env.push(EnvVar {
                name: name.to_string(),
                value: Some(value.to_string()),
                value_from: None,
            });
        }
    }

    if !req.env.is_empty() {
        c.env_from.get_or_insert_with(Vec::new).push(EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: secret_name(&req.tag),
                optional: Some(false),
            }),
            ..EnvFromSource::default()
        });
    }

    // The attempt: 0 here, N in the pods the N-th restart re-creates (ops/restart/mod.rs).
    set_env(c, ATTEMPT_VAR, "0");
}

/// The TF container's port, the script's mount and, with `--dir`, the work directory's.
fn set_port_and_mounts(req: &SpawnRequest, c: &mut Container) {
    let port = i32::from(req.port);
    let ports = c.ports.get_or_insert_with(Vec::new);
    ports.retain(|p| p.container_port != port && p.name.as_deref() != Some(PORT_NAME));
    ports.push(ContainerPort {
        name: Some(PORT_NAME.to_string()),
        container_port: port,
        protocol: Some("TCP".to_string()),
        ..ContainerPort::default()
    });

    let script = VolumeMount {
        name: SCRIPT_VOLUME.to_string(),
        mount_path: SCRIPT_DIR.to_string(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    mounts::replace(c, script);
    if req.bundle.is_some() {
        let work = VolumeMount {
            name: WORK_VOLUME.to_string(),
            mount_path: WORK_DIR.to_string(),
            ..VolumeMount::default()
        };
        mounts::replace(c, work);
        for (name, value) in [
            ("TF_SPAWNER_SCRIPT_DIR", SCRIPT_DIR),
            ("TF_SPAWNER_WORK_DIR", WORK_DIR),
        ] {
            set_env(c, name, value);
        }
    }
}

/// `word` escaped for the kubelet, which expands `$(VAR)` and `$$` in a container's
/// `command` and `args` (`third_party/forked/golang/expansion`: `$$` is a literal `$`):
/// every `$` doubled, so the process gets `word` as typed, as `--local` passes it. Never
/// applied to `TF_CONFIG`, whose `$(TF_SPAWNER_CLUSTER)` is meant to be expanded.
pub fn kubelet_literal(word: &str) -> String {
    word.replace('$', "$$")
}
