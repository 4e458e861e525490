//! The failed tasks' last log lines, read for the verdict: TensorFlow says there when a
//! task failed because of a peer (`verdict/peer.rs` recognises it), so that `wait` and
//! `status` name the task that failed first, not its victims, and show its last lines.

use std::collections::BTreeMap;

use futures::{StreamExt, stream};

use crate::cluster::{Cluster, pod_logs};
use crate::verdict::{FailureKind, PodView, Tracker};

/// Lines of a failed pod's log read (and shown with the failure).
pub const FAILED_LOG_LINES: u64 = 20;
/// At most this many failed pods' logs are read (the earliest to end): a failure that
/// brought down a thousand workers needs the first few to be told.
const MOST_READ: usize = 8;
/// Log requests in flight at once.
const IN_FLIGHT: usize = 4;

/// Reads the last lines of the run's failed tasks (those that exited, the earliest to
/// end first, up to [`MOST_READ`]), notes each in `tracker` (with the container's
/// termination message, if it wrote one) and returns them by pod name. A log that
/// cannot be read is left out: the verdict then goes by the pods alone.
pub(crate) async fn read_failed(
    cluster: &Cluster,
    tracker: &mut Tracker,
) -> BTreeMap<String, String> {
    let mut failed: Vec<PodView> = tracker
        .failures()
        .into_iter()
        .filter(|f| matches!(f.kind, FailureKind::Exited { .. }))
        .filter_map(|f| tracker.get(&f.pod).cloned())
        .filter(|v| v.started)
        .collect();
    failed.sort_by_key(|v| (v.times.finished_at.unwrap_or(i64::MAX), v.name.clone()));
    failed.truncate(MOST_READ);
    let read: Vec<(String, Option<String>, String)> = stream::iter(failed)
        .map(|v| async move {
            let message = v.terminated.as_ref().and_then(|e| e.message.clone());
            (v.name.clone(), message, last_lines(cluster, &v).await)
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let mut out = BTreeMap::new();
    for (name, message, text) in read {
        let noted = match &message {
            Some(m) => format!("{text}{m}\n"),
            None => text.clone(),
        };
        tracker.note_log(&name, &noted);
        if !text.trim().is_empty() {
            out.insert(name, text);
        }
    }
    out
}

/// Failures the tool knows the cause of, by what the task's last lines say (every
/// needle), and the line that names the fix.
const KNOWN: &[(&[&str], &str)] = &[
    (
        &["PerReplica", "to a Tensor"],
        "Keras 3's Model.fit does not work under MultiWorkerMirroredStrategy: use Keras 2 from tf-keras (TF_USE_LEGACY_KERAS=1 before TensorFlow is imported; tf-spawner init writes it), see docs/tensorflow.md",
    ),
    (
        &["Permission denied"],
        "a path the task's user may not write: with --run-as-user, a volume whose plugin ignores fsGroup (hostPath, NFS without group write) stays the image's owner's, see docs/hardened.md (\"Restricted namespaces\")",
    ),
    (
        &["ModuleNotFoundError"],
        "a module the image lacks: ship your project's own with --dir ., or use an image that has the package (docs/tensorflow.md)",
    ),
];

/// The fix for a failure [`KNOWN`] recognises in a task's last lines.
pub(crate) fn known_cause(text: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(needles, _)| needles.iter().all(|n| text.contains(n)))
        .map(|(_, fix)| *fix)
}

/// `last log lines of pod P:` and `text`'s lines, each under the task's label; then a
/// `hint:` line when the cause is a [`KNOWN`] one.
pub(crate) fn shown(v: &PodView, text: &str) -> String {
    let label = v.label();
    let mut block = format!("last log lines of pod {}:\n", v.name);
    for line in text.lines() {
        block.push_str(&format!("{label} | "));
        block.push_str(line);
        block.push('\n');
    }
    if let Some(fix) = known_cause(text) {
        block.push_str(&format!("hint: {fix}\n"));
    }
    block
}

/// Pod `v`'s last [`FAILED_LOG_LINES`] lines, without the kubelet's notice for a
/// container it no longer has; empty when they cannot be read.
pub(crate) async fn last_lines(cluster: &Cluster, v: &PodView) -> String {
    let options = pod_logs::LogOptions {
        tail: Some(FAILED_LOG_LINES),
        ..pod_logs::LogOptions::default()
    };
    let params = options.params(v.setup.container.as_deref());
    match pod_logs::fetch(cluster, &v.name, &params).await {
        Ok(text) => text
            .lines()
            .filter(|l| !pod_logs::kubelet_notice(l))
            .map(|l| format!("{l}\n"))
            .collect(),
        Err(_) => String::new(),
    }
}
