//! Helper pods of a run (pure): the short-lived pod `cp` copies through, and the
//! TensorBoard pod. Each carries the run's tag (so `-d` deletes it) and
//! [`HELPER_LABEL`] (so it is no task of the run), mounts the run's volume read-only,
//! and lands on the node of the run's pods when the claim is ReadWriteOnce.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ExecAction, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodSecurityContext, PodSpec, Probe, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::labels::{
    HELPER_LABEL, KEEP_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, RUN_LABEL, SESSIONS_ANNOTATION,
};
use crate::plan::OutputVolume;

/// The port TensorBoard serves on in its pod, on the pod's loopback only: kube's
/// port-forward reaches it there, no other pod can.
pub const TENSORBOARD_PORT: u16 = 6006;
/// The longest a copy's helper pod lives, whatever happens to the client.
const CP_DEADLINE_SECONDS: i64 = 3600;
/// How often a `tensorboard` session says it still uses the pod, and after how long
/// without a word a session counts as gone (a client killed by SIGKILL).
pub const HEARTBEAT_SECONDS: u64 = 20;
pub const SESSION_STALE_SECONDS: u64 = 75;
/// How far ahead of this machine's clock a heartbeat may be (another machine's clock):
/// one further ahead is not believed (a forged heartbeat "in 2099" would keep the pod
/// for ever).
pub const SESSION_SKEW_SECONDS: u64 = 120;

/// A heartbeat at `at` still counts at `now`: neither older than
/// [`SESSION_STALE_SECONDS`] nor further ahead than [`SESSION_SKEW_SECONDS`].
fn fresh(at: u64, now: u64) -> bool {
    now.saturating_sub(at) <= SESSION_STALE_SECONDS
        && at.saturating_sub(now) <= SESSION_SKEW_SECONDS
}

/// What a helper pod is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    Cp,
    Tensorboard,
}

impl Helper {
    pub fn as_str(self) -> &'static str {
        match self {
            Helper::Cp => "cp",
            Helper::Tensorboard => "tensorboard",
        }
    }

    /// Its requests and limits (CPU, memory): small, and limits too, so a namespace
    /// whose quota counts `limits.cpu`/`limits.memory` admits it. `cp`'s `tar` runs in
    /// its container (exec), streaming; TensorBoard holds the summaries it loaded.
    fn resources(self) -> ResourceRequirements {
        let (requests, limits) = match self {
            Helper::Cp => (("50m", "64Mi"), ("500m", "256Mi")),
            Helper::Tensorboard => (("100m", "256Mi"), ("1", "2Gi")),
        };
        let list = |(cpu, memory): (&str, &str)| {
            BTreeMap::from([
                ("cpu".to_string(), Quantity(cpu.to_string())),
                ("memory".to_string(), Quantity(memory.to_string())),
            ])
        };
        ResourceRequirements {
            requests: Some(list(requests)),
            limits: Some(list(limits)),
            ..ResourceRequirements::default()
        }
    }
}

/// Everything a helper pod is made from.
#[derive(Debug, Clone)]
pub struct HelperSpec<'a> {
    pub helper: Helper,
    pub name: String,
    pub tag: &'a str,
    pub namespace: &'a str,
    pub image: String,
    pub volume: &'a OutputVolume,
    /// Pin the pod to this node (a ReadWriteOnce claim already in use there).
    pub node: Option<String>,
    /// The run's pods' security context: the helper runs as their user.
    pub security: Option<PodSecurityContext>,
}

/// TensorBoard over several runs (`tensorboard NAME`): the pod's `--logdir DIR` becomes
/// `--logdir_spec TAG:DIR,…`, each run under its tag (TensorBoard's own way of naming
/// runs; a tag has no `:` or `,`).
pub fn serve_runs(pod: &mut Pod, runs: &[(String, String)]) {
    let spec: Vec<String> = runs
        .iter()
        .map(|(tag, dir)| format!("{tag}:{dir}"))
        .collect();
    let command = pod
        .spec
        .as_mut()
        .and_then(|s| s.containers.first_mut())
        .and_then(|c| c.command.as_mut());
    if let Some(command) = command
        && let Some(at) = command.iter().position(|w| w == "--logdir")
        && at + 1 < command.len()
    {
        command[at] = "--logdir_spec".to_string();
        command[at + 1] = spec.join(",");
    }
}

