//! Ctrl-C and SIGTERM, as a future that resolves to the conventional exit code.

use crate::errors::{EXIT_INTERRUPTED, EXIT_TERMINATED};

/// Resolves when the process is asked to stop: 130 for SIGINT, 143 for SIGTERM.
pub async fn stop_requested() -> u8 {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => EXIT_INTERRUPTED,
            _ = term.recv() => EXIT_TERMINATED,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        EXIT_INTERRUPTED
    }
}
