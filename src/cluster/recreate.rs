//! The API side of a restart (`wait --restarts`, `ops/restart/mod.rs`): the run's pods read
//! once as templates, the pods of an attempt deleted, and the next attempt's pods made
//! from the templates (created through `apply.rs`'s ledger, so a failed or interrupted
//! restart deletes exactly what it created).
//!
//! Where the specs come from: the pods themselves, read whole from the API server when
//! the follow starts (`wait` is often another process than the spawn, with no plan).
//! What the servers wrote into them is taken out again ([`template`]). A pod already
//! gone when the follow started is re-created from the pods the spawn recorded in the
//! run's ConfigMap (`plan/record.rs`), once they pass `vetting.rs`; a run of an earlier
//! version recorded none: its task cannot be restarted.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::Cluster;
use crate::labels::{
    ATTEMPT_LABEL, ATTEMPT_VAR, DEADLINE_AT_ANNOTATION, INVOCATION_ANNOTATION,
    NEVER_STARTED_ANNOTATION, NODE_NAME_ANNOTATION, NOT_STARTED_ANNOTATION,
    RESTARTED_FOR_ANNOTATION, RUN_STARTED_ANNOTATION, STOPPED_AFTER_TASK_ANNOTATION,
    STOPPED_ANNOTATION, VERDICT_ANNOTATION, config_map_name, run_selector,
};
use crate::plan::{CLUSTER_KEY, PORT_NAME};
use crate::roles::ClusterSpec;

/// The run's task pods as the next attempt re-creates them, by name.
pub type Templates = BTreeMap<String, Pod>;

/// What the run's ConfigMap holds for a restart (one GET, [`recorded`]).
#[derive(Debug, Clone, Default)]
pub struct Book {
    /// When the run was made (the ConfigMap's creation).
    pub created: Option<Timestamp>,
    /// The pods the spawn recorded (`plan/record.rs`), unvetted; `None` for a run of an
    /// earlier version (or one whose pods did not fit), `Some(Err)` when unreadable.
    pub spawned: Option<Result<Templates, String>>,
    /// A restart under way ([`Record`]).
    pub restart: Option<Record>,
    /// The cluster part of the tasks' `TF_CONFIG` ([`CLUSTER_KEY`]), as the next pods
    /// made will read it; `None` in a run of an earlier version or when unreadable.
    pub cluster: Option<ClusterSpec>,
}

/// Why a gone pod cannot be re-created from a run whose spawn recorded no pods.
pub const NOT_RECORDED: &str = "the run's configmap holds no record of its pods (made by an earlier tf-spawner, or too large to record)";

/// The run's templates as a restart reads them when the follow starts.
#[derive(Debug, Clone)]
pub struct Found {
    /// The run's pods on the server, as [`template`]s.
    pub live: Templates,
    /// The pods the spawn recorded, as templates (not vetted yet: `vetting.rs`); else
    /// why there are none, in words.
    pub spawned: Result<Templates, String>,
    /// What was read and not believed (a start in the future…), one line each.
    pub warnings: Vec<String>,
}

/// Reads the run's pods whole, once, as [`template`]s, beside the pods its spawn
/// recorded in `book`, each carrying the run's vetted deadline
/// and first start ([`run_times`]).
pub async fn templates(cluster: &Cluster, tag: &str, book: &Book) -> Result<Found> {
    let pods = cluster
        .list::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("reading the run's pods (for --restarts)", &e))?;
    let (times, warnings) = run_times(&pods, book, Timestamp::now());
    let timed = |p: Pod| {
        let t = with_time(template(p), DEADLINE_AT_ANNOTATION, times.deadline);
        with_time(t, RUN_STARTED_ANNOTATION, times.started)
    };
    let live: Templates = pods
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name.clone()?, timed(p))))
        .collect();
    let spawned = match &book.spawned {
        None => Err(NOT_RECORDED.to_string()),
        Some(Err(why)) => Err(why.clone()),
        Some(Ok(pods)) => Ok(pods
            .iter()
            .map(|(n, p)| (n.clone(), timed(p.clone())))
            .collect()),
    };
    Ok(Found {
        live,
        spawned,
        warnings,
    })
}

