//! A wait beside the run's follower (`cluster/follower.rs`): while another `wait` (or a
//! supervisor) holds the run, this one shows the run as a follower would (the live view,
//! attempt after attempt) and acts on nothing: no restart, no stop, no record, no
//! cleanup. It ends with the verdict the follower recorded, exiting with the follower's
//! exit code; or, when the follower lets go of the run without a verdict or stops
//! checking in, it says so and takes the run over (`mod.rs` follows it then as its own).

use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::fold::{Done, Outcome};
use super::options::Wait;
use crate::cluster::Cluster;
use crate::cluster::follower::{self, Followed, HOLD, Holder};
use crate::errors::{EXIT_TIMEOUT, EXIT_TRAINING_FAILED, ExitError};
use crate::labels::VERDICT_ANNOTATION;
use crate::output;
use crate::verdict::Tracker;

/// How often the record is read for the follower's news.
const POLL: Duration = Duration::from_secs(3);

/// How an attached wait ended.
pub(super) enum Attached {
    /// With the follower's verdict, a time-out, a signal: the wait's result.
    Ended(Result<()>),
    /// The follower let go of the run or stopped checking in: this wait may take it.
    Free,
}

/// Shows run `wait.tag`, which `holder` follows, until the follower's verdict, this
/// wait's end, or the follower's.
pub(super) async fn follow(cluster: &Cluster, wait: &Wait, holder: Holder) -> Result<Attached> {
    let tag = wait.tag.as_str();
    let before = follower::read(cluster, &Followed::Run(tag.to_string()))
        .await?
        .and_then(|m| verdict(&m));
    let ago = crate::duration::age(
        crate::duration::now()
            .saturating_sub(holder.checked_in)
            .max(0) as u64,
    );
    output::print(&format!(
        "run {tag} is followed by {} (checked in {ago} ago), which restarts, stops and records it: this wait shows the run and acts on nothing\n",
        holder.who
    ))?;
    if let Some(hint) = stop_hint(cluster.namespace(), tag, &holder) {
        output::print(&hint)?;
    }
    let view = view_only(wait);
    tokio::select! {
        shown = show(cluster, &view) => Ok(Attached::Ended(Err(ended_showing(wait, &holder, shown?)))),
        news = news(cluster, tag, holder.clone(), before) => match news? {
            News::Verdict { text, code, by } => Ok(Attached::Ended(told(tag, &text, code, &by))),
            News::Free(why) => {
                output::print(&format!("run {tag}: {why}; this wait takes the run over\n"))?;
                Ok(Attached::Free)
            }
            News::Gone => Ok(Attached::Ended(Err(anyhow::anyhow!(
                "{}",
                crate::ops::status::no_run(cluster, tag).await
            )))),
        },
    }
}

/// When the follower is the run's supervisor (`spawn --detach`: its Job's pod), how to
/// follow the run from here instead: stop the supervisor, and this wait takes the run over.
fn stop_hint(namespace: &str, tag: &str, holder: &Holder) -> Option<String> {
    let job = crate::labels::supervisor_name(tag);
    holder.who.contains(&format!(" on {job}-")).then(|| {
        format!(
            "to follow it from here instead, stop its supervisor (the run goes on): kubectl delete job {job} -n {namespace}\n"
        )
    })
}

/// `wait` with everything that acts taken away: what the live view needs alone.
fn view_only(wait: &Wait) -> Wait {
    let mut view = wait.clone();
    view.start_timeout = None;
    view.stall = None;
    view.early = None;
    view.restarts = crate::ops::restart::Restarts::default();
    view
}

/// The live view, attempt after attempt (a restart's pods followed afresh), until this
/// wait's time-out or a signal: that outcome.
async fn show(cluster: &Cluster, view: &Wait) -> Result<Outcome> {
    let mut ended: Option<u32> = None;
    loop {
        if let Some(attempt) = ended {
            next_attempt(cluster, &view.tag, attempt).await?;
        }
        let mut tracker = Tracker::new(&view.tag, view.all_workers);
        let (outcome, _) = super::stream::follow(cluster, view, &mut tracker).await?;
        match outcome {
            Outcome::Timeout(_) | Outcome::Signal(_) => return Ok(outcome),
            // The attempt is over: the follower decides what comes next.
            _ => ended = Some(tracker.attempt()),
        }
    }
}

/// Resolves once a pod of a later attempt than `attempt` is there.
async fn next_attempt(cluster: &Cluster, tag: &str, attempt: u32) -> Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    let selector = crate::labels::run_selector(tag);
    loop {
        tokio::time::sleep(POLL).await;
        let pods = cluster
            .list_metadata::<Pod>(&selector)
            .await
            .map_err(|e| cluster.explain("listing the run's pods", &e))?;
        let later = pods.iter().any(|m| {
            let label = m
                .labels
                .as_ref()
                .and_then(|l| l.get(crate::labels::ATTEMPT_LABEL));
            label
                .and_then(|a| a.parse::<u32>().ok())
                .is_some_and(|a| a > attempt)
        });
        if later {
            return Ok(());
        }
    }
}

