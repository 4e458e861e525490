//! The project file: `tf-spawner.yaml` in the current directory or the nearest parent
//! that has one (as cargo finds `Cargo.toml` and ruff `ruff.toml`), with the keys of the
//! user's defaults file (`defaults.rs`), read between the flags and that file: flag, then
//! project, then user, then built-in (`table.rs`'s `Given::pick`). Its paths are relative
//! to it.
//!
//! A repository is cloned from anyone, so what its file may do is bounded until the
//! user trusts it, as direnv's `allow` and git's `safe.directory` do: a key that runs a
//! program on this machine (the table's `program` mark: `python`) and a path that leads
//! outside the project's directory are refused (every command but `config` stops, exit
//! 2, naming them) until `tf-spawner config --trust` records the file's path and SHA-256
//! in the user's config directory (`trusted`, beside `config.yaml`); an edit of the file
//! makes it untrusted again. What the file may set without trust only shapes what the
//! user's own credentials do on the cluster the user's kubeconfig names: the cluster,
//! context and credentials are never a file's.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::table::Untrusted;
use crate::defaults::{self, Defaults};
use crate::errors::UsageError;
use crate::files::{self, Limit};

/// The project file's name.
pub(crate) const FILE_NAME: &str = "tf-spawner.yaml";

/// The trust records' file, beside the user's defaults file.
const TRUST_FILE: &str = "trusted";

const LIMIT: Limit = Limit {
    bytes: 1024 * 1024,
    why: "; a project file is a few lines of YAML",
};

/// The project file as read: its keys, its hash, and whether the user trusts it.
#[derive(Debug)]
pub(crate) struct Project {
    pub file: Defaults,
    /// `sha256:HEX` of its bytes.
    pub hash: String,
    pub trusted: bool,
}

/// What `config` and the refusal say of the project file.
#[derive(Debug, Clone)]
pub(crate) struct ProjectFile {
    pub path: PathBuf,
    pub hash: String,
    pub trusted: bool,
    /// The keys it set that were not used, as it is not trusted.
    pub untrusted: Vec<Untrusted>,
}

/// The project file of the current directory (or the nearest parent), if any; not the
/// user's own defaults file (`TF_SPAWNER_CONFIG=./tf-spawner.yaml` names it as theirs).
pub(crate) fn find() -> Option<PathBuf> {
    let here = std::env::current_dir().ok()?;
    let found = here
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|file| file.is_file())?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match defaults::path() {
        Some(user) if same(&found, &user) => None,
        _ => Some(found),
    }
}

/// Reads the project file, if there is one; `keys` are those it may have.
pub(crate) async fn load(keys: &[&str]) -> Result<Option<Project>> {
    let Some(path) = find() else {
        return Ok(None);
    };
    let bytes = files::read(&path, "project file", LIMIT).await?;
    let hash = sha256(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| {
        UsageError::new(format!("project file {}: not valid UTF-8", path.display()))
    })?;
    let file = defaults::parse_as("project file", &text, &path, keys)?;
    let trusted = trusted(&path, &hash);
    Ok(Some(Project {
        file,
        hash,
        trusted,
    }))
}

/// The refusal of an untrusted project file's keys: one line naming each and the fix.
pub(crate) fn refusal(project: &ProjectFile) -> Option<UsageError> {
    if project.untrusted.is_empty() {
        return None;
    }
    let said: Vec<String> = project
        .untrusted
        .iter()
        .map(|u| match &u.outside {
            None => format!("{} (a program this machine would run)", u.key),
            Some(path) => format!("{} ({}, outside the project)", u.key, path.display()),
        })
        .collect();
    Some(UsageError::new(format!(
        "project file {} sets {}, which it may only once you trust it: read it, then run `tf-spawner config --trust` (or remove the key{})",
        project.path.display(),
        said.join(" and "),
        if said.len() > 1 { "s" } else { "" }
    )))
}

/// Where the trust records are: beside the user's defaults file.
fn trust_file() -> Option<PathBuf> {
    Some(defaults::path()?.parent()?.join(TRUST_FILE))
}

/// The trust records: one `sha256:HEX PATH` line per trusted file.
fn records() -> String {
    trust_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .unwrap_or_default()
}

fn trusted(path: &Path, hash: &str) -> bool {
    let line = record(path, hash);
    records().lines().any(|l| l == line)
}

fn record(path: &Path, hash: &str) -> String {
    format!("{hash} {}", path.display())
}

/// `config --trust`: records the project file's path and hash (an earlier record of the
/// path is replaced). Returns where the records are.
pub(crate) fn trust(project: &ProjectFile) -> Result<PathBuf> {
    let Some(store) = trust_file() else {
        return Err(UsageError::new(
            "cannot record the trust: neither HOME nor XDG_CONFIG_HOME is set",
        )
        .into());
    };
    let shown = project.path.display().to_string();
    let mut lines: Vec<String> = records()
        .lines()
        .filter(|l| l.split_once(' ').is_none_or(|(_, p)| p != shown))
        .map(String::from)
        .collect();
    lines.push(record(&project.path, &project.hash));
    let cannot = |e: std::io::Error| {
        UsageError::new(format!(
            "cannot record the trust in {}: {e}",
            store.display()
        ))
    };
    if let Some(dir) = store.parent() {
        std::fs::create_dir_all(dir).map_err(cannot)?;
    }
    // Written whole, then renamed: a reader never sees half a file.
    let temp = store.with_extension("tmp");
    std::fs::write(&temp, lines.join("\n") + "\n").map_err(cannot)?;
    std::fs::rename(&temp, &store).map_err(cannot)?;
    Ok(store)
}

/// `sha256:HEX` of `bytes`.
fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256() {
        assert_eq!(
            sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_refusal_names_each_key_and_the_fix() {
        let project = ProjectFile {
            path: PathBuf::from("/p/tf-spawner.yaml"),
            hash: String::new(),
            trusted: false,
            untrusted: vec![
                Untrusted {
                    key: "python",
                    outside: None,
                },
                Untrusted {
                    key: "pod_file",
                    outside: Some(PathBuf::from("/etc/pod.yaml")),
                },
            ],
        };
        assert_eq!(
            refusal(&project).unwrap().to_string(),
            "project file /p/tf-spawner.yaml sets python (a program this machine would run) and pod_file (/etc/pod.yaml, outside the project), which it may only once you trust it: read it, then run `tf-spawner config --trust` (or remove the keys)"
        );
    }
}
