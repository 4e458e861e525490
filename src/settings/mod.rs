//! The one step from the command line to settings: flags, the defaults file
//! (`settings/defaults.rs`) and the kubeconfig (read once, `cluster/connect.rs`) become a
//! [`Settings`] value, each value with where it came from. Every command gets it;
//! `tf-spawner config` prints exactly it. This module and `commands/` are the only ones
//! below the entry that know clap's types.

pub(crate) mod defaults;
pub(crate) mod follow;
mod given;
pub(crate) mod project;
mod sourced;
pub(crate) mod spawn;
pub(crate) mod table;

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::ArgMatches;

use crate::cli::Cli;
use crate::cluster::Cluster;
use crate::cluster::connect::{self, Target};
use crate::cluster::retry::RetryPolicy;

use given::Given;
pub(crate) use sourced::Source;
pub(crate) use table::Table;

/// How output is printed (see `output.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OutputMode {
    /// `-q`: nothing on stdout but what a script asked for.
    pub quiet: bool,
}

/// Everything below the commands needs to know about the invocation's environment.
/// The settings a defaults file may set are its [`Table`] (`settings.port.value`…).
#[derive(Debug)]
pub(crate) struct Settings {
    /// The defaults file: where it is (or would be), and whether it exists.
    pub config_file: Option<PathBuf>,
    pub config_file_found: bool,
    /// The project file (`tf-spawner.yaml` here or above), if any.
    pub project: Option<project::ProjectFile>,
    table: Table,
    pub output: OutputMode,
    pub retry: RetryPolicy,
    /// The client configuration, or why there is none.
    kube: Result<kube::Config, String>,
}

impl std::ops::Deref for Settings {
    type Target = Table;

    fn deref(&self) -> &Table {
        &self.table
    }
}

impl Settings {
    /// Lowers the parsed flags, the defaults file and the kubeconfig. Makes no request
    /// and fails on a bad defaults file (a usage error naming it), or on Ctrl-C while
    /// reading a file that is a FIFO: a missing kubeconfig is an error only for what
    /// needs a cluster ([`Settings::connect`]).
    pub(crate) async fn load(cli: &Cli, matches: &ArgMatches) -> Result<Settings> {
        let file = defaults::load(table::KEYS).await?;
        let project = project::load(table::KEYS).await?;
        let target = Target {
            kubeconfig: cli.cluster.kubeconfig.clone(),
            context: cli.cluster.context.clone(),
        };
        let found = connect::read(&target).await?;
        let given = Given {
            matches,
            file: &file,
            project: project.as_ref().map(|p| (&p.file, p.trusted)),
            kubeconfig: found.namespace,
            untrusted: Default::default(),
        };
        let table = Table::load(&given)?;
        let untrusted = given.untrusted.into_inner();
        let project = project.map(|p| project::ProjectFile {
            path: p.file.path.clone().unwrap_or_default(),
            hash: p.hash,
            trusted: p.trusted,
            untrusted,
            ignored: p.ignored,
        });
        // `config` shows an untrusted file's keys, and trusts it; nothing else runs.
        if !matches!(cli.command, Some(crate::cli::Command::Config(_)))
            && let Some(refusal) = project.as_ref().and_then(project::refusal)
        {
            return Err(refusal.into());
        }
        let cluster = &cli.cluster;
        Ok(Settings {
            config_file: file.path.clone(),
            config_file_found: file.found,
            project,
            output: OutputMode {
                quiet: cli.global.quiet,
            },
            retry: RetryPolicy {
                attempts: cluster.retries.saturating_add(1),
                timeout: cluster
                    .request_timeout
                    .max(std::time::Duration::from_millis(1)),
                give_up: table.give_up_after.value,
                idle: table.idle_timeout.value,
                ..RetryPolicy::default()
            },
            table,
            kube: found.config,
        })
    }

    /// A client for the namespace. No request is made.
    /// Fails (a usage error, before any request) when the namespace, from wherever it
    /// came, is not a valid namespace name.
    pub(crate) fn connect(&self) -> Result<Cluster> {
        self.check_namespace()?;
        let config = self.kube.clone().map_err(|e| anyhow!("{e}"))?;
        Cluster::new(config, self.namespace.value.clone(), self.retry)
    }

    /// The namespace is one segment of every URL sent: a flag's or the defaults file's
    /// was checked when parsed; the kubeconfig context's and the in-cluster one's are
    /// checked here, the error naming where it came from.
    fn check_namespace(&self) -> Result<(), crate::errors::UsageError> {
        let namespace = &self.namespace;
        let Some(problem) = crate::labels::namespace_problem(&namespace.value) else {
            return Ok(());
        };
        let from = match &namespace.source {
            Source::Kubeconfig(context) => {
                format!("the namespace of kubeconfig context '{context}'")
            }
            Source::InCluster => "the in-cluster service account's namespace".to_string(),
            Source::File => "the config file's namespace".to_string(),
            Source::Project => "the project file's namespace".to_string(),
            Source::Flag | Source::Default => "--namespace".to_string(),
        };
        Err(crate::errors::UsageError::new(format!(
            "{from} {:?} {problem}; set a valid one with -n NAMESPACE",
            namespace.value
        )))
    }
}
