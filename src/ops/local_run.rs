//! One `--local` run, from its request to its verdict: its folder
//! (`tf-spawner-output/TAG`, what `--volume` is to pods), its tasks as processes on this
//! machine (`local/`), what it printed of the training kept there (`metrics.json`, which
//! `compare --local` reads), its verdict said and told (`--notify`). `tf-spawner
//! --local` runs one; a `--local` sweep runs each of its runs through it.

use std::path::Path;

use anyhow::{Context, Result};

use crate::errors::{EXIT_TIMEOUT, EXIT_TRAINING_FAILED, ExitError, UsageError};
use crate::labels::{OUTPUT_DIR_VAR, local_output_dir};
use crate::local::{self, LocalPlan, Outcome, RunOptions};
use crate::metrics::PARAMS_FILE;
use crate::metrics::notice::Target;
use crate::output;
use crate::plan::SpawnRequest;
use crate::plan::sweep::{Point, params_json, point_text};
use crate::roles::Task;
use crate::trainlog::{Training, show};

/// How local runs are run: the spawn's flags lowered (`settings::spawn::local`).
#[derive(Debug, Clone)]
pub(crate) struct LocalOptions {
    /// `--python`: what runs the training script.
    pub python: String,
    /// `--timeout`, the env file, colour.
    pub run: RunOptions,
    /// `--notify`: where each run's verdict is told.
    pub notify: Option<Target>,
}

/// Which run it is: what its first line says, and what its folder holds beside what
/// the run writes.
pub(crate) enum Which<'a> {
    /// `tf-spawner --local`: its tasks and their addresses (after the tag, when `-r`
    /// made it: `randomized`), and how this machine's GPUs are shared.
    Alone { randomized: bool },
    /// A `--local` sweep's run: its parameters, said and written in its folder
    /// (`params.json`, which `compare --local` reads).
    Swept(&'a Point),
}

/// How a local run ended.
pub(crate) struct Ran {
    /// As the run's command ends: `Ok`, it succeeded (said, with the training's line);
    /// else the error carrying the exit code and the line (failed: 3, timed out: 4,
    /// interrupted: 130 or 143), the training's line said before it. `--notify` was
    /// told.
    pub verdict: Result<()>,
    /// Ctrl-C or SIGTERM ended it: the exit code.
    pub interrupted: Option<u8>,
}

/// Runs `request` here until its verdict, `--timeout` or `stop` (Ctrl-C, SIGTERM). An
/// error: the run could not start (nothing was told).
pub(crate) async fn run(
    options: &LocalOptions,
    mut request: SpawnRequest,
    which: Which<'_>,
    stop: &mut (impl Future<Output = u8> + Unpin),
) -> Result<Ran> {
    let tag = request.tag.clone();
    let dir = std::path::absolute(local_output_dir(&tag))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| UsageError::new(format!("cannot create {}: {e}", dir.display())))?;
    if let Which::Swept(point) = which {
        let path = dir.join(PARAMS_FILE);
        std::fs::write(&path, params_json(point))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    request
        .env
        .insert(OUTPUT_DIR_VAR.to_string(), dir.display().to_string());
    if let Some(experiment) = &request.experiment {
        request.env.extend(experiment.variables());
    }
    let plan = local::plan(&request, &options.python)?;
    announce(&plan, &dir, &which);
    let began = std::time::Instant::now();
    let (outcome, training) = local::run(&plan, &options.run, stop).await?;
    local::keep_metrics(&dir, &outcome, &training, began.elapsed());
    let interrupted = match outcome {
        Outcome::Interrupted(code) => Some(code),
        _ => None,
    };
    let verdict = say(&tag, outcome, &training);
    super::notify::after_local(options.notify.as_ref(), &tag, &verdict).await;
    Ok(Ran {
        verdict,
        interrupted,
    })
}

/// The run's first line: alone, `local run T: 3 tasks (…), files in DIR` (after the
/// generated tag with `-r`) and how the GPUs are shared; a sweep's run, its parameters
/// and its folder.
fn announce(plan: &LocalPlan, dir: &Path, which: &Which<'_>) {
    let randomized = match which {
        Which::Swept(point) => {
            let _ = output::print(&format!(
                "local run {} ({}): files in {}\n",
                plan.tag,
                point_text(point),
                dir.display()
            ));
            return;
        }
        Which::Alone { randomized } => *randomized,
    };
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
    let _ = output::print(&header);
    if let Some(note) = plan.gpus.note() {
        output::note(&note);
    }
}

/// The verdict said: success printed, or the error that carries the exit code; what the
/// deciding task printed of the training (epochs, time per epoch, metrics) under the
/// success, before the error.
fn say(tag: &str, outcome: Outcome, training: &Training) -> Result<()> {
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
        // Only a sweep's run is stopped early: done, not failed (the sweep tells it apart).
        Outcome::StoppedEarly(line) => {
            let _ = output::print(&format!("run {tag} (local): stopped early\n"));
            Err(crate::metrics::early::StoppedEarly(line).into())
        }
    }
}
