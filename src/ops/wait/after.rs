//! After a verdict (or a time-out): the unfinished pods stopped, the verdict recorded
//! on the run's ConfigMap, `--save-logs`, `--cleanup`. Each step reports its own
//! problem and none stops the others.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use futures::{StreamExt, stream};

use super::options::{CANCEL_BOUND, OnCancel, Wait};
use crate::cluster::stop::Stopped;
use crate::cluster::{Cluster, pod_logs};
use crate::metrics::RunMetrics;
use crate::ops::notify::Seen;
use crate::output;
use crate::verdict::{PodView, Tracker};

/// Log downloads in flight at once for `--save-logs`.
const SAVE_IN_FLIGHT: usize = 8;

/// After a verdict: the pods still unfinished are stopped and kept (unless
/// `--keep-running`, or `--cleanup` without `--save-logs` deletes them all anyway), the
/// verdict is recorded on the run's ConfigMap, then `--save-logs` (once the stopped pods
/// have ended, so their last lines are in), then `--cleanup`. Every problem is reported,
/// none stops the others.
pub(super) async fn after_the_verdict(
    cluster: &Cluster,
    wait: &Wait,
    seen: Seen<'_>,
    verdict: &str,
) -> Result<()> {
    let tracker = seen.tracker;
    let mut problems: Vec<String> = Vec::new();
    // Pods the follower saw still running at the verdict (a task, or a sidecar beside
    // a finished one); none: no request at all.
    let unfinished = tracker.live().any(PodView::still_running);
    let mut stopped = Stopped::default();
    if unfinished && !wait.keep_running && (!wait.cleanup || wait.save_logs.is_some()) {
        stopped = stop_step(cluster, (wait, AFTER_VERDICT), tracker, &mut problems).await;
    }
    if !wait.cleanup {
        record_step(cluster, wait, seen.tracker, seen.metrics, verdict, &stopped).await;
    }
    if wait.save_logs.is_some() && !stopped.stopped.is_empty() {
        crate::cluster::stop::until_ended(cluster, &wait.tag, STOP_WAIT).await;
    }
    save_logs_step(cluster, wait, &mut problems).await;
    cleanup_step(cluster, wait, &mut problems).await;
    joined(problems)
}

/// How long `--save-logs` waits for the stopped pods to end (their grace period, 30 s by
/// default, and the kubelet's round).
const STOP_WAIT: Duration = Duration::from_secs(45);

/// The verdict, the tasks deleted unstarted, why the tasks stopped or deleted before
/// they started had not started and the training's metrics, on the run's ConfigMap: its
/// record.
async fn record_step(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &Tracker,
    metrics: Option<&RunMetrics>,
    verdict: &str,
    stopped: &Stopped,
) {
    let never: Vec<&str> = stopped.deleted.iter().map(|(_, t)| t.as_str()).collect();
    let ended = |pod: &str| {
        stopped.stopped.iter().any(|p| p == pod) || stopped.deleted.iter().any(|(p, _)| p == pod)
    };
    let unstarted: Vec<(String, String)> = tracker
        .unstarted()
        .into_iter()
        .filter(|(_, pod, _)| ended(pod))
        .map(|(task, _, why)| (task, why.to_string()))
        .collect();
    let why = crate::cluster::record::group_not_started(&unstarted);
    let end = crate::cluster::record::Ending {
        verdict,
        never_started: &never,
        not_started: &why,
        metrics,
    };
    if let Err(e) = crate::cluster::record::write(cluster, &wait.tag, end).await {
        output::note(&format!(
            "the verdict is not recorded on the run's ConfigMap: {e:#}"
        ));
    }
}

/// After a time-out (no verdict: nothing is stopped): `--save-logs`, then `--cleanup`.
pub(super) async fn after_the_end(cluster: &Cluster, wait: &Wait) -> Result<()> {
    let mut problems: Vec<String> = Vec::new();
    save_logs_step(cluster, wait, &mut problems).await;
    cleanup_step(cluster, wait, &mut problems).await;
    joined(problems)
}

/// A cancelled wait (SIGINT, SIGTERM): `--save-logs`, then what `--cleanup` (the run
/// deleted) or else `--on-cancel` asks, within [`CANCEL_BOUND`]. The error: the signal's
/// exit code and one line saying what was done and how to undo or finish it.
pub(super) async fn cancelled(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &Tracker,
    code: u8,
) -> anyhow::Error {
    let (tag, ns) = (wait.tag.as_str(), cluster.namespace());
    let by = crate::signals::asked_by(code);
    let action = if wait.cleanup {
        OnCancel::Delete
    } else {
        wait.on_cancel
    };
    let status = format!("tf-spawner status -t {tag} -n {ns}");
    let delete = format!("tf-spawner -d -t {tag} -n {ns}");
    let work = async {
        let mut problems = Vec::new();
        save_logs_step(cluster, wait, &mut problems).await;
        let done = on_cancel(cluster, wait, tracker, (action, by), &mut problems).await;
        (done, problems)
    };
    let message = match tokio::time::timeout(CANCEL_BOUND, work).await {
        Ok((done, problems)) => match joined(problems) {
            Ok(()) => format!("{by}: {done}"),
            Err(e) => format!("{by}: {done}; but {e} (finish it: {delete})"),
        },
        Err(_) => format!(
            "{by}: run '{tag}' was to be {} but that took more than {}s; it may be left in part (see: {status}; finish it: {delete})",
            match action {
                OnCancel::Leave => "left as it is",
                OnCancel::Stop => "stopped",
                OnCancel::Delete => "deleted",
            },
            CANCEL_BOUND.as_secs()
        ),
    };
    crate::errors::ExitError::new(code, message).into()
}

