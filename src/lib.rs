//! tf-spawner: distributed TensorFlow on Kubernetes without an operator.
//!
//! The layers, each using only those below it, as ARCHITECTURE.md draws them (a test,
//! `tests/it/drift.rs`, checks that the two name the same modules in the same layers):
//! entry (`main`, `lib`, `commands/verbs`, `commands/help`) →
//! commands (`commands`, `settings`) → command line (`cli`) → operations (`ops`) →
//! domain (`plan`, `inputs`, `preflight`, `verdict`, `cluster`, `local`, `metrics`) →
//! base (`labels`, `duration`, `roles`, `framework`, `tag`, `errors`, `output`).
//! Every byte printed goes through `output`.

#![deny(clippy::print_stdout, clippy::print_stderr)]
#![forbid(unsafe_code)]

pub(crate) mod bundle;
pub mod cli;
pub(crate) mod cluster;
pub(crate) mod commands;
pub(crate) mod diagnostics;
pub(crate) mod duration;
pub(crate) mod errors;
pub(crate) mod framework;
pub(crate) mod inputs;
pub(crate) mod labels;
pub(crate) mod local;
pub(crate) mod metrics;
pub(crate) mod ops;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod preflight;
pub(crate) mod progress;
pub(crate) mod render;
pub(crate) mod roles;
pub(crate) mod settings;
pub(crate) mod signals;
pub(crate) mod starter;
pub(crate) mod tag;
pub(crate) mod trainlog;
pub(crate) mod verdict;
pub(crate) mod yaml;

/// The pure pieces of an adaptive sweep, for `benches/adaptive.rs` only (it drives them
/// directly, no cluster): the early-stopping board (ASHA, median), the TPE proposer, a
/// sweep's parameters and its random points. Not an API.
#[doc(hidden)]
pub mod adaptive {
    pub use crate::metrics::early::{
        Against, Board, DEFAULT_ETA, DEFAULT_MIN_EPOCHS, Decision, Objective, Rule, Stopping,
    };
    pub use crate::metrics::tpe::{Outcome, Trial, propose, startup};
    pub use crate::plan::sweep::{Method, Param, Point, Values, expand, parse_param};
}

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use cli::Cli;

/// The prefix of kubectl plugins: `kubectl foo-bar` runs `kubectl-foo_bar`.
const KUBECTL_PLUGIN_PREFIX: &str = "kubectl-";

/// The name help and usage show: `kubectl tf-spawner` when the binary runs as the
/// kubectl plugin `kubectl-tf_spawner` (kubectl turns `-` in the command into `_` in
/// the file name), else `tf-spawner`.
pub fn display_name(argv0: Option<&std::ffi::OsStr>) -> String {
    let file = argv0
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .and_then(|f| f.to_str())
        .unwrap_or("");
    match file.strip_prefix(KUBECTL_PLUGIN_PREFIX) {
        Some(plugin) if !plugin.is_empty() => format!("kubectl {}", plugin.replace('_', "-")),
        _ => "tf-spawner".to_string(),
    }
}

/// Parses the command line, runs the command, and maps errors to exit codes.
pub fn main() -> ExitCode {
    // A shell's Tab (`TF_SPAWNER_COMPLETE=bash tf-spawner -- …`): answered, then exit.
    commands::complete::answer_if_asked();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let name = display_name(argv.first().map(|a| a.as_os_str()));
    output::set_name(&name);
    if argv.len() <= 1 {
        return finish(Err(commands::verbs::short_usage(&name).into()));
    }
    let given = commands::help::help_spawn(argv);
    let argv = commands::verbs::without_spawn_verb(given.clone());
    let spawn_verb = argv.len() < given.len();
    let command = commands::help::command(Cli::command(), &name, spawn_verb);
    let matches = match command.clone().try_get_matches_from(&argv) {
        Ok(matches) => matches,
        Err(e) => {
            output::errors_as_json(json_in(&argv));
            let hint = script_args_hint(command, &argv, &e, &name);
            return clap_error(e, hint.as_deref());
        }
    };
    output::errors_as_json(json_asked(&matches));
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let checked = spawn_flags_only_for_spawn(&matches)
        .and_then(|()| commands::verbs::settle_tag(&mut cli, &matches))
        .and_then(|()| script_or_verb(&cli));
    if let Err(e) = checked {
        return finish(Err(e.into()));
    }
    diagnostics::init(cli.global.verbose);
    match &cli.command {
        Some(cli::Command::Completions(args)) => {
            return finish(commands::completions::completions(args));
        }
        Some(cli::Command::Man) => return finish(commands::completions::man()),
        // Makes files only: no settings (a project file above is not read), no runtime.
        Some(cli::Command::Init(args)) => {
            if cli.global.quiet {
                output::silence();
            }
            return finish(commands::init::exec(args));
        }
        _ => {}
    }
    // One thread: the work is waiting on the API server, and a second worker thread
    // only adds wake-ups (a 1,000-worker spawn took twice the CPU on two; docs/performance.md,
    // "Performance"). Nothing blocks this thread: the `-d` prompt and a FIFO input are read
    // in threads of their own, so Ctrl-C can end those waits.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::error(&format!("cannot start the async runtime: {e}"));
            return ExitCode::from(errors::EXIT_RUNTIME);
        }
    };
    finish(runtime.block_on(run(cli, matches)))
}

