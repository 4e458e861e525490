//! `cp`: a file or directory out of a run's volume, as `kubectl cp` copies out of a pod
//! (`tar cf -` through exec, untarred here), through a short-lived helper pod of the run
//! that mounts the claim read-only. The tar stream is spooled to a temporary file; only
//! when it ended and the remote `tar` exited 0 is it unpacked, into a temporary
//! directory beside the destination that is renamed into place: a failed copy leaves
//! nothing that looks complete.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::cluster::Cluster;
use crate::errors::ExitError;
use crate::helper::Helper;
use crate::output;
use crate::plan::OutputVolume;
use crate::signals;

/// What to copy, and where.
#[derive(Debug, Clone)]
pub(crate) struct Copy {
    pub tag: String,
    pub remote: String,
    pub local: PathBuf,
    /// How long the helper pod may take to start.
    pub timeout: Duration,
}

/// What a copy brought home.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Copied {
    pub destination: PathBuf,
    pub files: u64,
    pub bytes: u64,
    /// Entries not copied (links, devices), with why.
    pub skipped: Vec<String>,
}

/// The path in the volume to copy: relative to its mount path (`""` for all of it).
fn remote_in_volume(remote: &str, volume: &OutputVolume) -> Result<String> {
    let inside = match remote.strip_prefix(&volume.path) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ if remote.starts_with('/') => bail!(
            "{remote} is not in the run's volume, which is mounted at {}",
            volume.path
        ),
        _ => remote,
    };
    let mut parts = Vec::new();
    for c in Path::new(inside).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::RootDir | Component::CurDir => {}
            _ => bail!("{remote}: '..' is not allowed; name a path inside the run's volume"),
        }
    }
    Ok(parts.join("/"))
}

/// Where the copy lands: `local` itself when it does not exist (its parent must), else
/// inside `local` when that is a directory. An existing file is never overwritten.
fn destination(local: &Path, name: &str) -> Result<PathBuf> {
    let dest = if local.is_dir() {
        local.join(name)
    } else {
        local.to_path_buf()
    };
    if dest.symlink_metadata().is_ok() {
        bail!("{} already exists; choose a new path", dest.display());
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        bail!("directory {} does not exist", parent.display());
    }
    Ok(dest)
}

/// Copies `copy.remote` out of the run's volume to `copy.local`.
pub(crate) async fn run(cluster: &Cluster, copy: &Copy) -> Result<Copied> {
    let volume = super::helper::run_volume(cluster, &copy.tag).await?;
    let inside = remote_in_volume(&copy.remote, &volume)?;
    let name = match inside.rsplit_once('/') {
        Some((_, last)) => last.to_string(),
        None if inside.is_empty() => volume.claim.clone(),
        None => inside.clone(),
    };
    let dest = destination(&copy.local, &name)?;
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let pod = super::helper::plan(cluster, &copy.tag, Helper::Cp, &volume, None).await?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    cluster.create_helper(&pod).await?;
    let result = tokio::select! {
        r = fetch(cluster, &pod_name, &volume, &inside, &parent, copy.timeout) => r,
        code = signals::stop_requested() => Err(ExitError::new(code, "interrupted; nothing was copied").into()),
    };
    let deleted = cluster.delete_helper(&pod_name).await;
    let spool = result?;
    if let Err(e) = deleted {
        output::note(&format!("{e}; it goes with: tf-spawner -d -t {}", copy.tag));
    }
    let dest_for_unpack = dest.clone();
    let unpacked = tokio::task::spawn_blocking(move || unpack(spool, &dest_for_unpack))
        .await
        .map_err(|e| anyhow!("unpacking the copy: {e}"))??;
    Ok(unpacked)
}

/// Waits for the helper pod, runs `tar` in it and spools its output; the spool only
/// when the stream and the remote exit are both clean.
async fn fetch(
    cluster: &Cluster,
    pod: &str,
    volume: &OutputVolume,
    inside: &str,
    parent: &Path,
    timeout: Duration,
) -> Result<tempfile::NamedTempFile> {
    super::helper::wait_running(cluster, pod, timeout, false).await?;
    let (dir, entry) = match inside.rsplit_once('/') {
        Some((dir, entry)) => (format!("{}/{dir}", volume.path), entry.to_string()),
        None if inside.is_empty() => (volume.path.clone(), ".".to_string()),
        None => (volume.path.clone(), inside.to_string()),
    };
    let spool = tempfile::Builder::new()
        .prefix(".tf-spawner-cp-")
        .tempfile_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let mut file = tokio::fs::File::from_std(spool.reopen()?);
    let command = ["tar", "cf", "-", "-C", &dir, "--", &entry].map(String::from);
    let exited = cluster.exec_to(pod, command.to_vec(), &mut file).await?;
    tokio::io::AsyncWriteExt::flush(&mut file).await?;
    match exited.code {
        Some(0) => Ok(spool),
        _ if exited.stderr.contains("No such file or directory") => Err(anyhow!(
            "{}: no such file or directory in the run's volume (claim '{}' at {})",
            if inside.is_empty() { "/" } else { inside },
            volume.claim,
            volume.path
        )),
        Some(126 | 127) => Err(anyhow!(
            "the image of pod/{pod} has no usable tar (exit {}): nothing was copied",
            exited.code.unwrap_or_default()
        )),
        code => {
            let why = exited
                .stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
                .or(exited.message)
                .unwrap_or_default();
            let code = code.map_or_else(|| "no exit status".to_string(), |c| format!("exit {c}"));
            Err(anyhow!(
                "tar in pod/{pod} failed ({code}): {why}; nothing was copied"
            ))
        }
    }
}

