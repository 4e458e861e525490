//! A later `wait` on a run that ended: when its pods now tell only of what tf-spawner did
//! after the verdict (it stopped them: a run that could not start, did not start in
//! time, stalled or was cancelled has no other pod), the verdict recorded when it ended
//! is the run's, as `status` tells it (`ops::status::verdict_of`), with the exit code the
//! first `wait` gave; never "stopped by tf-spawner after the verdict" (exit 3) over it.

use crate::cluster::Cluster;
use crate::cluster::record::Record;
use crate::errors::{EXIT_CANNOT_START, EXIT_START_TIMEOUT, EXIT_TRAINING_FAILED};
use crate::verdict::{CANNOT_START_TEXT, Failure, Tracker};

/// What `report.rs` writes for a run that did not start within `--start-timeout`:
/// `Failed: did not start (--start-timeout 10m)`.
pub(super) const DID_NOT_START: &str = "did not start (--start-timeout";

/// The run's recorded end, when `failure` only names a pod stopped or deleted after it.
pub(super) struct Recorded {
    /// As recorded (`Failed: …`, `Cancelled: …`), written back as it is.
    pub text: String,
    /// Why it failed, as `status` says it; `None`: it succeeded, or was stopped early
    /// (`text` says which).
    pub why: Option<String>,
    /// The exit code the first `wait` gave.
    pub code: u8,
}

/// The recorded end instead of `failure`, if there is one to take.
pub(super) async fn instead(
    cluster: &Cluster,
    tracker: &Tracker,
    failure: &Failure,
) -> Option<Recorded> {
    if !failure.kind.is_after_the_fact() {
        return None;
    }
    let record = crate::cluster::record::read(cluster, tracker.tag())
        .await
        .ok()
        .flatten()?;
    of(tracker, &record)
}

/// The pure part of [`instead`].
fn of(tracker: &Tracker, record: &Record) -> Option<Recorded> {
    let text = record.verdict.clone()?;
    match crate::ops::status::verdict_of(tracker, Some(record)) {
        (crate::metrics::early::STOPPED_EARLY, _) => Some(Recorded {
            text,
            why: None,
            code: 0,
        }),
        ("Succeeded", _) => Some(Recorded {
            text,
            why: None,
            code: 0,
        }),
        ("Failed" | "Cancelled", Some(why)) => {
            let cannot_start = format!(" {CANNOT_START_TEXT}: ");
            let code = if why.starts_with("pod ") && why.contains(&cannot_start) {
                EXIT_CANNOT_START
            } else if why.starts_with(DID_NOT_START) {
                EXIT_START_TIMEOUT
            } else {
                EXIT_TRAINING_FAILED
            };
            Some(Recorded {
                text,
                why: Some(why),
                code,
            })
        }
        _ => None,
    }
}
