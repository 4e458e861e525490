//! `tf-spawner sweep [SPAWN FLAGS] --param NAME=V1,V2,… TRAINING_SCRIPT [-- ARGS]`: an
//! experiment (`ops/sweep/`), its parameters expanded by `plan/sweep.rs`, each run's
//! request the spawn's (`inputs.rs`) with its tag, arguments and parameters.
//! `--resume NAME` reads the experiment's record and its command line again.

use std::ffi::OsString;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command, SpawnArgs, SweepArgs};
use crate::errors::UsageError;
use crate::ops::sweep::local::LocalSweep;
use crate::ops::sweep::{self, Sweep};
use crate::ops::wait::{Wait, WaitFor};
use crate::plan::sweep::{self as params, MAX_RUNS, MAX_RUNS_WITHOUT_YES, Method, Param, Record};
use crate::plan::{self, ExperimentRun, SpawnRequest};
use crate::render::{self, OutputFormat};
use crate::settings::{Settings, spawn};
use crate::{cluster, inputs, local, output};

/// The verb's word on the command line.
const VERB: &str = "sweep";

pub async fn exec(settings: &Settings, args: &SweepArgs) -> Result<()> {
    if let Some(name) = &args.resume {
        return resume(settings, args, name.as_str()).await;
    }
    let spawn = &args.spawn;
    refuse_flags(settings, spawn)?;
    let name = spawn::tag(spawn).to_string();
    let (params, method) = parameters(args)?;
    let points = params::expand(&params, method);
    if let Method::Random { samples, seed } = method {
        let _ = output::print(&format!(
            "random search: {samples} samples, seed {seed} (--seed {seed} draws them again)\n"
        ));
    }
    let record = Record {
        runs: Record::planned(&points, &name),
        name,
        params,
        method,
        parallel: settings.parallel.value,
        argv: recorded_argv(method),
        cwd: std::env::current_dir()?.display().to_string(),
    };
    start(settings, args, record, false).await
}

/// The parameters and how they are combined, checked: names, counts, placeholders.
fn parameters(args: &SweepArgs) -> Result<(Vec<Param>, Method)> {
    let params: Vec<Param> = args
        .params
        .iter()
        .map(|p| params::parse_param(p).map_err(|e| UsageError::new(format!("--param {e}"))))
        .collect::<Result<_, _>>()?;
    params::check_names(&params).map_err(UsageError::new)?;
    let method = match args.samples {
        Some(samples) => Method::Random {
            samples,
            seed: args.seed.unwrap_or_else(rand::random),
        },
        None => Method::Grid,
    };
    let total = params::count(&params, method).map_err(UsageError::new)?;
    if total > MAX_RUNS {
        return Err(UsageError::new(format!(
            "the sweep makes {total} runs, more than the {MAX_RUNS} a sweep may have: give fewer values, or sample with --samples K"
        ))
        .into());
    }
    if total > MAX_RUNS_WITHOUT_YES && !args.spawn.yes {
        return Err(UsageError::new(format!(
            "the sweep makes {total} runs: add --yes to start that many, or give fewer values (or --samples K)"
        ))
        .into());
    }
    params::check_placeholders(&params, &args.spawn.script_args).map_err(UsageError::new)?;
    Ok((params, method))
}