/// Unpacks the spooled tar into a temporary directory beside `dest`, then renames it
/// into place.
fn unpack(spool: tempfile::NamedTempFile, dest: &Path) -> Result<Copied> {
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".tf-spawner-cp-")
        .tempdir_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let payload = staging.path().join("payload");
    let mut copied = Copied {
        destination: dest.to_path_buf(),
        ..Copied::default()
    };
    let mut archive = tar::Archive::new(std::io::BufReader::new(spool.reopen()?));
    for entry in archive.entries().context("reading the copy's tar stream")? {
        let mut entry = entry.context("reading the copy's tar stream")?;
        let path = entry.path().context("a tar entry's path")?.into_owned();
        let target = inside(&payload, &path)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if kind.is_file() {
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut out = std::fs::File::create(&target)?;
            copied.bytes += std::io::copy(&mut entry, &mut out)
                .with_context(|| format!("writing {}", target.display()))?;
            out.sync_all()?;
            copied.files += 1;
        } else {
            let what = if kind.is_symlink() || kind.is_hard_link() {
                "a link"
            } else {
                "not a file or directory"
            };
            copied.skipped.push(format!("{} ({what})", path.display()));
        }
    }
    if payload.symlink_metadata().is_err() {
        bail!("the copy's tar stream was empty; nothing was copied");
    }
    std::fs::rename(&payload, dest)
        .with_context(|| format!("moving the copy to {}", dest.display()))?;
    Ok(copied)
}

/// Where a tar entry goes under `payload`: the copied name (the entry's first
/// component, or `.` for the whole volume) is the payload itself. An entry that would
/// land outside is refused.
fn inside(payload: &Path, entry: &Path) -> Result<PathBuf> {
    let whole_volume = entry.components().next() == Some(Component::CurDir);
    let mut target = payload.to_path_buf();
    let mut named = whole_volume;
    for c in entry.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(p) if named => target.push(p),
            Component::Normal(_) => named = true,
            _ => bail!(
                "the copy's tar stream names {}, outside the copied path; refused",
                entry.display()
            ),
        }
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume() -> OutputVolume {
        OutputVolume {
            claim: "out".into(),
            path: "/output".into(),
        }
    }

    #[test]
    fn a_remote_path_is_taken_relative_to_the_volume() {
        let v = volume();
        assert_eq!(remote_in_volume("model", &v).unwrap(), "model");
        assert_eq!(remote_in_volume("/output/model/", &v).unwrap(), "model");
        assert_eq!(remote_in_volume("/output", &v).unwrap(), "");
        assert!(remote_in_volume("/etc/passwd", &v).is_err());
        assert!(remote_in_volume("model/../../etc", &v).is_err());
        assert!(remote_in_volume("/outputs/x", &v).is_err());
    }

    #[test]
    fn entries_map_under_the_payload_and_never_outside() {
        let p = Path::new("/tmp/x/payload");
        let at = |e: &str| inside(p, Path::new(e)).unwrap();
        assert_eq!(at("model"), p);
        assert_eq!(at("model/saved.pb"), p.join("saved.pb"));
        assert_eq!(at("./a/b"), p.join("a/b"));
        assert_eq!(at("."), p);
        assert!(inside(p, Path::new("model/../../etc")).is_err());
        assert!(inside(p, Path::new("/etc/passwd")).is_err());
    }

    fn tar_of(entries: &[(&str, &[u8])], link: Option<(&str, &str)>) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut b = tar::Builder::new(file.reopen().unwrap());
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, path, *data).unwrap();
        }
        if let Some((path, to)) = link {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, path, to).unwrap();
        }
        b.finish().unwrap();
        file
    }

    #[test]
    fn a_directory_lands_whole_and_links_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model");
        let spool = tar_of(
            &[("model/a.txt", b"hello"), ("model/sub/b.bin", b"xy")],
            Some(("model/evil", "/etc/passwd")),
        );
        let copied = unpack(spool, &dest).unwrap();
        assert_eq!((copied.files, copied.bytes), (2, 7));
        assert_eq!(std::fs::read(dest.join("a.txt")).unwrap(), b"hello");
        assert_eq!(std::fs::read(dest.join("sub/b.bin")).unwrap(), b"xy");
        assert!(dest.join("evil").symlink_metadata().is_err());
        assert_eq!(copied.skipped, vec!["model/evil (a link)".to_string()]);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the destination is left: {left:?}");
    }

    #[test]
    fn a_truncated_stream_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model");
        let spool = tar_of(&[("model/a.txt", &[7u8; 4096])], None);
        let len = spool.as_file().metadata().unwrap().len();
        spool.as_file().set_len(len / 3).unwrap();
        assert!(unpack(spool, &dest).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing is left: {left:?}");
    }
}