/// The helper pod.
pub fn pod(spec: &HelperSpec<'_>) -> Pod {
    let labels = BTreeMap::from([
        (RUN_LABEL.to_string(), spec.tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (HELPER_LABEL.to_string(), spec.helper.as_str().to_string()),
    ]);
    let (command, probe) = container_of(spec);
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            namespace: Some(spec.namespace.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: spec.helper.as_str().to_string(),
                image: Some(spec.image.clone()),
                command: Some(command),
                startup_probe: probe,
                resources: Some(spec.helper.resources()),
                volume_mounts: Some(vec![spec.volume.mount(true)]),
                ..Container::default()
            }],
            volumes: Some(vec![spec.volume.volume(true)]),
            restart_policy: Some("Never".to_string()),
            termination_grace_period_seconds: Some(1),
            active_deadline_seconds: (spec.helper == Helper::Cp).then_some(CP_DEADLINE_SECONDS),
            affinity: spec.node.as_ref().map(|node| on_node(node)),
            ..PodSpec::default()
        }),
        status: None,
    };
    if let Some(s) = pod.spec.as_mut() {
        s.security_context = spec.security.as_ref().map(run_as_the_run);
        crate::plan::security::harden(s);
    }
    pod
}

/// The user, group and non-root promise of the run's pods (a namespace that enforces
/// `restricted` admitted them), and their `fsGroup` as a supplementary group, so the
/// helper reads what they wrote; not `fsGroup` itself, which would have the kubelet
/// change the ownership of the whole volume again.
fn run_as_the_run(run: &PodSecurityContext) -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: run.run_as_user,
        run_as_group: run.run_as_group,
        run_as_non_root: run.run_as_non_root,
        supplemental_groups: run.fs_group.map(|g| vec![g]),
        ..PodSecurityContext::default()
    }
}

/// The helper's command and startup probe.
fn container_of(spec: &HelperSpec<'_>) -> (Vec<String>, Option<Probe>) {
    match spec.helper {
        // `sleep` in a loop of the copy's length: the pod outlives no copy by much, even
        // when the client is killed before it can delete it.
        Helper::Cp => (
            vec!["sleep".to_string(), CP_DEADLINE_SECONDS.to_string()],
            None,
        ),
        // Loopback only (no `--bind_all`, no container port): the summaries are for the
        // user's port-forward, not for every pod of the cluster. So the probe cannot be
        // an HTTP GET from the kubelet (it goes to the pod's IP): it is an exec of the
        // image's python (TensorBoard's own), once, as a startup probe (the container is
        // ready when it passes; no probe runs after that).
        Helper::Tensorboard => (
            vec![
                "tensorboard".to_string(),
                "--logdir".to_string(),
                spec.volume.dir(),
                "--host".to_string(),
                "127.0.0.1".to_string(),
                "--port".to_string(),
                TENSORBOARD_PORT.to_string(),
            ],
            Some(Probe {
                exec: Some(ExecAction {
                    command: Some(vec![
                        "python".to_string(),
                        "-c".to_string(),
                        format!(
                            "import urllib.request; urllib.request.urlopen('http://127.0.0.1:{TENSORBOARD_PORT}/', timeout=5)"
                        ),
                    ]),
                }),
                period_seconds: Some(2),
                timeout_seconds: Some(10),
                // Up to 30 minutes; `tensorboard --timeout` gives up sooner.
                failure_threshold: Some(900),
                ..Probe::default()
            }),
        ),
    }
}

/// Whether `pod` is run `tag`'s helper of this kind: its labels say so. A pod of the
/// same name without them is someone else's, never used or deleted.
pub fn is_ours(pod: &Pod, tag: &str, helper: Helper) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let has = |k: &str, v: &str| labels.and_then(|l| l.get(k)).is_some_and(|x| x == v);
    has(RUN_LABEL, tag) && has(HELPER_LABEL, helper.as_str())
}

/// The `tensorboard` sessions using a TensorBoard pod ([`crate::labels::SESSIONS_ANNOTATION`]):
/// each session's id and the unix time of its last heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sessions(pub BTreeMap<String, u64>);

impl Sessions {
    /// Reads the annotation; anything unreadable is no session.
    pub fn parse(text: Option<&str>) -> Sessions {
        Sessions(
            text.and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default(),
        )
    }

    pub fn to_annotation(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }

    /// The sessions other than `me` heard from lately ([`fresh`] at `now`).
    pub fn others_alive(&self, me: &str, now: u64) -> usize {
        self.0
            .iter()
            .filter(|(id, at)| id.as_str() != me && fresh(**at, now))
            .count()
    }

    /// `me` heard from at `now`; stale sessions (and those from the future) dropped.
    pub fn beat(&mut self, me: &str, now: u64) {
        self.0.retain(|_, at| fresh(*at, now));
        self.0.insert(me.to_string(), now);
    }

    pub fn leave(&mut self, me: &str) {
        self.0.remove(me);
    }
}

/// A helper pod of a run as `status` and `list` show it: what it is for, its phase, and
/// how it ends (issue 35: nothing the tool started runs on unseen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    /// `cp`, `tensorboard` (the label's value, whatever it is).
    pub kind: String,
    /// The API's phase, or `Terminating` for a pod being deleted (as kubectl).
    pub phase: String,
    /// Creation time, seconds since the epoch.
    pub created: Option<i64>,
    /// Kept by `tensorboard --keep`.
    pub keep: bool,
    /// `tensorboard` sessions heard from lately.
    pub sessions: usize,
    /// When the kubelet ends it at the latest (`cp`'s deadline), seconds since the epoch.
    pub deadline: Option<i64>,
    /// Its container's last failure (`exit 1: LAST LINE`) and how many times it restarted:
    /// a supervisor that cannot do its work (a right its account lacks) fails, and the
    /// kubelet keeps its last lines in the termination message
    /// (`FallbackToLogsOnError`, `plan/supervisor.rs`).
    pub failed: Option<(String, i32)>,
}

