//! The project file: `tf-spawner.yaml` in the current directory or the nearest parent
//! that has one (as cargo finds `Cargo.toml` and ruff `ruff.toml`), with the keys of the
//! user's defaults file (`settings/defaults.rs`), read between the flags and that file: flag, then
//! project, then user, then built-in (`given.rs`'s `Given::pick`). Its paths are relative
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
//!
//! A file someone else could have put there is not the user's project at all, as git's
//! `safe.directory` says of a repository: a project file owned by another user, writable
//! by others, or in a directory others may write without the sticky bit (`/tmp/x` of
//! mode 777) is ignored whole, with one warning naming it and the fix, until the user
//! trusts it (`config --trust`, the same record of its path and hash): its `namespace`,
//! `image`, `dir` or `pod_file` would otherwise choose, unseen, where the user's runs go,
//! what they run and what of the user's files they ship.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::given::Untrusted;
use crate::errors::UsageError;
use crate::inputs::files::{self, Limit};
use crate::settings::defaults::{self, Defaults};

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
    /// Why it is ignored whole (someone else could have written it), if it is: none of
    /// its keys is used until it is trusted.
    pub ignored: Option<String>,
}

/// What `config` and the refusal say of the project file.
#[derive(Debug, Clone)]
pub(crate) struct ProjectFile {
    pub path: PathBuf,
    pub hash: String,
    pub trusted: bool,
    /// The keys it set that were not used, as it is not trusted.
    pub untrusted: Vec<Untrusted>,
    /// Why it is ignored whole ([`Project::ignored`]).
    pub ignored: Option<String>,
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

/// Reads the project file, if there is one; `keys` are those it may have. A file
/// someone else could have written ([`not_ours`]) and the user has not trusted is
/// ignored, with one warning line.
pub(crate) async fn load(keys: &[&str]) -> Result<Option<Project>> {
    let Some(path) = find() else {
        return Ok(None);
    };
    let (bytes, meta) = read_owned(&path)?;
    let hash = sha256(&bytes);
    let trusted = trusted(&path, &hash);
    let ignored = not_ours(&path, &meta).filter(|_| !trusted);
    if let Some(why) = &ignored {
        crate::output::warning(&ignored_line(&path, why));
        let file = Defaults {
            path: Some(path),
            ..Defaults::default()
        };
        return Ok(Some(Project {
            file,
            hash,
            trusted,
            ignored,
        }));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        UsageError::new(format!("project file {}: not valid UTF-8", path.display()))
    })?;
    let file = defaults::parse_as("project file", &text, &path, keys)?;
    Ok(Some(Project {
        file,
        hash,
        trusted,
        ignored,
    }))
}

/// The file's bytes (bounded) and its metadata, both from one open: what is judged is
/// what is read, even if the file is replaced meanwhile.
fn read_owned(path: &Path) -> Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        UsageError::new(format!(
            "cannot read project file {}: {}",
            crate::output::shown_path(path),
            files::io_reason(&e)
        ))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(LIMIT.bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() > LIMIT.bytes {
        return Err(UsageError::new(format!(
            "project file {} is larger than {} bytes{}",
            crate::output::shown_path(path),
            LIMIT.bytes,
            LIMIT.why
        ))
        .into());
    }
    Ok((bytes, meta))
}

/// Why someone other than this user could have written the project file at `path`
/// (`meta`: the file's, as read): owned by another user, writable by others, or in a
/// directory anyone may write that has no sticky bit. `None`: only this user could.
fn not_ours(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    judge(me, meta.uid(), meta.mode(), || {
        let dir = path.parent()?;
        let d = std::fs::metadata(dir).ok()?;
        Some((dir.to_path_buf(), d.mode()))
    })
}