/// This wait's own end while the follower follows on: a time-out or a signal.
fn ended_showing(wait: &Wait, holder: &Holder, outcome: Outcome) -> anyhow::Error {
    let tag = wait.tag.as_str();
    let on = format!("run '{tag}' goes on, followed by {}", holder.who);
    match outcome {
        Outcome::Signal(code) => {
            let by = crate::signals::asked_by(code);
            ExitError::new(code, format!("{by}: stopped showing the run; {on}")).into()
        }
        Outcome::Timeout(d) => ExitError::new(
            EXIT_TIMEOUT,
            format!(
                "run '{tag}' has no verdict after {}; {on}",
                super::report::humantime_secs(d)
            ),
        )
        .into(),
        Outcome::Done(Done::Empty) => anyhow::anyhow!("run '{tag}' has no pods; {on}"),
        _ => anyhow::anyhow!("stopped showing run '{tag}'; {on}"),
    }
}

/// The verdict the follower recorded, said as this wait's own, with its exit code.
fn told(tag: &str, text: &str, code: u8, by: &str) -> Result<()> {
    output::print(&format!("run {tag}: {text} (recorded by {by})\n"))?;
    if code == 0 {
        return Ok(());
    }
    Err(ExitError::new(code, format!("run '{tag}' ended: {text}")).into())
}

/// What the record says of the follower.
enum News {
    /// It recorded a verdict, and ended with `code` (or stopped checking in after it).
    Verdict { text: String, code: u8, by: String },
    /// It let go of the run without a verdict, or stopped checking in: why, in words.
    Free(String),
    /// The run's record is gone.
    Gone,
}

/// Reads the record every [`POLL`] until the follower's news. Whether a follower still
/// checks in is judged by this wait's own clock: its check-in changed within [`HOLD`]
/// of this wait's reading (two machines' clocks need not agree).
async fn news(
    cluster: &Cluster,
    tag: &str,
    holder: Holder,
    before: Option<String>,
) -> Result<News> {
    let (mut seen, mut seen_at) = (holder, Instant::now());
    loop {
        tokio::time::sleep(POLL).await;
        let Some(meta) = follower::read(cluster, &Followed::Run(tag.to_string())).await? else {
            return Ok(News::Gone);
        };
        let current = follower::holder(&meta, crate::duration::now());
        if let Some(h) = &current
            && *h != seen
        {
            (seen, seen_at) = (h.clone(), Instant::now());
        }
        let silent = seen_at.elapsed() >= HOLD;
        if let Some(text) = verdict(&meta).filter(|v| Some(v) != before.as_ref())
            && (current.is_none() || silent)
        {
            let code = follower::exit_code(&meta).unwrap_or_else(|| code_of(&text));
            return Ok(News::Verdict {
                text,
                code,
                by: seen.who,
            });
        }
        match current {
            None => {
                return Ok(News::Free(format!(
                    "{} let go of it without a verdict",
                    seen.who
                )));
            }
            Some(_) if silent => {
                let secs = crate::duration::now()
                    .saturating_sub(seen.checked_in)
                    .max(0) as u64;
                let why = format!(
                    "its follower {} stopped checking in {} ago",
                    seen.who,
                    crate::duration::age(secs)
                );
                return Ok(News::Free(why));
            }
            Some(_) => {}
        }
    }
}

fn verdict(meta: &ObjectMeta) -> Option<String> {
    meta.annotations.as_ref()?.get(VERDICT_ANNOTATION).cloned()
}

/// The exit code a follower that recorded `verdict` ended with, when it did not say.
fn code_of(verdict: &str) -> u8 {
    let early = crate::metrics::early::STOPPED_EARLY;
    if verdict == "Succeeded" || verdict.starts_with(early) {
        0
    } else {
        EXIT_TRAINING_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(who: &str) -> Holder {
        Holder {
            who: who.to_string(),
            checked_in: 0,
        }
    }

    #[test]
    fn the_supervisors_pod_is_told_how_to_stop_and_a_laptop_is_not() {
        let pod = holder("tf-spawner on mn-supervisor-x7k2p, pid 1");
        assert_eq!(
            stop_hint("team-a", "mn", &pod).as_deref(),
            Some(
                "to follow it from here instead, stop its supervisor (the run goes on): kubectl delete job mn-supervisor -n team-a\n"
            )
        );
        for who in [
            "tf-spawner on laptop, pid 4242",
            "tf-spawner on mnx-supervisor-abcde, pid 1",
        ] {
            assert_eq!(stop_hint("team-a", "mn", &holder(who)), None, "{who}");
        }
    }
}
