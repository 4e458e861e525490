//! The command line as clap sees it: flags and their defaults, nothing else. The
//! defaultable flags are declared once, in `flags.rs`'s list, and flattened in here by
//! where they are ([`SpawnFlags`], [`WaitFlags`]…); the other flags are fields below.
//! Turning these into a spawn request (reading files, checking values) is `inputs.rs`,
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

use flags::Heading;
use parse::Flag;

pub use crate::tag::Tag;

pub use crate::metrics::notice::Target;
pub use crate::metrics::table::CompareFormat;
pub use crate::ops::wait::{OnStall, WaitFor};
pub use crate::output::ReportFormat;
pub use crate::podgroup::Gang;
pub use crate::render::OutputFormat;
pub use crate::roles::Strategy;
pub use crate::verdict::retryable::RestartOn;

pub use flag_defs::{GlobalFlags, LogsFlags, SpawnFlags, SweepFlags, TensorboardFlags, WaitFlags};
pub use flags::{DEFAULT_PORT, DEFAULT_WORKERS};

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

pub const DEFAULT_TAG: &str = "tf-spawner";
pub const DEFAULT_MAX_IN_FLIGHT: usize = 32;

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
}

/// `tf-spawner sweep`: the spawn's flags and script, and the parameters.
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    /// A parameter and its values, repeatable: NAME=V1,V2,… (a grid takes every
    /// combination), or a range for a random search (--samples): NAME=LO..HI (uniform),
    /// NAME=log:LO..HI (log-uniform), NAME=int:LO..HI (an integer, both ends included).
    /// The script gets it as {NAME} in its arguments (-- --lr {lr}) and as
    /// $TF_SPAWNER_PARAM_NAME (upper-cased)
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,

    /// A random search: K runs, each parameter drawn from its values or its range
    #[arg(long, value_parser = Flag(parse::runs), value_name = "K")]
    pub samples: Option<u32>,

    /// The random search's seed [default: a random one, printed and recorded]
    #[arg(long, requires = "samples", value_parser = Flag(parse::seed), value_name = "N")]
    pub seed: Option<u64>,

    /// How the points are chosen: grid (every combination; the default without
    /// --samples), random (--samples K drawn; the default with --samples), tpe
    /// (--samples K, the first few random, each other chosen from the runs so far by
    /// a Tree-structured Parzen Estimator; needs --objective)
    #[arg(long, value_enum, value_name = "METHOD")]
    pub method: Option<crate::plan::sweep::Search>,

    /// The metric the sweep is judged by, and its direction: val_loss (lower is better:
    /// a loss or an error, from the name), accuracy (higher), or either end said,
    /// val_loss:min, auc:max; recorded with the experiment, what compare sorts by and
    /// what --early-stop compares [default: compare's, val_loss, else loss]
    #[arg(long, value_parser = Flag(parse::objective), value_name = "METRIC")]
    pub objective: Option<crate::metrics::early::Objective>,

    #[command(flatten)]
    pub table: SweepFlags,

    /// Take up experiment NAME where it stopped (Ctrl-C, a lost connection): give the
    /// command it was started with, adding --resume NAME; its runs that exist are
    /// followed, those that ended are not started again, the others are started
    #[arg(long, value_name = "NAME")]
    pub resume: Option<Tag>,

    /// With --resume: take the experiment up although its script or --dir's files
    /// changed since it began
    #[arg(long, requires = "resume")]
    pub allow_changed: bool,

    #[command(flatten)]
    pub spawn: SpawnArgs,
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

#[derive(Debug, Args, Clone)]
pub struct WaitArgs {
    /// The run's tag
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// The run's tag, as a positional: the same as -t TAG
    #[arg(value_name = "RUN")]
    pub run: Option<Tag>,

    /// What to wait for: the verdict (end), or every pod running or finished (start)
    #[arg(long_help, help = "end (the verdict) or start (every pod running)", long = "for", value_enum, default_value_t = WaitFor::End, value_name = "WHAT")]
    pub until: WaitFor,

    /// Give up this long (e.g. 90s, 10m, 1h) after the command started, with exit code 4
    #[arg(long_help, help = "Give up this long after the start (exit 4)", long, value_parser = parse::parse_duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,