/// `-o json` on the verb's command line (or the spawn's, `-d`'s): its errors are JSON
/// on stdout too (`output::failed`).
fn json_asked(matches: &clap::ArgMatches) -> bool {
    let verb = matches.subcommand().map_or(matches, |(_, m)| m);
    let raw = verb.try_get_raw("output").ok().flatten();
    raw.and_then(|mut values| values.next_back())
        .is_some_and(|v| v == "json")
}

/// [`json_asked`] for a command line clap refused: `-o json`, `-ojson`, `-o=json`,
/// `--output json` or `--output=json` before any `--`.
fn json_in(argv: &[std::ffi::OsString]) -> bool {
    let words: Vec<&str> = (argv.iter().skip(1))
        .map_while(|a| a.to_str().filter(|a| *a != "--"))
        .collect();
    let joined = words
        .iter()
        .any(|w| ["-ojson", "-o=json", "--output=json"].contains(w));
    joined
        || words
            .windows(2)
            .any(|w| matches!(w, ["-o" | "--output", "json"]))
}

/// Help and version as clap prints them; every usage error (clap's own, or a value our
/// parser refused, such as a tag) as one `error:` line, exit 2.
fn clap_error(err: clap::Error, hint: Option<&str>) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    let ours = std::error::Error::source(&err)
        .and_then(|source| source.downcast_ref::<errors::UsageError>())
        .map(|usage| usage.to_string());
    let name = display_name(std::env::args_os().next().as_deref());
    let message = ours.unwrap_or_else(|| clap_one_line(&err.render().to_string(), &name, hint));
    finish(Err(errors::UsageError::new(message).into()))
}

/// An argument clap refused right after a training script (`train.py --epochs 3`) is
/// most likely the script's own: the hint shows the command with `--` before it.
fn script_args_hint(
    command: clap::Command,
    argv: &[std::ffi::OsString],
    err: &clap::Error,
    name: &str,
) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(refused)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let at = 1 + argv.iter().skip(1).position(|a| {
        a.to_str()
            .is_some_and(|a| a == refused || a.starts_with(&format!("{refused}=")))
    })?;
    let before = command.try_get_matches_from(&argv[..at]).ok()?;
    let script = before.try_get_one::<std::path::PathBuf>("script").ok()??;
    let words: Vec<String> = argv[1..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // `staus exp1`: no script but a mistyped verb, whose run clap refused.
    let word = script.to_string_lossy();
    if !word.contains(['.', '/']) && !script.exists() {
        let verb = nearest_verb(&word)?;
        let rest: Vec<&str> = (words.iter())
            .map(|w| if *w == word { verb.as_str() } else { w })
            .collect();
        return Some(format!(
            "'{word}' is no verb: did you mean `{name} {}`?",
            rest.join(" ")
        ));
    }
    let (flags, script_args) = words.split_at(at - 1);
    Some(format!(
        "the training script's arguments go after `--`: {name} {} -- {}",
        flags.join(" "),
        script_args.join(" ")
    ))
}

/// clap's error text (the error, tips, usage, "For more information") as one line: the
/// error, the tips worth reading, and where help is.
fn clap_one_line(rendered: &str, name: &str, hint: Option<&str>) -> String {
    let mut lines = rendered.lines().map(str::trim);
    let mut first = lines
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    // "the following required arguments were not provided:" lists them on the next lines.
    if first.ends_with(':') {
        let listed: Vec<&str> = lines.by_ref().take_while(|l| !l.is_empty()).collect();
        first = format!("{} {}", first, listed.join(", "));
    }
    let tips: Vec<&str> = lines
        .filter_map(|l| {
            l.strip_prefix("tip: ")
                .or_else(|| l.strip_prefix('[').and_then(|l| l.strip_suffix(']')))
        })
        .filter(|tip| !tip.starts_with("to pass "))
        .collect();
    let mut line = first;
    if !tips.is_empty() {
        line.push_str(&format!(" ({})", tips.join("; ")));
    }
    // The command the error is about, from clap's usage line (`tf-spawner status`).
    let command = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|usage| {
            let words = usage
                .split(' ')
                .take_while(|w| !w.starts_with(['[', '<', '-']));
            words.collect::<Vec<_>>().join(" ")
        })
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| name.to_string());
    if let Some(hint) = hint {
        line.push_str(&format!("; {hint}"));
    }
    line.push_str(&format!("; see {command} --help"));
    line
}

