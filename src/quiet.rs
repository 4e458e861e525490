//! `--quiet`: nothing on stdout but what a script asked for (a new run's tag).
//!
//! Every command prints through stdout, in many places (progress, tables, reports), so
//! quiet mode points file descriptor 1 at `/dev/null` once, before any command runs,
//! and keeps the real stdout for `output::data`. Errors go to stderr and are unaffected.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::{Mutex, OnceLock};

/// The real stdout, kept aside while fd 1 is silenced.
static REAL_STDOUT: OnceLock<Mutex<File>> = OnceLock::new();

/// Points stdout at `/dev/null` from now on; `output::data` still reaches the real stdout.
/// Calling it again is harmless.
pub fn silence_stdout() -> io::Result<()> {
    if REAL_STDOUT.get().is_some() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.flush()?;
    let saved = File::from(out.as_fd().try_clone_to_owned()?);
    let null = File::options().write(true).open("/dev/null")?;
    // SAFETY: both descriptors are open; dup2 only replaces descriptor 1, which the
    // locked `out` keeps from being written meanwhile.
    if unsafe { libc::dup2(null.as_raw_fd(), out.as_raw_fd()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = REAL_STDOUT.set(Mutex::new(saved));
    Ok(())
}

/// Whether [`silence_stdout`] has run.
pub fn is_quiet() -> bool {
    REAL_STDOUT.get().is_some()
}

/// The real stdout while fd 1 is silenced, for `output::data`.
pub(crate) fn real_stdout() -> Option<&'static Mutex<File>> {
    REAL_STDOUT.get()
}
