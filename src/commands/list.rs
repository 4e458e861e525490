//! `tf-spawner list [-A] [-o json]`: the runs (tags) in a namespace, or in all of them,
//! with their pods' phases per role, verdict and age (see `ops/list.rs`).

use anyhow::Result;

use crate::cli::ListArgs;
use crate::ops::list::{self, ListJson};
use crate::output::{self, ReportFormat};
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &ListArgs) -> Result<()> {
    let cluster = settings.connect()?;
    let runs = list::list(&cluster, args.all_namespaces).await?;
    // Nothing matched because the namespace is not there (a typo): exit 1, one line.
    if runs.is_empty() && !args.all_namespaces && cluster.namespace_missing().await {
        anyhow::bail!(
            "namespace '{}' does not exist (tf-spawner list -A lists every namespace's runs)",
            cluster.namespace()
        );
    }
    let text = match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            output::document(&ListJson { runs }, args.output)?
        }
        ReportFormat::Table if runs.is_empty() => {
            if args.all_namespaces {
                "no tf-spawner runs in any namespace\n".to_string()
            } else {
                format!("no tf-spawner runs in namespace {}\n", cluster.namespace())
            }
        }
        ReportFormat::Table => list::render(&runs, args.all_namespaces),
    };
    output::print(&text)?;
    Ok(())
}
