//! `tf-spawner logs -t TAG [-f]`: the logs of every pod of a run as one stream, each
//! line prefixed by its task (`worker-1 | …`), coloured per task on a terminal.
//!
//! Whether a pod has a log to read is decided from the pod's own status (phase and
//! container statuses), never from the log request's answer: for a pod no node has
//! taken yet, a real API server answers 204 with no body, which looks like an empty log.
//!
//! Without `-f`, each pod's log is printed whole, in task order (chief, ps, workers,
//! evaluator); a pod whose container has not started yet is skipped with a note on
//! stderr. With `-f`, one stream per pod is followed (lines of one pod stay in order,
//! pods interleave as lines arrive); a pod still waiting to start is opened, from its
//! first line, once its status says it has started; pods that appear later are picked
//! up from the run's watch, and the command ends when the run is over: its verdict is
//! final and every chief and worker pod has ended (parameter servers and evaluators,
//! which do not exit on their own, are cut off then). Ctrl-C ends it with exit 0; so
//! does a closed pipe (`| head`).
//!
//! Its rooms: `pick.rs` (which pods), `lines.rs` (how a line is shown), `kept.rs`
//! (the logs restarts kept: `--attempt N`, `--save-logs`), `follow.rs` (`-f` of one
//! attempt), `pod_stream.rs` (one pod's followed stream), `across_restarts.rs` (`-f`
//! from one attempt to the next).

mod across_restarts;
mod follow;
mod kept;
mod lines;
mod pick;
mod pod_stream;

use anyhow::Result;
use futures::{StreamExt, stream};

use crate::cluster::Cluster;
use crate::cluster::pod_logs::{self, LogOptions};
use crate::output;
use crate::signals;
use crate::verdict::{PodView, Tracker};

pub(crate) use kept::save_kept;
pub use lines::no_log;
use lines::{Prefixes, note, prefixed};
pub use pick::Pick;
pub(super) use pod_stream::{Cursor, until_started, wait_for_change};

/// Log downloads in flight at once without `-f`.
const FETCH_IN_FLIGHT: usize = 8;

/// Prints the logs of run `tag` (followed with `options.follow`, until the run is over
/// or a signal).
pub(crate) async fn print(
    cluster: &Cluster,
    tag: &str,
    options: &LogOptions,
    pick: &Pick,
) -> Result<()> {
    let tracker = super::status::snapshot(cluster, tag, false).await?;
    pick.check(&tracker, tag)?;
    let mut prefixes = Prefixes::new(&tracker, output::fancy_stdout());
    if let Some(n) = pick.attempt.filter(|n| *n != tracker.attempt()) {
        return kept::attempt(
            cluster,
            tag,
            n,
            tracker.attempt(),
            options,
            pick,
            &mut prefixes,
        )
        .await;
    }
    if options.follow {
        tokio::select! {
            result = across_restarts::across_restarts(cluster, tag, options, pick, tracker, &mut prefixes) => result,
            _ = signals::stop_requested() => Ok(()),
        }
    } else {
        once(cluster, options, pick, &tracker, &mut prefixes).await
    }
}

fn sorted(tracker: &Tracker) -> Vec<PodView> {
    tracker.in_task_order().into_iter().cloned().collect()
}

/// Every pod's log, whole, in task order.
async fn once(
    cluster: &Cluster,
    options: &LogOptions,
    pick: &Pick,
    tracker: &Tracker,
    prefixes: &mut Prefixes,
) -> Result<()> {
    let (pods, waiting): (Vec<PodView>, Vec<PodView>) = sorted(tracker)
        .into_iter()
        .filter(|p| pick.wants(p))
        .partition(|p| p.started);
    for pod in &waiting {
        note(&no_log(pod));
    }
    let mut fetched = stream::iter(pods)
        .map(|pod| async move {
            let params = options.params(pod.setup.container.as_deref());
            let result = pod_logs::fetch(cluster, &pod.name, &params).await;
            (pod, result)
        })
        .buffered(FETCH_IN_FLIGHT);
    while let Some((pod, result)) = fetched.next().await {
        match result {
            Ok(text) => {
                let prefix = prefixes.prefix(&pod.label());
                if !output::print_styled(&prefixed(&prefix, &text, options.raw))? {
                    return Ok(());
                }
            }
            // Its status said it had started, but the server says it has not (a status
            // not yet up to date): the same note.
            Err(e) if pod_logs::not_started(&e) => note(&no_log(&PodView {
                started: false,
                ..pod
            })),
            Err(e) => {
                return Err(cluster.explain(&format!("reading the log of pod {}", pod.name), &e));
            }
        }
    }
    Ok(())
}
