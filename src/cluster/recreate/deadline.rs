//! The run's deadline and first start as a restart's next attempts carry them, pure:
//! read from the pods and the run's record, what is not believed named ([`run_times`]);
//! from the pods alone for a run of an earlier version ([`run_deadline`]); what is left
//! of it for a template ([`deadline_left`]).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::book::Book;
use crate::labels::{DEADLINE_AT_ANNOTATION, RUN_STARTED_ANNOTATION, STOPPED_ANNOTATION};

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
pub(super) fn with_time(mut template: Pod, key: &str, at: Option<Timestamp>) -> Pod {
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
