//! What judges a sweep's runs as they train and end: early stopping (`early.rs`), its
//! observations and decisions written to the experiment's record before they are
//! carried out, and the model-based search (`propose.rs`), each point written before
//! its run is created and each run's value with its verdict.

use std::collections::BTreeMap;

use crate::cluster::{Cluster, experiment};
use crate::errors;
use crate::output;
use crate::plan::sweep::{ExperimentRecord, Point};
use crate::progress::Seen;

use super::early::Early;
use super::ending::Ended;
use super::propose::{How, Search};
use super::view::View;

/// What judges the runs: early stopping and the model-based search, if the sweep has
/// them.
pub(super) struct Judges {
    pub early: Option<Early>,
    search: Option<Search>,
}

impl Judges {
    /// The record's early stopping (its rule said in a line) and search.
    pub fn of(record: &ExperimentRecord) -> Judges {
        let early = Early::of(record);
        if let Some(early) = &early {
            let _ = output::print(&format!("{}\n", early.about()));
        }
        Judges {
            early,
            search: Search::of(record),
        }
    }

    /// A run's training seen: the search keeps its objective's last value.
    pub fn saw(&mut self, seen: &Seen) {
        if let Some(search) = &mut self.search {
            search.seen(seen);
        }
    }

    /// A run's training seen as it trains: judged by early stopping, kept by the search.
    pub async fn judge(&mut self, cluster: &Cluster, name: &str, seen: &Seen) {
        if let Some(early) = &mut self.early {
            judge(cluster, name, early, seen).await;
        }
        self.saw(seen);
    }

    /// Run `i`'s point, proposed and recorded if it is still to be chosen (`--method
    /// tpe`), and shown.
    pub async fn point_for(
        &mut self,
        (cluster, name): (&Cluster, &str),
        runs: &mut [(String, Point)],
        view: &mut View,
        (i, exists): (usize, bool),
    ) -> Result<(), Ended> {
        let Some(search) = (self.search.as_mut()).filter(|s| !exists && s.unchosen(i)) else {
            return Ok(());
        };
        runs[i].1 = choose(cluster, name, search, i).await?;
        view.proposed(i, &runs[i].1);
        Ok(())
    }
}

/// Run `index`'s point proposed and written into the experiment's record before the
/// run is created; a record that cannot be written starts no run (it ends failed).
async fn choose(
    cluster: &Cluster,
    name: &str,
    search: &mut Search,
    index: usize,
) -> Result<Point, Ended> {
    let (point, text, line) = search.propose(index);
    match experiment::record_runs(cluster, name, &text).await {
        Ok(()) => {
            let _ = output::print(&format!("{line}\n"));
            Ok(point)
        }
        Err(e) => Err(Ended::Failed(format!(
            "not started: its proposed point could not be recorded: {}",
            errors::one_line(&e)
        ))),
    }
}

/// A run's end in the experiment's record (its verdict, with `--method tpe` the value
/// the search takes of it, in one write), so that `--resume` starts it no more.
pub(super) async fn record_end(
    cluster: &Cluster,
    name: &str,
    tag: &str,
    end: &Ended,
    judges: &mut Judges,
) {
    if let (Some(early), Ended::Succeeded | Ended::Failed(_)) = (&mut judges.early, end) {
        early.ended(tag);
    }
    let how = match end {
        Ended::Succeeded => Some(How::Succeeded),
        Ended::StoppedEarly(_) => Some(How::StoppedEarly),
        Ended::Failed(_) => Some(How::Failed),
        _ => None,
    };
    let search = judges.search.as_mut().zip(how);
    let value = search.and_then(|(s, how)| s.ended(tag, how, judges.early.as_ref()));
    let Some(verdict) = end.to_record() else {
        return;
    };
    let mut data: BTreeMap<String, String> = [(experiment::ended_key(tag), verdict)].into();
    if let Some(v) = value {
        data.insert(experiment::value_key(tag), v.to_string());
    }
    if let Err(e) = experiment::record_data(cluster, name, &data).await {
        output::note(&format!("run {tag}: {}", errors::one_line(&e)));
    }
}

/// A run's training seen: what early stopping reads of it is written to the
/// experiment's record, then its decision (if any) carried out; a record that cannot
/// be written stops nothing.
async fn judge(cluster: &Cluster, name: &str, early: &mut Early, seen: &Seen) {
    let Seen::Training { tag, training } = seen else {
        return;
    };
    let reading = early.read(tag, training);
    if reading.is_empty() {
        return;
    }
    let data = early.keys(tag, &reading);
    if let Err(e) = experiment::record_data(cluster, name, &data).await {
        output::note(&format!(
            "run {tag}: {}; early stopping stops nothing it cannot record",
            errors::one_line(&e)
        ));
        return;
    }
    if let Some(decision) = &reading.decision {
        early.act(decision);
    }
}
