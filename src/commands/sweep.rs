//! `tf-spawner sweep [SPAWN FLAGS] --param NAME=V1,V2,… TRAINING_SCRIPT [-- ARGS]`: an
//! experiment (`ops/sweep/`), its parameters expanded by `plan/sweep.rs`, each run's
//! request the spawn's (`inputs/mod.rs`) with its tag, arguments and parameters.
//! `--resume NAME`: the same command again; the record gives only data
//! (`ops/sweep/resume.rs`), everything run or read here is this invocation's.

use std::ffi::OsString;

use anyhow::Result;

use crate::cli::{DEFAULT_TAG, SpawnArgs, SweepArgs};
use crate::errors::UsageError;
use crate::metrics::early::Stopping;
use crate::ops::sweep::definition::{self, Asked, Definition};
use crate::ops::sweep::detach::Detach;
use crate::ops::sweep::local::LocalSweep;
use crate::ops::sweep::resume::Taking;
use crate::ops::sweep::{self, Sweep};
use crate::plan::supervisor::SweepFollow;
use crate::plan::sweep::{self as params, ExperimentRecord};
use crate::plan::{self, ExperimentRun, SpawnRequest};
use crate::render::{self, OutputFormat};
use crate::settings::follow::{self, Follower};
use crate::settings::{Settings, spawn};
use crate::{inputs, output};

/// The verb's word on the command line.
const VERB: &str = "sweep";

pub async fn exec(settings: &Settings, args: &SweepArgs) -> Result<()> {
    let spawn = &args.spawn;
    refuse_flags(settings, spawn)?;
    let name = name(args)?;
    let definition = Definition::parse(&Asked {
        name: &name,
        params: &args.params,
        samples: args.samples,
        seed: args.seed,
        search: args.method,
        parallel: settings.parallel.value,
        args: &spawn.script_args,
        yes: spawn.yes,
        objective: args.objective.clone(),
        stopping: Stopping {
            rule: settings.early_stop.value,
            eta: settings.eta.value,
            min_epochs: settings.min_epochs.value,
        },
    })?;
    let base = base_request(settings, spawn, &definition).await?;
    let digests = definition::digests(&base)?;
    let record = if args.resume.is_none() {
        definition.record(digests)
    } else {
        let script = spawn.script.as_ref().map(|s| s.display().to_string());
        let dir = settings.dir.value.as_ref().map(|d| d.display().to_string());
        let taking = Taking {
            definition: &definition,
            digests: &digests,
            allow_changed: args.allow_changed,
            script: script.as_deref().unwrap_or("-"),
            dir: dir.as_deref(),
        };
        let record = if spawn.local {
            sweep::local::read(&taking)?
        } else {
            sweep::resume::read(&settings.connect()?, &taking).await?
        };
        let _ = output::print(&format!(
            "experiment {name}: taking it up ({} runs planned)\n",
            record.runs.len()
        ));
        record
    };
    start(settings, args, record, base).await
}

/// The experiment's name: `--resume NAME`'s (a `-t` naming another is refused), else
/// the spawn's tag.
fn name(args: &SweepArgs) -> Result<String> {
    let spawn = &args.spawn;
    let Some(resumed) = &args.resume else {
        return Ok(spawn::tag(spawn).to_string());
    };
    if args.params.is_empty() || spawn.script.is_none() {
        return Err(UsageError::new(format!(
            "--resume {resumed} takes experiment {resumed} up with the command it was started with: give it again (its --param flags, script and arguments), adding --resume {resumed}"
        ))
        .into());
    }
    let tag = spawn.tag.as_str();
    if !spawn.randomize_tag && tag != DEFAULT_TAG && tag != resumed.as_str() {
        return Err(UsageError::new(format!(
            "--resume {resumed} takes up experiment '{resumed}', and -t names '{tag}': leave -t out, or give the same name"
        ))
        .into());
    }
    Ok(resumed.to_string())
}

