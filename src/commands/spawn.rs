//! `tf-spawner [OPTIONS] TRAINING_SCRIPT`: plan a run, then create it (or print it).

use anyhow::Result;

use crate::cli::{ClusterArgs, OutputFormat, SpawnArgs};
use crate::cluster::apply::{self, Ledger};
use crate::cluster::retry::RetryPolicy;
use crate::cluster::{Cluster, connect};
use crate::errors::ExitError;
use crate::plan::{self, Plan};
use crate::{inputs, output, quiet, render, signals};

use super::summary;

pub async fn exec(cluster_args: &ClusterArgs, args: &SpawnArgs) -> Result<()> {
    if args.local {
        return super::local::exec(cluster_args, args).await;
    }
    let tag = inputs::choose_tag(args);
    if args.dry_run {
        let namespace = connect::namespace_offline(cluster_args).await;
        let request = inputs::spawn_request(args, tag, namespace)?;
        let plan = plan::build(&request)?;
        return render::to_stdout(&plan, args.output.unwrap_or(OutputFormat::Yaml));
    }

    // Inputs are checked before the configuration, so a bad flag is reported as such
    // even on a machine without a cluster.
    let config = connect::load_config(cluster_args).await;
    let namespace = match (&cluster_args.namespace, &config) {
        (Some(ns), _) => ns.clone(),
        (None, Ok(c)) => c.default_namespace.clone(),
        (None, Err(_)) => "default".to_string(),
    };
    let request = inputs::spawn_request(args, tag, namespace)?;
    let plan = plan::build(&request)?;
    config?;
    let cluster = Cluster::connect(cluster_args, RetryPolicy::from_args(cluster_args)).await?;

    let existing = apply::existing(&cluster, &plan.tag).await?;
    if !existing.is_empty() {
        let shown: Vec<String> = existing.iter().take(3).map(ToString::to_string).collect();
        anyhow::bail!(
            "run '{}' already exists in namespace '{}' ({}{}); delete it first with: tf-spawner -d -t {} -n {}",
            plan.tag,
            plan.namespace,
            shown.join(", "),
            if existing.len() > 3 { ", …" } else { "" },
            plan.tag,
            plan.namespace
        );
    }

    let ledger = Ledger::new(&plan);
    let outcome = tokio::select! {
        result = apply::create(&cluster, &plan, &ledger, args.max_in_flight) => result.map_err(Stop::Failed),
        code = signals::stop_requested() => Err(Stop::Signal(code)),
    };
    match outcome {
        Ok(()) => {
            report(&plan, args.output)?;
            if args.wait {
                if args.output.is_some() {
                    // The summary stays parseable: the wait's progress is not added to it.
                    quiet::silence_stdout()?;
                }
                let wait = super::wait::Wait {
                    tag: plan.tag.clone(),
                    until: crate::cli::WaitFor::Start,
                    timeout: args.timeout,
                    all_workers: false,
                    save_logs: None,
                    cleanup: false,
                    max_in_flight: args.max_in_flight,
                };
                super::wait::run(&cluster, &wait).await?;
            }
            Ok(())
        }
        Err(stop) => {
            let left = apply::roll_back(&cluster, &ledger).await;
            let rollback = apply::rollback_report(&left, &plan.tag, &plan.namespace);
            let err = match stop {
                Stop::Failed(e) => e,
                Stop::Signal(code) => {
                    ExitError::new(code, "interrupted; the objects created so far were deleted")
                        .into()
                }
            };
            Err(match rollback {
                Some(r) => err.context(r.to_string()),
                None => err,
            })
        }
    }
}

enum Stop {
    Failed(anyhow::Error),
    Signal(u8),
}

/// What a successful spawn prints: with `-q` only the tag, with `-o json|yaml` the
/// summary (see `summary.rs`), else a human report and the next commands. A closed
/// stdout cuts the report short; the run stays created.
fn report(plan: &Plan, format: Option<OutputFormat>) -> Result<()> {
    let (tag, ns) = (&plan.tag, &plan.namespace);
    if quiet::is_quiet() {
        output::data(&format!("{tag}\n"))?;
        return Ok(());
    }
    if let Some(format) = format {
        let created = summary::created(tag, ns, &summary::plan_objects(plan));
        output::print(&summary::render(&created, format)?)?;
        return Ok(());
    }
    let mut parts = vec![format!("configmap/{}", plan::config_map_name(tag))];
    if plan.secret.is_some() {
        parts.push(format!("secret/{}", plan::secret_name(tag)));
    }
    parts.push(format!("{} services", plan.services.len()));
    parts.push(format!("{} pods", plan.pods.len()));
    let first = plan.pods.names().next().unwrap_or_default();
    output::print(&format!(
        "generated with label training_attempt={tag}\n\
         created in namespace {ns}: {}\n\
         next:\n  \
         kubectl get pods -n {ns} -l training_attempt={tag}\n  \
         kubectl logs -n {ns} -f {first}\n  \
         tf-spawner -d -t {tag} -n {ns}\n",
        parts.join(", ")
    ))?;
    Ok(())
}