/// The run's deadline and first start, as the next attempts carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Times {
    pub deadline: Option<Timestamp>,
    pub started: Option<Timestamp>,
}

/// The run's [`Times`] at `now`, and what was not believed. The first start: the
/// earliest a re-created pod carries ([`RUN_STARTED_ANNOTATION`], ignored when in the
/// future or before the run was made) or a pod's start; with a record of the spawn's
/// pods and none started, the run's making. The deadline: with that record (the source
/// of truth), the first start plus the recorded `activeDeadlineSeconds`, a pod's
/// [`DEADLINE_AT_ANNOTATION`] later than that refused; without one (a run of an earlier
/// version), from the pods ([`run_deadline`]).
pub fn run_times(pods: &[Pod], book: &Book, now: Timestamp) -> (Times, Vec<String>) {
    let mut warnings = Vec::new();
    let carried = pods.iter().filter_map(|p| {
        let t = time_of(p, RUN_STARTED_ANNOTATION)?;
        let name = p.metadata.name.as_deref().unwrap_or("?");
        let why = if t > now {
            "is in the future"
        } else if book.created.is_some_and(|c| t < c) {
            "is before the run was made"
        } else {
            return Some(t);
        };
        warnings.push(format!(
            "pod {name}'s {RUN_STARTED_ANNOTATION} ({t}) {why}: ignored"
        ));
        None
    });
    let pod_starts = pods
        .iter()
        .filter_map(|p| Some(p.status.as_ref()?.start_time.as_ref()?.0));
    let recorded = match &book.spawned {
        Some(Ok(spawned)) => Some(
            spawned
                .values()
                .filter_map(|p| p.spec.as_ref()?.active_deadline_seconds)
                .min(),
        ),
        _ => None,
    };
    let started = carried.chain(pod_starts).min();
    let Some(seconds) = recorded else {
        return (
            Times {
                deadline: run_deadline(pods),
                started,
            },
            warnings,
        );
    };
    let started = started.or(book.created);
    let deadline = seconds
        .zip(started)
        .and_then(|(s, from)| from.checked_add(SignedDuration::from_secs(s)).ok());
    for p in pods {
        if let Some(t) = time_of(p, DEADLINE_AT_ANNOTATION)
            && deadline.is_none_or(|d| t > d)
        {
            let name = p.metadata.name.as_deref().unwrap_or("?");
            let allowed = deadline.map_or("none".to_string(), |d| d.to_string());
            warnings.push(format!(
                "pod {name}'s {DEADLINE_AT_ANNOTATION} ({t}) is later than the run's record allows ({allowed}, from its start and --deadline): the record's is used"
            ));
        }
    }
    (Times { deadline, started }, warnings)
}

/// The time in pod `p`'s annotation `key`, if it parses.
fn time_of(p: &Pod, key: &str) -> Option<Timestamp> {
    p.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

/// When the run's `--deadline` passes, from its pods: the time a re-created pod carries
/// ([`DEADLINE_AT_ANNOTATION`]), else a first attempt's start (its creation, before it
/// started) plus its `activeDeadlineSeconds`; the earliest. A pod stopped after a
/// verdict (its deadline lowered to 1) says nothing of the run's.
pub fn run_deadline(pods: &[Pod]) -> Option<Timestamp> {
    pods.iter().filter_map(deadline_of).min()
}

fn deadline_of(pod: &Pod) -> Option<Timestamp> {
    let annotations = pod.metadata.annotations.as_ref();
    if let Some(at) = annotations.and_then(|a| a.get(DEADLINE_AT_ANNOTATION)) {
        return at.parse().ok();
    }
    if annotations.is_some_and(|a| a.contains_key(STOPPED_ANNOTATION)) {
        return None;
    }
    let seconds = pod.spec.as_ref()?.active_deadline_seconds?;
    let started = pod.status.as_ref().and_then(|s| s.start_time.as_ref());
    let from = started.or(pod.metadata.creation_timestamp.as_ref())?.0;
    from.checked_add(SignedDuration::from_secs(seconds)).ok()
}

/// `template` carrying the time `at` in its annotation `key` (for the next attempts).
fn with_time(mut template: Pod, key: &str, at: Option<Timestamp>) -> Pod {
    if let Some(at) = at {
        template
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), at.to_string());
    }
    template
}

