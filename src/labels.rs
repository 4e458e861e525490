//! The names tf-spawner gives and looks for on the cluster: labels, annotations, the
//! run's object names and the container that gets the TF variables. Written once here;
//! the plan writes them, the cluster code, the verdict and the operations read them.

pub const RUN_LABEL: &str = "training_attempt";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "tf-spawner";
pub const ROLE_LABEL: &str = "tf-spawner/replica-type";
pub const INDEX_LABEL: &str = "tf-spawner/replica-index";
/// Marks the objects of one invocation, so that a retried create can recognise its own
/// object and a rollback never deletes an object another invocation made.
pub const INVOCATION_ANNOTATION: &str = "tf-spawner/invocation";
/// On the pods of a restarted attempt: the failure the restart was for (`pod T-worker-1
/// (worker-1) was deleted while it ran`), so `status` says which task it was for.
pub const RESTARTED_FOR_ANNOTATION: &str = "tf-spawner/restarted-for";
/// On the pods of a restarted attempt: who restarted it (`tf-spawner on HOST, pid N`: a
/// wait, or a detached run's supervisor pod), so `status` says so.
pub const RESTARTED_BY_ANNOTATION: &str = "tf-spawner/restarted-by";
/// On each pod of a run spawned with `--pull-grace`: the grace's seconds (an image
/// that fails to pull fails the run only once its pod is this old).
pub const PULL_GRACE_ANNOTATION: &str = "tf-spawner/pull-grace";
/// On the pods of a run with `--deadline` that `wait --restarts` re-created: when the
/// run's deadline passes (RFC 3339), counted once from the run's first start; each
/// attempt's pods get what is left as their `activeDeadlineSeconds`
/// (`cluster/recreate/deadline.rs`).
pub const DEADLINE_AT_ANNOTATION: &str = "tf-spawner/deadline-at";
/// On the pods `wait --restarts` re-created: when the run's first attempt started (RFC
/// 3339), so that the run's time covers every attempt (`verdict/timing.rs`).
pub const RUN_STARTED_ANNOTATION: &str = "tf-spawner/run-started";
/// On the run's ConfigMap: the name of the run's Secret, or [`NO_ENV_SECRET`]. `-d`
/// deletes secrets by label whatever it says; it says whether a refusal (403, many
/// credentials may not touch secrets) is an error.
pub const ENV_SECRET_ANNOTATION: &str = "tf-spawner/env-secret";
/// [`ENV_SECRET_ANNOTATION`] of a run without `-e`.
pub const NO_ENV_SECRET: &str = "none";
/// On the run's ConfigMap with `--gang`: the gang (`volcano`, `coscheduling`). `-d`
/// deletes PodGroups of both kinds by label whatever it says; a refusal (403, credentials
/// for plain runs need no rights on them) is an error only for the gang it names.
pub const POD_GROUP_ANNOTATION: &str = "tf-spawner/pod-group";
/// On every pod: the run's cluster as role counts (`chief=1,worker=4`), so that readers
/// of pods (the verdict) know every task without the addresses.
pub const CLUSTER_ANNOTATION: &str = "tf-spawner/cluster";

/// On every task pod: its attempt, 0 for the pods a spawn creates, N for those the
/// N-th restart re-created (`wait --restarts`). `status` and `list` show it.
pub const ATTEMPT_LABEL: &str = "tf-spawner/attempt";
/// The TF container's variable holding the same number as [`ATTEMPT_LABEL`].
pub const ATTEMPT_VAR: &str = "TF_SPAWNER_ATTEMPT";
/// On a pod whose template set `spec.nodeName`: that node, so that a restart keeps it
/// (a scheduler's binding writes the same field, which a restart must not keep).
pub const NODE_NAME_ANNOTATION: &str = "tf-spawner/node-name";

/// Kueue (docs/shared-clusters.md): the LocalQueue a pod is submitted to. These four
/// keys are Kueue's from v0.6 to v0.20 (`pkg/controller/constants/constants.go`,
/// `QueueLabel`; `pkg/controller/jobs/pod/constants/constants.go`). From v0.18 Kueue's
/// `WorkloadIdentifierAnnotations` (beta, on) reads the group's name from an annotation
/// of the same key first and from the label otherwise (`pkg/util/pod/pod.go`,
/// `GetPodGroupName`), and still selects the group's pods by the label: the label is
/// what every version reads.
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue: the pods with the same value form one group, admitted as a whole.
pub const KUEUE_GROUP_LABEL: &str = "kueue.x-k8s.io/pod-group-name";
/// Kueue: how many pods the group has; Kueue waits for all of them before admitting.
pub const KUEUE_GROUP_COUNT_ANNOTATION: &str = "kueue.x-k8s.io/pod-group-total-count";
/// Kueue: `"false"` says a failed pod of the group is not replaced, so the group ends
/// (and frees its quota) when one fails or is deleted, as a tf-spawner run does.
pub const KUEUE_RETRIABLE_ANNOTATION: &str = "kueue.x-k8s.io/retriable-in-group";

