//! From a spawn's options (the flags and the defaults file, lowered by `commands/spawn.rs`)
//! to a [`SpawnRequest`]: reading the files and checking every value, so that a bad
//! input is a usage error before any API call.

#![deny(clippy::arithmetic_side_effects)]

pub(crate) mod envfile;
pub(crate) mod files;
pub(crate) mod imports;
pub(crate) mod template;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;

use crate::errors::UsageError;
use crate::framework::Framework;
use crate::plan::{OutputVolume, Scheduling, SpawnRequest, Templates};
use crate::roles::{Role, Roles, Strategy};
use crate::tag::Tag;
use envfile::EnvVars;
use files::{Limit, MAX_OBJECT_BYTES};

/// What a spawn was asked for, before any file is read.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub script: Option<PathBuf>,
    pub workers: u32,
    pub port: u16,
    /// `-c`: the entrypoint script.
    pub command: Option<PathBuf>,
    pub pod_file: Option<PathBuf>,
    /// The file `pod_file` comes from, if a file's (`config file F`, `project file F`:
    /// named in its errors).
    pub pod_file_from: Option<String>,
    pub env_file: Option<PathBuf>,
    pub image: Option<String>,
    pub strategy: Option<Strategy>,
    /// `--framework`: checked against the roles and the tasks' environment here.
    pub framework: Framework,
    pub chief: bool,
    pub ps: u32,
    pub evaluator: bool,
    pub chief_pod_file: Option<PathBuf>,
    pub ps_pod_file: Option<PathBuf>,
    pub evaluator_pod_file: Option<PathBuf>,
    /// The shared-cluster options (`--deadline`, `--queue`, `--gang`…), each checked by
    /// its parser (`cli/parse.rs`).
    pub scheduling: Scheduling,
    /// `--volume CLAIM[:PATH]`, as written.
    pub volume: Option<String>,
    /// The arguments after `--`, for the script (or the entrypoint).
    pub script_args: Vec<String>,
    /// `--dir`: the directory shipped with the script.
    pub dir: Option<PathBuf>,
    /// The file `dir` comes from, if a file's (`config file F`, `project file F`: named
    /// in its errors).
    pub dir_from: Option<String>,
    /// `--cpu`, `--memory`, `--gpus`… (docs/resources.md), each checked by its parser
    /// (`cli/parse.rs`).
    pub resources: crate::plan::Resources,
    /// `--run-as-user`, `--network-policy`.
    pub hardening: crate::plan::security::Hardening,
}

pub async fn spawn_request(
    args: &SpawnOptions,
    tag: Tag,
    namespace: String,
) -> Result<SpawnRequest> {
    let roles = Roles::new(
        args.strategy,
        args.chief,
        args.ps,
        args.workers,
        args.evaluator,
    )?;
    roles.check_framework(args.framework, args.strategy.is_some())?;
    tag.fits(&roles.longest_suffix())?;
    let scheduling = scheduling(args)?;
    // Checked by the same parser when the flag or the defaults file gave it.
    let volume = args
        .volume
        .as_deref()
        .map(|v| output_volume(v).map_err(|p| UsageError::new(format!("--volume {p}"))))
        .transpose()?;
    let (script_path, script) = read_script(args).await?;
    let entrypoint = match args.command.as_deref() {
        Some(path) => files::read(path, "entrypoint (-c)", IN_CONFIG_MAP)
            .await
            .map(Some)?,
        None => None,
    };
    let env = match &args.env_file {
        Some(path) => read_env_file(path).await?,
        None => EnvVars::new(),
    };
    let bundle = bundle(args, script_path).await?;
    let templates = templates(args, &roles).await?;
    framework_env(args, &env, &templates)?;
    for line in given_way(args, &templates, bundle.is_some()) {
        crate::output::warning(&line);
    }
    Ok(SpawnRequest {
        tag: tag.to_string(),
        namespace,
        port: args.port,
        image: args.image.clone(),
        roles,
        framework: args.framework,
        templates,
        script,
        entrypoint,
        script_args: args.script_args.clone(),
        bundle,
        env,
        invocation: invocation_id(),
        scheduling,
        volume,
        resources: args.resources.clone(),
        hardening: args.hardening,
        experiment: None,
    })
}

