//! What a wait's outcome prints, and its exit code: the verdict with the run's time and
//! training, a time-out naming what holds the run up, a start time-out, a stall, an
//! interruption. The steps after a verdict are `after.rs`'s.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use super::after::{after_the_end, after_the_verdict};
use super::fold::{Done, Outcome};
use super::options::{Wait, WaitFor};
use crate::cluster::Cluster;
use crate::errors::{
    EXIT_CANNOT_START, EXIT_RUNTIME, EXIT_START_TIMEOUT, EXIT_TIMEOUT, EXIT_TRAINING_FAILED,
    ExitError,
};
use crate::metrics::RunMetrics;
use crate::ops::notify::Seen;
use crate::output;
use crate::trainlog::{Training, show};
use crate::verdict::{Failure, FailureKind, Tracker, Verdict};

/// What the outcome prints, after saving logs and cleaning up as asked.
pub(super) async fn report(
    cluster: &Cluster,
    wait: &Wait,
    seen: Seen<'_>,
    outcome: Outcome,
) -> Result<()> {
    let Seen {
        tracker,
        training,
        metrics,
    } = seen;
    let tag = wait.tag.as_str();
    match outcome {
        Outcome::Signal(code) => Err(super::after::cancelled(cluster, wait, tracker, code).await),
        Outcome::Done(Done::Empty) => bail!("{}", crate::ops::status::no_run(cluster, tag).await),
        Outcome::Done(Done::Started) => {
            let n = tracker.live().count();
            output::print(&format!("run {tag}: all {n} pods started\n"))?;
            Ok(())
        }
        Outcome::Done(Done::Final(Verdict::Succeeded)) => {
            let after = after_the_verdict(cluster, wait, seen, "Succeeded").await;
            output::print(&format!("run {tag}: Succeeded\n"))?;
            time_and_training(tracker, wait.all_workers, training, metrics)?;
            after.map_err(|e| anyhow!("run '{tag}' succeeded, but {e}"))
        }
        Outcome::Done(Done::Final(Verdict::Failed(failure))) => {
            failed(cluster, wait, seen, &failure).await
        }
        Outcome::Done(Done::Final(other)) => {
            // `is_final` admits only the two above.
            Err(ExitError::new(EXIT_RUNTIME, format!("unexpected verdict {}", other.name())).into())
        }
        Outcome::NotStarted(d) => not_started(cluster, wait, seen, d).await,
        Outcome::Stalled(stalled) => {
            let on = match wait.stall.map(|s| s.on) {
                Some(super::options::OnStall::Restart) => "--on-stall restart, no restart made",
                _ => "--on-stall fail",
            };
            let message = format!(
                "run '{tag}' made no progress: {} ({on}); the last: {}",
                stalled.text,
                show::live(training)
            );
            let record = format!("Failed: {message}");
            let after = after_the_verdict(cluster, wait, seen, &record).await;
            Err(ExitError::new(EXIT_TRAINING_FAILED, also(message, after)).into())
        }
        Outcome::StoppedEarly(line) => stopped_early(cluster, wait, seen, line).await,
        Outcome::Timeout(d) => {
            let after = after_the_end(cluster, wait).await;
            Err(ExitError::new(
                EXIT_TIMEOUT,
                also(timed_out(&wait.tag, wait.until, tracker, d), after),
            )
            .into())
        }
    }
}

/// Stopped by the sweep's early stopping: as after a verdict (the unfinished pods
/// stopped and kept, the verdict `StoppedEarly: LINE` recorded), the run done.
async fn stopped_early(cluster: &Cluster, wait: &Wait, seen: Seen<'_>, line: String) -> Result<()> {
    let record = format!("{}: {line}", crate::metrics::early::STOPPED_EARLY);
    let after = after_the_verdict(cluster, wait, seen, &record).await;
    if let Err(e) = after {
        output::note(&format!("run {}: {e:#}", wait.tag));
    }
    Err(crate::metrics::early::StoppedEarly(line).into())
}

