//! The command line as clap sees it: flags and their defaults, nothing else. The
//! defaultable flags are declared once, in `flags.rs`'s list, and flattened in here by
//! where they are ([`SpawnFlags`], [`WaitFlags`]…); the other flags are fields of the
//! `…Args` structs: here the top level ([`Cli`], the verbs, the cluster and global
//! flags, `config`, `init`, `completions`), the spawn's and `sweep`'s in `spawn.rs`, the
//! verbs on runs that exist (`wait`, `status`, `logs`, `cp`, `tensorboard`, `list`,
//! `compare`) in `runs.rs`.
//! Turning these into a spawn request (reading files, checking values) is `inputs/mod.rs`,
//! after `settings/` lowered the list's values.
//!
//! A field's help is declared on it, by clap's attributes: its doc comment is the full
//! text (`--help`, the man page, completions); a longer one has `help = "…"`, its one
//! line for `-h` and a verb's help, beside `long_help` (which keeps the doc comment for
//! the rest); `help_heading` its heading in `--help`; `hide_short_help` leaves it to
//! `spawn --help`. `commands/help.rs` applies the rules every flag follows.

#![deny(clippy::arithmetic_side_effects)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub(crate) mod flag_defs;
pub(crate) mod flags;
pub(crate) mod parse;
mod runs;
mod spawn;

use flags::Heading;

pub use crate::tag::Tag;

pub use crate::metrics::notice::Target;
pub use crate::metrics::table::CompareFormat;
pub use crate::ops::wait::{OnStall, WaitFor};
pub use crate::output::ReportFormat;
pub use crate::plan::podgroup::Gang;
pub use crate::render::OutputFormat;
pub use crate::roles::Strategy;
pub use crate::verdict::retryable::RestartOn;

pub use flag_defs::{GlobalFlags, LogsFlags, SpawnFlags, SweepFlags, TensorboardFlags, WaitFlags};
pub use flags::{DEFAULT_PORT, DEFAULT_WORKERS};
pub use runs::{
    CompareArgs, CpArgs, DEFAULT_MAX_LOG_REQUESTS, ListArgs, LogsArgs, StatusArgs, SuperviseArgs,
    TensorboardArgs, WaitArgs,
};
pub use spawn::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_TAG, RestartArgs, RoleArgs, SpawnArgs, SweepArgs};

/// The command line without the help's shaping: every flag's full text (its doc
/// comment) as its one text, no heading, nothing left to `--help` alone. The man page
/// and completions read this; `commands/help.rs` shapes [`Cli::command`] instead.
pub fn unshaped() -> clap::Command {
    fn plain(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            let full = a.get_long_help().cloned();
            match full {
                Some(full) => a.help(full).long_help(None),
                None => a,
            }
            .help_heading(None)
            .hide_short_help(false)
        })
        .mut_subcommands(plain)
    }
    plain(<Cli as clap::CommandFactory>::command())
}