/// A template's own mounts in its TF container at a path where this run mounts one of
/// tf-spawner's (the script, `--run-as-user`'s HOME, `--dir`'s copy): each gives way to
/// ours, said in a line, never dropped without a word.
fn given_way(args: &SpawnOptions, templates: &Templates, bundle: bool) -> Vec<String> {
    use crate::plan::mounts::key;
    let ours = [
        (crate::plan::SCRIPT_DIR, "the script", true),
        (
            crate::plan::security::HOME_DIR,
            "the writable HOME of --run-as-user",
            args.hardening.run_as_user.is_some(),
        ),
        (
            crate::bundle::WORK_DIR,
            "the --dir directory it unpacks",
            bundle,
        ),
    ];
    let named = [(&templates.worker, args.pod_file.as_deref())]
        .into_iter()
        .chain(templates.by_role.iter().map(|(role, pod)| {
            let file = match role {
                Role::Chief => args.chief_pod_file.as_deref(),
                Role::Ps => args.ps_pod_file.as_deref(),
                _ => args.evaluator_pod_file.as_deref(),
            };
            (pod, file)
        }));
    let mut lines = Vec::new();
    for (pod, file) in named {
        let Some(spec) = &pod.spec else { continue };
        let at = crate::labels::tf_container_at(&spec.containers);
        let mounts = spec
            .containers
            .get(at)
            .and_then(|c| c.volume_mounts.as_ref());
        for m in mounts.into_iter().flatten() {
            let Some((dir, what, _)) = ours
                .iter()
                .find(|(dir, _, used)| *used && key(&m.mount_path) == *dir)
            else {
                continue;
            };
            lines.push(format!(
                "pod template {}: spec.containers[{at}].volumeMounts: {} at {} is where tf-spawner mounts {what}, and is left out (mount it at another path to keep it)",
                file.map_or_else(|| "(built in)".into(), |f| f.display().to_string()),
                m.name,
                dir
            ));
        }
    }
    lines
}

/// The training script, read; without `--dir`, a note when it imports a module beside
/// it (`inputs/imports.rs`).
async fn read_script(args: &SpawnOptions) -> Result<(&Path, Vec<u8>)> {
    let script_path = args.script.as_deref().ok_or_else(|| {
        UsageError::new(
            "the training script is missing: tf-spawner [OPTIONS] TRAINING_SCRIPT (see --help)",
        )
    })?;
    let script = files::read(script_path, "training script", IN_CONFIG_MAP).await?;
    if args.dir.is_none()
        && let Some(line) = crate::inputs::imports::warning(script_path, &script)
    {
        crate::output::note(&line);
    }
    Ok((script_path, script))
}

/// `--dir` packed with the script in it, if given; a problem names the defaults file
/// when the directory came from it.
async fn bundle(args: &SpawnOptions, script_path: &Path) -> Result<Option<crate::bundle::Bundle>> {
    let Some(dir) = &args.dir else {
        return Ok(None);
    };
    let bundle = crate::bundle::pack(dir, script_path, MAX_OBJECT_BYTES)
        .await
        .map_err(|e| dir_from_file(e, args.dir_from.as_deref()))?;
    say_left_out(dir, &bundle.left_out);
    Ok(Some(bundle))
}

/// One line saying how much of `--dir` stayed home (what git ignores, hidden files,
/// `.tfspawnerignore`'s, `--local`'s output); `-v` lists each.
fn say_left_out(dir: &Path, left_out: &[String]) {
    if left_out.is_empty() {
        return;
    }
    let shown = crate::output::shown_path(dir);
    crate::output::note(&format!(
        "--dir {shown}: {} left out (ignored by git or {}, hidden, or --local output){}",
        match left_out.len() {
            1 => "1 file or directory".to_string(),
            n => format!("{n} files or directories"),
        },
        crate::bundle::IGNORE_FILE,
        if tracing::enabled!(tracing::Level::INFO) {
            ""
        } else {
            "; -v lists them"
        }
    ));
    for path in left_out {
        tracing::info!(
            "--dir {shown}: left out {}",
            crate::output::escape_controls(path)
        );
    }
}

/// `--volume CLAIM[:PATH]` (or the defaults file's `volume`), checked: a claim name the
/// API server accepts, an absolute path that is neither in nor at a directory
/// tf-spawner mounts itself ([`crate::plan::volume::OWNED_MOUNTS`]). The problem is
/// worded to follow the flag or the file's key (`cli/parse.rs`).
pub(crate) fn output_volume(text: &str) -> Result<OutputVolume, String> {
    OutputVolume::parse(text)
}

