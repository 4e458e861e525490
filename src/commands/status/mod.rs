//! `tf-spawner status -t TAG [-o json]`: the pods of a run and its verdict.
//!
//! `table.rs` writes the report a user reads (the pods' table, then a section per kind of
//! news, then the verdict); `json.rs` the documented `-o json` shape; `common.rs` what
//! both say alike (a lost node's reason, the restart's cause, the stall).

use std::collections::BTreeMap;

use anyhow::Result;

use crate::cli::StatusArgs;
use crate::ops::status::{Known, known, pending_events};
use crate::output::{self, ReportFormat};
use crate::settings::Settings;
use crate::verdict::Verdict;

mod common;
mod json;
mod table;

pub async fn exec(settings: &Settings, args: &StatusArgs) -> Result<()> {
    let cluster = settings.connect()?;
    let Known {
        mut tracker,
        record,
        helpers,
    } = known(&cluster, args.tag.as_str(), args.all_workers).await?;
    // A failed run: its failed tasks' last lines tell which failed because of a peer,
    // and the one that decides is shown with its own.
    let last_lines = match tracker.verdict() {
        Verdict::Failed(_) => crate::ops::blame::read_failed(&cluster, &mut tracker).await,
        _ => BTreeMap::new(),
    };
    let record = record.as_ref();
    let events = pending_events(&cluster, &tracker, record).await;
    // A run ended that nobody followed: its metrics recorded, from its whole log.
    let training = match crate::ops::compare::keep_metrics(&cluster, &tracker, record).await {
        Some(training) => training,
        None => crate::ops::training::tail(&cluster, &tracker).await,
    };
    let report = common::Report {
        tracker: &tracker,
        record,
        helpers: &helpers,
        events: &events,
        training: &training,
        stall: crate::settings::follow::stall(settings, crate::ops::wait::OnStall::Warn).bound,
        now: crate::duration::now(),
        all_workers: args.all_workers,
    };
    let text = match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            let json = json::to_json(&report, (args.tag.as_str(), cluster.namespace()));
            output::document(&json, args.output)?
        }
        ReportFormat::Table => {
            let mut text = table::render(&report);
            if let Verdict::Failed(f) = tracker.verdict()
                && let (Some(pod), Some(lines)) = (tracker.get(&f.pod), last_lines.get(&f.pod))
            {
                text.push_str(&crate::ops::blame::shown(pod, lines));
            }
            text
        }
    };
    output::print(&text)?;
    Ok(())
}

#[cfg(test)]
mod tests;