    /// What a stall (no progress for --stall-after, else the derived bound) does: warn
    /// (name it, wait on), fail (exit 3, the unfinished pods stopped as after any
    /// verdict, so a run stuck on a dead peer frees its GPUs) or restart (as for a
    /// preemption, counted against --restarts)
    #[arg(long_help, help = "warn, fail (exit 3) or restart on a stall", long, value_enum, default_value_t = OnStall::Warn, value_name = "WHAT")]
    pub on_stall: OnStall,

    #[command(flatten)]
    pub table: WaitFlags,

    /// The run succeeds only when every worker has exited 0 (not just the chief or worker 0)
    #[arg(long_help, help = "Succeed only when every worker exits 0", long)]
    pub all_workers: bool,

    /// After the verdict (or a timeout), write every pod's full log to DIR/POD.log
    #[arg(
        long_help,
        help = "After the verdict, write each pod's log to DIR/POD.log",
        long,
        value_name = "DIR"
    )]
    pub save_logs: Option<PathBuf>,

    /// After the verdict (or a timeout), delete the run's objects (logs are saved first)
    #[arg(
        long_help,
        help = "After the verdict, delete the run (logs saved first)",
        long
    )]
    pub cleanup: bool,

    /// The verdict as a json or yaml document on stdout (the progress on stderr); left out
    /// of `wait`'s help, a screen already (docs/reference.md, "Following a run")
    #[arg(short, long, value_enum, value_name = "FORMAT", hide = true)]
    pub output: Option<ReportFormat>,

    #[command(flatten)]
    pub restart: RestartArgs,
}

#[derive(Debug, Args, Clone)]
pub struct StatusArgs {
    /// The run's tag
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// The run's tag, as a positional: the same as -t TAG
    #[arg(value_name = "RUN")]
    pub run: Option<Tag>,

    /// The verdict requires every worker to have exited 0
    #[arg(long)]
    pub all_workers: bool,

    /// Output format
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Table, value_name = "FORMAT")]
    pub output: ReportFormat,
}

#[derive(Debug, Args, Clone)]
pub struct LogsArgs {
    #[command(flatten)]
    pub table: LogsFlags,

    /// The run's tag
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// The run's tag, as a positional: the same as -t TAG
    #[arg(value_name = "RUN")]
    pub run: Option<Tag>,

    /// Keep streaming until the pods end; pods that start later are picked up
    #[arg(short, long)]
    pub follow: bool,

    /// Only lines newer than this (e.g. 10s, 5m, 1h)
    #[arg(long, value_parser = parse::parse_duration, value_name = "DURATION")]
    pub since: Option<Duration>,

    /// Only the last N lines of each pod
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub tail: Option<u64>,

    /// Prefix each line with the time the container wrote it (RFC 3339)
    #[arg(long)]
    pub timestamps: bool,

    /// Pass each line through as the pod wrote it, terminal escape sequences included
    /// (colours for `less -R`); by default every control character but a tab is shown
    /// escaped (`\u{1b}`), so that a log cannot retitle, clear or write to the clipboard
    /// of the terminal
    #[arg(long)]
    pub raw: bool,

    /// Only this task's log (e.g. worker-3); repeat for more
    #[arg(long = "task", value_name = "ROLE-INDEX")]
    pub tasks: Vec<String>,

    /// With -f: follow at most N pods at once (one connection each): the task that
    /// decides the run first, then pods that failed, then the others in task order
    #[arg(long, default_value_t = DEFAULT_MAX_LOG_REQUESTS, value_name = "N")]
    pub max_log_requests: usize,

    /// The log of attempt N of a run `wait --restarts` restarted (0: the spawn's pods);
    /// an attempt a restart replaced was kept whole until -d [default: the current]
    #[arg(long, value_name = "N")]
    pub attempt: Option<u32>,
}

/// `logs --max-log-requests`' default: stern's cap (kubectl's is 5, low for a run's
/// workers).
pub const DEFAULT_MAX_LOG_REQUESTS: usize = 50;

#[derive(Debug, Args, Clone)]
pub struct CpArgs {
    /// The run's tag
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// [TAG] REMOTE LOCAL: the run's tag (as -t TAG, which it may replace, as for wait,
    /// logs and status); what to copy, a path in the run's volume, relative to it or
    /// absolute under its mount path (e.g. model, /output/model); where to put it, a new
    /// path or an existing directory to copy into
    #[arg(num_args = 2..=3, required = true, value_name = "PATH")]
    pub paths: Vec<String>,

    /// REMOTE, from `paths` (`commands/verbs.rs::settle_tag`).
    #[arg(skip)]
    pub remote: String,

