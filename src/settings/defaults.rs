//! The per-user defaults file: `$TF_SPAWNER_CONFIG`, else
//! `$XDG_CONFIG_HOME/tf-spawner/config.yaml`, else `~/.config/tf-spawner/config.yaml`.
//!
//! ```yaml
//! namespace: team-a
//! pod_file: templates/pod-gpu.yaml   # relative to this file's directory
//! workers: 4
//! deadline: 12h                      # as the flag takes it (or a number of seconds)
//! node_lost_after: 1m                # as the flag takes it (or a number of seconds)
//! ```
//!
//! The keys are the settings of `settings/table.rs` (`config` lists them, and
//! docs/reference.md): each is its flag's long name with `_` for `-`, and its value is
//! parsed by the flag's own parser.
//!
//! Every key is optional. A value from the file replaces the built-in default (and, for
//! the namespace, the kubeconfig context's); a flag on the command line beats both.
//! A bad file is a usage error (exit 2) naming the file and the key.

#![deny(clippy::arithmetic_side_effects)]

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::errors::UsageError;
use crate::inputs::files::{self, Limit};

/// The variable that names the file (it must then exist).
pub const ENV_VAR: &str = "TF_SPAWNER_CONFIG";

/// What the file says, key by key, as written: each value is parsed by its setting's
/// parser (`settings/given.rs`), the one its flag uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// Where the file is (or would be); `None` without HOME and the variables.
    pub path: Option<PathBuf>,
    pub found: bool,
    /// Only known keys.
    pub values: Map<String, Value>,
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

/// Reads the file if there is one; `keys` are those it may have. A missing file is
/// fine, except when `$TF_SPAWNER_CONFIG` names it.
pub async fn load(keys: &[&str]) -> anyhow::Result<Defaults> {
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
    Ok(parse(&text, &path, keys)?)
}

/// Parses the file's text into its keys and values; `path` names it in errors.
pub fn parse(text: &str, path: &Path, keys: &[&str]) -> Result<Defaults, UsageError> {
    parse_as("config file", text, path, keys)
}

/// [`parse`] of a file the errors call `what` (the project file, `settings/project.rs`).
pub fn parse_as(
    what: &str,
    text: &str,
    path: &Path,
    keys: &[&str],
) -> Result<Defaults, UsageError> {
    let file = path.display();
    let doc = crate::yaml::to_value(text)
        .map_err(|e| UsageError::new(format!("{what} {file}: not valid YAML: {e}")))?;
    let values = match doc {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => {
            return Err(UsageError::new(format!(
                "{what} {file}: expected keys ({}), not a single value",
                keys.join(", ")
            )));
        }
    };
    if let Some(key) = values.keys().find(|k| !keys.contains(&k.as_str())) {
        // The nearest key, a slip or a flag's spelling (`pod-file`, `run_as_user` as `user`).
        let nearest = (keys.iter())
            .map(|k| (strsim::damerau_levenshtein(&key.replace('-', "_"), k), *k))
            .filter(|(d, _)| *d <= 2)
            .min()
            .map(|(_, k)| format!("; did you mean '{k}'?"))
            .unwrap_or_default();
        return Err(UsageError::new(format!(
            "{what} {file}: unknown key '{key}'{nearest} (the keys are: {})",
            keys.join(", ")
        )));
    }
    Ok(Defaults {
        path: Some(path.to_path_buf()),
        found: true,
        values,
    })
}

/// `~/x` is under HOME; a relative path is relative to the config file's directory.
pub fn resolve(p: &Path, config: &Path) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_as_written_and_unknown_ones_refused() {
        let keys = &["image", "port"];
        let d = parse("image: img:1\nport: 2222\n", Path::new("/c.yaml"), keys).unwrap();
        assert_eq!(d.values["port"], 2222);
        assert!(d.found);
        assert!(parse("", Path::new("/c.yaml"), keys).unwrap().found);
        let err = |text: &str| {
            parse(text, Path::new("/c.yaml"), keys)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("imag: x\n"),
            "config file /c.yaml: unknown key 'imag'; did you mean 'image'? (the keys are: image, port)"
        );
        assert_eq!(
            err("colour: x\n"),
            "config file /c.yaml: unknown key 'colour' (the keys are: image, port)"
        );
        assert!(err("image: [a\n").starts_with("config file /c.yaml: not valid YAML"));
        assert!(!err("image: [a\n").contains('\n'));
        assert_eq!(
            err("- a\n"),
            "config file /c.yaml: expected keys (image, port), not a single value"
        );
    }

    #[test]
    fn a_relative_path_is_anchored_at_the_file() {
        assert_eq!(
            resolve(Path::new("gpu.yaml"), Path::new("/etc/tfs/config.yaml")),
            PathBuf::from("/etc/tfs/gpu.yaml")
        );
        assert_eq!(
            resolve(Path::new("/abs"), Path::new("/etc/tfs/config.yaml")),
            PathBuf::from("/abs")
        );
    }
}
