//! tf-spawner: distributed TensorFlow on Kubernetes without an operator.
//!
//! The flow of a spawn: [`cli`] parses flags → [`inputs`] reads and checks files →
//! [`plan`] builds the typed objects (pure) → [`cluster`] applies them (all API I/O) →
//! [`commands`] report.

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod duration;
pub mod envfile;
pub mod errors;
pub mod inputs;
pub mod local;
pub mod output;
pub mod plan;
pub mod progress;
pub mod render;
pub mod roles;
pub mod signals;
pub mod tag;
pub mod template;
pub mod verdict;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

/// Parses the command line, runs the command, and maps errors to exit codes.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(errors::EXIT_RUNTIME);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", errors::one_line(&err));
            ExitCode::from(errors::exit_code(&err))
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(command) = &cli.command {
        return match command {
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