    /// LOCAL, from `paths`.
    #[arg(skip)]
    pub local: PathBuf,

    /// Give up when the helper pod has not started after this long
    #[arg(long, default_value = "5m", value_parser = parse::parse_duration, value_name = "DURATION")]
    pub timeout: Duration,

    /// A relative REMOTE is in the whole claim, not in the run's own folder (TAG/)
    #[arg(long_help, help = "A relative REMOTE is in the whole claim", long)]
    pub whole_volume: bool,
}

#[derive(Debug, Args, Clone)]
pub struct TensorboardArgs {
    /// The run's tag
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// The local port to serve on [default: a free one]
    // Its id is not `port`, the settings table's key of the spawn's gRPC port.
    #[arg(long = "port", id = "local_port", value_name = "PORT")]
    pub port: Option<u16>,

    #[command(flatten)]
    pub table: TensorboardFlags,

    /// Keep the TensorBoard pod when tf-spawner exits, for the next tensorboard (it
    /// goes with -d); without it the pod is deleted when the last session using it ends
    #[arg(long)]
    pub keep: bool,

    /// The default now (the pod is deleted at exit unless --keep); still accepted
    #[arg(long, hide = true, conflicts_with = "keep")]
    pub rm: bool,

    /// Run tensorboard (from PATH) here on the --local run's directory
    /// tf-spawner-output/TAG instead
    #[arg(long)]
    pub local: bool,

    /// Serve the whole claim, not the run's own folder (TAG/) on it
    #[arg(
        long_help,
        help = "Serve the whole claim, not the run's folder",
        long,
        conflicts_with = "local"
    )]
    pub whole_volume: bool,

    /// An experiment's name, or runs' tags: one TensorBoard over all their runs (on one
    /// claim), each under its tag
    #[arg(long_help, help = "An experiment's name, or runs' tags: one TensorBoard over them", value_name = "NAME", conflicts_with_all = ["tag", "local", "whole_volume"])]
    pub names: Vec<String>,

    /// Give up when the TensorBoard pod does not serve after this long
    #[arg(long, default_value = "5m", value_parser = parse::parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

#[derive(Debug, Args, Clone)]
pub struct ListArgs {
    /// List the runs of every namespace the credentials can read
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// List the runs of experiment NAME (tf-spawner sweep), and those it planned that
    /// never started
    #[arg(long, value_name = "NAME", conflicts_with_all = ["experiments", "all_namespaces"])]
    pub experiment: Option<String>,

    /// List the experiments (tf-spawner sweep) instead of the runs: each one's runs
    /// planned, succeeded, failed, unfinished and never started
    #[arg(long)]
    pub experiments: bool,

    /// Output format
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Table, value_name = "FORMAT")]
    pub output: ReportFormat,
}

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// An experiment's name (its runs), or the tags of the runs to compare
    #[arg(
        long_help,
        help = "An experiment's name, or runs' tags",
        required_unless_present = "tag",
        value_name = "NAME"
    )]
    pub names: Vec<String>,

    /// A run to compare, as -t TAG (the rule of every verb that takes a run); repeatable,
    /// and with NAMEs
    #[arg(short, long, value_name = "TAG")]
    pub tag: Vec<Tag>,

    /// The metric to sort by, on each run's best value: lowest first for a loss-like name
    /// (loss, val_loss, mae, mse, error…), else highest first; -NAME highest first,
    /// +NAME lowest first [default: val_loss, else loss, else the first metric]
    #[arg(
        long_help,
        help = "Sort by this metric's best: loss-like lowest first; -M highest, +M lowest",
        long,
        allow_hyphen_values = true,
        value_name = "METRIC"
    )]
    pub sort: Option<String>,

    /// The metric the chart draws per epoch [default: the sort's]
    #[arg(
        long_help,
        help = "The metric the chart draws [default: the sort's]",
        long,
        value_name = "METRIC",
        conflicts_with = "no_chart"
    )]
    pub chart: Option<String>,

    /// No chart under the table
    #[arg(long)]
    pub no_chart: bool,

    /// Leave out the runs a sweep's early stopping stopped (verdict StoppedEarly): from
    /// the table, the chart and the best run; the table's last line names them [default:
    /// every run, those stopped early with their curves up to the stop]
    #[arg(
        long_help,
        help = "Leave out the runs stopped early (--early-stop)",
        long
    )]
    pub no_stopped: bool,

    /// Output format: a table and a chart, or json or csv for notebooks
    #[arg(long_help, help = "table (and a chart), json or csv", short, long, value_enum, default_value_t = CompareFormat::Table, value_name = "FORMAT")]
    pub output: CompareFormat,

    /// Compare --local runs: their folders under ./tf-spawner-output (an experiment NAME:
    /// the folders NAME-1, NAME-2…)
    #[arg(long_help, help = "Compare --local runs (./tf-spawner-output)", long)]
    pub local: bool,
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