/// The spawn flags a sweep does not take.
fn refuse_flags(settings: &Settings, spawn: &SpawnArgs) -> Result<()> {
    let refused = if spawn.delete {
        Some("-d deletes a run; a sweep's runs are deleted each with tf-spawner -d -t NAME-K")
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
async fn start(settings: &Settings, args: &SweepArgs, record: Record, resume: bool) -> Result<()> {
    let spawn = &args.spawn;
    let base = base_request(settings, spawn, &record).await?;
    let runs = sweep::points(&record);
    if spawn.dry_run {
        return dry_run(&base, &spawn.script_args, &runs, spawn.output);
    }
    // Every run's objects are valid before the first is made.
    for (tag, point) in &runs {
        plan::build(&sweep::request(&base, &spawn.script_args, (tag, point)))?;
    }
    if spawn.local {
        let local = LocalSweep {
            parallel: settings.parallel.value.unwrap_or(1) as usize,
            args: spawn.script_args.clone(),
            python: settings.python.value.clone(),
            notify: settings.notify.value.clone(),
            options: local::RunOptions {
                timeout: spawn.timeout,
                env_file: spawn.env_file.as_ref().map(|f| f.display().to_string()),
                colour: output::fancy_stdout(),
            },
            record,
            base,
        };
        return sweep::local::run(&local).await;
    }
    let cluster = settings.connect()?;
    let sweep = Sweep {
        args: spawn.script_args.clone(),
        parallel: parallel(settings),
        queued: settings.queue.value.is_some() || settings.gang.value.is_some(),
        wait: wait(settings, spawn),
        max_in_flight: spawn.max_in_flight,
        resume,
        record,
        base,
    };
    sweep::run(&cluster, &sweep).await
}

/// `--dry-run`: every run's objects made (so a problem shows), then the plan as a
/// table of the runs and their parameters, or (`-o yaml|json`) the objects.
fn dry_run(
    base: &SpawnRequest,
    args: &[String],
    runs: &[(String, params::Point)],
    format: Option<OutputFormat>,
) -> Result<()> {
    let plans = runs
        .iter()
        .map(|(tag, point)| Ok(plan::build(&sweep::request(base, args, (tag, point)))?));
    if let Some(format) = format {
        return render::plans_to_stdout(plans, format);
    }
    for plan in plans {
        plan?;
    }
    let name = base.experiment.as_ref().map_or("", |e| e.name.as_str());
    output::print(&params::runs_table(runs, args))?;
    output::print(&format!(
        "experiment {name}: {} {} planned; nothing created (--dry-run; their objects: -o yaml or -o json)\n",
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" }
    ))?;
    Ok(())
}

/// The request every run is made from: the spawn's, for the tag of the last run (the
/// longest: every object name of every run is checked to fit).
async fn base_request(
    settings: &Settings,
    spawn: &SpawnArgs,
    record: &Record,
) -> Result<SpawnRequest> {
    let last = record
        .runs
        .last()
        .map_or(record.name.as_str(), |r| r.tag.as_str());
    let tag = last.parse().map_err(|e: UsageError| {
        UsageError::new(format!(
            "the experiment's name '{}' makes a run tag {last} that {e}",
            record.name
        ))
    })?;
    let mut base = inputs::spawn_request(
        &spawn::options(spawn, settings),
        tag,
        settings.namespace.value.clone(),
    )
    .await?;
    base.experiment = Some(ExperimentRun {
        name: record.name.clone(),
        params: Vec::new(),
    });
    Ok(base)
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

/// Each run's wait: to its end, `--restarts` and the defaults file's stall bound.
fn wait(settings: &Settings, spawn: &SpawnArgs) -> Wait {
    Wait {
        tag: String::new(),
        until: WaitFor::End,
        timeout: spawn.timeout,
        start_timeout: settings.start_timeout.value,
        started: std::time::Instant::now(),
        all_workers: false,
        save_logs: None,
        cleanup: false,
        keep_running: settings.keep_running.value,
        max_in_flight: spawn.max_in_flight,
        restarts: spawn::restarts(settings, &spawn.restart),
        stall: Some(spawn::stall(settings, crate::ops::wait::OnStall::Warn)),
        observer: None,
        notify: settings.notify.value.clone(),
        // A sweep's Ctrl-C is the sweep's (`ops/sweep`); its runs print no document.
        on_cancel: crate::ops::wait::OnCancel::Leave,
        output: crate::output::ReportFormat::Table,
        heartbeat: Some(settings.heartbeat.value).filter(|d| !d.is_zero()),
    }
}

/// The words after `sweep`, without the invocation's own flags (the cluster, `-v`,
/// `-q`: `--resume` gives its own), the seed written in.
fn recorded_argv(method: Method) -> Vec<String> {
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|w| w.to_string_lossy().into_owned())
        .skip_while(|w| w != VERB)
        .skip(1)
        .collect();
    let mut kept = without_globals(&words);
    if let Method::Random { seed, .. } = method
        && !kept
            .iter()
            .take_while(|w| *w != "--")
            .any(|w| w == "--seed" || w.starts_with("--seed="))
    {
        kept.splice(0..0, ["--seed".to_string(), seed.to_string()]);
    }
    kept
}

/// `words` without the global flags (and their values), before `--`.
fn without_globals(words: &[String]) -> Vec<String> {
    let command = Cli::command();
    let globals: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| a.is_global_set())
        .collect();
    let takes = |word: &str| -> Option<bool> {
        let arg = if let Some(long) = word.strip_prefix("--") {
            let (long, inline) = long
                .split_once('=')
                .map_or((long, false), |(l, _)| (l, true));
            globals
                .iter()
                .find(|a| a.get_long() == Some(long))
                .map(|a| (a, inline))
        } else {
            let mut chars = word.strip_prefix('-')?.chars();
            let c = chars.next()?;
            let inline = chars.next().is_some();
            globals
                .iter()
                .find(|a| a.get_short() == Some(c))
                .map(|a| (a, inline))
        };
        arg.map(|(a, inline)| a.get_action().takes_values() && !inline)
    };
    let mut kept = Vec::new();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if word == "--" {
            kept.push(word.clone());
            kept.extend(iter.cloned());
            break;
        }
        match takes(word) {
            Some(true) => {
                iter.next();
            }
            Some(false) => {}
            None => kept.push(word.clone()),
        }
    }
    kept
}

