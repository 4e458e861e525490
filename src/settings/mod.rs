//! The one step from the command line to settings: flags, the defaults file
//! (`defaults.rs`) and the kubeconfig (read once, `cluster/connect.rs`) become a
//! [`Settings`] value, each value with where it came from. Every command gets it;
//! `tf-spawner config` prints exactly it. This module and `commands/` are the only ones
//! below the entry that know clap's types.

pub(crate) mod spawn;

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::ArgMatches;
use clap::parser::ValueSource;

use crate::cli::Cli;
use crate::cluster::Cluster;
use crate::cluster::connect::{self, ConfigNamespace, Target};
use crate::cluster::retry::RetryPolicy;
use crate::defaults::Defaults;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Flag,
    /// The defaults file.
    File,
    /// The kubeconfig context's namespace (the context's name).
    Kubeconfig(String),
    InCluster,
    Default,
}

impl Source {
    /// The name `config -o json` shows.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::File => "file",
            Source::Kubeconfig(_) => "kubeconfig",
            Source::InCluster => "in-cluster",
            Source::Default => "default",
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// How output is printed (see `output.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OutputMode {
    /// `-q`: nothing on stdout but what a script asked for.
    pub quiet: bool,
}

/// Everything below the commands needs to know about the invocation's environment.
#[derive(Debug)]
pub(crate) struct Settings {
    /// The defaults file: where it is (or would be), and whether it exists.
    pub config_file: Option<PathBuf>,
    pub config_file_found: bool,
    pub namespace: Sourced<String>,
    /// `-i`; `None`: the template's image, else the pinned default.
    pub image: Sourced<Option<String>>,
    /// `--pod-file`; `None`: the built-in template.
    pub pod_file: Sourced<Option<PathBuf>>,
    pub port: Sourced<u16>,
    pub workers: Sourced<u32>,
    /// `--queue`: the Kueue LocalQueue, if any.
    pub queue: Sourced<Option<String>>,
    /// `--priority-class`, if any.
    pub priority_class: Sourced<Option<String>>,
    /// `--deadline`, if any.
    pub deadline: Sourced<Option<std::time::Duration>>,
    /// `--node-lost-after`, if any.
    pub node_lost_after: Sourced<Option<std::time::Duration>>,
    /// `--gang`, if any.
    pub gang: Sourced<Option<crate::podgroup::Gang>>,
    /// `--scheduler-name`, if any.
    pub scheduler_name: Sourced<Option<String>>,
    /// `--volcano-queue`: the Volcano queue, if any.
    pub volcano_queue: Sourced<Option<String>>,
    /// `--start-timeout` (of `wait` and `spawn --wait`), if any.
    pub start_timeout: Sourced<Option<std::time::Duration>>,
    /// `--keep-running` (of `wait` and `spawn --wait`).
    pub keep_running: Sourced<bool>,
    /// `--restarts` and `--restart-on` (of `wait` and `spawn --wait`).
    pub restarts: Sourced<u32>,
    pub restart_on: Sourced<crate::verdict::retryable::RestartOn>,
    /// `--volume CLAIM[:PATH]`, if any, unchecked.
    pub volume: Sourced<Option<String>>,
    /// `--dir`: the directory shipped with the script, if any.
    pub dir: Sourced<Option<PathBuf>>,
    /// `tensorboard --image`; `None`: the built-in TensorBoard image.
    pub tensorboard_image: Sourced<Option<String>>,
    pub output: OutputMode,
    /// `--give-up-after`: how long a follow reconnects to a lost API server.
    pub give_up_after: Sourced<std::time::Duration>,
    pub retry: RetryPolicy,
    /// The client configuration, or why there is none.
    kube: Result<kube::Config, String>,
}