#[derive(Debug, Args, Clone)]
#[command(group = clap::ArgGroup::new("waits").args(["wait", "local"]).multiple(true))]
pub struct SpawnArgs {
    /// The TensorFlow script to run; mounted in every pod at /script/training-script.py
    #[arg(
        long_help,
        help = "The TensorFlow script to run",
        value_name = "TRAINING_SCRIPT"
    )]
    pub script: Option<PathBuf>,

    #[command(flatten)]
    pub table: SpawnFlags,

    /// Entrypoint script file run with bash instead of `python /script/training-script.py`
    #[arg(
        long_help,
        help = "Run this bash entrypoint instead",
        short,
        long,
        value_name = "FILE"
    )]
    pub command: Option<PathBuf>,

    /// Value of the training_attempt label, and prefix of every object name
    #[arg(long_help, help = "The run's tag", short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: Tag,

    /// Use a random tag (printed), overriding -t
    #[arg(hide_short_help = true, short, long)]
    pub randomize_tag: bool,

    /// Make the tag from any text (a CI variable: a branch name, a short commit SHA):
    /// lowercased, every run of other characters than a-z and 0-9 one '-', `run-` before
    /// it unless it starts with a letter, cut to 40 characters; with -r, the random
    /// tag's prefix instead of `tf` (feature/x: feature-x-1a2b3c4d)
    #[arg(hide_short_help = true, long, value_name = "TEXT", conflicts_with = "tag", value_parser = crate::tag::from_text)]
    pub tag_from: Option<String>,

    /// File of KEY=VALUE lines; the values go into a Secret referenced by every pod
    #[arg(
        long_help,
        help = "KEY=VALUE lines for every pod (a Secret)",
        short,
        long,
        value_name = "FILE"
    )]
    pub env_file: Option<PathBuf>,

    /// Delete every object labelled training_attempt=TAG in the namespace
    #[arg(long_help, help = "Delete the run tagged -t TAG", short, long)]
    pub delete: bool,

    /// Do not ask for confirmation before deleting
    #[arg(hide_short_help = true, short = 'y', long)]
    pub yes: bool,

    /// With -d: delete every run of experiment NAME (tf-spawner sweep), all their objects
    /// in one pass per kind, after listing them
    #[arg(
        hide_short_help = true,
        long,
        requires = "delete",
        conflicts_with = "tag",
        value_name = "NAME"
    )]
    pub experiment: Option<String>,

    /// With -d: delete every finished run (Succeeded or Failed) older than --older-than,
    /// after listing them (TFJob's ttlSecondsAfterFinished, on request)
    #[arg(hide_short_help = true, long, requires_all = ["delete", "older_than"], conflicts_with_all = ["tag", "experiment"])]
    pub finished: bool,

    /// With -d: a run (or --experiment) with nothing left to delete is no error (exit 0,
    /// as kubectl's flag); without it, nothing matched is exit 1
    #[arg(hide_short_help = true, long, requires = "delete")]
    pub ignore_not_found: bool,

    /// With -d --finished: how old (since its creation) a finished run must be (7d, 12h)
    #[arg(hide_short_help = true, long, requires = "finished", value_parser = Flag(parse::duration), value_name = "DURATION")]
    pub older_than: Option<Duration>,

    /// Print the objects that would be created instead of creating them
    #[arg(long_help, help = "Print the objects instead of creating them", long)]
    pub dry_run: bool,

    /// Output format: of --dry-run's objects [default: yaml]; of a spawn's or a delete's
    /// summary [default: text] (json: {"tag","namespace","created"|"deleted":[{"kind","name"}]})
    #[arg(
        long_help,
        help = "yaml or json: --dry-run's objects or the summary",
        short,
        long,
        value_enum,
        value_name = "FORMAT"
    )]
    pub output: Option<OutputFormat>,

    /// Most API requests in flight at once while creating or deleting
    #[arg(hide_short_help = true, long, default_value_t = DEFAULT_MAX_IN_FLIGHT, allow_negative_numbers = true, value_parser = parse::at_least_one, value_name = "N")]
    pub max_in_flight: usize,

    /// After creating the run, wait until every pod is running (exit 6 if one cannot
    /// start); with -d, wait until the run's pods are gone
    #[arg(long_help, help = "Wait until every pod runs (-d: until gone)", long)]
    pub wait: bool,

    /// With --wait or --local: give up this long (e.g. 90s, 10m) after the command started
    /// (creates or deletes included), with exit code 4
    #[arg(long_help, help = "With --wait/--local: give up after it (exit 4)", long, requires = "waits", value_parser = parse::parse_duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,

    /// Run the tasks as processes on this machine (127.0.0.1, free ports) until the
    /// run's verdict, instead of creating pods; no cluster needed
    #[arg(long_help, help = "Run the tasks as processes here (no cluster)", long, conflicts_with_all = ["delete", "dry_run"])]
    pub local: bool,

    /// With --wait --restarts (which waits for the verdict): the run succeeds only when
    /// every worker has exited 0, as wait --all-workers
    #[arg(hide_short_help = true, long, requires = "wait")]
    pub all_workers: bool,

    #[command(flatten)]
    pub restart: RestartArgs,

    #[command(flatten)]
    pub roles: RoleArgs,

    /// Arguments after `--`, passed to the training script unchanged (to the
    /// entrypoint as "$@" with -c): tf-spawner -w 2 train.py -- --epochs 3
    #[arg(
        long_help,
        help = "Arguments after --, passed to the script unchanged",
        last = true,
        value_name = "SCRIPT_ARGS",
        allow_hyphen_values = true
    )]
    pub script_args: Vec<String>,
}

