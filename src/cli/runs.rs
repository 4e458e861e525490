//! The command line of the verbs on runs that exist: `wait`, `status`, `logs`, `cp`,
//! `tensorboard`, `list` and `compare` (their `…Args`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::flag_defs::{LogsFlags, TensorboardFlags, WaitFlags};
use super::parse;
use super::spawn::{DEFAULT_TAG, RestartArgs};
use crate::metrics::table::CompareFormat;
use crate::ops::wait::{OnStall, WaitFor};
use crate::output::ReportFormat;
use crate::tag::Tag;

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
#[group(required = true, multiple = false)]
pub struct SuperviseArgs {
    /// The run's tag (`spawn --detach`)
    #[arg(short, long, value_name = "TAG")]
    pub tag: Option<Tag>,
    /// The experiment's name (`sweep --detach`)
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<Tag>,
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