/// Kueue's webhook: the label on every pod it takes (manages), and the scheduling gate
/// that holds it until its group is admitted (`pkg/constants/constants.go`,
/// `pkg/controller/jobs/pod/constants/constants.go`).
pub const KUEUE_MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
pub const KUEUE_ADMISSION_GATE: &str = "kueue.x-k8s.io/admission";

/// Volcano: the PodGroup a pod belongs to (an annotation), and the queue it waits in.
pub const VOLCANO_GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
pub const VOLCANO_QUEUE_ANNOTATION: &str = "scheduling.volcano.sh/queue-name";
/// scheduler-plugins' coscheduling: the PodGroup a pod belongs to (a label).
pub const COSCHEDULING_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// On the run's ConfigMap of a run with `--network-policy`: its NetworkPolicy's name.
/// `-d` deletes network policies by label whatever it says; a refusal (403) is an error
/// only for a run that has one (credentials without rights delete the others whole).
pub const NETWORK_POLICY_ANNOTATION: &str = "tf-spawner/network-policy";

/// The container that gets the TF variables when the template has one of this name.
pub const TF_CONTAINER: &str = "tensorflow";

/// A pod's TF container: the one named [`TF_CONTAINER`], else the first (a template's own).
pub fn tf_container(
    containers: &[k8s_openapi::api::core::v1::Container],
) -> Option<&k8s_openapi::api::core::v1::Container> {
    containers.get(tf_container_at(containers))
}

/// The index of a pod's TF container: the one named [`TF_CONTAINER`], else the first.
/// The rule, once: the plan, the pods a restart re-creates, and the verdict's views.
pub fn tf_container_at(containers: &[k8s_openapi::api::core::v1::Container]) -> usize {
    containers
        .iter()
        .position(|c| c.name == TF_CONTAINER)
        .unwrap_or(0)
}

/// Sets variable `name` of container `c` to `value`, replacing any it had.
pub fn set_env(c: &mut k8s_openapi::api::core::v1::Container, name: &str, value: &str) {
    let env = c.env.get_or_insert_with(Vec::new);
    env.retain(|e| e.name != name);
    env.push(k8s_openapi::api::core::v1::EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    });
}

/// The label selector that finds the run's own objects and tasks: every object of run
/// `tag` but its helper pods (`cp`, `tensorboard`), which are no task of the run.
pub fn run_selector(tag: &str) -> String {
    format!("{RUN_LABEL}={tag},!{HELPER_LABEL}")
}

/// The label selector that finds every object of run `tag`, helper pods included: what
/// `-d` deletes and what makes a new spawn with the tag refuse.
pub fn whole_run_selector(tag: &str) -> String {
    format!("{RUN_LABEL}={tag}")
}

/// The label selector that finds the helper pods of run `tag` (`cp`, `tensorboard`):
/// what `status` shows beside the run's tasks.
pub fn helper_selector(tag: &str) -> String {
    format!("{RUN_LABEL}={tag},{HELPER_LABEL}")
}

/// On the run's ConfigMap: `--volume`'s claim and mount path, `CLAIM:PATH`, so that `cp`
/// and `tensorboard` find the run's volume from its tag.
pub const VOLUME_ANNOTATION: &str = "tf-spawner/volume";
/// On the run's ConfigMap beside [`VOLUME_ANNOTATION`]: the run's own folder on the
/// claim, relative to its mount path (the tag), which its [`OUTPUT_DIR_VAR`] names; a
/// run of an earlier version has none (it wrote at the claim's root).
pub const VOLUME_FOLDER_ANNOTATION: &str = "tf-spawner/volume-folder";

/// On a pod tf-spawner stopped after the run's verdict (`cluster/stop.rs`): when, in RFC
/// 3339. The pod's `activeDeadlineSeconds` was lowered so the kubelet ends it and keeps
/// it, with its status and log; readers show it as stopped by tf-spawner, not failed.
pub const STOPPED_ANNOTATION: &str = "tf-spawner/stopped";

/// Beside [`STOPPED_ANNOTATION`], on a pod whose TF container had already ended when
/// tf-spawner stopped it (only a container beside it, a sidecar, was still running): the
/// task's own end stands. Without it, a stopped task is stopped by tf-spawner whatever
/// its exit (a SIGTERM handler may exit 0).
pub const STOPPED_AFTER_TASK_ANNOTATION: &str = "tf-spawner/stopped-after-task";

