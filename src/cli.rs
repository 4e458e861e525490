//! The command line as clap sees it: flags and their defaults, nothing else.
//! Turning these into a spawn request (reading files, checking values) is `inputs.rs`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, ValueEnum};

pub const DEFAULT_TAG: &str = "tf-spawner";
pub const DEFAULT_PORT: u16 = 1999;
pub const DEFAULT_WORKERS: u32 = 2;
pub const DEFAULT_MAX_IN_FLIGHT: usize = 32;

#[derive(Debug, Parser)]
#[command(
    name = "tf-spawner",
    version,
    about = "Run distributed TensorFlow training on Kubernetes: one pod and one headless service per task, no operator.",
    long_about = None,
    after_help = "Examples:\n  tf-spawner -w 4 train.py              spawn 4 workers running train.py\n  tf-spawner --dry-run -w 4 train.py    print the objects instead of creating them\n  tf-spawner -d -t tf-spawner           delete the run tagged tf-spawner"
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    #[command(flatten)]
    pub spawn: SpawnArgs,
}

/// How to reach the cluster: kubectl's conventions.
#[derive(Debug, Args, Clone)]
pub struct ClusterArgs {
    /// Kubernetes namespace [default: the kubeconfig context's namespace, else "default"]
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Path to the kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else in-cluster]
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use [default: the current context]
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Time limit of each API request (e.g. 30s, 2m); a request that takes longer is retried
    #[arg(long, global = true, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Retries of a request that failed with 429, 5xx, a timeout or a dropped connection
    #[arg(long, global = true, default_value_t = 4, value_name = "N")]
    pub retries: u32,
}

/// `30s`, `2m`, `1h30m`, or a plain number of seconds, as kubectl accepts.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 30s, 5m, 1h)"))
}

#[derive(Debug, Args, Clone)]
pub struct SpawnArgs {
    /// The TensorFlow script to run; mounted in every pod at /script/training-script.py
    #[arg(value_name = "TRAINING_SCRIPT")]
    pub script: Option<PathBuf>,

    /// Number of worker pods (and services)
    #[arg(short, long, default_value_t = DEFAULT_WORKERS, value_name = "N")]
    pub workers: u32,

    /// gRPC port used in TF_CONFIG, on the containers and on the services
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..), value_name = "PORT")]
    pub port: u16,

    /// Entrypoint script file run with bash instead of `python /script/training-script.py`
    #[arg(short, long, value_name = "FILE")]
    pub command: Option<PathBuf>,

    /// Pod template (YAML) [default: the built-in templates/pod.yaml]
    #[arg(long, value_name = "FILE")]
    pub pod_file: Option<PathBuf>,

    /// Value of the training_attempt label, and prefix of every object name
    #[arg(short, long, default_value = DEFAULT_TAG, value_name = "TAG")]
    pub tag: String,

    /// Use a random tag (printed), overriding -t
    #[arg(short, long)]
    pub randomize_tag: bool,

    /// File of KEY=VALUE lines; the values go into a Secret referenced by every pod
    #[arg(short, long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,

    /// Container image [default: the template's, else the pinned TensorFlow image]
    #[arg(short, long, value_name = "IMAGE")]
    pub image: Option<String>,

    /// Delete every object labelled training_attempt=TAG in the namespace
    #[arg(short, long)]
    pub delete: bool,

    /// Do not ask for confirmation before deleting
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Print the objects that would be created instead of creating them
    #[arg(long)]
    pub dry_run: bool,

    /// Output format of --dry-run
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Yaml, value_name = "FORMAT")]
    pub output: OutputFormat,

    /// Most API requests in flight at once while creating or deleting
    #[arg(long, default_value_t = DEFAULT_MAX_IN_FLIGHT, value_name = "N")]
    pub max_in_flight: usize,

    #[command(flatten)]
    pub roles: RoleArgs,
}

/// Roles besides the workers (see README, "Roles and strategies").
#[derive(Debug, Args, Clone, Default)]
pub struct RoleArgs {
    /// Strategy preset: checks the roles (and adds a chief for parameter-server)
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub strategy: Option<Strategy>,

    /// Add a chief task (T-chief-0): the coordinator, whose exit decides the run
    #[arg(long)]
    pub chief: bool,

    /// Number of parameter-server tasks (T-ps-0 …)
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub ps: u32,

    /// Add an evaluator task (T-evaluator-0), outside the training cluster
    #[arg(long)]
    pub evaluator: bool,

    /// Pod template for the chief [default: the worker template]
    #[arg(long, value_name = "FILE")]
    pub chief_pod_file: Option<PathBuf>,

    /// Pod template for the parameter servers [default: the worker template]
    #[arg(long, value_name = "FILE")]
    pub ps_pod_file: Option<PathBuf>,

    /// Pod template for the evaluator [default: the worker template]
    #[arg(long, value_name = "FILE")]
    pub evaluator_pod_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// MultiWorkerMirroredStrategy: workers (and an optional chief), no parameter servers
    MultiWorker,
    /// ParameterServerStrategy: a chief as coordinator, workers and parameter servers
    ParameterServer,
}