/// `--restarts` and its companions, of `wait` and `spawn --wait` (docs/reference.md,
/// "Restarts").
#[derive(Debug, Args, Clone, Default)]
pub struct RestartArgs {
    /// The pause before the first restart, doubled for each next one (at most 5m)
    #[arg(hide_short_help = true, long_help, help = "Pause before a restart [default: 10s, doubling to 5m]", long, value_parser = Flag(parse::restart_backoff), value_name = "DURATION")]
    pub restart_backoff: Option<Duration>,

    /// How long the cluster takes to name a node lost (its node-monitor-grace-period
    /// and a margin): a task that failed because of a peer waits this long beyond
    /// --node-lost-after for the peer's fate before its failure decides
    #[arg(hide_short_help = true, long_help, help = "How long the cluster takes to name a node lost [default: 60s]", long, value_parser = Flag(parse::duration), value_name = "DURATION")]
    pub node_grace: Option<Duration>,
}

/// Roles besides the workers (see docs/reference.md, "Roles and strategies").
#[derive(Debug, Args, Clone, Default)]
pub struct RoleArgs {
    /// Strategy preset: checks the roles (and adds a chief for parameter-server)
    #[arg(help_heading = Heading::Roles.title(), hide_short_help = true, long, value_enum, value_name = "STRATEGY")]
    pub strategy: Option<Strategy>,

    /// Add a chief task (T-chief-0): the coordinator, whose exit decides the run
    #[arg(help_heading = Heading::Roles.title(), long_help, help = "Add a chief task, whose exit decides the run", long)]
    pub chief: bool,

    /// Number of parameter-server tasks (T-ps-0 …)
    #[arg(help_heading = Heading::Roles.title(), long_help, help = "Parameter-server tasks", 
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "N"
    )]
    pub ps: u32,

    /// Add an evaluator task (T-evaluator-0), outside the training cluster
    #[arg(help_heading = Heading::Roles.title(), long_help, help = "Add an evaluator task", long)]
    pub evaluator: bool,

    /// Pod template for the chief [default: the worker template]
    #[arg(help_heading = Heading::Roles.title(), hide_short_help = true, long, value_name = "FILE")]
    pub chief_pod_file: Option<PathBuf>,

    /// Pod template for the parameter servers [default: the worker template]
    #[arg(help_heading = Heading::Roles.title(), hide_short_help = true, long, value_name = "FILE")]
    pub ps_pod_file: Option<PathBuf>,

    /// Pod template for the evaluator [default: the worker template]
    #[arg(help_heading = Heading::Roles.title(), hide_short_help = true, long, value_name = "FILE")]
    pub evaluator_pod_file: Option<PathBuf>,
}
