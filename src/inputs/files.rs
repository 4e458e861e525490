//! Reading the files a user names (script, entrypoint, templates, env file, defaults
//! file, kubeconfig): with a bound matching the file's use, refused as soon as it is
//! passed, and, for what is not a regular file (a FIFO, `<(…)`, a device), in a thread
//! of its own while Ctrl-C and SIGTERM can still end the wait.

#![deny(clippy::arithmetic_side_effects)]

use std::io::Read;
use std::path::Path;

use anyhow::Result;

use crate::errors::{ExitError, UsageError};
use crate::{output, signals};

/// What an object of the API holds at most (a ConfigMap, a Secret; etcd's limit for a
/// request): the bound of every file that goes into one.
pub const MAX_OBJECT_BYTES: usize = 1024 * 1024;

/// The bound of a file, and why (the end of the message that refuses a larger one).
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub bytes: usize,
    pub why: &'static str,
}

/// Reads `path` (a `what`, for the messages) with the bound `limit`. A missing file, a
/// directory or a file over the bound is a usage error; Ctrl-C or SIGTERM while a FIFO
/// waits for its writer ends the read with exit code 130 or 143.
pub async fn read(path: &Path, what: &str, limit: Limit) -> Result<Vec<u8>> {
    let cannot = |e: &std::io::Error| {
        UsageError::new(format!(
            "cannot read {what} {}: {}",
            output::shown_path(path),
            io_reason(e)
        ))
    };
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if meta.is_dir() {
        return Err(UsageError::new(format!(
            "{what} {} is a directory, not a file",
            output::shown_path(path)
        ))
        .into());
    }
    let too_big = || {
        UsageError::new(format!(
            "{what} {} is larger than {} bytes{}",
            output::shown_path(path),
            limit.bytes,
            limit.why
        ))
    };
    if meta.is_file() {
        if usize::try_from(meta.len()).map_or(true, |len| len > limit.bytes) {
            return Err(too_big().into());
        }
        let bytes = read_bounded(path, limit.bytes).map_err(|e| cannot(&e))?;
        return bytes.ok_or_else(|| too_big().into());
    }
    // Opening a FIFO waits for a writer, and reading it for data: a thread does that
    // (never joined: the process may end while it waits), this thread waits for it or
    // for a signal.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let owned = path.to_path_buf();
    let bound = limit.bytes;
    std::thread::Builder::new()
        .name("read-input".into())
        .spawn(move || {
            let _ = tx.send(read_bounded(&owned, bound));
        })
        .map_err(|e| cannot(&e))?;
    tokio::select! {
        read = rx => match read {
            Ok(Ok(Some(bytes))) => Ok(bytes),
            Ok(Ok(None)) => Err(too_big().into()),
            Ok(Err(e)) => Err(cannot(&e).into()),
            Err(_) => Err(cannot(&std::io::Error::other("the reading thread ended")).into()),
        },
        code = signals::stop_requested() => Err(ExitError::new(
            code,
            format!("interrupted while reading {what} {}", output::shown_path(path)),
        )
        .into()),
    }
}

/// At most `limit` bytes of the file, or `None` when it holds more.
fn read_bounded(path: &Path, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    file.take(cap).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= limit).then_some(bytes))
}

/// "No such file or directory", without the "(os error 2)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        bytes: 8,
        why: "; at most 8",
    };

    fn run(path: &Path) -> Result<Vec<u8>> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(read(path, "test file", SMALL))
    }

    #[test]
    fn a_file_at_the_bound_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok");
        std::fs::write(&ok, b"12345678").unwrap();
        assert_eq!(run(&ok).unwrap(), b"12345678");
        let big = dir.path().join("big");
        std::fs::write(&big, b"123456789").unwrap();
        let e = run(&big).unwrap_err().to_string();
        assert!(e.ends_with("big is larger than 8 bytes; at most 8"), "{e}");
    }

    #[test]
    fn an_endless_device_is_read_up_to_the_bound_only() {
        let e = run(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "test file /dev/zero is larger than 8 bytes; at most 8");
        assert_eq!(run(Path::new("/dev/null")).unwrap(), b"");
    }
}