/// [`not_ours`]'s rule, on numbers: user `me` reading a file of owner `uid` and `mode`,
/// in the directory `dir()` gives (path, mode). A file of another user's is not this
/// user's (root's included: `sudo` in a user's project is that user's choice, a file
/// another user could swap in is not). The group's write bit is not asked about: most
/// systems give each user a group of their own and `umask 002`; what the group may edit
/// it may also replace, and a replacement is then another user's file.
fn judge(
    me: u32,
    uid: u32,
    mode: u32,
    dir: impl FnOnce() -> Option<(PathBuf, u32)>,
) -> Option<String> {
    const OTHERS_WRITE: u32 = 0o002;
    const STICKY: u32 = 0o1000;
    if uid != me {
        return Some(format!(
            "it is owned by another user (uid {uid}; you are {me})"
        ));
    }
    if mode & OTHERS_WRITE != 0 {
        return Some(format!("anyone may write it (mode {:o})", mode & 0o7777));
    }
    let (dir, dir_mode) = dir()?;
    (dir_mode & OTHERS_WRITE != 0 && dir_mode & STICKY == 0).then(|| {
        format!(
            "anyone may write its directory {} (mode {:o}, no sticky bit) and replace it",
            crate::output::shown_path(&dir),
            dir_mode & 0o7777
        )
    })
}

/// The warning of an ignored project file: which, why, and the fix.
fn ignored_line(path: &Path, why: &str) -> String {
    format!(
        "project file {} is ignored: {why}; if you wrote it or have read it, run `tf-spawner config --trust` in {} to use it",
        crate::output::shown_path(path),
        path.parent()
            .map_or_else(|| ".".into(), crate::output::shown_path)
    )
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
    recordable(path).is_ok() && records().lines().any(|l| l == line)
}

/// A path a record line can hold: UTF-8 (as shown is as it is) and no control character
/// (a newline in a directory's name would add a line of its own: another path trusted).
fn recordable(path: &Path) -> Result<(), UsageError> {
    let Some(text) = path.to_str() else {
        return Err(UsageError::new(format!(
            "cannot trust {}: its path is not valid UTF-8; move the project to a path that is",
            crate::output::shown_path(path)
        )));
    };
    if text.chars().any(char::is_control) {
        return Err(UsageError::new(format!(
            "cannot trust {}: its path has a control character (a newline, a tab…); move the project to a path without one",
            crate::output::escape_controls(text)
        )));
    }
    Ok(())
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
    recordable(&project.path)?;
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
            ignored: None,
        };
        assert_eq!(
            refusal(&project).unwrap().to_string(),
            "project file /p/tf-spawner.yaml sets python (a program this machine would run) and pod_file (/etc/pod.yaml, outside the project), which it may only once you trust it: read it, then run `tf-spawner config --trust` (or remove the keys)"
        );
    }

    #[test]
    fn a_file_someone_else_could_have_written_is_not_ours() {
        let dir = |mode| move || Some((PathBuf::from("/d"), mode));
        assert_eq!(judge(1000, 1000, 0o644, dir(0o755)), None);
        // A directory anyone may write, with the sticky bit (/tmp): only the owner may
        // replace the file.
        assert_eq!(judge(1000, 1000, 0o644, dir(0o1777)), None);
        // The group may write (umask 002, a group of one's own): still the user's.
        assert_eq!(judge(1000, 1000, 0o664, dir(0o775)), None);
        assert_eq!(
            judge(1000, 12345, 0o644, dir(0o755)).unwrap(),
            "it is owned by another user (uid 12345; you are 1000)"
        );
        // Root too does not take another user's file as its own.
        assert!(judge(0, 12345, 0o644, dir(0o755)).is_some());
        assert_eq!(
            judge(1000, 1000, 0o666, dir(0o755)).unwrap(),
            "anyone may write it (mode 666)"
        );
        assert_eq!(
            judge(1000, 1000, 0o644, dir(0o777)).unwrap(),
            "anyone may write its directory /d (mode 777, no sticky bit) and replace it"
        );
    }

    /// Issue 57: a path with a newline cannot add a trust line of its own.
    #[test]
    fn a_path_that_would_break_its_line_is_not_recordable() {
        let forged = Path::new("/tmp/x\nsha256:00 /home/u/p/tf-spawner.yaml");
        let e = recordable(forged).unwrap_err().to_string();
        assert_eq!(
            e,
            "cannot trust /tmp/x\\u{a}sha256:00 /home/u/p/tf-spawner.yaml: its path has a control character (a newline, a tab…); move the project to a path without one"
        );
        assert!(recordable(Path::new("/home/u/p q/tf-spawner.yaml")).is_ok());
        use std::os::unix::ffi::OsStrExt;
        let bytes = std::ffi::OsStr::from_bytes(b"/tmp/\xff/tf-spawner.yaml");
        assert!(recordable(Path::new(bytes)).is_err());
    }
}
