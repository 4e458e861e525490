//! The spawn's command line: its flags ([`SpawnArgs`], with the restart flags
//! [`RestartArgs`] `wait` shares and the roles [`RoleArgs`]), the flags the list
//! (`flags.rs`) declares flattened in by place, and `sweep`'s, which is the spawn's flags
//! and script once per point ([`SweepArgs`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::flag_defs::{SpawnFlags, SweepFlags};
use super::flags::Heading;
use super::parse::{self, Flag};
use crate::render::OutputFormat;
use crate::roles::Strategy;
use crate::tag::Tag;

pub const DEFAULT_TAG: &str = "tf-spawner";
pub const DEFAULT_MAX_IN_FLIGHT: usize = 32;

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

    /// Create the run and a supervisor in its namespace (a Job running tf-spawner
    /// supervise) that follows it to its verdict as wait would, with this spawn's
    /// settings (--restarts, --notify URL, --cleanup…), then return at once: nothing
    /// needs to keep running here (docs/reference.md, "Detached runs")
    #[arg(long_help, help = "Follow the run from the cluster; return at once", long, hide_short_help = true, conflicts_with_all = ["wait", "local", "delete"])]
    pub detach: bool,

    /// With --detach: delete the run once its supervisor has its verdict (the logs are
    /// kept only while the run is)
    #[arg(hide_short_help = true, long, requires = "detach")]
    pub cleanup: bool,

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