/// What `--on-cancel` (or `--cleanup`: `Delete`) does, and what was done, in words.
async fn on_cancel(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &Tracker,
    (action, by): (OnCancel, &str),
    problems: &mut Vec<String>,
) -> String {
    let (tag, ns) = (wait.tag.as_str(), cluster.namespace());
    let status = format!("tf-spawner status -t {tag} -n {ns}");
    let delete = format!("tf-spawner -d -t {tag} -n {ns}");
    match action {
        OnCancel::Leave => {
            format!("run '{tag}' was left as it is (see: {status}; stop it: {delete})")
        }
        OnCancel::Stop => {
            let unfinished = tracker.live().any(PodView::still_running);
            let stopped = if unfinished {
                stop_step(cluster, (wait, AT_CANCEL), tracker, problems).await
            } else {
                Stopped::default()
            };
            let verdict =
                format!("Cancelled: its wait was cancelled ({by}), its unfinished pods stopped");
            record_step(cluster, wait, tracker, None, &verdict, &stopped).await;
            format!(
                "run '{tag}' was stopped: its unfinished pods ended, kept with the finished ones and the logs (see: {status}; delete it: {delete})"
            )
        }
        OnCancel::Delete => {
            delete_step(cluster, wait, problems).await;
            format!("run '{tag}' was deleted")
        }
    }
}

fn joined(problems: Vec<String>) -> Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(problems.join("; ")))
    }
}

async fn save_logs_step(cluster: &Cluster, wait: &Wait, problems: &mut Vec<String>) {
    if let Some(dir) = &wait.save_logs {
        // A fresh look: the pods stopped since the verdict have ended.
        let saved = match crate::ops::status::snapshot(cluster, &wait.tag, wait.all_workers).await {
            Ok(tracker) => match save_logs(cluster, &tracker, dir).await {
                // And the logs of the attempts restarts replaced (POD.attempt-N.log).
                Ok(n) => crate::ops::logs::save_kept(cluster, &wait.tag, dir)
                    .await
                    .map(|kept| n + kept),
                e => e,
            },
            Err(e) => Err(e),
        };
        match saved {
            Ok(saved) => {
                let _ = output::print(&format!("saved {saved} pod logs in {}\n", dir.display()));
            }
            Err(e) => problems.push(format!("saving logs failed: {e:#}")),
        }
    }
}

/// The run's pods that have not finished are stopped (`cluster::stop`).
async fn stop_step(
    cluster: &Cluster,
    (wait, when): (&Wait, &str),
    tracker: &Tracker,
    problems: &mut Vec<String>,
) -> Stopped {
    match crate::cluster::stop::stop_unfinished(cluster, &wait.tag, wait.max_in_flight).await {
        Ok(stopped) => {
            // As the follower saw them at the verdict: a pod whose container never ran
            // (a pull that failed, still being created) has no log to keep.
            let unstarted: Vec<String> = tracker
                .unstarted()
                .into_iter()
                .map(|(_, pod, _)| pod)
                .collect();
            let (never, ran): (Vec<String>, Vec<String>) = stopped
                .stopped
                .iter()
                .cloned()
                .partition(|p| unstarted.contains(p));
            if !ran.is_empty() {
                let _ = output::print(&format!(
                    "stopped {} (kept with {} logs until -d; --keep-running leaves them running)\n",
                    counted(
                        &ran,
                        &format!("pod still running {when}"),
                        &format!("pods still running {when}")
                    ),
                    if ran.len() == 1 { "its" } else { "their" },
                ));
            }
            if !never.is_empty() {
                let _ = output::print(&format!(
                    "stopped {} (no log; kept until -d: tf-spawner status -t {} says why)\n",
                    counted(&never, "pod that never started", "pods that never started"),
                    wait.tag,
                ));
            }
            if !stopped.deleted.is_empty() {
                let tasks: Vec<String> = stopped.deleted.iter().map(|(_, t)| t.clone()).collect();
                let _ = output::print(&format!(
                    "deleted {} (no node had taken {}: no log)\n",
                    counted(
                        &tasks,
                        "task that never started",
                        "tasks that never started"
                    ),
                    if tasks.len() == 1 { "it" } else { "them" },
                ));
            }
            stopped
        }
        Err(e) => {
            problems.push(format!("stopping the unfinished pods failed: {e:#}"));
            Stopped::default()
        }
    }
}

