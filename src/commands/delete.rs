//! `tf-spawner -d [-t TAG]`: delete every object of a run.

use std::cell::Cell;
use std::io::{BufRead, IsTerminal};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::cli::{ClusterArgs, SpawnArgs};
use crate::cluster::retry::RetryPolicy;
use crate::cluster::{Cluster, apply, delete};
use crate::errors::{EXIT_TIMEOUT, ExitError, UsageError};
use crate::plan::run_selector;
use crate::{output, signals};

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
            return report(tag, &ns, &[], args.output);
        }
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        output::eprint(&format!("{}\n", shown.join("\n")));
        if !confirm(&format!(
            "delete these {} objects of run '{tag}' in namespace {ns}? [y/N] ",
            found.len()
        ))? {
            bail!("aborted; nothing was deleted");
        }
    }

    let deleted = delete::delete_run(&cluster, tag, args.max_in_flight).await;
    // What was deleted is printed even when some of it failed (the error follows on stderr).
    report(tag, &ns, &deleted.removed, args.output)?;
    for note in &deleted.notes {
        output::note(note);
    }
    if let Some(err) = delete::failure(&deleted, tag, &ns) {
        return Err(err);
    }
    if args.wait {
        if args.output.is_some() {
            // The summary stays parseable: the wait's messages are not added to it.
            crate::quiet::silence_stdout()?;
        }
        wait_gone(&cluster, tag, args.timeout).await?;
    }
    Ok(())
}

/// `-d --wait`: until the pods that linger for their grace period are gone, or the
/// `--timeout` (exit 4), or a signal.
async fn wait_gone(cluster: &Cluster, tag: &str, timeout: Option<Duration>) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let start = Instant::now();
    let first: Cell<Option<usize>> = Cell::new(None);
    let left = Cell::new(0);
    let follow = delete::wait_gone(cluster, tag, |n| {
        if first.get().is_none() {
            first.set(Some(n));
            if n > 0 {
                output::eprint(&format!("waiting for {} to terminate…\n", pods(n)));
            }
        }
        left.set(n);
    });
    let deadline = async {
        match timeout {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let stopped = tokio::select! {
        done = follow => {
            done?;
            None
        }
        () = deadline => Some(EXIT_TIMEOUT),
        code = signals::stop_requested() => Some(code),
    };
    let waited = first.get().unwrap_or(0);
    match stopped {
        None => {
            if waited > 0 {
                output::print(&format!(
                    "{} of run '{tag}' terminated in {:.1}s\n",
                    pods(waited),
                    start.elapsed().as_secs_f64()
                ))?;
            }
            Ok(())
        }
        Some(code) => {
            let why = if code == EXIT_TIMEOUT {
                format!(
                    "timed out after {}",
                    humantime::format_duration(timeout.unwrap_or_default())
                )
            } else {
                "interrupted".to_string()
            };
            Err(ExitError::new(
                code,
                format!(
                    "{why}: the run's objects were deleted, but {} (see: kubectl get pods -n {ns} -l {})",
                    match first.get() {
                        Some(_) => format!("{} still terminating", are(left.get())),
                        None => "its pods may still be terminating".to_string(),
                    },
                    run_selector(tag)
                ),
            )
            .into())
        }
    }
}

/// `deleted pod/…` lines, or with `-o json|yaml` the summary
/// `{"tag","namespace","deleted":[{"kind","name"}]}` (see `commands/summary.rs`). A
/// closed stdout ends the report, not the command.
fn report(
    tag: &str,
    ns: &str,
    removed: &[crate::cluster::ObjectRef],
    format: Option<crate::cli::OutputFormat>,
) -> Result<()> {
    use super::summary;
    if let Some(format) = format {
        let text = summary::render(&summary::deleted(tag, ns, removed), format)?;
        output::print(&text)?;
        return Ok(());
    }
    let mut text = String::new();
    for object in removed {
        text.push_str(&format!("deleted {object}\n"));
    }
    if removed.is_empty() {
        text = format!("nothing labelled training_attempt={tag} in namespace {ns}\n");
    }
    output::print(&text)?;
    Ok(())
}

fn pods(n: usize) -> String {
    if n == 1 {
        "1 pod".to_string()
    } else {
        format!("{n} pods")
    }
}

fn are(n: usize) -> String {
    if n == 1 {
        "1 pod is".to_string()
    } else {
        format!("{n} pods are")
    }
}

fn confirm(question: &str) -> Result<bool> {
    output::eprint(question);
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
