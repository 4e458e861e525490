//! tf-spawner: distributed TensorFlow on Kubernetes without an operator.
//!
//! The flow of a spawn: [`cli`] parses flags → [`inputs`] reads and checks files →
//! [`plan`] builds the typed objects (pure) → [`cluster`] applies them (all API I/O) →
//! [`commands`] report, printing through [`output`] only.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod defaults;
pub mod diagnostics;
pub mod duration;
pub mod envfile;
pub mod errors;
pub mod inputs;
pub mod local;
pub mod output;
pub mod plan;
pub mod progress;
pub mod quiet;
pub mod render;
pub mod roles;
pub mod signals;
pub mod tag;
pub mod template;
pub mod verdict;

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
    let matches = Cli::command()
        .bin_name(display_name(argv0.as_deref()))
        .get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
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
    let origins = defaults::apply(&mut cli, &matches, &defaults);
    if cli.global.quiet
        && let Err(e) = quiet::silence_stdout()
    {
        let err = anyhow::anyhow!("cannot silence stdout for --quiet: {e}");
        return finish(Err(err));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::error(&format!("cannot start the async runtime: {e}"));
            return ExitCode::from(errors::EXIT_RUNTIME);
        }
    };
    finish(runtime.block_on(run(cli, defaults, origins)))
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
    defaults: defaults::Defaults,
    origins: defaults::Origins,
) -> anyhow::Result<()> {
    if let Some(command) = &cli.command {
        return match command {
            cli::Command::Config(args) => {
                commands::config::exec(&cli.cluster, &cli.spawn, args, &defaults, &origins).await
            }
            cli::Command::Completions(args) => commands::completions::completions(args),
            cli::Command::Man => commands::completions::man(),
            cli::Command::Wait(args) => commands::wait::exec(&cli.cluster, args).await,
            cli::Command::Status(args) => commands::status::exec(&cli.cluster, args).await,
            cli::Command::Logs(args) => commands::logs::exec(&cli.cluster, args).await,
            cli::Command::List(args) => commands::list::exec(&cli.cluster, args).await,
        };
    }
    if cli.spawn.delete {
        commands::delete::exec(&cli.cluster, &cli.spawn).await
    } else {
        commands::spawn::exec(&cli.cluster, &cli.spawn).await
    }
}