/// The spawn flags a sweep does not take.
fn refuse_flags(settings: &Settings, spawn: &SpawnArgs) -> Result<()> {
    let refused = if spawn.delete {
        Some("-d deletes a run; a sweep's runs are deleted each with tf-spawner -d -t NAME-K")
    } else if spawn.cleanup {
        Some(
            "--cleanup deletes a detached run at its verdict; a sweep keeps its runs for compare: delete them with tf-spawner -d --experiment NAME",
        )
    } else if spawn.output.is_some() && !spawn.dry_run {
        Some("-o shapes --dry-run's objects in a sweep: add --dry-run, or leave -o out")
    } else {
        None
    };
    if let Some(line) = refused {
        return Err(UsageError::new(line).into());
    }
    if spawn.local
        && let Some(flag) = spawn::cluster_only_flag(settings, spawn)
    {
        return Err(UsageError::new(format!(
            "{flag} applies to pods on a cluster; --local runs processes"
        ))
        .into());
    }
    Ok(())
}

/// Plans every run; prints them (`--dry-run`), runs them here (`--local`) or on the
/// cluster.
async fn start(
    settings: &Settings,
    args: &SweepArgs,
    record: ExperimentRecord,
    base: SpawnRequest,
) -> Result<()> {
    let spawn = &args.spawn;
    let runs = sweep::points(&record);
    if spawn.dry_run {
        let later = match record.method {
            params::Method::Tpe { samples, .. } => (samples as usize).saturating_sub(runs.len()),
            _ => 0,
        };
        return dry_run(&base, (&spawn.script_args, later), &runs, spawn.output);
    }
    // Every run's objects are valid before the first is made.
    for (tag, point) in &runs {
        plan::build(&sweep::request(&base, &spawn.script_args, tag, point))?;
    }
    let hint = resume_hint(&record.name);
    if spawn.local {
        let local = LocalSweep {
            parallel: settings.parallel.value.unwrap_or(1) as usize,
            args: spawn.script_args.clone(),
            local: spawn::local(settings, spawn),
            resume: args.resume.is_some(),
            hint,
            record,
            base,
        };
        return sweep::local::run(&local).await;
    }
    let detach = match spawn.detach {
        true => Some(detached(settings, args, &base, hint.clone())?),
        false => None,
    };
    let cluster = settings.connect()?;
    let sweep = Sweep {
        detach,
        args: spawn.script_args.clone(),
        parallel: parallel(settings),
        queued: settings.queue.value.is_some() || settings.gang.value.is_some(),
        wait: follow::wait(settings, Follower::Sweep(spawn), std::time::Instant::now()),
        max_in_flight: spawn.max_in_flight,
        resume: args.resume.is_some(),
        hint,
        record,
        base,
    };
    sweep::run(&cluster, &sweep).await
}

/// `--detach`: who supervises the sweep, and the settings it runs it by (the sweep's
/// flags, its request, each run's follow), which must fit the supervisor's Secret.
fn detached(
    settings: &Settings,
    args: &SweepArgs,
    base: &SpawnRequest,
    hint: String,
) -> Result<Detach> {
    let spec = super::spawn::supervisor_spec(settings)?;
    let wait = follow::wait(
        settings,
        Follower::Sweep(&args.spawn),
        std::time::Instant::now(),
    );
    let follow = wait.to_record().map_err(UsageError::new)?;
    let sweep = SweepFollow {
        base: base.clone(),
        params: args.params.clone(),
        samples: args.samples,
        seed: args.seed,
        method: args.method,
        objective: args.objective.clone(),
        stopping: Stopping {
            rule: settings.early_stop.value,
            eta: settings.eta.value,
            min_epochs: settings.min_epochs.value,
        },
        args: args.spawn.script_args.clone(),
        parallel: settings.parallel.value,
        queued: settings.queue.value.is_some() || settings.gang.value.is_some(),
        max_in_flight: args.spawn.max_in_flight,
        follow,
        hint,
    };
    let size = serde_json::to_vec(&sweep).map_or(0, |j| j.len());
    if size > plan::MAX_CONFIG_MAP_BYTES {
        return Err(UsageError::new(format!(
            "--detach keeps the sweep's script, files and pod templates in its supervisor's Secret, which holds at most {} bytes, and they take {size}: ship less with --dir (load data from storage), or follow the sweep from here",
            plan::MAX_CONFIG_MAP_BYTES
        ))
        .into());
    }
    Ok(Detach {
        spec,
        settings: sweep,
    })
}