/// The shared-cluster options, checked: what the API server would refuse is a usage
/// error here, before anything is created.
/// A `--dir` error, naming the file (`config file F`, `project file F`) when the
/// directory came from its `dir`.
fn dir_from_file(e: anyhow::Error, file: Option<&str>) -> anyhow::Error {
    match (file, e.downcast_ref::<UsageError>()) {
        (Some(file), Some(usage)) => UsageError::new(format!(
            "{usage} (dir is set in {file}; --dir DIR overrides it)"
        ))
        .into(),
        _ => e,
    }
}

fn scheduling(args: &SpawnOptions) -> Result<Scheduling, UsageError> {
    // Each value was checked by its parser; what is left are the rules between them.
    let scheduling = &args.scheduling;
    if let Some(name) = &scheduling.volcano_queue
        && scheduling.gang != Some(crate::plan::podgroup::Gang::Volcano)
    {
        return Err(UsageError::new(format!(
            "--volcano-queue {name} needs --gang volcano (a Kueue LocalQueue is --queue)"
        )));
    }
    Ok(scheduling.clone())
}

/// A variable the framework needs a value of (`KERAS_BACKEND`) set, by the env file or
/// a template's TF container, to one it cannot train several processes with: refused
/// in one line naming where.
fn framework_env(args: &SpawnOptions, env: &EnvVars, templates: &Templates) -> Result<()> {
    if let Some(path) = &args.env_file {
        let whence = format!("env file {}", path.display());
        for (name, value) in env {
            args.framework.check_env(name, value, &whence)?;
        }
    }
    let named = [(None, &templates.worker)]
        .into_iter()
        .chain(templates.by_role.iter().map(|(r, t)| (Some(*r), t)));
    for (role, template) in named {
        let containers = template.spec.as_ref().map(|s| s.containers.as_slice());
        let tf = containers.and_then(|c| c.get(crate::labels::tf_container_at(c)));
        for var in tf.and_then(|c| c.env.as_ref()).into_iter().flatten() {
            let Some(value) = &var.value else { continue };
            let whence = match role {
                Some(role) => format!("the {role} pod template"),
                None => "the pod template".to_string(),
            };
            args.framework.check_env(&var.name, value, &whence)?;
        }
    }
    Ok(())
}

/// The worker's pod template (`--pod-file`, else the built-in one) and the other roles'.
async fn templates(args: &SpawnOptions, roles: &Roles) -> Result<Templates> {
    let worker = match &args.pod_file {
        Some(path) => match &args.pod_file_from {
            Some(file) => {
                let what = format!("pod template (pod_file of {file})");
                load_template(path, &what).await?
            }
            None => load_template(path, "pod template").await?,
        },
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
                ))
                .into());
            }
            by_role.insert(role, load_template(path, "pod template").await?);
        }
    }
    Ok(Templates { worker, by_role })
}

/// The script and the entrypoint go into the run's ConfigMap.
const IN_CONFIG_MAP: Limit = Limit {
    bytes: MAX_OBJECT_BYTES,
    why: "; a ConfigMap holds at most 1048576 bytes (load large files from storage instead)",
};

async fn read_env_file(path: &Path) -> Result<EnvVars> {
    const IN_SECRET: Limit = Limit {
        bytes: MAX_OBJECT_BYTES,
        why: "; its values go into a Secret, which holds at most 1048576 bytes",
    };
    let bytes = files::read(path, "env file (-e)", IN_SECRET).await?;
    Ok(envfile::parse(&path.display().to_string(), &bytes).map_err(UsageError::new)?)
}

async fn load_template(path: &Path, what: &str) -> Result<Pod> {
    const TEMPLATE: Limit = Limit {
        bytes: template::MAX_TEMPLATE_BYTES,
        why: "; a pod template is at most 1048576 bytes",
    };
    let bytes = files::read(path, what, TEMPLATE).await?;
    let origin = path.display().to_string();
    let (pod, unknown) = template::parse_with_unknown(&origin, &bytes).map_err(UsageError::new)?;
    for field in unknown {
        crate::output::warning(&format!(
            "pod template {origin}: {field} is not a field of a Pod and is ignored (misspelled?)"
        ));
    }
    for container in template::privileged(&pod) {
        crate::output::warning(&format!(
            "pod template {origin}: {container} runs privileged (securityContext.privileged: true): it gets every device and capability of its node; kept as the template asks"
        ));
    }
    Ok(pod)
}

pub(crate) fn invocation_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}
