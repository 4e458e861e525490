//! `tf-spawner list [-A] [-o json]`: the runs (tags) in a namespace, or in all of them,
//! with their pods' phases per role, verdict and age (see `ops/list.rs`); `list
//! --experiment NAME` an experiment's runs, `list --experiments` the experiments
//! (`ops/experiments.rs`).

use anyhow::Result;

use crate::cli::ListArgs;
use crate::errors::UsageError;
use crate::ops::experiments::{self, ExperimentsJson};
use crate::ops::list::{self, ListJson};
use crate::output::{self, ReportFormat};
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &ListArgs) -> Result<()> {
    if let Some(name) = &args.experiment
        && let Some(problem) = crate::labels::label_value_problem(name)
    {
        let name = output::escape_controls(name);
        return Err(UsageError::new(format!("--experiment \"{name}\" {problem}")).into());
    }
    let cluster = settings.connect()?;
    let runs = list::list(&cluster, args.all_namespaces).await?;
    // Nothing matched because the namespace is not there (a typo): exit 1, one line.
    if runs.is_empty() && !args.all_namespaces && cluster.namespace_missing().await {
        anyhow::bail!(
            "namespace '{}' does not exist (tf-spawner list -A lists every namespace's runs)",
            cluster.namespace()
        );
    }
    let text = if args.experiments {
        let found = experiments::experiments(&cluster, &runs, args.all_namespaces).await?;
        match args.output {
            ReportFormat::Table if found.is_empty() => {
                format!(
                    "no experiments in {}\n",
                    where_(&cluster, args.all_namespaces)
                )
            }
            ReportFormat::Table => experiments::render(&found, args.all_namespaces),
            format => output::document(&ExperimentsJson { experiments: found }, format)?,
        }
    } else if let Some(name) = &args.experiment {
        let (runs, never) = experiments::runs_of(&cluster, runs, name).await?;
        of_experiment(runs, never, args.output)?
    } else {
        match args.output {
            ReportFormat::Table if runs.is_empty() => {
                format!(
                    "no tf-spawner runs in {}\n",
                    where_(&cluster, args.all_namespaces)
                )
            }
            ReportFormat::Table => list::render(&runs, args.all_namespaces),
            format => output::document(
                &ListJson {
                    runs,
                    not_started: None,
                },
                format,
            )?,
        }
    };
    output::print(&text)?;
    Ok(())
}

/// `list --experiment NAME`: its runs, then those never started.
fn of_experiment(
    runs: Vec<list::RunJson>,
    never: Vec<String>,
    format: ReportFormat,
) -> Result<String> {
    if format != ReportFormat::Table {
        let json = ListJson {
            runs,
            not_started: Some(never),
        };
        return output::document(&json, format);
    }
    let mut text = list::render(&runs, false);
    if !never.is_empty() {
        text.push_str(&format!("never started: {}\n", never.join(", ")));
    }
    Ok(text)
}

fn where_(cluster: &crate::cluster::Cluster, all_namespaces: bool) -> String {
    if all_namespaces {
        "any namespace".to_string()
    } else {
        format!("namespace {}", cluster.namespace())
    }
}
