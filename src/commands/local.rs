//! `tf-spawner --local [OPTIONS] TRAINING_SCRIPT`: the run's tasks as processes on this
//! machine, their logs merged and prefixed, and the end-wait's verdict and exit codes.

use anyhow::Result;
use futures::FutureExt;

use crate::cli::SpawnArgs;
use crate::errors::{EXIT_TIMEOUT, EXIT_TRAINING_FAILED, ExitError, UsageError};
use crate::local::{self, LocalPlan, Outcome, RunOptions};
use crate::roles::Task;
use crate::settings::{Settings, spawn};
use crate::trainlog::{Training, show};
use crate::{inputs, labels, output, signals};

pub async fn exec(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    // Catch Ctrl-C from now on, so no task can outlive an interruption.
    let mut stop = Box::pin(signals::stop_requested());
    if let Some(code) = (&mut stop).now_or_never() {
        return Err(ExitError::new(code, "interrupted before the run started").into());
    }
    if let Some(flag) = spawn::cluster_only_flag(settings, args) {
        return Err(UsageError::new(format!(
            "{flag} applies to pods on a cluster; --local runs processes"
        ))
        .into());
    }
    // The namespace is only a name here: nothing talks to a cluster.
    let mut request = inputs::spawn_request(
        &spawn::options(args, settings),
        spawn::tag(args),
        settings.namespace.value.clone(),
    )
    .await?;
    // What --volume is to pods: a directory every task sees, here on this machine.
    let output_dir = std::path::absolute(labels::local_output_dir(&request.tag))?;
    std::fs::create_dir_all(&output_dir)
        .map_err(|e| UsageError::new(format!("cannot create {}: {e}", output_dir.display())))?;
    request.env.insert(
        labels::OUTPUT_DIR_VAR.to_string(),
        output_dir.display().to_string(),
    );
    let plan = local::plan(&request, &settings.python.value)?;

    let _ = output::print(&header(&plan, args.randomize_tag));
    if let Some(note) = plan.gpus.note() {
        output::note(&note);
    }

    let options = RunOptions {
        timeout: args.timeout,
        env_file: args.env_file.as_ref().map(|f| f.display().to_string()),
        colour: output::fancy_stdout(),
        observer: None,
        early: None,
    };
    let began = std::time::Instant::now();
    let (outcome, training) = local::run(&plan, &options, &mut stop).await?;
    local::keep_metrics(&output_dir, &outcome, &training, began.elapsed());
    let result = report(&plan.tag, outcome, &training);
    crate::ops::notify::after_local(settings.notify.value.as_ref(), &plan.tag, &result).await;
    result
}

/// `local run T: 3 tasks (…), files in DIR`, after the generated tag with `-r`.
fn header(plan: &LocalPlan, randomized: bool) -> String {
    let mut header = format!(
        "local run {}: {} task{} ({}), files in {}\n",
        plan.tag,
        plan.tasks.len(),
        if plan.tasks.len() == 1 { "" } else { "s" },
        plan.tasks
            .iter()
            .map(|t| match &t.address {
                Some(a) => format!("{} {a}", t.task.id()),
                None => t.task.id(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        plan.dir().display()
    );
    if randomized {
        header.insert_str(0, &format!("generated with tag {}\n", plan.tag));
    }
    header
}

/// Success printed, or the error that carries the exit code.
fn report(tag: &str, outcome: Outcome, training: &Training) -> Result<()> {
    // What the deciding task printed of the training: epochs, time per epoch, metrics.
    let trained = show::report(training).map(|line| format!("{line}\n"));
    if !matches!(outcome, Outcome::Succeeded { .. })
        && let Some(line) = &trained
    {
        let _ = output::print(line);
    }
    match outcome {
        Outcome::Succeeded { .. } => {
            let _ = output::print(&format!("run {tag} (local): Succeeded\n"));
            if let Some(line) = &trained {
                let _ = output::print(line);
            }
            Ok(())
        }
        Outcome::Failed {
            task,
            ended,
            stopped,
        } => {
            let who = task.map_or_else(|| "a task".to_string(), Task::id);
            let how = ended.map_or_else(|| "failed".to_string(), |e| e.to_string());
            let after = if stopped.is_empty() {
                String::new()
            } else {
                format!("; stopped {}", local::ids(&stopped))
            };
            Err(ExitError::new(
                EXIT_TRAINING_FAILED,
                format!("local run '{tag}' failed: {who} {how}{after}"),
            )
            .into())
        }
        Outcome::TimedOut { after, running } => Err(ExitError::new(
            EXIT_TIMEOUT,
            format!(
                "timed out after {} waiting for local run '{tag}' to end; stopped {}",
                humantime::format_duration(after),
                local::ids(&running)
            ),
        )
        .into()),
        Outcome::Interrupted(code) => Err(ExitError::new(
            code,
            format!("interrupted; the tasks of local run '{tag}' were stopped"),
        )
        .into()),
        // Only a sweep's run is stopped early (a sweep's own runs do not come here).
        Outcome::StoppedEarly(line) => Err(crate::metrics::early::StoppedEarly(line).into()),
    }
}
