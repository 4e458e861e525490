//! A file of `--dir` packed exactly as the walk saw it: opened one component at a time,
//! no link followed and no FIFO waited on ([`open_walked`]), then appended with the size
//! it had, refused if it changed meanwhile ([`append_exactly`]).

use std::io::Write;
use std::path::Path;

/// A file of DIR opened for packing: the very file the walk saw (same device and inode,
/// never a symlink's target, never a FIFO that blocks the open), and its size then.
pub(super) struct Opened {
    file: std::fs::File,
    meta: std::fs::Metadata,
    pub(super) len: u64,
}

/// Opens `rel` under DIR (`root`, opened once) one component at a time, none of them
/// followed if it is a symlink (`openat` with `O_NOFOLLOW`; `O_NONBLOCK` too, so a FIFO
/// put in the file's place cannot hang the spawn): nothing outside DIR can be reached,
/// even when a directory of it is swapped for a symlink while it is packed. Then `fstat`
/// checks that it is the regular file the walk saw (its inode, `ino`). The error says
/// why, for one line.
pub(super) fn open_walked(
    root: &std::fs::File,
    rel: &Path,
    ino: Option<u64>,
) -> Result<Opened, String> {
    use rustix::fd::AsFd;
    use rustix::fs::{Mode, OFlags};
    use std::os::unix::fs::MetadataExt;
    let swapped = || "was replaced while it was packed (by a link or another file)".to_string();
    let parts: Vec<_> = rel.components().collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Err(swapped());
    };
    let nofollow = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir: Option<rustix::fd::OwnedFd> = None;
    for part in dirs {
        let at = dir.as_ref().map_or(root.as_fd(), |d| d.as_fd());
        let next = rustix::fs::openat(
            at,
            part.as_os_str(),
            nofollow | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(|_| swapped())?;
        dir = Some(next);
    }
    let at = dir.as_ref().map_or(root.as_fd(), |d| d.as_fd());
    let fd = rustix::fs::openat(
        at,
        last.as_os_str(),
        nofollow | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::LOOP => swapped(),
        e => format!("cannot be read ({e})"),
    })?;
    let file = std::fs::File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() || ino.is_some_and(|ino| ino != meta.ino()) {
        return Err(swapped());
    }
    let len = meta.len();
    Ok(Opened { file, meta, len })
}

/// Appends the opened file under `rel` with the size `fstat` gave when it was opened,
/// copying exactly that many bytes: a file that shrank, grew or was rewritten meanwhile
/// is refused (a header whose size the data does not match would corrupt the archive).
pub(super) fn append_exactly<W: Write>(
    tar: &mut tar::Builder<W>,
    rel: &Path,
    opened: Opened,
) -> Result<(), String> {
    use std::io::Read;
    let Opened { file, meta, len } = opened;
    let changed =
        || "changed while it was packed (pack again when nothing writes to it)".to_string();
    let mut header = tar::Header::new_gnu();
    header.set_metadata_in_mode(&meta, tar::HeaderMode::Complete);
    header.set_size(len);
    let mut data = Exact {
        inner: (&file).take(len),
        left: len,
    };
    tar.append_data(&mut header, rel, &mut data)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => changed(),
            _ => format!("cannot be packed ({e})"),
        })?;
    let mut more = [0u8; 1];
    let grew = (&file)
        .read(&mut more)
        .map_err(|e| format!("cannot be read ({e})"))?
        > 0;
    let after = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if grew || after.len() != len || after.modified().ok() != meta.modified().ok() {
        return Err(changed());
    }
    Ok(())
}

/// A reader of exactly `left` bytes: ends early with `UnexpectedEof`.
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: std::io::Read> std::io::Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ino(p: &Path) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        Some(std::fs::symlink_metadata(p).unwrap().ino())
    }

    /// What the walk saw is what is opened: a file swapped for a symlink (to a secret
    /// outside DIR), a directory above it swapped for one, or another file in its place
    /// is refused; the file itself opens.
    #[test]
    fn a_file_is_opened_only_as_the_walk_saw_it() {
        let d = tempfile::tempdir().unwrap();
        let secret = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(secret.path(), b"hunter2").unwrap();
        std::fs::create_dir_all(d.path().join("sub")).unwrap();
        let file = d.path().join("sub/train.py");
        std::fs::write(&file, b"pass\n").unwrap();
        let root = std::fs::File::open(d.path()).unwrap();
        let rel = Path::new("sub/train.py");
        let walked = ino(&file);
        let opened = open_walked(&root, rel, walked).unwrap();
        assert_eq!(opened.len, 5);

        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(secret.path(), &file).unwrap();
        let e = open_walked(&root, rel, walked).err().unwrap();
        assert!(e.contains("was replaced while it was packed"), "{e}");

        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, b"pass\n").unwrap();
        let e = open_walked(&root, rel, walked).err().unwrap();
        assert!(e.contains("was replaced"), "a new file in its place: {e}");

        let outside = tempfile::tempdir().unwrap();
        std::fs::hard_link(secret.path(), outside.path().join("train.py")).unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        let e = open_walked(&root, rel, ino(secret.path())).err().unwrap();
        assert!(
            e.contains("was replaced"),
            "a directory became a symlink: {e}"
        );
    }

    /// The header's size is the size at the open and exactly that is copied: a file that
    /// grows or shrinks meanwhile is refused, never shipped as a corrupt archive.
    #[test]
    fn a_file_that_changes_while_packed_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::File::open(d.path()).unwrap();
        let path = d.path().join("log.txt");
        for change in [
            |p: &Path| {
                let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
                f.write_all(b"more").unwrap();
            },
            |p: &Path| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .unwrap()
                    .set_len(3)
                    .unwrap();
            },
        ] {
            std::fs::write(&path, vec![b'x'; 10_000]).unwrap();
            let opened = open_walked(&root, Path::new("log.txt"), ino(&path)).unwrap();
            change(&path);
            let mut tar = tar::Builder::new(Vec::new());
            let e = append_exactly(&mut tar, Path::new("log.txt"), opened).unwrap_err();
            assert!(e.contains("changed while it was packed"), "{e}");
        }
        std::fs::write(&path, b"steady").unwrap();
        let opened = open_walked(&root, Path::new("log.txt"), ino(&path)).unwrap();
        let mut tar = tar::Builder::new(Vec::new());
        append_exactly(&mut tar, Path::new("log.txt"), opened).unwrap();
        let bytes = tar.into_inner().unwrap();
        let mut a = tar::Archive::new(&bytes[..]);
        let mut entry = a.entries().unwrap().next().unwrap().unwrap();
        let mut got = String::new();
        std::io::Read::read_to_string(&mut entry, &mut got).unwrap();
        assert_eq!(got, "steady");
    }
}
