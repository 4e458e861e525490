//! A sweep started while another sweeper has the experiment (its supervisor after
//! `sweep --detach`, or a sweep on another machine): it shows the experiment, each run's
//! verdict as the record gets it, and acts on nothing, until that sweeper lets go. At a
//! verdict (exit 0 or 3, recorded beside it) it ends with that verdict's lines and code,
//! as the sweeper did; when the sweeper let go without one (stopped: its Job deleted, a
//! Ctrl-C) or stopped checking in ([`HOLD`]), it says so and how to take the experiment
//! up (the same command: the record has changed since this one read it).

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;

use super::ending::{Ended, results, verdict};
use crate::cluster::follower::{self, Followed, HOLD, Holder};
use crate::cluster::{Cluster, experiment};
use crate::errors::{EXIT_TRAINING_FAILED, ExitError};
use crate::labels::sweeper_name;
use crate::plan::sweep::{ExperimentRecord, Point};
use crate::{output, signals};

/// How often the record is read.
const POLL: Duration = Duration::from_secs(5);

/// Shows experiment `name` while `holder` runs its sweep; `runs` its runs in order.
pub(super) async fn follow(
    cluster: &Cluster,
    (name, hint): (&str, &str),
    runs: &[(String, Point)],
    holder: Holder,
) -> Result<()> {
    let ns = cluster.namespace();
    // Listening before the line that says how to stop it.
    let mut stop = signals::Stop::listen();
    output::print(&format!(
        "experiment {name} is followed by {}, which starts and follows its runs: this sweep shows it and acts on nothing (to run it from here instead, stop that sweeper: {})\n",
        holder.cell(crate::duration::now()),
        stop_hint(name, ns, &holder)
    ))?;
    let what = Followed::Experiment(name.to_string());
    let mut told = BTreeSet::new();
    let mut last_seen = (holder.checked_in, std::time::Instant::now());
    loop {
        let Some(record) = experiment::read(cluster, name).await? else {
            return Err(anyhow::anyhow!(
                "experiment '{name}' was deleted while its sweeper ran (its record is gone)"
            ));
        };
        tell(&record.ended, runs, &mut told)?;
        let meta = follower::read(cluster, &what).await?;
        let now = crate::duration::now();
        let current = meta.as_ref().and_then(|m| follower::holder(m, now));
        match current {
            Some(h) => {
                if h.checked_in != last_seen.0 {
                    last_seen = (h.checked_in, std::time::Instant::now());
                }
                // Silent for the hold by this machine's clock: that sweeper is gone.
                if last_seen.1.elapsed() >= HOLD {
                    return Err(anyhow::anyhow!(
                        "experiment '{name}': {} stopped checking in {}s ago; take it up here with: {hint}",
                        h.who,
                        last_seen.1.elapsed().as_secs()
                    ));
                }
            }
            None => {
                let code = meta.as_ref().and_then(follower::exit_code);
                return ended(cluster, (name, hint), runs, &record, code).await;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            code = stop.requested() => {
                return Err(ExitError::new(code, format!(
                    "interrupted; experiment '{name}' goes on with its sweeper, which acts for it"
                ))
                .into());
            }
        }
    }
}

/// The sweeper let go: with a verdict (exit 0 or 3), this sweep ends with it, its lines
/// made from the record as the sweeper made them; else it says how to take it up.
async fn ended(
    cluster: &Cluster,
    (name, hint): (&str, &str),
    runs: &[(String, Point)],
    record: &ExperimentRecord,
    code: Option<u8>,
) -> Result<()> {
    if !matches!(code, Some(0) | Some(EXIT_TRAINING_FAILED)) {
        return Err(anyhow::anyhow!(
            "experiment '{name}': its sweeper stopped before the end; take it up here with: {hint}"
        ));
    }
    let ended: Vec<(usize, Ended)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, (tag, _))| Some((i, Ended::recorded(record.ended.get(tag)?))))
        .collect();
    let results = results(cluster, record).await;
    let best = results.best.as_ref();
    let best_text = best.map_or_else(String::new, |b| format!("; best {}", b.line()));
    let names = (name, cluster.namespace(), hint);
    verdict(names, runs, &ended, None, &best_text)
}

/// Each run's verdict the record got since the last read, once.
fn tell(
    recorded: &std::collections::BTreeMap<String, String>,
    runs: &[(String, Point)],
    told: &mut BTreeSet<String>,
) -> Result<()> {
    for (tag, _) in runs {
        if let Some(v) = recorded.get(tag)
            && told.insert(tag.clone())
        {
            let line = v.lines().next().unwrap_or_default();
            output::print(&format!("run {tag}: {}\n", output::escape_controls(line)))?;
        }
    }
    Ok(())
}

/// How to stop `holder`: its Job when it is a detached sweep's supervisor.
pub(super) fn stop_hint(name: &str, ns: &str, holder: &Holder) -> String {
    let job = sweeper_name(name);
    if holder.who.contains(&format!(" on {job}-")) {
        format!("kubectl delete job {job} -n {ns}, its runs go on")
    } else {
        "Ctrl-C where it runs".to_string()
    }
}