/// `--resume NAME`: the record read, its command line parsed again (in the directory
/// it was started in) with this invocation's own flags, the runs that exist followed.
async fn resume(settings: &Settings, args: &SweepArgs, name: &str) -> Result<()> {
    if !args.params.is_empty() || args.spawn.script.is_some() || args.spawn.local {
        return Err(UsageError::new(format!(
            "--resume takes up a cluster experiment with the flags, script and parameters it was started with: give only --resume {name} (and the cluster's flags, e.g. -n)"
        ))
        .into());
    }
    let cluster = settings.connect()?;
    let Some(record) = cluster::experiment::read(&cluster, name).await? else {
        return Err(UsageError::new(format!(
            "no experiment '{name}' in namespace '{}' (no configmap {}): see its runs with tf-spawner list",
            cluster.namespace(),
            crate::labels::experiment_record_name(name)
        ))
        .into());
    };
    let here = std::env::current_dir()?;
    if here != std::path::Path::new(&record.cwd) {
        std::env::set_current_dir(&record.cwd).map_err(|e| {
            UsageError::new(format!(
                "cannot go to {}, where experiment '{name}' was started: {e}",
                record.cwd
            ))
        })?;
        output::note(&format!(
            "reading the experiment's files in {}, where it was started",
            record.cwd
        ));
    }
    let argv = resumed_argv(&record.argv);
    let matches = Cli::command().try_get_matches_from(argv).map_err(|e| {
        UsageError::new(format!(
            "experiment '{name}''s command line is no longer valid: {}",
            e.kind()
        ))
    })?;
    let cli = Cli::from_arg_matches(&matches)?;
    let again = Settings::load(&cli, &matches).await?;
    let Some(Command::Sweep(resumed)) = &cli.command else {
        return Err(UsageError::new(format!("experiment '{name}''s record has no sweep")).into());
    };
    let _ = output::print(&format!(
        "experiment {name}: taking it up ({} runs planned)\n",
        record.runs.len()
    ));
    start(&again, resumed, record, true).await
}

/// `tf-spawner [this invocation's words before the verb] sweep [recorded words] [this
/// invocation's words after the verb, but --resume]`: the recorded words carry no
/// cluster flag, this invocation's do.
fn resumed_argv(recorded: &[String]) -> Vec<OsString> {
    let now: Vec<OsString> = std::env::args_os().collect();
    let at = now.iter().position(|w| w == VERB).unwrap_or(now.len());
    let mut argv: Vec<OsString> = now.iter().take(at.saturating_add(1)).cloned().collect();
    let (options, script_args) = match recorded.iter().position(|w| w == "--") {
        Some(i) => recorded.split_at(i),
        None => (recorded, &[][..]),
    };
    argv.extend(options.iter().map(OsString::from));
    let mut after = now.iter().skip(at.saturating_add(1));
    while let Some(word) = after.next() {
        if word == "--resume" {
            after.next();
        } else if !word.to_string_lossy().starts_with("--resume=") {
            argv.push(word.clone());
        }
    }
    argv.extend(script_args.iter().map(OsString::from));
    argv
}
