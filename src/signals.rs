//! Ctrl-C and SIGTERM, as a future that resolves to the conventional exit code.

use crate::errors::{EXIT_INTERRUPTED, EXIT_TERMINATED};

/// Ctrl-C and SIGTERM, caught from the moment this is made: a signal that comes before
/// the first `requested().await` (a user quick on Ctrl-C after a prompt) is not lost.
pub struct Stop {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Stop {
    /// Starts catching both signals (needs the runtime).
    pub fn listen() -> Stop {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(int), Ok(term)) => Some((int, term)),
                _ => None,
            };
            Stop { signals }
        }
        #[cfg(not(unix))]
        Stop {}
    }

    /// Resolves when the process is asked to stop: 130 for SIGINT, 143 for SIGTERM.
    pub async fn requested(&mut self) -> u8 {
        #[cfg(unix)]
        {
            let Some((int, term)) = self.signals.as_mut() else {
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
}

/// Resolves when the process is asked to stop: 130 for SIGINT, 143 for SIGTERM. Catches
/// the signals from its first poll on; use [`Stop::listen`] to catch them earlier.
pub async fn stop_requested() -> u8 {
    Stop::listen().requested().await
}

/// How a stop's exit code was asked for, in the user's words: `Ctrl-C` (130), `SIGTERM`
/// (143).
pub fn asked_by(code: u8) -> &'static str {
    if code == EXIT_TERMINATED {
        "SIGTERM"
    } else {
        "Ctrl-C"
    }
}