/// What clap took for a training script but is a mistyped verb (`stauts`), or `-d`
/// given one: a usage error before any file is read.
fn script_or_verb(cli: &Cli) -> Result<(), errors::UsageError> {
    let Some(script) = cli
        .spawn
        .script
        .as_deref()
        .filter(|_| cli.command.is_none())
    else {
        return Ok(());
    };
    let word = script.to_string_lossy();
    if cli.spawn.delete {
        return Err(errors::UsageError::new(format!(
            "-d deletes a run by its tag and takes no training script ({word}): tf-spawner -d -t TAG"
        )));
    }
    if !word.contains(['.', '/']) && !script.exists() {
        return Err(errors::UsageError::new(unknown_verb(&word)));
    }
    Ok(())
}

/// The verbs, and the nearest one (or `-d` for `delete`) if the word is close.
fn unknown_verb(word: &str) -> String {
    let verbs: Vec<String> = Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .filter(|v| v != "help")
        .collect();
    let nearest = nearest_verb(word).map(|v| format!("; did you mean `{v}`?"));
    let hint = match word {
        "delete" | "del" | "rm" | "remove" | "stop" | "kill" => {
            Some("; to delete a run: tf-spawner -d -t TAG".to_string())
        }
        _ => nearest,
    };
    format!(
        "'{word}' is neither a verb nor an existing training script{} (the verbs: {}; a training script is a file, e.g. train.py)",
        hint.unwrap_or_default(),
        verbs.join(", ")
    )
}

/// The verb `word` is a slip of (at most two edits away), if any.
fn nearest_verb(word: &str) -> Option<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .filter(|v| v != "help")
        .map(|v| (strsim::damerau_levenshtein(word, &v), v))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, v)| v)
}

/// Global flags (`-n`, `-v`…) may come before a verb, as with kubectl; a spawn flag
/// there would be silently ignored, so it is refused.
fn spawn_flags_only_for_spawn(matches: &clap::ArgMatches) -> Result<(), errors::UsageError> {
    let Some((verb, _)) = matches.subcommand() else {
        return Ok(());
    };
    let spawn_args = <cli::SpawnArgs as clap::Args>::augment_args(clap::Command::new("spawn"));
    // `-t TAG` before a verb acting on a run names that run (`commands::verbs::settle_tag`).
    let tag_names_the_run = matches!(verb, "wait" | "status" | "logs" | "cp" | "tensorboard");
    for arg in spawn_args.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "tag" && tag_names_the_run {
            continue;
        }
        if matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            let flag = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => "the training script".to_string(),
            };
            // A sweep takes the spawn's flags, after its verb.
            if verb == "sweep" {
                return Err(errors::UsageError::new(format!(
                    "{flag} goes after `sweep`, with the sweep's other flags: tf-spawner sweep {} --param NAME=V1,V2 SCRIPT",
                    if arg.get_long().is_some() {
                        format!("{flag} …")
                    } else {
                        "…".into()
                    }
                )));
            }
            return Err(errors::UsageError::new(format!(
                "{flag} belongs to spawning a run, not to `{verb}`; see tf-spawner {verb} --help"
            )));
        }
    }
    Ok(())
}

/// Prints an error as one line on stderr and maps it to the exit code.
fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let code = errors::exit_code(&err);
            output::failed(&errors::one_line(&err), code);
            ExitCode::from(code)
        }
    }
}

async fn run(cli: Cli, matches: clap::ArgMatches) -> anyhow::Result<()> {
    let settings = settings::Settings::load(&cli, &matches).await?;
    if settings.output.quiet {
        output::silence();
    }
    let spawn = &cli.spawn;
    match &cli.command {
        Some(cli::Command::Config(args)) => commands::config::exec(&settings, args),
        Some(cli::Command::Completions(args)) => commands::completions::completions(args),
        Some(cli::Command::Man) => commands::completions::man(),
        Some(cli::Command::Init(args)) => commands::init::exec(args),
        Some(cli::Command::Wait(args)) => commands::wait::exec(&settings, args).await,
        Some(cli::Command::Status(args)) => commands::status::exec(&settings, args).await,
        Some(cli::Command::Logs(args)) => commands::logs::exec(&settings, args).await,
        Some(cli::Command::List(args)) => commands::list::exec(&settings, args).await,
        Some(cli::Command::Cp(args)) => commands::cp::exec(&settings, args).await,
        Some(cli::Command::Compare(args)) => commands::compare::exec(&settings, args).await,
        Some(cli::Command::Tensorboard(args)) => commands::tensorboard::exec(&settings, args).await,
        Some(cli::Command::Sweep(args)) => commands::sweep::exec(&settings, args).await,
        Some(cli::Command::Supervise(args)) => commands::supervise::exec(&settings, args).await,
        None if spawn.delete => commands::delete::exec(&settings, spawn).await,
        None if spawn.local => commands::local::exec(&settings, spawn).await,
        None => commands::spawn::exec(&settings, spawn).await,
    }
}