impl Settings {
    /// Lowers the parsed flags, the defaults file and the kubeconfig. Makes no request
    /// and fails only on Ctrl-C while reading a kubeconfig that is a FIFO: a missing
    /// kubeconfig is an error only for what needs a cluster ([`Settings::connect`]).
    pub(crate) async fn load(cli: &Cli, matches: &ArgMatches, file: Defaults) -> Result<Settings> {
        let flag = |id: &str| on_command_line(matches, id);
        let target = Target {
            kubeconfig: cli.cluster.kubeconfig.clone(),
            context: cli.cluster.context.clone(),
        };
        let found = connect::read(&target).await?;
        let namespace = namespace(
            flag("namespace").then(|| cli.cluster.namespace.clone().unwrap_or_default()),
            file.namespace.clone(),
            found.namespace,
        );
        let spawn = &cli.spawn;
        Ok(Settings {
            config_file: file.path.clone(),
            config_file_found: file.found,
            namespace,
            image: pick(
                flag("image"),
                spawn.image.clone(),
                file.image.clone().map(Some),
                None,
            ),
            pod_file: pick(
                flag("pod_file"),
                spawn.pod_file.clone(),
                file.pod_file.clone().map(Some),
                None,
            ),
            port: pick(flag("port"), spawn.port, file.port, spawn.port),
            workers: pick(flag("workers"), spawn.workers, file.workers, spawn.workers),
            queue: pick(
                flag("queue"),
                spawn.queue.clone(),
                file.queue.clone().map(Some),
                None,
            ),
            priority_class: pick(
                flag("priority_class"),
                spawn.priority_class.clone(),
                file.priority_class.clone().map(Some),
                None,
            ),
            deadline: pick(
                flag("deadline"),
                spawn.deadline,
                file.deadline.map(Some),
                None,
            ),
            node_lost_after: pick(
                flag("node_lost_after"),
                spawn.node_lost_after,
                file.node_lost_after.map(Some),
                None,
            ),
            gang: pick(flag("gang"), spawn.gang, file.gang.map(Some), None),
            scheduler_name: pick(
                flag("scheduler_name"),
                spawn.scheduler_name.clone(),
                file.scheduler_name.clone().map(Some),
                None,
            ),
            volcano_queue: pick(
                flag("volcano_queue"),
                spawn.volcano_queue.clone(),
                file.volcano_queue.clone().map(Some),
                None,
            ),
            start_timeout: pick(
                flag("start_timeout"),
                start_timeout_flag(cli),
                file.start_timeout.map(Some),
                None,
            ),
            keep_running: pick(flag("keep_running"), true, file.keep_running, false),
            restarts: pick(
                flag("restarts"),
                restart_flags(cli).restarts.unwrap_or(0),
                file.restarts,
                0,
            ),
            restart_on: pick(
                flag("restart_on"),
                restart_flags(cli).restart_on.clone().unwrap_or_default(),
                file.restart_on.clone(),
                Default::default(),
            ),
            volume: pick(
                flag("volume"),
                spawn.volume.clone(),
                file.volume.clone().map(Some),
                None,
            ),
            dir: pick(
                flag("dir"),
                spawn.dir.clone(),
                file.dir.clone().map(Some),
                None,
            ),
            tensorboard_image: pick(
                flag("tensorboard_image"),
                tensorboard_image_flag(cli),
                file.tensorboard_image.clone().map(Some),
                None,
            ),
            output: OutputMode {
                quiet: cli.global.quiet,
            },
            give_up_after: give_up_after(cli, &file, flag("give_up_after")),
            retry: RetryPolicy {
                attempts: cli.cluster.retries.saturating_add(1),
                timeout: cli
                    .cluster
                    .request_timeout
                    .max(std::time::Duration::from_millis(1)),
                give_up: give_up_after(cli, &file, flag("give_up_after")).value,
                ..RetryPolicy::default()
            },
            kube: found.config,
        })
    }

    /// A client for the namespace. No request is made.
    pub(crate) fn connect(&self) -> Result<Cluster> {
        let config = self.kube.clone().map_err(|e| anyhow!("{e}"))?;
        Cluster::new(config, self.namespace.value.clone(), self.retry)
    }
}

/// `--give-up-after`, else the defaults file's `give_up_after`, else 10 minutes.
fn give_up_after(cli: &Cli, file: &Defaults, from_flag: bool) -> Sourced<std::time::Duration> {
    let default = crate::cluster::retry::GIVE_UP;
    pick(
        from_flag,
        cli.cluster.give_up_after.unwrap_or(default),
        file.give_up_after,
        default,
    )
}

/// `--start-timeout` of `wait`, else of the spawn.
fn start_timeout_flag(cli: &Cli) -> Option<std::time::Duration> {
    match &cli.command {
        Some(crate::cli::Command::Wait(args)) => args.start_timeout,
        _ => cli.spawn.start_timeout,
    }
}

/// The restart flags of the verb (`wait`), else of the spawn.
fn restart_flags(cli: &Cli) -> &crate::cli::RestartArgs {
    match &cli.command {
        Some(crate::cli::Command::Wait(args)) => &args.restart,
        _ => &cli.spawn.restart,
    }
}

/// `tensorboard --image`, when that is the verb.
fn tensorboard_image_flag(cli: &Cli) -> Option<String> {
    match &cli.command {
        Some(crate::cli::Command::Tensorboard(args)) => args.image.clone(),
        _ => None,
    }
}

/// `-n`, else the defaults file's, else the kubeconfig context's (or the in-cluster
/// service account's), else `default`.
fn namespace(
    flag: Option<String>,
    file: Option<String>,
    config: Option<(String, ConfigNamespace)>,
) -> Sourced<String> {
    let (value, source) = match (flag, file, config) {
        (Some(ns), _, _) => (ns, Source::Flag),
        (None, Some(ns), _) => (ns, Source::File),
        (None, None, Some((ns, ConfigNamespace::Context(name)))) => (ns, Source::Kubeconfig(name)),
        (None, None, Some((ns, ConfigNamespace::InCluster))) => (ns, Source::InCluster),
        (None, None, None) => ("default".to_string(), Source::Default),
    };
    Sourced { value, source }
}

/// The flag's value if it was given, else the file's, else the built-in default.
fn pick<T>(from_flag: bool, flagged: T, filed: Option<T>, default: T) -> Sourced<T> {
    match (from_flag, filed) {
        (true, _) => Sourced {
            value: flagged,
            source: Source::Flag,
        },
        (false, Some(value)) => Sourced {
            value,
            source: Source::File,
        },
        (false, None) => Sourced {
            value: default,
            source: Source::Default,
        },
    }
}

/// Whether `id` was given on the command line (at the top level, or after the verb for
/// global flags such as `-n`).
fn on_command_line(matches: &ArgMatches, id: &str) -> bool {
    let given = |m: &ArgMatches| {
        m.try_get_raw(id).is_ok()
            && matches!(
                m.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
    };
    given(matches) || matches.subcommand().is_some_and(|(_, sub)| given(sub))
}
