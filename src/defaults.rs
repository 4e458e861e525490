//! The per-user defaults file: `$TF_SPAWNER_CONFIG`, else
//! `$XDG_CONFIG_HOME/tf-spawner/config.yaml`, else `~/.config/tf-spawner/config.yaml`.
//!
//! ```yaml
//! namespace: team-a
//! image: registry.example.org/tf:2.15-gpu
//! pod_file: templates/pod-gpu.yaml   # relative to this file's directory
//! port: 2222
//! workers: 4
//! queue: team-gpu              # Kueue LocalQueue (--queue)
//! priority_class: team-high    # --priority-class
//! deadline: 12h                # --deadline (or a number of seconds)
//! node_lost_after: 1m          # --node-lost-after (or a number of seconds)
//! gang: volcano                # --gang (volcano or coscheduling)
//! volcano_queue: team-gpu      # --volcano-queue (the Volcano queue, with gang: volcano)
//! keep_running: true           # --keep-running (wait leaves unfinished tasks running)
//! restarts: 3                  # --restarts (of wait and spawn --wait)
//! restart_on: exit:3           # --restart-on (changes to the retried failures)
//! scheduler_name: volcano      # --scheduler-name
//! give_up_after: 30m           # --give-up-after (or a number of seconds)
//! start_timeout: 15m           # --start-timeout of wait and spawn --wait
//! volume: team-a-output:/output  # --volume CLAIM[:PATH]
//! tensorboard_image: tensorflow/tensorflow:2.15.0  # tensorboard --image
//! dir: .                      # --dir, relative to this file's directory
//! ```
//!
//! Every key is optional. A value from the file replaces the built-in default (and, for
//! the namespace, the kubeconfig context's); a flag on the command line beats both.
//! A bad file is a usage error (exit 2) naming the file and the key.

#![deny(clippy::arithmetic_side_effects)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::errors::UsageError;
use crate::files::{self, Limit};
use crate::labels::name_problem;
use crate::podgroup::Gang;

/// The variable that names the file (it must then exist).
pub const ENV_VAR: &str = "TF_SPAWNER_CONFIG";

/// The keys, in the order the errors list them.
pub const KEYS: &[&str] = &[
    "namespace",
    "image",
    "pod_file",
    "port",
    "workers",
    "queue",
    "priority_class",
    "deadline",
    "node_lost_after",
    "gang",
    "scheduler_name",
    "volcano_queue",
    "keep_running",
    "restarts",
    "restart_on",
    "give_up_after",
    "volume",
    "tensorboard_image",
    "start_timeout",
    "dir",
];

/// What the file says; every value is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// Where the file is (or would be); `None` without HOME and the variables.
    pub path: Option<PathBuf>,
    pub found: bool,
    pub namespace: Option<String>,
    pub image: Option<String>,
    pub pod_file: Option<PathBuf>,
    pub port: Option<u16>,
    pub workers: Option<u32>,
    pub queue: Option<String>,
    pub priority_class: Option<String>,
    pub deadline: Option<Duration>,
    pub node_lost_after: Option<Duration>,
    pub gang: Option<Gang>,
    pub scheduler_name: Option<String>,
    pub volcano_queue: Option<String>,
    pub keep_running: Option<bool>,
    pub restarts: Option<u32>,
    pub restart_on: Option<crate::verdict::retryable::RestartOn>,
    pub give_up_after: Option<Duration>,
    /// `--start-timeout`.
    pub start_timeout: Option<Duration>,
    /// `--volume CLAIM[:PATH]`, as written (checked where the flag is).
    pub volume: Option<String>,
    /// `tensorboard --image`.
    pub tensorboard_image: Option<String>,
    /// `--dir`, anchored at the file's directory.
    pub dir: Option<PathBuf>,
}

