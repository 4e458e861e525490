//! `cp`: a file or directory out of a run's volume, as `kubectl cp` copies out of a pod
//! (`tar cf -` through exec, untarred here), through a short-lived helper pod of the run
//! that mounts the claim read-only. The tar stream is spooled to a temporary file; only
//! when it ended and the remote `tar` exited 0 is it unpacked, into a temporary
//! directory beside the destination that is renamed into place: a failed copy leaves
//! nothing that looks complete.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::cluster::Cluster;
use crate::errors::{ExitError, UsageError};
use crate::output;
use crate::plan::OutputVolume;
use crate::plan::helper_pod::Helper;
use crate::signals;

/// What to copy, and where.
#[derive(Debug, Clone)]
pub(crate) struct Copy {
    pub tag: String,
    pub remote: String,
    pub local: PathBuf,
    /// How long the helper pod may take to start.
    pub timeout: Duration,
    /// `--whole-volume`: a relative REMOTE is in the claim's root, not the run's folder.
    pub whole_volume: bool,
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

/// The path in the volume to copy, relative to its mount path (`""` for all of it): an
/// absolute REMOTE under the mount path, or a relative one in the run's folder (when the
/// run has one: `volume.folder`).
fn remote_in_volume(remote: &str, volume: &OutputVolume) -> Result<String> {
    let inside = match remote.strip_prefix(&volume.path) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.to_string(),
        _ if remote.starts_with('/') => bail!(
            "{remote} is not in the run's volume, which is mounted at {}",
            volume.path
        ),
        _ => match &volume.folder {
            Some(folder) => format!("{folder}/{remote}"),
            None => remote.to_string(),
        },
    };
    let mut parts = Vec::new();
    for c in Path::new(&inside).components() {
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

/// Copies `copy.remote` out of the run's volume to `copy.local`. Ctrl-C (or SIGTERM)
/// stops it at any point, the helper pod deleted and nothing left behind.
pub(crate) async fn run(cluster: &Cluster, copy: &Copy) -> Result<Copied> {
    let mut stop = signals::Stop::listen();
    if copy.remote.is_empty() {
        return Err(UsageError::new(
            "REMOTE is empty: name a path in the run's volume ('.' copies all of it)",
        )
        .into());
    }
    let mut volume = super::helper::run_volume(cluster, &copy.tag).await?;
    if copy.whole_volume {
        volume.folder = None;
    }
    let inside = remote_in_volume(&copy.remote, &volume)?;
    let name = match inside.rsplit_once('/') {
        Some((_, last)) => last.to_string(),
        None if inside.is_empty() => volume.claim.clone(),
        None => inside.clone(),
    };
    let dest = destination(&copy.local, &name)?;
    let parent = parent_of(&dest).to_path_buf();
    let pod = super::helper::plan(cluster, &copy.tag, Helper::Cp, &volume, None).await?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    // Its name is random: a pod of that name is someone else's, never used.
    let created = cluster.create_helper(&pod).await?.ok_or_else(|| {
        anyhow!("pod/{pod_name} already exists and is not this copy's; nothing was copied")
    })?;
    let uid = created.metadata.uid.unwrap_or_default();
    let result = tokio::select! {
        r = fetch(cluster, &pod_name, &volume, &inside, &parent, copy.timeout) => r,
        code = stop.requested() => Err(interrupted(code)),
    };
    let deleted = cluster.delete_helper(&pod_name, &uid, None).await;
    let spool = result?;
    if let Err(e) = deleted {
        output::note(&format!("{e}; it goes with: tf-spawner -d -t {}", copy.tag));
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let (flag, dest_for_unpack) = (cancel.clone(), dest.clone());
    let mut unpacking = tokio::task::spawn_blocking(move || unpack(spool, &dest_for_unpack, &flag));
    let unpacked = tokio::select! {
        r = &mut unpacking => r,
        code = stop.requested() => {
            // The unpacking sees the flag between two writes and removes what it made.
            cancel.store(true, Ordering::Relaxed);
            let _ = unpacking.await;
            return Err(interrupted(code));
        }
    };
    unpacked.map_err(|e| anyhow!("unpacking the copy: {e}"))?
}

fn interrupted(code: u8) -> anyhow::Error {
    ExitError::new(code, "interrupted; nothing was copied").into()
}

/// The directory `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Waits for the helper pod, runs `tar` in it and spools its output; the spool only
/// when the stream and the remote exit are both clean. The spool is a file without a
/// name (`O_TMPFILE`, or unlinked at once) in `parent`: whatever ends the copy, even a
/// SIGKILL, it leaves nothing behind.
async fn fetch(
    cluster: &Cluster,
    pod: &str,
    volume: &OutputVolume,
    inside: &str,
    parent: &Path,
    timeout: Duration,
) -> Result<std::fs::File> {
    super::helper::wait_running(cluster, pod, timeout, false, None).await?;
    let (dir, entry) = match inside.rsplit_once('/') {
        Some((dir, entry)) => (format!("{}/{dir}", volume.path), entry.to_string()),
        None if inside.is_empty() => (volume.path.clone(), ".".to_string()),
        None => (volume.path.clone(), inside.to_string()),
    };
    let spool = tempfile::tempfile_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let mut file = tokio::fs::File::from_std(spool.try_clone()?);
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

/// The prefix of the directory a copy is unpacked into beside its destination, before
/// it is renamed into place (a copy killed by SIGKILL while unpacking leaves one:
/// `.NAME.tf-spawner-cp-partial-XXXXXX`, safe to delete).
const STAGING: &str = ".tf-spawner-cp-partial-";

/// Unpacks the spooled tar into a temporary directory beside `dest`, then renames it
/// into place, never over anything that appeared there meanwhile. Stops, leaving
/// nothing, when `cancel` is set.
fn unpack(mut spool: std::fs::File, dest: &Path, cancel: &AtomicBool) -> Result<Copied> {
    use std::io::Seek;
    let parent = parent_of(dest);
    let prefix = format!(
        ".{}{STAGING}",
        dest.file_name().unwrap_or_default().to_string_lossy()
    );
    let staging = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let payload = staging.path().join("payload");
    let mut copied = Copied {
        destination: dest.to_path_buf(),
        ..Copied::default()
    };
    spool.rewind().context("reading the copy's tar stream")?;
    let mut archive = tar::Archive::new(std::io::BufReader::new(spool));
    for entry in archive.entries().context("reading the copy's tar stream")? {
        if cancel.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        let entry = entry.context("reading the copy's tar stream")?;
        unpack_entry(entry, &payload, &mut copied, cancel)?;
    }
    if payload.symlink_metadata().is_err() {
        bail!("the copy's tar stream was empty; nothing was copied");
    }
    rename_no_replace(&payload, dest)
        .with_context(|| format!("moving the copy to {}", dest.display()))?;
    Ok(copied)
}

/// One entry of the copy: a directory, a file (written in chunks, stopping when
/// `cancel` is set), a hard link to a file already copied (linked again); anything
/// else is skipped, with why.
fn unpack_entry(
    mut entry: tar::Entry<'_, impl std::io::Read>,
    payload: &Path,
    copied: &mut Copied,
    cancel: &AtomicBool,
) -> Result<()> {
    let path = entry.path().context("a tar entry's path")?.into_owned();
    let target = inside(payload, &path)?;
    let kind = entry.header().entry_type();
    if kind.is_dir() {
        std::fs::create_dir_all(&target)?;
        return Ok(());
    }
    if (kind.is_file() || kind.is_hard_link())
        && let Some(dir) = target.parent()
    {
        std::fs::create_dir_all(dir)?;
    }
    if kind.is_file() {
        let mut out = std::fs::File::create(&target)
            .with_context(|| format!("writing {}", target.display()))?;
        copied.bytes += copy_until(&mut entry, &mut out, cancel)
            .with_context(|| format!("writing {}", target.display()))?;
        out.sync_all()?;
        copied.files += 1;
    } else if kind.is_hard_link() {
        // A second name of a file of the copy: its first name was written before it.
        let first = entry
            .link_name()
            .ok()
            .flatten()
            .and_then(|l| inside(payload, &l).ok())
            .filter(|f| f.symlink_metadata().is_ok_and(|m| m.is_file()));
        match first {
            Some(first) => {
                std::fs::hard_link(&first, &target)
                    .or_else(|_| std::fs::copy(&first, &target).map(drop))
                    .with_context(|| format!("writing {}", target.display()))?;
                copied.files += 1;
            }
            None => copied
                .skipped
                .push(format!("{} (a link to a file not copied)", path.display())),
        }
    } else {
        let what = if kind.is_symlink() {
            "a link"
        } else {
            "not a file or directory"
        };
        copied.skipped.push(format!("{} ({what})", path.display()));
    }
    Ok(())
}

/// Copies `from` to `to`, checking `cancel` between chunks.
fn copy_until(
    from: &mut impl std::io::Read,
    to: &mut impl std::io::Write,
    cancel: &AtomicBool,
) -> Result<u64> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        if cancel.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Renames `from` to `to` unless `to` exists (`renameat2` with `RENAME_NOREPLACE`); where
/// the file system cannot do that, the same without a window: a file is hard-linked
/// then unlinked, a directory renamed onto an empty directory made for it (`mkdir`
/// fails on anything already there, and a rename onto a directory that is no longer
/// empty fails).
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use rustix::io::Errno;
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
        Err(e) => return Err(e.into()),
    }
    if from.symlink_metadata()?.is_dir() {
        std::fs::create_dir(to)?;
        std::fs::rename(from, to).inspect_err(|_| {
            let _ = std::fs::remove_dir(to);
        })
    } else {
        std::fs::hard_link(from, to)?;
        std::fs::remove_file(from)
    }
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
            folder: None,
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
        // A run with its own folder: a relative path is in it, an absolute one is not.
        let run = OutputVolume {
            folder: Some("lr-1".into()),
            ..volume()
        };
        assert_eq!(remote_in_volume("model", &run).unwrap(), "lr-1/model");
        assert_eq!(remote_in_volume(".", &run).unwrap(), "lr-1");
        assert_eq!(
            remote_in_volume("/output/lr-2/model", &run).unwrap(),
            "lr-2/model"
        );
        assert!(remote_in_volume("../lr-2", &run).is_err());
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
        let copied = unpack(spool.reopen().unwrap(), &dest, &AtomicBool::new(false)).unwrap();
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
        assert!(unpack(spool.reopen().unwrap(), &dest, &AtomicBool::new(false)).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing is left: {left:?}");
    }

    fn unpack_all(spool: &tempfile::NamedTempFile, dest: &Path) -> Result<Copied> {
        unpack(spool.reopen().unwrap(), dest, &AtomicBool::new(false))
    }

    /// A hard-linked file's second name is copied (linked again to the first), not
    /// skipped; a link to a file the copy does not hold is skipped, with why.
    #[test]
    fn a_second_name_of_a_hard_linked_file_is_copied() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut b = tar::Builder::new(file.reopen().unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "model/a.bin", &b"hello"[..]).unwrap();
        for (name, to) in [
            ("model/b.bin", "model/a.bin"),
            ("model/c.bin", "model/gone"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Link);
            h.set_size(0);
            b.append_link(&mut h, name, to).unwrap();
        }
        b.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model");
        let copied = unpack_all(&file, &dest).unwrap();
        assert_eq!(std::fs::read(dest.join("b.bin")).unwrap(), b"hello");
        assert_eq!(copied.files, 2);
        assert_eq!(
            copied.skipped,
            vec!["model/c.bin (a link to a file not copied)".to_string()]
        );
    }

    /// A file or directory that appears at the destination while the copy runs is never
    /// replaced: the copy fails and leaves nothing of its own.
    #[test]
    fn what_appears_at_the_destination_meanwhile_is_never_replaced() {
        for (entries, make) in [
            (vec![("model", &b"new"[..])], false),
            (vec![("model/a.txt", &b"new"[..])], true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let dest = dir.path().join("model");
            let spool = tar_of(&entries, None);
            if make {
                std::fs::create_dir(&dest).unwrap();
                std::fs::write(dest.join("mine"), "mine").unwrap();
            } else {
                std::fs::write(&dest, "mine").unwrap();
            }
            let e = unpack_all(&spool, &dest).unwrap_err();
            assert!(format!("{e:#}").contains("moving the copy to"), "{e:#}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "only what was there: {left:?}");
            let mine = if make { dest.join("mine") } else { dest };
            assert_eq!(std::fs::read_to_string(mine).unwrap(), "mine");
        }
        // The fallback without renameat2 is no-replace too.
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        assert!(rename_no_replace(&a, &b).is_err());
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b");
    }

    /// A cancelled unpacking (Ctrl-C) stops and leaves nothing beside the destination.
    #[test]
    fn a_cancelled_unpacking_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model");
        let spool = tar_of(&[("model/a.txt", &[7u8; 4096])], None);
        let e = unpack(spool.reopen().unwrap(), &dest, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(e.to_string(), "interrupted");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing is left: {left:?}");
    }
}