/// A failed verdict: the failed task's last lines, the run's time and training, the
/// steps after the verdict; exit 6 or 3 ([`failed_code`]).
async fn failed(cluster: &Cluster, wait: &Wait, seen: Seen<'_>, failure: &Failure) -> Result<()> {
    let Seen {
        tracker,
        training,
        metrics,
    } = seen;
    if let Some(end) = super::recorded::instead(cluster, tracker, failure).await {
        return recorded(cluster, wait, seen, end).await;
    }
    show_failed_log(cluster, tracker, failure).await;
    time_and_training(tracker, false, training, metrics)?;
    let record = format!("Failed: {failure}");
    let after = after_the_verdict(cluster, wait, seen, &record).await;
    let message = format!("run '{}' failed: {failure}", wait.tag);
    Err(ExitError::new(failed_code(failure), also(message, after)).into())
}

/// A run that ended before this wait, whose pods now tell only of what tf-spawner did
/// after its verdict: the verdict recorded then, with its exit code, the record kept.
async fn recorded(
    cluster: &Cluster,
    wait: &Wait,
    seen: Seen<'_>,
    end: super::recorded::Recorded,
) -> Result<()> {
    let Seen {
        tracker,
        training,
        metrics,
    } = seen;
    time_and_training(tracker, false, training, metrics)?;
    let after = after_the_verdict(cluster, wait, seen, &end.text).await;
    let tag = &wait.tag;
    let early = format!("{}: ", crate::metrics::early::STOPPED_EARLY);
    if let (None, Some(line)) = (&end.why, end.text.strip_prefix(&early)) {
        output::print(&format!("run {tag}: stopped early: {line}\n"))?;
        return after.map_err(|e| anyhow!("run '{tag}' was stopped early, but {e}"));
    }
    match end.why {
        None => {
            output::print(&format!("run {tag}: Succeeded\n"))?;
            after.map_err(|e| anyhow!("run '{tag}' succeeded, but {e}"))
        }
        Some(why) => {
            // A stall's record names the run already (`run 'T' made no progress: …`).
            let message = if why.starts_with(&format!("run '{tag}' ")) {
                why
            } else {
                format!("run '{tag}' failed: {why}")
            };
            Err(ExitError::new(end.code, also(message, after)).into())
        }
    }
}

/// A failed run's exit code: 6 when it could not start (its set-up failed: an image,
/// a ConfigMap or Secret it names), 3 when its training failed.
fn failed_code(failure: &Failure) -> u8 {
    match failure.kind {
        FailureKind::CannotStart(_) => EXIT_CANNOT_START,
        _ => EXIT_TRAINING_FAILED,
    }
}

/// The lines under a final verdict: the run's time (`timing::of_run`), what it held
/// (`metrics/cost.rs`) and the training's report, each if there is one.
fn time_and_training(
    tracker: &Tracker,
    all_workers: bool,
    training: &Training,
    metrics: Option<&RunMetrics>,
) -> Result<()> {
    if let Some(time) = crate::verdict::timing::of_run(tracker, all_workers) {
        output::print(&format!("{}\n", time.line(crate::duration::now())))?;
    }
    if let Some(cost) = metrics.and_then(|m| m.cost) {
        output::print(&format!("{}\n", cost.line()))?;
    }
    if let Some(line) = show::report(training) {
        output::print(&format!("{line}\n"))?;
    }
    Ok(())
}

/// `--start-timeout` passed: a verdict, so the pods that did start are stopped (they
/// hold their GPUs), then `--save-logs` and `--cleanup`; exit 5 naming what holds it up.
async fn not_started(cluster: &Cluster, wait: &Wait, seen: Seen<'_>, d: Duration) -> Result<()> {
    let tracker = seen.tracker;
    let message = format!(
        "run '{}' did not start within {} of its creation (--start-timeout): {}",
        wait.tag,
        humantime_secs(d),
        crate::verdict::start::describe_holdups(&tracker.holdups())
    );
    let record = format!(
        "Failed: {} {})",
        super::recorded::DID_NOT_START,
        humantime_secs(d)
    );
    let after = after_the_verdict(cluster, wait, seen, &record).await;
    Err(ExitError::new(EXIT_START_TIMEOUT, also(message, after)).into())
}