/// On the run's ConfigMap, the run's record: its verdict as `wait` reported it
/// (`Succeeded`, `Failed: …`, `NotStarted: …`), so that `status` and `list` still say why
/// it ended when its pods are gone.
pub const VERDICT_ANNOTATION: &str = "tf-spawner/verdict";

/// On the run's ConfigMap: the tasks (`worker-2,ps-0`) whose pods tf-spawner deleted after
/// the verdict because no node had taken them (they never started: nothing to keep).
pub const NEVER_STARTED_ANNOTATION: &str = "tf-spawner/never-started";

/// On the run's ConfigMap: why each task tf-spawner stopped or deleted after the verdict
/// had never started, as JSON (`[{"why": "ErrImagePull: …", "tasks": ["worker-0"]}]`,
/// tasks grouped by reason), so `status` still says it once the kubelet has ended the pod
/// (its container status then reads `ContainerStatusUnknown`) and its events expired.
pub const NOT_STARTED_ANNOTATION: &str = "tf-spawner/not-started";

/// On the run's ConfigMap: who follows the run now and acts for it (restarts, stops,
/// records, cleans up): `wait on HOST, pid N`, one follower at a time
/// (`cluster/follower.rs`).
pub const FOLLOWER_ANNOTATION: &str = "tf-spawner/follower";
/// On the run's ConfigMap: when the follower last checked in (seconds since the epoch).
pub const FOLLOWER_CHECKED_IN_ANNOTATION: &str = "tf-spawner/follower-checked-in";
/// On the run's ConfigMap: the exit code of the follower that ended with the run's
/// verdict, for a wait that showed the run beside it to exit with the same.
pub const FOLLOWER_EXIT_ANNOTATION: &str = "tf-spawner/follower-exit";

/// The name of run `tag`'s supervisor Job and of the Secret it reads its settings from
/// (`spawn --detach`, `plan/supervisor.rs`).
pub fn supervisor_name(tag: &str) -> String {
    format!("{tag}-supervisor")
}

/// The name of experiment `name`'s supervisor Job and of its settings' Secret (`sweep
/// --detach`); shorter than any of its runs' `NAME-K-supervisor`, so it fits where they do.
pub fn sweeper_name(name: &str) -> String {
    format!("{name}-sweeper")
}

/// On a helper pod of a run (`cp`, `tensorboard`): what it is for. Helper pods carry the
/// run's tag (so `-d` deletes them) but are no task of it.
pub const HELPER_LABEL: &str = "tf-spawner/helper";
/// On the TensorBoard pod: the `tensorboard` sessions using it, as JSON (`{"ID": unix
/// time of its last heartbeat}`), so one session's end does not delete a pod another one
/// uses (`helper::Sessions`).
pub const SESSIONS_ANNOTATION: &str = "tf-spawner/sessions";
/// On the TensorBoard pod: `"true"` when a session asked it to stay (`tensorboard
/// --keep`): no session's end deletes it, `-d` does.
pub const KEEP_ANNOTATION: &str = "tf-spawner/keep";

/// On every object of each run of an experiment (`tf-spawner sweep`, issue 47): the
/// experiment's name, so `compare`, `list`, `tensorboard` and `-d --experiment` find its
/// runs with one label selector.
pub const EXPERIMENT_LABEL: &str = "tf-spawner/experiment";
/// On the run's ConfigMap of a sweep's run: its parameters, as a JSON object of name to
/// value as text (`{"lr":"0.1","batch":"64"}`).
pub const PARAMS_ANNOTATION: &str = "tf-spawner/params";
/// On the run's ConfigMap: the metrics its training printed (final, best, the curve per
/// epoch), compact JSON written at the verdict and at each restart (`metrics/`).
pub const METRICS_ANNOTATION: &str = "tf-spawner/metrics";

/// The variable that tells the training script where the run's volume is mounted (with
/// `--local`: a directory on this machine).
pub const OUTPUT_DIR_VAR: &str = "TF_SPAWNER_OUTPUT_DIR";

/// The directory under the current one where `--local` runs keep their output.
pub const LOCAL_OUTPUT_ROOT: &str = "tf-spawner-output";

/// Where a `--local` run's [`OUTPUT_DIR_VAR`] points, under the current directory.
pub fn local_output_dir(tag: &str) -> std::path::PathBuf {
    std::path::Path::new(LOCAL_OUTPUT_ROOT).join(tag)
}

