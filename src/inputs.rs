//! From a spawn's options (the flags and the defaults file, lowered by `commands/spawn.rs`)
//! to a [`SpawnRequest`]: reading the files and checking every value, so that a bad
//! input is a usage error before any API call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;

use crate::envfile::{self, EnvVars};
use crate::errors::UsageError;
use crate::plan::{DEFAULT_OUTPUT_PATH, OutputVolume, Scheduling, SpawnRequest, Templates};
use crate::roles::{Role, Roles, Strategy};
use crate::tag::Tag;
use crate::template;

/// What a spawn was asked for, before any file is read.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub script: Option<PathBuf>,
    pub workers: u32,
    pub port: u16,
    /// `-c`: the entrypoint script.
    pub command: Option<PathBuf>,
    pub pod_file: Option<PathBuf>,
    pub env_file: Option<PathBuf>,
    pub image: Option<String>,
    pub strategy: Option<Strategy>,
    pub chief: bool,
    pub ps: u32,
    pub evaluator: bool,
    pub chief_pod_file: Option<PathBuf>,
    pub ps_pod_file: Option<PathBuf>,
    pub evaluator_pod_file: Option<PathBuf>,
    /// `--deadline`.
    pub deadline: Option<Duration>,
    /// `--priority-class`.
    pub priority_class: Option<String>,
    /// `--queue`.
    pub queue: Option<String>,
    /// `--gang`.
    pub gang: Option<crate::podgroup::Gang>,
    /// `--scheduler-name`.
    pub scheduler_name: Option<String>,
    /// `--volume CLAIM[:PATH]`, as written.
    pub volume: Option<String>,
}

pub fn spawn_request(
    args: &SpawnOptions,
    tag: Tag,
    namespace: String,
) -> Result<SpawnRequest, UsageError> {
    let roles = Roles::new(
        args.strategy,
        args.chief,
        args.ps,
        args.workers,
        args.evaluator,
    )?;
    tag.fits(&roles.longest_suffix())?;
    if args.port == 0 {
        return Err(UsageError::new("--port must be between 1 and 65535"));
    }
    if let Some(image) = &args.image
        && (image.trim().is_empty() || image.chars().any(char::is_whitespace))
    {
        return Err(UsageError::new(format!(
            "--image {image:?} is not a valid image name"
        )));
    }
    let scheduling = scheduling(args)?;
    let volume = args.volume.as_deref().map(output_volume).transpose()?;
    let script_path = args.script.as_deref().ok_or_else(|| {
        UsageError::new(
            "the training script is missing: tf-spawner [OPTIONS] TRAINING_SCRIPT (see --help)",
        )
    })?;
    let script = read(script_path, "training script")?;
    let entrypoint = args
        .command
        .as_deref()
        .map(|p| read(p, "entrypoint (-c)"))
        .transpose()?;
    let env = match &args.env_file {
        Some(path) => read_env_file(path)?,
        None => EnvVars::new(),
    };
    let templates = templates(args, &roles)?;
    Ok(SpawnRequest {
        tag: tag.to_string(),
        namespace,
        port: args.port,
        image: args.image.clone(),
        roles,
        templates,
        script,
        entrypoint,
        env,
        invocation: invocation_id(),
        scheduling,
        volume,
    })
}

/// `--volume CLAIM[:PATH]`, checked: a claim name the API server accepts, an absolute
/// path that is not the script's directory.
pub(crate) fn output_volume(text: &str) -> Result<OutputVolume, UsageError> {
    let (claim, path) = match text.split_once(':') {
        Some((claim, path)) => (claim, path),
        None => (text, DEFAULT_OUTPUT_PATH),
    };
    check_name("--volume's claim", claim, 253)?;
    let normal = std::path::Path::new(path).components().all(|c| {
        matches!(
            c,
            std::path::Component::RootDir | std::path::Component::Normal(_)
        )
    });
    if !path.starts_with('/') || path == "/" || !normal || path.contains(':') {
        return Err(UsageError::new(format!(
            "--volume {text:?}: the mount path {path:?} must be an absolute directory such as {DEFAULT_OUTPUT_PATH} (not /, no '..' or ':')"
        )));
    }
    let path = path.trim_end_matches('/').to_string();
    if path == crate::plan::SCRIPT_DIR || path.starts_with(&format!("{}/", crate::plan::SCRIPT_DIR))
    {
        return Err(UsageError::new(format!(
            "--volume {text:?}: {path} is where the script is mounted; choose another path"
        )));
    }
    Ok(OutputVolume {
        claim: claim.to_string(),
        path,
    })
}

