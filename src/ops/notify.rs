//! `--notify CMD|URL`: a message at a run's verdict (and at a sweep's end). A command
//! line is run by `sh -c` with the verdict in its environment and the JSON summary on
//! its stdin; an `http(s)://` URL is sent the JSON by a POST (its `text` field is what
//! Slack and Mattermost show). Each has [`TIMEOUT`]; a failure is a warning and never
//! changes the exit code. The summary is built in `metrics/notice.rs` (pure).

use std::process::Stdio;
use std::time::Duration;

use anyhow::Result;
use http_body_util::{BodyExt, Full};
use tokio::io::AsyncWriteExt;

use crate::cluster::Cluster;
use crate::errors::{
    EXIT_CANNOT_START, EXIT_INTERRUPTED, EXIT_START_TIMEOUT, EXIT_TERMINATED, EXIT_TIMEOUT,
    EXIT_TRAINING_FAILED, EXIT_USAGE, exit_code, one_line,
};
use crate::metrics::RunMetrics;
use crate::metrics::notice::{Ending, ExperimentEnd, Notice, Target};
use crate::output;
use crate::trainlog::Training;
use crate::verdict::{FailureKind, Tracker, Verdict};

mod proxy;

/// How long a notice may take: the command's run, or the POST's answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The verdict word and exit code of a command's result, or `None` when nothing is to
/// be told: an interruption (the user is there), or a wait that ended without an end
/// (`--for start`).
pub fn verdict_of(result: &Result<()>, succeeded: bool) -> Option<(&'static str, u8)> {
    match result {
        Ok(()) if succeeded => Some(("Succeeded", 0)),
        Ok(()) => None,
        Err(e)
            if e.downcast_ref::<crate::metrics::early::StoppedEarly>()
                .is_some() =>
        {
            Some((crate::metrics::early::STOPPED_EARLY, 0))
        }
        Err(e) => match exit_code(e) {
            EXIT_INTERRUPTED | EXIT_TERMINATED => None,
            EXIT_TIMEOUT => Some(("TimedOut", EXIT_TIMEOUT)),
            1 => Some(("Error", 1)),
            EXIT_USAGE => Some(("Error", EXIT_USAGE)),
            code => Some(("Failed", code)),
        },
    }
}

/// What a follow saw of the run at its end: its pods, its training, its metrics (those
/// of the attempts before a restart included).
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    pub tracker: &'a Tracker,
    pub training: &'a Training,
    pub metrics: Option<&'a RunMetrics>,
}

/// After a wait (`wait`, `spawn --wait`, a sweep's run): the notice of its end, if
/// `--notify` names where and the wait has something to tell.
pub async fn after_wait(
    cluster: &Cluster,
    target: Option<&Target>,
    tag: &str,
    seen: Seen<'_>,
    result: &Result<()>,
) {
    let Some(target) = target else { return };
    let succeeded = matches!(seen.tracker.verdict(), Verdict::Succeeded);
    if verdict_of(result, succeeded).is_none() {
        return;
    }
    let ending = ending(cluster, tag, seen, result).await;
    send(target, &Notice::of_run(ending)).await;
}

/// How a wait ended, as a notice and `wait -o json` tell it: the verdict word
/// ([`verdict_of`]; `Cancelled` for an interruption, `Started` for a `--for start`
/// that saw every pod start), the kind of failure, the failed task and its last lines.
pub async fn ending(cluster: &Cluster, tag: &str, seen: Seen<'_>, result: &Result<()>) -> Ending {
    let Seen {
        tracker, metrics, ..
    } = seen;
    let verdict = tracker.verdict();
    let (word, code) =
        verdict_of(result, matches!(verdict, Verdict::Succeeded)).unwrap_or(match result {
            Ok(()) => ("Started", 0),
            Err(e) => ("Cancelled", exit_code(e)),
        });
    let (failed_task, last_lines) = match &verdict {
        Verdict::Failed(f) if code != 0 && matches!(f.kind, FailureKind::Exited { .. }) => {
            match tracker.live().find(|p| p.name == f.pod) {
                Some(pod) => (
                    Some(pod.label()),
                    super::blame::last_lines(cluster, pod).await,
                ),
                None => (None, String::new()),
            }
        }
        Verdict::Failed(f) if code != 0 => (
            Some(f.task.map_or_else(|| f.pod.clone(), |t| t.id())),
            String::new(),
        ),
        _ => (None, String::new()),
    };
    Ending {
        tag: tag.to_string(),
        namespace: Some(cluster.namespace().to_string()),
        verdict: word,
        exit_code: code,
        failure: failure_of(&verdict, code),
        reason: result.as_ref().err().map(one_line),
        duration_seconds: crate::verdict::timing::of_run(tracker, false).map(|t| t.seconds()),
        metrics: metrics.cloned(),
        failed_task,
        last_lines,
    }
}