/// What is left of the run's deadline `template` carries at `now`: `None` without a
/// deadline, `Some(0)` once it has passed.
pub fn deadline_left(template: &Pod, now: Timestamp) -> Option<u64> {
    let at: Timestamp = template
        .metadata
        .annotations
        .as_ref()?
        .get(DEADLINE_AT_ANNOTATION)?
        .parse()
        .ok()?;
    let left = at.as_second().saturating_sub(now.as_second());
    Some(u64::try_from(left).unwrap_or(0))
}

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
    pub port: Option<u16>,
}

/// The container's TensorFlow port (named [`PORT_NAME`]) moved to `port`.
fn set_port(c: &mut k8s_openapi::api::core::v1::Container, port: u16) {
    for p in c.ports.iter_mut().flatten() {
        if p.name.as_deref() == Some(PORT_NAME) {
            p.container_port = i32::from(port);
        }
    }
}

/// A restart under way, recorded in the run's ConfigMap before its pods are deleted (key
/// [`RESTART_KEY`], gzip'd JSON, and the annotation [`RESTARTING_ANNOTATION`]): if the
/// restart is stopped before its pods are created again (Ctrl-C in the backoff, a
/// `--timeout`, a lost client), the next `wait --restarts` finds the templates there and
/// takes the restart up again. Cleared once the attempt's pods are created.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The attempt the restart makes.
    pub attempt: u32,
    /// The pods it re-creates, as templates, by name.
    pub templates: Templates,
    /// The failure it is for (absent in a record of an earlier version).
    #[serde(default)]
    pub cause: Option<String>,
    /// The port the attempt's tasks listen on (absent in a record of an earlier
    /// version: the port is left as it was).
    #[serde(default)]
    pub port: Option<u16>,
}

/// The run's ConfigMap key of a [`Record`].
pub const RESTART_KEY: &str = "restart.json.gz";
/// The run's ConfigMap annotation saying which attempt a recorded restart makes.
pub const RESTARTING_ANNOTATION: &str = "tf-spawner/restarting";

/// Records `record` in the run's ConfigMap. `Ok(false)` when the API server refused it
/// for its size (the ConfigMap would exceed 1 MiB): the restart goes on, unrecorded.
pub async fn save(cluster: &Cluster, tag: &str, record: &Record) -> Result<bool> {
    use std::io::Write;
    let json = serde_json::to_vec(record)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json)?;
    let bytes = k8s_openapi::ByteString(gz.finish()?);
    // A restart begins: a verdict recorded before (a run `wait`ed once, then waited
    // with --restarts) no longer holds.
    let patch = serde_json::json!({
        "metadata": {"annotations": {
            RESTARTING_ANNOTATION: record.attempt.to_string(),
            VERDICT_ANNOTATION: null,
            NEVER_STARTED_ANNOTATION: null,
            NOT_STARTED_ANNOTATION: null,
        }},
        "binaryData": {RESTART_KEY: bytes},
    });
    match cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
    {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.code(), Some(413 | 422)) => Ok(false),
        Err(e) => Err(cluster.explain("recording the restart in the run's configmap", &e)),
    }
}