/// The shared-cluster options, checked: what the API server would refuse is a usage
/// error here, before anything is created.
fn scheduling(args: &SpawnOptions) -> Result<Scheduling, UsageError> {
    let deadline = match args.deadline {
        None => None,
        Some(d) if d.as_secs() == 0 => {
            return Err(UsageError::new(format!(
                "--deadline {} is too short: at least 1s",
                humantime::format_duration(d)
            )));
        }
        Some(d) => Some(i64::try_from(d.as_secs()).map_err(|_| {
            UsageError::new(format!(
                "--deadline {} is too long",
                humantime::format_duration(d)
            ))
        })?),
    };
    if let Some(name) = &args.priority_class {
        check_name("--priority-class", name, 253)?;
    }
    // A LocalQueue's name, and a label value: at most 63 characters.
    if let Some(name) = &args.queue {
        check_name("--queue", name, 63)?;
    }
    if let Some(name) = &args.scheduler_name {
        check_name("--scheduler-name", name, 253)?;
    }
    Ok(Scheduling {
        deadline_seconds: deadline,
        priority_class: args.priority_class.clone(),
        queue: args.queue.clone(),
        gang: args.gang,
        scheduler_name: args.scheduler_name.clone(),
    })
}

/// A name the API server accepts for an object the flag refers to: a DNS-1123
/// subdomain (lowercase letters, digits, '-' and '.'), at most `max` characters.
fn check_name(flag: &str, name: &str, max: usize) -> Result<(), UsageError> {
    match name_problem(name, max) {
        Some(problem) => Err(UsageError::new(format!("{flag} {name:?} {problem}"))),
        None => Ok(()),
    }
}

/// What is wrong with `name` as a DNS-1123 subdomain of at most `max` characters.
pub(crate) fn name_problem(name: &str, max: usize) -> Option<String> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !p.starts_with('-')
            && !p.ends_with('-')
    };
    (name.len() > max || !name.split('.').all(part_ok)).then(|| {
        format!(
            "is not a valid name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most {max} characters)"
        )
    })
}

/// The worker's pod template (`--pod-file`, else the built-in one) and the other roles'.
fn templates(args: &SpawnOptions, roles: &Roles) -> Result<Templates, UsageError> {
    let worker = match &args.pod_file {
        Some(path) => load_template(path)?,
        None => template::parse(
            "templates/pod.yaml (built in)",
            template::DEFAULT_TEMPLATE.as_bytes(),
        )
        .map_err(UsageError::new)?,
    };
    let mut by_role = BTreeMap::new();
    for (role, path) in [
        (Role::Chief, &args.chief_pod_file),
        (Role::Ps, &args.ps_pod_file),
        (Role::Evaluator, &args.evaluator_pod_file),
    ] {
        if let Some(path) = path {
            if roles.count(role) == 0 {
                return Err(UsageError::new(format!(
                    "--{role}-pod-file given, but the run has no {role} task"
                )));
            }
            by_role.insert(role, load_template(path)?);
        }
    }
    Ok(Templates { worker, by_role })
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, UsageError> {
    if path.is_dir() {
        return Err(UsageError::new(format!(
            "{what} {} is a directory, not a file",
            path.display()
        )));
    }
    std::fs::read(path).map_err(|e| {
        UsageError::new(format!(
            "cannot read {what} {}: {}",
            path.display(),
            io_reason(&e)
        ))
    })
}

fn read_env_file(path: &Path) -> Result<EnvVars, UsageError> {
    let bytes = read(path, "env file (-e)")?;
    envfile::parse(&path.display().to_string(), &bytes).map_err(UsageError::new)
}

fn load_template(path: &Path) -> Result<Pod, UsageError> {
    let bytes = read(path, "pod template")?;
    template::parse(&path.display().to_string(), &bytes).map_err(UsageError::new)
}

/// "No such file or directory", without the "(os error 2)" suffix.
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn invocation_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}
