//! tf-spawner: distributed TensorFlow on Kubernetes without an operator.
//!
//! The layers, each using only those below it (see ARCHITECTURE.md):
//! the entry (this file, `cli`) → `commands` (with `settings`) → `ops` →
//! {`plan`, `verdict`, `cluster`, `local`} → {`labels`, `roles`, `tag`, `errors`}.
//! Every byte printed goes through `output`.

#![deny(clippy::print_stdout, clippy::print_stderr)]
#![forbid(unsafe_code)]

pub mod cli;
pub(crate) mod cluster;
pub(crate) mod commands;
pub(crate) mod defaults;
pub(crate) mod diagnostics;
pub(crate) mod duration;
pub(crate) mod envfile;
pub(crate) mod errors;
pub(crate) mod helper;
pub(crate) mod inputs;
pub(crate) mod labels;
pub(crate) mod local;
pub(crate) mod ops;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod podgroup;
pub(crate) mod progress;
pub(crate) mod render;
pub(crate) mod roles;
pub(crate) mod settings;
pub(crate) mod signals;
pub(crate) mod tag;
pub(crate) mod template;
pub(crate) mod timing;
pub(crate) mod verdict;

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
    let argv0 = std::env::args_os().next();
    let matches = match Cli::command()
        .bin_name(display_name(argv0.as_deref()))
        .try_get_matches()
    {
        Ok(matches) => matches,
        Err(e) => return clap_error(e),
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Err(e) = spawn_flags_only_for_spawn(&matches) {
        return finish(Err(e.into()));
    }
    diagnostics::init(cli.global.verbose);
    match &cli.command {
        Some(cli::Command::Completions(args)) => {
            return finish(commands::completions::completions(args));
        }
        Some(cli::Command::Man) => return finish(commands::completions::man()),
        _ => {}
    }
    let defaults = match defaults::load() {
        Ok(d) => d,
        Err(e) => return finish(Err(e.into())),
    };
    // One thread: the work is waiting on the API server, and a second worker thread
    // only adds wake-ups (a 1,000-worker spawn took twice the CPU on two; README,
    // "Performance"). Nothing here blocks a thread but the `-d` prompt, which waits alone.
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
    finish(runtime.block_on(run(cli, matches, defaults)))
}

/// Help, version and clap's own errors as clap prints them; a value our own parser
/// refused (a tag) as one `error:` line, like every other usage error.
fn clap_error(err: clap::Error) -> ExitCode {
    let ours = std::error::Error::source(&err)
        .and_then(|source| source.downcast_ref::<errors::UsageError>())
        .map(|usage| errors::UsageError::new(usage.to_string()));
    match ours {
        Some(usage) => finish(Err(usage.into())),
        None => err.exit(),
    }
}

/// Global flags (`-n`, `-v`…) may come before a verb, as with kubectl; a spawn flag
/// there would be silently ignored, so it is refused.
fn spawn_flags_only_for_spawn(matches: &clap::ArgMatches) -> Result<(), errors::UsageError> {
    let Some((verb, _)) = matches.subcommand() else {
        return Ok(());
    };
    let spawn_args = <cli::SpawnArgs as clap::Args>::augment_args(clap::Command::new("spawn"));
    for arg in spawn_args.get_arguments() {
        let id = arg.get_id().as_str();
        if matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            let flag = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => "the training script".to_string(),
            };
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
            output::error(&errors::one_line(&err));
            ExitCode::from(errors::exit_code(&err))
        }
    }
}

async fn run(
    cli: Cli,
    matches: clap::ArgMatches,
    defaults: defaults::Defaults,
) -> anyhow::Result<()> {
    let settings = settings::Settings::load(&cli, &matches, defaults).await;
    if settings.output.quiet {
        output::silence();
    }
    let spawn = &cli.spawn;
    match &cli.command {
        Some(cli::Command::Config(args)) => commands::config::exec(&settings, args),
        Some(cli::Command::Completions(args)) => commands::completions::completions(args),
        Some(cli::Command::Man) => commands::completions::man(),
        Some(cli::Command::Wait(args)) => commands::wait::exec(&settings, args).await,
        Some(cli::Command::Status(args)) => commands::status::exec(&settings, args).await,
        Some(cli::Command::Logs(args)) => commands::logs::exec(&settings, args).await,
        Some(cli::Command::List(args)) => commands::list::exec(&settings, args).await,
        Some(cli::Command::Cp(args)) => commands::cp::exec(&settings, args).await,
        Some(cli::Command::Tensorboard(args)) => commands::tensorboard::exec(&settings, args).await,
        None if spawn.delete => commands::delete::exec(&settings, spawn).await,
        None if spawn.local => commands::local::exec(&settings, spawn).await,
        None => commands::spawn::exec(&settings, spawn).await,
    }
}