/// The request every run is made from: the spawn's, for the tag of the last run (the
/// longest: every object name of every run is checked to fit).
async fn base_request(
    settings: &Settings,
    spawn: &SpawnArgs,
    definition: &Definition,
) -> Result<SpawnRequest> {
    let last = definition.last_tag();
    let tag = last.parse().map_err(|e: UsageError| {
        UsageError::new(format!(
            "the experiment's name '{}' makes a run tag {last} that {e}",
            definition.name
        ))
    })?;
    let mut base = inputs::spawn_request(
        &spawn::options(spawn, settings),
        tag,
        settings.namespace.value.clone(),
    )
    .await?;
    base.experiment = Some(ExperimentRun {
        name: definition.name.clone(),
        params: Vec::new(),
    });
    Ok(base)
}

/// This command with `--resume NAME` after `sweep` (and no other `--resume`), as a
/// shell reads it: what the last line of an interrupted sweep says to run.
fn resume_hint(name: &str) -> String {
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|w: OsString| w.to_string_lossy().into_owned())
        .collect();
    let mut out = vec!["tf-spawner".to_string()];
    let mut iter = words.iter();
    let mut at_verb = false;
    while let Some(word) = iter.next() {
        if word == "--" {
            out.push(word.clone());
            out.extend(iter.by_ref().cloned());
            break;
        }
        if at_verb && word == "--resume" {
            iter.next();
            continue;
        }
        if at_verb && word.starts_with("--resume=") {
            continue;
        }
        out.push(word.clone());
        if !at_verb && word == VERB {
            at_verb = true;
            out.extend(["--resume".to_string(), name.to_string()]);
        }
    }
    out.iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word as a POSIX shell reads it back: as is when plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `--dry-run`: every run's objects made (so a problem shows), then the plan as a
/// table of the runs and their parameters, or (`-o yaml|json`) the objects; `later`:
/// the runs `--method tpe` chooses as runs end, said after.
fn dry_run(
    base: &SpawnRequest,
    (args, later): (&[String], usize),
    runs: &[(String, params::Point)],
    format: Option<OutputFormat>,
) -> Result<()> {
    let plans = runs
        .iter()
        .map(|(tag, point)| Ok(plan::build(&sweep::request(base, args, tag, point))?));
    if let Some(format) = format {
        return render::plans_to_stdout(plans, format);
    }
    for plan in plans {
        plan?;
    }
    let name = base.experiment.as_ref().map_or("", |e| e.name.as_str());
    output::print(&params::runs_table(runs, args))?;
    let more = match later {
        0 => String::new(),
        n => format!(", {n} more chosen by tpe as runs end"),
    };
    output::print(&format!(
        "experiment {name}: {} {} planned{more}; nothing created (--dry-run; their objects: -o yaml or -o json)\n",
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" }
    ))?;
    Ok(())
}

/// `--parallel` (or a settings file's `parallel`), with where it came from.
fn parallel(settings: &Settings) -> Option<(u32, &'static str)> {
    let from = match settings.parallel.source {
        crate::settings::Source::Flag => "--parallel",
        crate::settings::Source::Project => "the project file's parallel",
        _ => "the config file's parallel",
    };
    settings.parallel.value.map(|n| (n, from))
}