impl Found {
    /// The helper pod `pod` of run `tag`, if it is one (its helper label).
    pub fn of(pod: &Pod, now: u64) -> Option<Found> {
        let meta = &pod.metadata;
        let kind = meta.labels.as_ref()?.get(HELPER_LABEL)?.clone();
        let annotation = |k: &str| meta.annotations.as_ref().and_then(|a| a.get(k));
        let status = pod.status.as_ref();
        let phase = match (
            &meta.deletion_timestamp,
            status.and_then(|s| s.phase.clone()),
        ) {
            (Some(_), _) => "Terminating".to_string(),
            (None, phase) => phase.unwrap_or_else(|| "Pending".into()),
        };
        let started = status
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0.as_second());
        let deadline = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        Some(Found {
            failed: status.and_then(last_failure),
            name: meta.name.clone().unwrap_or_default(),
            keep: annotation(KEEP_ANNOTATION).is_some_and(|v| v == "true"),
            sessions: Sessions::parse(annotation(SESSIONS_ANNOTATION).map(String::as_str))
                .others_alive("", now),
            deadline: started.zip(deadline).map(|(s, d)| s + d),
            created: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
            kind,
            phase,
        })
    }

    /// How it ends, for run `tag`: `deleted when …`, `stays …` (a time's date shown when
    /// it is not on `now`'s day).
    pub fn ends(&self, tag: &str, now: i64) -> String {
        let by_hand = format!("tf-spawner -d -t {tag} deletes it");
        match (self.phase.as_str(), self.kind.as_str()) {
            ("Terminating", _) => "being deleted".to_string(),
            ("Succeeded" | "Failed", _) => format!("ended; {by_hand}"),
            (_, "tensorboard") if self.keep => format!("stays (tensorboard --keep); {by_hand}"),
            (_, "tensorboard") if self.sessions > 0 => format!(
                "deleted when the last tensorboard session using it ends ({} now)",
                self.sessions
            ),
            (_, "tensorboard") => format!(
                "no tensorboard session uses it now: the next session's end deletes it, or {by_hand}"
            ),
            // Its `cp` deletes it; a `cp` killed (SIGKILL, a closed laptop) cannot, and
            // then only its deadline (counted from its start) or a delete ends it.
            (_, "cp") => match self.deadline {
                Some(at) => format!(
                    "the cp that made it deletes it when its copy ends; if that cp was killed, its deadline ends it by {} ({by_hand} sooner)",
                    crate::duration::clock(at, now)
                ),
                None => format!(
                    "the cp that made it deletes it when its copy ends; if that cp was killed, {by_hand} (its deadline counts from its start)"
                ),
            },
            (_, "supervisor") => format!(
                "the run's supervisor (--detach): it ends at the run's verdict; kubectl delete job {} stops it, {by_hand} and the run",
                crate::labels::supervisor_name(tag)
            ),
            _ => by_hand,
        }
    }
}

/// A pod's first container's last failure, `exit 1: LAST LINE` (the last line of its
/// termination message, bounded, control characters escaped), with its restarts; `None`
/// when it never failed.
fn last_failure(status: &k8s_openapi::api::core::v1::PodStatus) -> Option<(String, i32)> {
    let container = status.container_statuses.as_ref()?.first()?;
    let ended = [&container.state, &container.last_state]
        .into_iter()
        .filter_map(|s| s.as_ref()?.terminated.as_ref())
        .find(|t| t.exit_code != 0)?;
    let line = ended
        .message
        .as_deref()
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| crate::output::escape_controls(l.trim()));
    let mut text = format!("exit {}", ended.exit_code);
    if let Some(line) = line {
        let line: String = line.chars().take(300).collect();
        text.push_str(&format!(": {line}"));
    }
    Some((text, container.restart_count))
}

/// Required node affinity to the node named `node` (by `metadata.name`, as a
/// DaemonSet's pods are placed: a node's hostname label need not be its name).
fn on_node(node: &str) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".to_string(),
                        operator: "In".to_string(),
                        values: Some(vec![node.to_string()]),
                    }]),
                    ..NodeSelectorTerm::default()
                }],
            }),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    }
}

/// Whether a claim with these access modes can be used by pods on one node only.
pub fn one_node_only(access_modes: &[String]) -> bool {
    !access_modes
        .iter()
        .any(|m| m == "ReadWriteMany" || m == "ReadOnlyMany")
}

#[cfg(test)]
#[path = "helper_pod_tests.rs"]
mod tests;