/// `timed out after 90s waiting for run 'T' to end (verdict so far: Pending; who: why)`.
fn timed_out(tag: &str, until: WaitFor, tracker: &Tracker, d: Duration) -> String {
    let what = match until {
        WaitFor::Start => "start",
        WaitFor::End => "end",
    };
    let mut message = format!(
        "timed out after {} waiting for run '{}' to {what} (verdict so far: {}",
        humantime_secs(d),
        tag,
        tracker.verdict().name()
    );
    let summary = tracker.summary();
    let queued: u32 = summary.iter().map(|r| r.counts.queued).sum();
    if queued > 0 {
        message.push_str(&format!(
            "; {queued} pod{} still queued",
            if queued == 1 { "" } else { "s" }
        ));
        if let Some(queue) = summary.iter().find_map(|r| r.queue.clone()) {
            message.push_str(&format!(" in {queue}"));
        }
    }
    if let Some((who, reason)) = summary.into_iter().find_map(|r| r.stuck) {
        message.push_str(&format!("; {who}: {reason}"));
    }
    message.push(')');
    message
}

pub(super) fn humantime_secs(d: Duration) -> String {
    crate::duration::age(d.as_secs())
}

/// `message`, and what went wrong after the end if anything did.
fn also(mut message: String, after: Result<()>) -> String {
    if let Err(e) = after {
        message.push_str(&format!("; also, {e}"));
    }
    message
}

/// The failed pod's last lines, on stderr before the error line.
async fn show_failed_log(cluster: &Cluster, tracker: &Tracker, failure: &Failure) {
    if !matches!(failure.kind, FailureKind::Exited { .. }) {
        return;
    }
    let Some(pod) = tracker.live().find(|p| p.name == failure.pod) else {
        return;
    };
    let text = crate::ops::blame::last_lines(cluster, pod).await;
    if text.trim().is_empty() {
        return;
    }
    // A closed stderr is no reason to fail the wait.
    output::eprint(&crate::ops::blame::shown(pod, &text));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use anyhow::anyhow;
    use serde_json::json;

    use super::{also, timed_out};
    use crate::ops::wait::WaitFor;
    use crate::verdict::Tracker;
    use crate::verdict::tests::view;

    #[test]
    fn a_time_out_says_the_verdict_so_far_and_what_holds_the_run_up() {
        let mut tracker = Tracker::new("t", false);
        tracker.replace(vec![view(json!({
            "metadata": {"name": "t-worker-0", "labels": {
                "training_attempt": "t", "tf-spawner/replica-type": "worker", "tf-spawner/replica-index": "0"}},
            "status": {"phase": "Pending"}
        }))]);
        let line = timed_out("t", WaitFor::End, &tracker, Duration::from_secs(90));
        assert!(
            line.starts_with(
                "timed out after 90s waiting for run 't' to end (verdict so far: Pending"
            ),
            "{line}"
        );
        assert!(line.ends_with(')'), "{line}");
        let line = timed_out("t", WaitFor::Start, &tracker, Duration::from_secs(5));
        assert!(line.contains("waiting for run 't' to start"), "{line}");
    }

    #[test]
    fn what_went_wrong_after_the_end_is_added_to_the_message() {
        assert_eq!(also("run 't' failed".into(), Ok(())), "run 't' failed");
        assert_eq!(
            also(
                "run 't' failed".into(),
                Err(anyhow!("the cleanup failed: 403"))
            ),
            "run 't' failed; also, the cleanup failed: 403"
        );
    }
}