/// What the run's ConfigMap holds for a restart (one GET): nothing without one.
pub async fn recorded(cluster: &Cluster, tag: &str) -> Result<Book> {
    let Some(cm) = cluster.config_map(&config_map_name(tag)).await? else {
        return Ok(Book::default());
    };
    let data = cm.binary_data.as_ref();
    let spawned = data
        .and_then(|d| d.get(crate::plan::record::PODS_KEY))
        .map(|b| {
            gunzip_json(&b.0)
                .ok_or_else(|| "the pods recorded at its spawn cannot be read".to_string())
        });
    Ok(Book {
        created: cm.metadata.creation_timestamp.map(|t| t.0),
        spawned,
        restart: data
            .and_then(|d| d.get(RESTART_KEY))
            .and_then(|b| gunzip_json(&b.0)),
        cluster: cm
            .data
            .as_ref()
            .and_then(|d| d.get(CLUSTER_KEY))
            .and_then(|json| ClusterSpec::parse(json)),
    })
}

/// The JSON value gzip'd in `bytes` (at most 64 MiB of it), if it is one.
fn gunzip_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    use std::io::Read;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(64 << 20)
        .read_to_end(&mut json)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

/// Sets the cluster part of the tasks' `TF_CONFIG` that the next pods made will read
/// (before a restart of every task on another port: `roles::next_port`).
pub async fn set_cluster(cluster: &Cluster, tag: &str, spec: &ClusterSpec) -> Result<()> {
    let patch = serde_json::json!({"data": {CLUSTER_KEY: spec.cluster_json()}});
    cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
        .map_err(|e| cluster.explain("moving the run's tasks to their new port", &e))
}