/// The kind of failure a pipeline branches on, by the exit code (and the verdict for
/// a failed training): `exited` (a task exited non-zero), `deadline` (`--deadline`
/// ended it), `removed` (a pod taken away:
/// evicted, preempted, deleted, lost with its node), `stalled`, `cannot_start` (exit
/// 6), `not_started` (`--start-timeout`, exit 5), `error` (the wait could not go on);
/// `None` for a success, a time-out or a cancel.
fn failure_of(verdict: &Verdict, code: u8) -> Option<&'static str> {
    match code {
        0 | EXIT_TIMEOUT | EXIT_INTERRUPTED | EXIT_TERMINATED => None,
        EXIT_START_TIMEOUT => Some("not_started"),
        EXIT_CANNOT_START => Some("cannot_start"),
        EXIT_TRAINING_FAILED => Some(match verdict {
            Verdict::Failed(f) => match f.kind {
                // The kubelet ended it at its activeDeadlineSeconds (`--deadline`).
                FailureKind::Exited {
                    reason: Some(ref r),
                    ..
                } if r == crate::verdict::DEADLINE_EXCEEDED => "deadline",
                FailureKind::Exited { .. } => "exited",
                FailureKind::CannotStart(_) => "cannot_start",
                FailureKind::Gone | FailureKind::Removed(_) | FailureKind::Stopped => "removed",
            },
            _ => "stalled",
        }),
        _ => Some("error"),
    }
}

/// Sends `notice` to `target`; a failure is a warning.
pub async fn send(target: &Target, notice: &Notice) {
    let body = serde_json::to_vec(notice).unwrap_or_default();
    let sent = match target {
        Target::Command(line) => tokio::time::timeout(TIMEOUT, command(line, notice, &body)).await,
        Target::Url(url) => tokio::time::timeout(TIMEOUT, post(url, body)).await,
    };
    let problem = match sent {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e,
        Err(_) => format!("no answer within {}s", TIMEOUT.as_secs()),
    };
    output::warning(&format!(
        "--notify {target}: {problem} (the run's outcome stands)"
    ));
}

/// `sh -c LINE`, the JSON on its stdin, the verdict in its environment; its stdout
/// goes to our stderr (our stdout may be read by a script), its stderr too.
async fn command(line: &str, notice: &Notice, body: &[u8]) -> Result<(), String> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .envs(notice.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin closes it: no problem.
        let _ = stdin.write_all(body).await;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("cannot run it: {e}"))?;
    output::eprint(&String::from_utf8_lossy(&out.stdout));
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let last = said.lines().rev().find(|l| !l.trim().is_empty());
    let how = match out.status.code() {
        Some(c) => format!("exited {c}"),
        None => "was killed".to_string(),
    };
    Err(match last {
        Some(l) => format!("the command {how}: {l}"),
        None => format!("the command {how}"),
    })
}

/// POSTs `body` (JSON) to `url`, through the proxy the environment names for it
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, as curl reads them): a 2xx answer is success.
async fn post(url: &str, body: Vec<u8>) -> Result<(), String> {
    let request = http::Request::post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(
            http::header::USER_AGENT,
            concat!("tf-spawner/", env!("CARGO_PKG_VERSION")),
        )
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| format!("not a URL to send to: {e}"))?;
    let proxy = proxy::proxy_for(request.uri());
    let answer = proxy::send(request, proxy.as_ref())
        .await
        .map_err(|e| match &proxy {
            Some(p) => format!("cannot send it through the proxy {}: {e}", proxy::shown(p)),
            None => format!("cannot send it: {e}"),
        })?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    let text = answer
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    let first = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    Err(format!("the server answered {status} {first}")
        .trim_end()
        .to_string())
}

/// After a `--local` run (alone or a local sweep's): the notice of its end, its
/// metrics read from its folder (`metrics.json`, written at its end).
pub async fn after_local(target: Option<&Target>, tag: &str, result: &Result<()>) {
    let Some(target) = target else { return };
    let Some((word, code)) = verdict_of(result, result.is_ok()) else {
        return;
    };
    let dir = crate::labels::local_output_dir(tag);
    let metrics = std::fs::read_to_string(dir.join(crate::metrics::METRICS_FILE))
        .ok()
        .and_then(|t| RunMetrics::parse(&t));
    let ending = Ending {
        tag: tag.to_string(),
        namespace: None,
        verdict: word,
        exit_code: code,
        failure: None,
        reason: result.as_ref().err().map(one_line),
        duration_seconds: metrics.as_ref().and_then(|m| m.secs),
        metrics,
        failed_task: None,
        last_lines: String::new(),
    };
    send(target, &Notice::of_run(ending)).await;
}

/// At a sweep's end (after each run's own notice): the experiment's, its runs by
/// verdict, the sweep's time, what the runs held and the best of them.
pub async fn after_sweep(target: Option<&Target>, end: ExperimentEnd<'_>, result: &Result<()>) {
    let Some(target) = target else { return };
    let Some((_, code)) = verdict_of(result, result.is_ok()) else {
        return;
    };
    let reason = result.as_ref().err().map(one_line);
    let notice = Notice::of_experiment(end, code, reason);
    send(target, &notice).await;
}