/// A helper pod's name: `TAG-cp-1a2b3c` (a random suffix: several copies may run at
/// once) or `TAG-tensorboard` (one per run).
pub fn helper_pod_name(tag: &str, helper: &str, unique: bool) -> String {
    if unique {
        format!("{tag}-{helper}-{:06x}", rand::random::<u32>() & 0xff_ffff)
    } else {
        format!("{tag}-{helper}")
    }
}

/// The run's Kueue pod group: the tag and the invocation's first 8 hex digits, so that a
/// run spawned again under the same tag never joins the group (and Workload) of the
/// previous one. At most 63 characters, a label value.
pub fn kueue_group_name(tag: &str, invocation: &str) -> String {
    let suffix: String = invocation.chars().take(8).collect();
    let room = 63 - suffix.len() - 1;
    let tag = tag
        .get(..room.min(tag.len()))
        .unwrap_or(tag)
        .trim_end_matches(['-', '.']);
    format!("{tag}-{suffix}")
}

pub fn config_map_name(tag: &str) -> String {
    format!("{tag}-script")
}

/// An experiment's record (`tf-spawner sweep`, `cluster/experiment.rs`).
pub fn experiment_record_name(experiment: &str) -> String {
    format!("{experiment}-experiment")
}

pub fn secret_name(tag: &str) -> String {
    format!("{tag}-env")
}

/// The run's NetworkPolicy (`--network-policy`).
pub fn network_policy_name(tag: &str) -> String {
    format!("{tag}-network")
}

/// The run's gang PodGroup (`--gang`), which its pods name.
pub fn pod_group_name(tag: &str) -> String {
    format!("{tag}-group")
}

/// What is wrong with `value` as a label value (at most 63 characters: letters, digits,
/// `-`, `_`, `.`, starting and ending with a letter or digit), if anything: a value put
/// in a label selector must be one, or it would change the selector.
pub(crate) fn label_value_problem(value: &str) -> Option<String> {
    let inner = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let bytes = value.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.iter().all(|b| inner(*b))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric();
    (!ok).then(|| {
        "is not a valid name (letters, digits, '-', '_' and '.', starting and ending with a letter or digit, at most 63 characters)".to_string()
    })
}

/// What is wrong with `name` as a DNS-1123 subdomain of at most `max` characters.
pub(crate) fn name_problem(name: &str, max: usize) -> Option<String> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !p.starts_with('-')
            && !p.ends_with('-')
    };
    (name.len() > max || !name.split('.').all(part_ok)).then(|| {
        format!(
            "is not a valid name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most {max} characters)"
        )
    })
}

/// What is wrong with `namespace` as a namespace name: a DNS-1123 label (lowercase
/// letters, digits and '-', starting and ending with a letter or digit, at most 63
/// characters), as the API server requires. The namespace is a segment of every URL the
/// tool sends: `team-a?` unchecked would make `DELETE /api/v1/namespaces/team-a?/…` a
/// delete of the namespace itself.
pub fn namespace_problem(namespace: &str) -> Option<String> {
    let ok = !namespace.is_empty()
        && namespace.len() <= 63
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !namespace.starts_with('-')
        && !namespace.ends_with('-');
    (!ok).then(|| {
        "is not a valid namespace name (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)".to_string()
    })
}

/// What is wrong with `name` as one segment of an API URL (an object's name): the API
/// server stores only DNS-1123 subdomains as the names of the kinds the tool touches, so
/// anything else (a `/`, `?`, `#`, `%`, `..`) is refused before it is sent.
pub fn segment_problem(name: &str) -> Option<String> {
    name_problem(name, 253)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kueue_group_name_is_a_label_value_unique_per_invocation() {
        assert_eq!(
            kueue_group_name("demo", "0123456789abcdef"),
            "demo-01234567"
        );
        let long = format!("{}-x", "a".repeat(53));
        let name = kueue_group_name(&long, "0123456789abcdef");
        assert!(name.len() <= 63, "{name}");
        assert_eq!(name, format!("{}-01234567", "a".repeat(53)));
    }

    #[test]
    fn a_namespace_is_a_dns_1123_label() {
        for good in ["default", "team-a", "a", "0x", &"a".repeat(63)] {
            assert_eq!(namespace_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "x?",
            "x#",
            "x/y",
            "a.b",
            "-a",
            "a-",
            "A",
            "x y",
            "x%2F",
            &"a".repeat(64),
        ] {
            assert!(namespace_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn a_url_segment_is_a_name_the_server_could_store() {
        assert_eq!(segment_problem("demo-worker-0"), None);
        for bad in ["", ".", "..", "a/b", "a?b", "a#", "a%2Fb", "A"] {
            assert!(segment_problem(bad).is_some(), "{bad}");
        }
    }
}
