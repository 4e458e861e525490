//! Ctrl-C and SIGTERM, as a future that resolves to the conventional exit code.
//!
//! One process-wide latch: installed once, by the first listener, it
//! catches every SIGINT and SIGTERM from then on, on a thread of its own, whatever
//! runtime is running or whether anyone listens. A signal that comes while no listener
//! waits (between two `select!`s, during a step that does not listen) is remembered:
//! the next listener sees it at once, for a Ctrl-C means stop. Seen once, it is consumed:
//! a listener made after another has seen it waits for a new signal (a second Ctrl-C,
//! which `--local` takes as "kill now").

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use crate::errors::{EXIT_INTERRUPTED, EXIT_TERMINATED};

/// The signals received so far: how many, and the last one's exit code.
#[derive(Debug, Clone, Copy, Default)]
struct Received {
    count: u64,
    code: u8,
}

/// The process-wide latch.
struct Latch {
    received: watch::Sender<Received>,
    /// Signals seen by a listener: the rest are news to the next one.
    consumed: AtomicU64,
}

static LATCH: OnceLock<Latch> = OnceLock::new();

/// The latch, installed by its first use: from then on, no SIGINT or SIGTERM is lost.
/// Needs no runtime.
fn latch() -> &'static Latch {
    LATCH.get_or_init(|| {
        let (received, _) = watch::channel(Received::default());
        let catcher = received.clone();
        let (ready, caught) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("tf-spawner-signals".into())
            .spawn(move || catch(&catcher, &ready));
        // Wait until the handlers are in place; if they cannot be (no thread, no
        // signal driver), nobody is ever asked to stop, as without a handler.
        if started.is_ok() {
            let _ = caught.recv();
        }
        Latch {
            received,
            consumed: AtomicU64::new(0),
        }
    })
}

/// The latch's thread: catches the signals for ever, each one counted with its code.
fn catch(received: &watch::Sender<Received>, ready: &std::sync::mpsc::Sender<()>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    else {
        let _ = ready.send(());
        return;
    };
    runtime.block_on(async {
        let record = |code: u8| {
            received.send_modify(|r| {
                r.count += 1;
                r.code = code;
            });
        };
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            );
            let _ = ready.send(());
            let (Ok(mut int), Ok(mut term)) = signals else {
                return;
            };
            loop {
                tokio::select! {
                    Some(()) = int.recv() => record(EXIT_INTERRUPTED),
                    Some(()) = term.recv() => record(EXIT_TERMINATED),
                    else => return,
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = ready.send(());
            while tokio::signal::ctrl_c().await.is_ok() {
                record(EXIT_INTERRUPTED);
            }
        }
    });
}

/// Ctrl-C and SIGTERM, caught from the moment this is made: a signal that comes before
/// the first `requested().await` (a user quick on Ctrl-C after a prompt) is not lost,
/// nor one that came, unseen, before it was made (see the module docs).
pub struct Stop {
    /// Signals this listener has accounted for.
    seen: u64,
    received: watch::Receiver<Received>,
}

impl Stop {
    /// Starts listening (installs the latch the first time).
    pub fn listen() -> Stop {
        let latch = latch();
        Stop {
            seen: latch.consumed.load(Ordering::SeqCst),
            received: latch.received.subscribe(),
        }
    }

    /// Resolves when the process is asked to stop: 130 for SIGINT, 143 for SIGTERM.
    /// Again on the same listener: at the next signal.
    pub async fn requested(&mut self) -> u8 {
        loop {
            let now = *self.received.borrow_and_update();
            if now.count > self.seen {
                self.seen = now.count;
                latch().consumed.fetch_max(now.count, Ordering::SeqCst);
                return now.code;
            }
            if self.received.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

/// Resolves when the process is asked to stop: 130 for SIGINT, 143 for SIGTERM. Listens
/// from its first poll on (a signal no listener has seen yet counts); use
/// [`Stop::listen`] to listen earlier.
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

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Runs `test` in a process of its own (this test binary, that test only): the
    /// signals it sends itself must not reach the other tests' listeners.
    fn alone(test: &str) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env("TF_SPAWNER_SIGNAL_TEST", "1")
            .output()
            .expect("run the test alone");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("1 passed"), "{said}");
    }

    fn raise(signal: rustix::process::Signal) {
        rustix::process::kill_process(rustix::process::getpid(), signal).expect("kill self");
    }

    /// Until the latch has counted `n` signals (a receiver of its own, which consumes
    /// nothing).
    async fn counted(n: u64) {
        let mut received = latch().received.subscribe();
        tokio::time::timeout(Duration::from_secs(30), received.wait_for(|r| r.count >= n))
            .await
            .expect("the latch counts the signal")
            .expect("the latch's thread is alive");
    }

    #[tokio::test]
    async fn a_signal_while_no_listener_waits_is_seen_by_the_next_listener() {
        const NAME: &str =
            "signals::tests::a_signal_while_no_listener_waits_is_seen_by_the_next_listener";
        if std::env::var_os("TF_SPAWNER_SIGNAL_TEST").is_none() {
            return alone(NAME);
        }
        let bound = Duration::from_secs(30);
        // A listener that waits sees a Ctrl-C.
        let mut first = Stop::listen();
        raise(rustix::process::Signal::INT);
        assert_eq!(
            tokio::time::timeout(bound, first.requested()).await,
            Ok(130)
        );
        drop(first);
        // Between two listeners: nobody waits when the SIGTERM comes and is caught.
        raise(rustix::process::Signal::TERM);
        counted(2).await;
        let mut next = Stop::listen();
        assert_eq!(tokio::time::timeout(bound, next.requested()).await, Ok(143));
        // Seen, it is consumed: a later listener waits for a new signal (a second
        // Ctrl-C), and gets it.
        let mut later = Box::pin(stop_requested());
        assert!(futures::FutureExt::now_or_never(&mut later).is_none());
        raise(rustix::process::Signal::INT);
        assert_eq!(tokio::time::timeout(bound, later).await, Ok(130));
    }
}