/// Removes the record (once the restart's pods are created).
pub async fn clear(cluster: &Cluster, tag: &str) -> Result<()> {
    let patch = serde_json::json!({
        "metadata": {"annotations": {
            RESTARTING_ANNOTATION: null,
            VERDICT_ANNOTATION: null,
            NEVER_STARTED_ANNOTATION: null,
            NOT_STARTED_ANNOTATION: null,
        }},
        "binaryData": {RESTART_KEY: null},
    });
    cluster
        .patch_config_map(&config_map_name(tag), &patch)
        .await
        .map_err(|e| cluster.explain("clearing the restart's record in the run's configmap", &e))
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

/// Deletes the run's pods named in `names` that are there and not being deleted yet,
/// each with its uid as a precondition, `max_in_flight` at a time; those named in
/// `lost` (on a node that stopped reporting) at once (grace period 0), being deleted
/// already or not: their kubelet will never confirm a graceful deletion. The first error
/// (after trying every pod) is the result.
pub async fn delete_pods(
    cluster: &Cluster,
    tag: &str,
    names: &BTreeSet<String>,
    lost: &BTreeSet<String>,
    max_in_flight: usize,
) -> Result<()> {
    let pods = cluster
        .list_metadata::<Pod>(&run_selector(tag))
        .await
        .map_err(|e| cluster.explain("listing the run's pods", &e))?;
    let doomed: Vec<(String, String)> = pods
        .into_iter()
        .filter_map(|m| {
            let name = m.name?;
            (m.deletion_timestamp.is_none() || lost.contains(&name)).then_some((name, m.uid?))
        })
        .filter(|(name, _)| names.contains(name))
        .collect();
    let results: Vec<Result<()>> = stream::iter(doomed)
        .map(|(name, uid)| async move {
            let grace = lost.contains(&name).then_some(0);
            cluster
                .delete_exact_within::<Pod>(&name, &uid, grace)
                .await
                .map_err(|e| cluster.explain(&format!("deleting pod {name}"), &e))
        })
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored() -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "t-worker-1", "namespace": "default", "uid": "u-1",
                "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"manager": "tf-spawner"}],
                "labels": {"training_attempt": "t", "tf-spawner/attempt": "0"},
                "annotations": {"tf-spawner/invocation": "first"}
            },
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "sidecar", "image": "s", "ports": [{"containerPort": 80}]},
                    {"name": "tensorflow", "image": "tf", "ports": [
                        {"name": "metrics", "containerPort": 9090},
                        {"name": "tf-grpc", "containerPort": 1999}
                    ], "env": [
                        {"name": "A", "value": "1"},
                        {"name": "TF_SPAWNER_ATTEMPT", "value": "0"}
                    ]}
                ]
            },
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    #[test]
    fn a_template_has_nothing_the_servers_wrote_and_the_next_attempt_is_marked() {
        let next = Next {
            attempt: 2,
            invocation: "second",
            cause: "pod x failed",
            port: Some(2000),
        };
        let pod = next_attempt(&template(stored()), &next, Timestamp::UNIX_EPOCH);
        let value = serde_json::to_value(&pod).unwrap();
        let meta = &value["metadata"];
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            assert!(meta.get(field).is_none(), "{field}: {value}");
        }
        assert!(value.get("status").is_none(), "{value}");
        assert!(value["spec"].get("nodeName").is_none(), "{value}");
        assert_eq!(meta["labels"]["tf-spawner/attempt"], "2");
        assert_eq!(meta["annotations"]["tf-spawner/invocation"], "second");
        assert_eq!(
            value["spec"]["containers"][1]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "TF_SPAWNER_ATTEMPT", "value": "2"}])
        );
        assert!(value["spec"]["containers"][0].get("env").is_none());
        // Only the TF container's TensorFlow port moves.
        let ports = |i: usize| value["spec"]["containers"][i]["ports"].clone();
        assert_eq!(ports(0), json!([{"containerPort": 80}]));
        assert_eq!(
            ports(1),
            json!([{"name": "metrics", "containerPort": 9090}, {"name": "tf-grpc", "containerPort": 2000}])
        );
        let kept = next_attempt(
            &template(stored()),
            &Next { port: None, ..next },
            Timestamp::UNIX_EPOCH,
        );
        let kept = serde_json::to_value(&kept).unwrap();
        assert_eq!(
            kept["spec"]["containers"][1]["ports"][1]["containerPort"],
            1999
        );
    }

    fn attempt(n: u32) -> Next<'static> {
        Next {
            attempt: n,
            invocation: "i",
            cause: "c",
            port: None,
        }
    }

    #[test]
    fn the_deadline_counts_once_from_the_runs_first_start() {
        let t = |s: &str| -> Timestamp { s.parse().unwrap() };
        let mut first = stored();
        first.spec.as_mut().unwrap().active_deadline_seconds = Some(3600);
        first.status =
            Some(serde_json::from_value(json!({"startTime": "2026-01-01T00:00:10Z"})).unwrap());
        // A pod stopped after a verdict says nothing of the run's deadline.
        let mut stopped = first.clone();
        stopped.spec.as_mut().unwrap().active_deadline_seconds = Some(1);
        stopped.status =
            Some(serde_json::from_value(json!({"startTime": "2026-01-01T00:00:00Z"})).unwrap());
        stopped
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(STOPPED_ANNOTATION.into(), "x".into());
        let at = run_deadline(&[first.clone(), stopped.clone()]);
        assert_eq!(at, Some(t("2026-01-01T01:00:10Z")));
        let template = with_time(template(stopped), DEADLINE_AT_ANNOTATION, at);
        assert_eq!(
            template.spec.as_ref().unwrap().active_deadline_seconds,
            None
        );
        // 40 minutes later, the next attempt gets the 20 left; a third the same way.
        let next = next_attempt(&template, &attempt(1), t("2026-01-01T00:40:10Z"));
        assert_eq!(
            next.spec.as_ref().unwrap().active_deadline_seconds,
            Some(1200)
        );
        assert_eq!(run_deadline(std::slice::from_ref(&next)), at);
        assert_eq!(deadline_left(&next, t("2026-01-01T02:00:00Z")), Some(0));
        let late = next_attempt(&next, &attempt(2), t("2026-01-01T02:00:00Z"));
        assert_eq!(late.spec.as_ref().unwrap().active_deadline_seconds, Some(1));
        // Without a deadline, none.
        assert_eq!(run_deadline(&[stored()]), None);
        let plain = next_attempt(&template_of_plain(), &attempt(1), t("2026-01-01T02:00:00Z"));
        assert_eq!(plain.spec.unwrap().active_deadline_seconds, None);
    }

    fn template_of_plain() -> Pod {
        with_time(template(stored()), DEADLINE_AT_ANNOTATION, None)
    }

    fn annotated(name: &str, pairs: &[(&str, &str)], started: Option<&str>) -> Pod {
        let mut pod = stored();
        pod.metadata.name = Some(name.into());
        let a = pod.metadata.annotations.as_mut().unwrap();
        for (k, v) in pairs {
            a.insert(k.to_string(), v.to_string());
        }
        pod.status = started.map(|t| serde_json::from_value(json!({"startTime": t})).unwrap());
        pod
    }

    fn book(created: &str, deadline: Option<i64>) -> Book {
        let mut spawned = stored();
        spawned.spec.as_mut().unwrap().active_deadline_seconds = deadline;
        Book {
            created: Some(created.parse().unwrap()),
            spawned: Some(Ok([("t-worker-1".to_string(), spawned)].into())),
            restart: None,
            cluster: None,
        }
    }

    #[test]
    fn the_record_bounds_the_deadline_and_a_start_in_the_future_is_ignored() {
        let t = |s: &str| -> Timestamp { s.parse().unwrap() };
        let now = t("2026-01-01T05:00:00Z");
        let pods = [
            // Planted: a start after now and a deadline a day past the record's.
            annotated(
                "t-worker-0",
                &[
                    (RUN_STARTED_ANNOTATION, "2026-01-02T00:00:00Z"),
                    (DEADLINE_AT_ANNOTATION, "2026-01-02T00:00:00Z"),
                ],
                Some("2026-01-01T00:10:00Z"),
            ),
            // The run's first start, carried by a re-created pod.
            annotated(
                "t-worker-1",
                &[(RUN_STARTED_ANNOTATION, "2026-01-01T00:05:00Z")],
                None,
            ),
            // Before the run was made: not ours.
            annotated(
                "t-worker-2",
                &[(RUN_STARTED_ANNOTATION, "2025-12-31T00:00:00Z")],
                None,
            ),
        ];
        let (times, warnings) = run_times(&pods, &book("2026-01-01T00:00:00Z", Some(3600)), now);
        assert_eq!(times.started, Some(t("2026-01-01T00:05:00Z")));
        assert_eq!(times.deadline, Some(t("2026-01-01T01:05:00Z")));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings[0].contains("t-worker-0's tf-spawner/run-started"),
            "{warnings:?}"
        );
        assert!(
            warnings[0].ends_with("is in the future: ignored"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].ends_with("is before the run was made: ignored"),
            "{warnings:?}"
        );
        assert!(
            warnings[2].contains("is later than the run's record allows (2026-01-01T01:05:00Z"),
            "{warnings:?}"
        );
        // Every pod gone: from the run's making.
        let (times, warnings) = run_times(&[], &book("2026-01-01T00:00:00Z", Some(60)), now);
        assert_eq!(times.deadline, Some(t("2026-01-01T00:01:00Z")));
        assert!(warnings.is_empty());
        // A record without a deadline: a planted one is refused, none is set.
        let (times, warnings) = run_times(&pods[..1], &book("2026-01-01T00:00:00Z", None), now);
        assert_eq!(times.deadline, None);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        // No record of pods (an earlier version): the pods' own deadline, the future
        // start still ignored.
        let old = Book {
            spawned: None,
            ..book("2026-01-01T00:00:00Z", None)
        };
        let (times, warnings) = run_times(&pods[..1], &old, now);
        assert_eq!(times.started, Some(t("2026-01-01T00:10:00Z")));
        assert_eq!(times.deadline, Some(t("2026-01-02T00:00:00Z")));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_node_the_template_named_is_kept() {
        let mut pod = stored();
        pod.metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(NODE_NAME_ANNOTATION.into(), "node-1".into());
        let spec = template(pod).spec.unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("node-1"));
    }
}