#[derive(Debug, Parser)]
#[command(
    name = "tf-spawner",
    version,
    about = "Run distributed TensorFlow training on Kubernetes: one pod and one headless service per task, no operator.",
    long_about = None,
    after_help = "Examples:\n  tf-spawner -w 4 train.py              spawn 4 workers running train.py\n  tf-spawner --dry-run -w 4 train.py    print the objects instead of creating them\n  tf-spawner -d -t tf-spawner           delete the run tagged tf-spawner\n  tf-spawner wait -t T --save-logs out/   wait for run T to end; exit 0 if it succeeded\n  tf-spawner logs -f -t T               follow the merged logs of run T",
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    #[command(flatten)]
    pub spawn: SpawnArgs,

    #[command(flatten)]
    pub global: GlobalArgs,

    /// Follow an existing run instead of spawning one
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Verbs for runs that exist (spawning and `-d` need none).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a training project in DIR (default: here): train.py, ready for
    /// MultiWorkerMirroredStrategy, the project's settings (tf-spawner.yaml) and a
    /// .tfspawnerignore; an existing file is left alone unless --force (docs/starting.md)
    Init(InitArgs),
    /// Wait until a run ends (or starts, with --for start) and exit with its outcome:
    /// 0 Succeeded, 3 Failed, 4 timed out, 5 not started in time (--start-timeout)
    Wait(WaitArgs),
    /// Show the pods of a run and the run's verdict
    Status(StatusArgs),
    /// Print the logs of every pod of a run as one stream, each line prefixed by its task
    Logs(LogsArgs),
    /// List the runs in the namespace (or in every namespace with -A)
    List(ListArgs),
    /// Copy a file or directory out of the run's volume (--volume) to this machine,
    /// through a short-lived helper pod
    #[command(override_usage = "tf-spawner cp [OPTIONS] [TAG] REMOTE LOCAL")]
    Cp(CpArgs),
    /// Serve the run's TensorBoard summaries (its volume) from a pod of the run, forwarded
    /// to a local port, until Ctrl-C
    Tensorboard(TensorboardArgs),
    /// Compare the runs of an experiment (tf-spawner sweep), or the runs named by their
    /// tags, from their records (no log is read): one row per run with the parameters that
    /// differ, verdict, time, restarts, epochs, final and best metrics, sorted by a metric,
    /// the best marked *; then a chart of a metric per epoch for every run
    Compare(CompareArgs),
    /// Show the effective defaults (namespace, image, pod file, port, workers, queue,
    /// priority class, deadline, gang, scheduler name) and where each comes from: a flag, the project
    /// file (tf-spawner.yaml), the config file, the kubeconfig or the built-in default
    Config(ConfigArgs),
    /// Print a shell completion script on stdout (bash, zsh, fish, elvish or powershell):
    /// at each Tab it asks tf-spawner, which completes the verbs, the flags and the run
    /// tags of the namespace (2 s at most; nothing without a cluster)
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout
    Man,
    /// Run an experiment: the spawn's script and flags once per combination of
    /// parameters (--param lr=0.1,0.01: a grid) or per sample (--samples K of ranges),
    /// each an ordinary run tagged NAME-1 … NAME-K, so many at a time, followed to the
    /// end: exit 0 when every run succeeded, 3 when one failed (docs/experiments.md)
    // A sweep always follows its runs: the flags of a wait need no --wait there.
    #[command(
        mut_arg("timeout", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset)),
        mut_arg("start_timeout", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset)),
        mut_arg("keep_running", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset))
    )]
    Sweep(Box<SweepArgs>),
    /// Follow a run or an experiment as its supervisor (the pod `spawn --detach` or
    /// `sweep --detach` starts runs this): wait to its verdict, or run the sweep, with the
    /// settings in its supervisor's Secret, acting for it
    #[command(hide = true)]
    Supervise(SuperviseArgs),
}

/// Diagnostics and verbosity, for every command.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Log to stderr: -v one line per API call (method, path, status, duration, attempt),
    /// -vv also retries and the client's internals [RUST_LOG works too]
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Log each API call to stderr (-vv: more)", short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print nothing on stdout, only errors on stderr; a new run still prints its tag,
    /// so RUN=$(tf-spawner -q -r train.py) works
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Print only errors (and a new run's tag)", short, long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Args, Clone)]
pub struct ConfigArgs {
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Table, value_name = "FORMAT")]
    pub output: ReportFormat,

    /// Trust the project file (tf-spawner.yaml, here or in a parent directory) as it is
    /// now, so that its keys that run a program on this machine (python) are used: its
    /// path and hash are recorded in your config directory; an edit needs --trust again
    #[arg(long)]
    pub trust: bool,
}

/// `tf-spawner init [DIR]`.
#[derive(Debug, Args, Clone)]
pub struct InitArgs {
    /// The project's directory, made if missing (not the `dir` setting, hence its id)
    #[arg(id = "project_dir", value_name = "DIR", default_value = ".")]
    pub project_dir: PathBuf,

    /// A custom training loop (PreemptionCheckpointHandler: a checkpoint on SIGTERM, exit
    /// 42) instead of Keras' Model.fit
    #[arg(long)]
    pub custom_loop: bool,

    /// What train.py distributes with: tensorflow (tf.distribute with tf-keras) or keras
    /// (Keras 3 on JAX, and `framework: keras` in tf-spawner.yaml)
    // Its own id: not the `framework` setting (as `project_dir` is not `dir`).
    #[arg(id = "init_framework", long = "framework", value_name = "NAME", value_parser = crate::cli::parse::value_enum::<crate::framework::Framework>, default_value = "tensorflow")]
    pub framework: crate::framework::Framework,

    /// Overwrite files that exist
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args, Clone)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// How to reach the cluster: kubectl's conventions.
#[derive(Debug, Args, Clone)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub table: GlobalFlags,

    /// Path to the kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else in-cluster]
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Kubeconfig file [default: $KUBECONFIG]", long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use [default: the current context]
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Kubeconfig context [default: current]", long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Time limit of each API request (e.g. 30s, 2m); a request that takes longer is retried
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Time limit per request", long, global = true, default_value = "30s", value_parser = parse::parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Retries of a request that failed with 429, 5xx, a timeout or a dropped connection
    #[arg(help_heading = Heading::Global.title(), long_help, help = "Retries of a failed request", 
        long,
        global = true,
        default_value_t = 4,
        allow_negative_numbers = true,
        value_name = "N"
    )]
    pub retries: u32,
}
