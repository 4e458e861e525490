//! `tf-spawner -d [-t TAG]`: delete every object of a run.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Result, bail};

use crate::cli::{ClusterArgs, SpawnArgs};
use crate::cluster::retry::RetryPolicy;
use crate::cluster::{Cluster, apply, delete};
use crate::errors::UsageError;

pub async fn exec(cluster_args: &ClusterArgs, args: &SpawnArgs) -> Result<()> {
    if args.randomize_tag {
        return Err(UsageError::new(
            "-r makes a new tag and cannot be used with -d; name the run with -t TAG",
        )
        .into());
    }
    let tag = &args.tag;
    crate::tag::validate(tag, "")?;
    let cluster = Cluster::connect(cluster_args, RetryPolicy::from_args(cluster_args)).await?;
    let ns = cluster.namespace.clone();

    if !args.yes && std::io::stdin().is_terminal() {
        let found = apply::existing(&cluster, tag).await?;
        if found.is_empty() {
            println!("nothing labelled training_attempt={tag} in namespace {ns}");
            return Ok(());
        }
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        eprintln!("{}", shown.join("\n"));
        if !confirm(&format!(
            "delete these {} objects of run '{tag}' in namespace {ns}? [y/N] ",
            found.len()
        ))? {
            bail!("aborted; nothing was deleted");
        }
    }

    let deleted = delete::delete_run(&cluster, tag, args.max_in_flight).await;
    for object in &deleted.removed {
        println!("deleted {object}");
    }
    if let Some(err) = delete::failure(&deleted, tag, &ns) {
        return Err(err);
    }
    if deleted.removed.is_empty() {
        println!("nothing labelled training_attempt={tag} in namespace {ns}");
    }
    Ok(())
}

fn confirm(question: &str) -> Result<bool> {
    eprint!("{question}");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