/// When [`stop_step`] stops pods, in its line (`pods still running after the verdict`).
const AFTER_VERDICT: &str = "after the verdict";
const AT_CANCEL: &str = "when the wait was cancelled";

/// `2 pods still running after the verdict: a, b` (the first few names).
fn counted(names: &[String], one: &str, many: &str) -> String {
    const SHOWN: usize = 8;
    let mut shown = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        shown.push_str(", …");
    }
    let what = if names.len() == 1 { one } else { many };
    format!("{} {what}: {shown}", names.len())
}

async fn cleanup_step(cluster: &Cluster, wait: &Wait, problems: &mut Vec<String>) {
    if wait.cleanup {
        delete_step(cluster, wait, problems).await;
    }
}

/// The run deleted (`--cleanup`, `--on-cancel delete`).
async fn delete_step(cluster: &Cluster, wait: &Wait, problems: &mut Vec<String>) {
    let deleted = if wait.supervising {
        crate::ops::delete::delete_as_supervisor(cluster, &wait.tag, wait.max_in_flight).await
    } else {
        crate::ops::delete::delete(cluster, &wait.tag, wait.max_in_flight).await
    };
    let _ = output::print(&format!(
        "deleted {} objects of run {}\n",
        deleted.removed.len(),
        wait.tag
    ));
    for note in &deleted.notes {
        output::note(note);
    }
    if let Some(err) = crate::ops::delete::failure(&deleted, &wait.tag, cluster.namespace()) {
        problems.push(format!("the cleanup failed: {err}"));
    }
}

/// Writes every pod's full log to `DIR/POD.log`; returns how many were written. A log
/// the kubelet could not serve (its notice in place of the lines, or an error status
/// naming it) is said in one line, the pod and why, and not written.
async fn save_logs(cluster: &Cluster, tracker: &Tracker, dir: &Path) -> Result<usize> {
    let pods: Vec<PodView> = tracker.live().cloned().collect();
    let results: Vec<Result<bool>> = stream::iter(pods)
        .map(|pod| save_one(cluster, pod, dir))
        .buffer_unordered(SAVE_IN_FLIGHT)
        .collect()
        .await;
    let mut saved = 0;
    for r in results {
        if r? {
            saved += 1;
        }
    }
    Ok(saved)
}

/// One pod's log to `DIR/POD.log`: whether it was written.
async fn save_one(cluster: &Cluster, pod: PodView, dir: &Path) -> Result<bool> {
    // From the pod's status: a log request for a pod no node has taken answers 204 and
    // no body, which would be saved as an empty log.
    if !pod.started {
        output::note(&crate::ops::logs::no_log(&pod));
        return Ok(false);
    }
    let params = pod_logs::LogOptions::default().params(pod.setup.container.as_deref());
    match pod_logs::fetch(cluster, &pod.name, &params).await {
        Ok(text) => {
            if let Some(why) = pod_logs::unserved(&text) {
                output::note(&unserved(&pod.name, why));
                return Ok(false);
            }
            let path = dir.join(format!("{}.log", pod.name));
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(true)
        }
        Err(e) => {
            let status = e.status().map(|s| s.message.trim());
            if let Some(why) = status.filter(|m| m.lines().any(pod_logs::kubelet_notice)) {
                output::note(&unserved(&pod.name, why));
                Ok(false)
            } else if pod_logs::not_started(&e) {
                output::note(&crate::ops::logs::no_log(&PodView {
                    started: false,
                    ..pod
                }));
                Ok(false)
            } else if e.status().is_some() {
                // An answer, not an outage: this pod's log is not to be had.
                output::note(&format!("pod {}: its log was not saved: {e}", pod.name));
                Ok(false)
            } else {
                Err(cluster.explain(&format!("reading the log of pod {}", pod.name), &e))
            }
        }
    }
}

/// `pod P: its log was not saved: the kubelet could not serve it (unable to …)`.
fn unserved(pod: &str, why: &str) -> String {
    format!("pod {pod}: its log was not saved: the kubelet could not serve it ({why})")
}

#[cfg(test)]
mod tests {
    use super::{counted, joined, unserved};

    #[test]
    fn a_log_the_kubelet_could_not_serve_is_one_line_naming_the_pod_and_why() {
        let line = unserved(
            "t-worker-1",
            "unable to retrieve container logs for containerd://4f1c",
        );
        assert_eq!(
            line,
            "pod t-worker-1: its log was not saved: the kubelet could not serve it (unable to retrieve container logs for containerd://4f1c)"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn names_are_counted_and_the_first_few_shown() {
        let one = vec!["a".to_string()];
        assert_eq!(counted(&one, "pod", "pods"), "1 pod: a");
        let many: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        assert_eq!(
            counted(&many, "pod", "pods"),
            "10 pods: p0, p1, p2, p3, p4, p5, p6, p7, …"
        );
    }

    #[test]
    fn every_problem_after_the_verdict_is_said_together() {
        assert!(joined(Vec::new()).is_ok());
        let err = joined(vec!["a failed".into(), "b failed".into()]).unwrap_err();
        assert_eq!(err.to_string(), "a failed; b failed");
    }
}