/// Where the file is looked for.
pub fn path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var(ENV_VAR) {
        return Some(PathBuf::from(p));
    }
    if let Some(xdg) = var("XDG_CONFIG_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Some(xdg.join("tf-spawner/config.yaml"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".config/tf-spawner/config.yaml"))
}

/// The bound of the file: a few lines in practice, so anything near this is the wrong file.
const LIMIT: Limit = Limit {
    bytes: 1024 * 1024,
    why: "; a defaults file is a few lines of YAML",
};

/// Reads the file if there is one. A missing file is fine, except when
/// `$TF_SPAWNER_CONFIG` names it.
pub async fn load() -> anyhow::Result<Defaults> {
    let Some(path) = path() else {
        return Ok(Defaults::default());
    };
    let named = std::env::var_os(ENV_VAR).is_some_and(|v| !v.is_empty());
    let missing =
        matches!(std::fs::metadata(&path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if missing && !named {
        return Ok(Defaults {
            path: Some(path),
            ..Defaults::default()
        });
    }
    let bytes = files::read(&path, "config file", LIMIT).await?;
    let text = String::from_utf8(bytes)
        .map_err(|_| UsageError::new(format!("config file {}: not valid UTF-8", path.display())))?;
    Ok(parse(&text, &path)?)
}

/// Parses the file's text; `path` names it in errors and anchors a relative `pod_file`
/// and `dir`.
pub fn parse(text: &str, path: &Path) -> Result<Defaults, UsageError> {
    let file = path.display();
    let doc = crate::yaml::to_value(text)
        .map_err(|e| UsageError::new(format!("config file {file}: not valid YAML: {e}")))?;
    let mut defaults = Defaults {
        path: Some(path.to_path_buf()),
        found: true,
        ..Defaults::default()
    };
    let map = match doc {
        Value::Null => return Ok(defaults),
        Value::Object(map) => map,
        _ => {
            return Err(UsageError::new(format!(
                "config file {file}: expected keys ({}), not a single value",
                KEYS.join(", ")
            )));
        }
    };
    for (key, value) in map {
        set(&mut defaults, &key, &value, path)?;
    }
    Ok(defaults)
}

/// Sets the value of one key of the file at `path`.
fn set(defaults: &mut Defaults, key: &str, value: &Value, path: &Path) -> Result<(), UsageError> {
    let file = path.display();
    let said = |text: String| UsageError::new(format!("config file {file}: key '{key}': {text}"));
    let bad = |expected: &str| {
        UsageError::new(format!(
            "config file {file}: key '{key}': expected {expected}, got {}",
            short(value)
        ))
    };
    let text = || match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(bad("a non-empty string")),
    };
    match key {
        "namespace" => defaults.namespace = Some(text()?),
        "image" => {
            let image = Some(text()?).filter(|i| !i.contains(char::is_whitespace));
            defaults.image = Some(image.ok_or_else(|| bad("an image name (no spaces)"))?);
        }
        "volume" => defaults.volume = Some(text()?),
        "tensorboard_image" => defaults.tensorboard_image = Some(text()?),
        "pod_file" => defaults.pod_file = Some(resolve(&PathBuf::from(text()?), path)),
        "dir" => defaults.dir = Some(resolve(&PathBuf::from(text()?), path)),
        "port" => {
            defaults.port = Some(
                number(value, 1, u16::MAX).ok_or_else(|| bad("a port number from 1 to 65535"))?,
            )
        }
        "gang" => {
            let name = text()?;
            defaults.gang = Some(Gang::parse(&name).ok_or_else(|| bad("volcano or coscheduling"))?);
        }
        "keep_running" => {
            defaults.keep_running = Some(value.as_bool().ok_or_else(|| bad("true or false"))?);
        }
        "restarts" => {
            defaults.restarts =
                Some(number(value, 0, u32::MAX).ok_or_else(|| bad("a number of restarts"))?);
        }
        "restart_on" => {
            let list = text()?;
            defaults.restart_on =
                Some(list.parse().map_err(|e: UsageError| {
                    said(e.to_string().replacen("--restart-on ", "", 1))
                })?);
        }
        "queue" | "priority_class" | "scheduler_name" | "volcano_queue" => {
            let name = text()?;
            // A queue's name is a label value too: at most 63 characters.
            let max = if key == "queue" { 63 } else { 253 };
            if let Some(problem) = name_problem(&name, max) {
                return Err(said(format!("{name:?} {problem}")));
            }
            *match key {
                "queue" => &mut defaults.queue,
                "priority_class" => &mut defaults.priority_class,
                "volcano_queue" => &mut defaults.volcano_queue,
                _ => &mut defaults.scheduler_name,
            } = Some(name);
        }
        "deadline" => {
            let deadline = duration(value).ok_or_else(|| {
                bad("a duration of at least 1s (e.g. 12h, 90m) or a number of seconds")
            })?;
            crate::inputs::deadline_seconds(deadline).map_err(said)?;
            defaults.deadline = Some(deadline);
        }
        "node_lost_after" => {
            let bound = duration(value).ok_or_else(|| {
                bad("a duration of at least 1s (e.g. 30s, 2m) or a number of seconds")
            })?;
            crate::inputs::node_lost_seconds(bound).map_err(said)?;
            defaults.node_lost_after = Some(bound);
        }
        "start_timeout" => {
            let limit = duration(value).ok_or_else(|| {
                bad("a duration of at least 1s (e.g. 15m, 1h) or a number of seconds")
            })?;
            defaults.start_timeout = Some(limit);
        }
        "give_up_after" => {
            let expected = "a duration (e.g. 30m, 1h) or a number of seconds";
            let bound = match value {
                Value::Number(n) => n.as_u64().map(Duration::from_secs),
                Value::String(s) => humantime::parse_duration(s.trim()).ok(),
                _ => None,
            }
            .ok_or_else(|| bad(expected))?;
            defaults.give_up_after = Some(bound);
        }
        "workers" => {
            let max = crate::roles::MAX_TASKS;
            let workers = number(value, 1, max);
            defaults.workers =
                Some(workers.ok_or_else(|| bad(&format!("a number of workers from 1 to {max}")))?);
        }
        _ => {
            return Err(UsageError::new(format!(
                "config file {file}: unknown key '{key}' (the keys are: {})",
                KEYS.join(", ")
            )));
        }
    }
    Ok(())
}

/// A whole number from `min` to `max`.
fn number<T: TryFrom<u64> + PartialOrd>(value: &Value, min: T, max: T) -> Option<T> {
    value
        .as_u64()
        .and_then(|n| T::try_from(n).ok())
        .filter(|n| *n >= min && *n <= max)
}

/// A duration of at least 1s: a number of seconds, or `12h` as a flag takes it.
fn duration(value: &Value) -> Option<Duration> {
    match value {
        Value::Number(n) => n.as_u64().map(Duration::from_secs),
        Value::String(s) => crate::cli::parse_duration(s.trim()).ok(),
        _ => None,
    }
    .filter(|d| d.as_secs() > 0)
}

/// `~/x` is under HOME; a relative path is relative to the config file's directory.
fn resolve(p: &Path, config: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    if p.is_absolute() {
        return p.to_path_buf();
    }
    config.parent().unwrap_or(Path::new(".")).join(p)
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_and_a_relative_pod_file_is_anchored_at_the_file() {
        let d = parse(
            "namespace: team\nimage: img:1\npod_file: gpu.yaml\nport: 2222\nworkers: 4\n",
            Path::new("/etc/tfs/config.yaml"),
        )
        .unwrap();
        assert_eq!(d.namespace.as_deref(), Some("team"));
        assert_eq!(d.image.as_deref(), Some("img:1"));
        assert_eq!(d.pod_file, Some(PathBuf::from("/etc/tfs/gpu.yaml")));
        assert_eq!((d.port, d.workers), (Some(2222), Some(4)));
        assert!(parse("", Path::new("c.yaml")).unwrap().found);
        let d = parse("dir: .\n", Path::new("/home/r/project/tf-spawner.yaml")).unwrap();
        assert_eq!(d.dir, Some(PathBuf::from("/home/r/project/.")));
    }

    #[test]
    fn node_lost_after_is_a_duration_within_the_apis_bounds() {
        let d = parse("node_lost_after: 45s\n", Path::new("/c.yaml")).unwrap();
        assert_eq!(d.node_lost_after, Some(Duration::from_secs(45)));
        let d = parse("node_lost_after: 90\n", Path::new("/c.yaml")).unwrap();
        assert_eq!(d.node_lost_after, Some(Duration::from_secs(90)));
        let err = parse("node_lost_after: soon\n", Path::new("/c.yaml"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "config file /c.yaml: key 'node_lost_after': expected a duration of at least 1s (e.g. 30s, 2m) or a number of seconds, got \"soon\""
        );
    }

    #[test]
    fn the_shared_cluster_keys_parse_and_are_checked() {
        let d = parse(
            "queue: team-gpu\npriority_class: high\ndeadline: 12h\n",
            Path::new("/c.yaml"),
        )
        .unwrap();
        assert_eq!(d.queue.as_deref(), Some("team-gpu"));
        assert_eq!(d.priority_class.as_deref(), Some("high"));
        assert_eq!(d.deadline, Some(Duration::from_secs(12 * 3600)));
        let d = parse("deadline: 600\n", Path::new("/c.yaml")).unwrap();
        assert_eq!(d.deadline, Some(Duration::from_secs(600)));
        let d = parse("start_timeout: 15m\n", Path::new("/c.yaml")).unwrap();
        assert_eq!(d.start_timeout, Some(Duration::from_secs(900)));
        let err = |text: &str| parse(text, Path::new("/c.yaml")).unwrap_err().to_string();
        assert_eq!(
            err("start_timeout: soon\n"),
            "config file /c.yaml: key 'start_timeout': expected a duration of at least 1s (e.g. 15m, 1h) or a number of seconds, got \"soon\""
        );
        assert!(
            err("queue: Team GPU\n")
                .starts_with("config file /c.yaml: key 'queue': \"Team GPU\" is not a valid name"),
        );
        assert_eq!(
            err("deadline: 0\n"),
            "config file /c.yaml: key 'deadline': expected a duration of at least 1s (e.g. 12h, 90m) or a number of seconds, got 0"
        );
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let err = |text: &str| parse(text, Path::new("/c.yaml")).unwrap_err().to_string();
        assert_eq!(
            err("port: 70000\n"),
            "config file /c.yaml: key 'port': expected a port number from 1 to 65535, got 70000"
        );
        assert_eq!(
            err("imag: x\n"),
            "config file /c.yaml: unknown key 'imag' (the keys are: namespace, image, pod_file, port, workers, queue, priority_class, deadline, node_lost_after, gang, scheduler_name, volcano_queue, keep_running, restarts, restart_on, give_up_after, volume, tensorboard_image, start_timeout, dir)"
        );
        assert!(err("image: [a\n").starts_with("config file /c.yaml: not valid YAML"));
        assert!(err("image: ''\n").contains("key 'image'"));
        assert!(!err("image: [a\n").contains('\n'));
        assert_eq!(
            err("workers: 0\n"),
            "config file /c.yaml: key 'workers': expected a number of workers from 1 to 10000, got 0"
        );
        assert_eq!(
            err("deadline: 2147483648\n"),
            "config file /c.yaml: key 'deadline': 68years 18days 3h 14m 8s is too long: at most 2147483647 seconds (about 68 years), the API's limit"
        );
        assert!(err("image: a b\n").contains("key 'image': expected an image name"));
    }
}
