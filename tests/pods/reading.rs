//! The binary in the background, its stdout and stderr read as it writes them: a test
//! acts once it has said a line (a marker), instead of sleeping until it probably has.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::support::Output;

/// A started binary (`Cluster::start`), its output kept as it comes.
pub struct Reading {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// Reads `from` into `into` as it comes, until its end.
fn keep(
    mut from: impl AsyncRead + Unpin + Send + 'static,
    into: Arc<Mutex<String>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

impl Reading {
    pub fn new(mut child: Child) -> Reading {
        let (stdout, stderr) = (Arc::default(), Arc::default());
        let readers = vec![
            keep(
                child.stdout.take().expect("piped stdout"),
                Arc::clone(&stdout),
            ),
            keep(
                child.stderr.take().expect("piped stderr"),
                Arc::clone(&stderr),
            ),
        ];
        Reading {
            child,
            stdout,
            stderr,
            readers,
        }
    }

    /// Until stdout has `text` (`bound` at most).
    pub async fn stdout_has(&self, text: &str, bound: Duration) {
        self.has("stdout", &self.stdout, text, bound).await;
    }

    /// Until stderr has `text` (`bound` at most).
    pub async fn stderr_has(&self, text: &str, bound: Duration) {
        self.has("stderr", &self.stderr, text, bound).await;
    }

    async fn has(&self, stream: &str, kept: &Mutex<String>, text: &str, bound: Duration) {
        let start = tokio::time::Instant::now();
        loop {
            let drained = self.readers.iter().all(JoinHandle::is_finished);
            if kept.lock().unwrap().contains(text) {
                return;
            }
            let said = || {
                let (out, err) = (self.stdout.lock().unwrap(), self.stderr.lock().unwrap());
                format!("stdout:\n{out}\nstderr:\n{err}")
            };
            assert!(
                !drained,
                "tf-spawner ended without {text:?} on {stream}; {}",
                said()
            );
            assert!(
                start.elapsed() < bound,
                "no {text:?} on {stream} after {bound:?}; {}",
                said()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Ctrl-C, as a terminal sends it.
    pub fn interrupt(&self) {
        let pid = self.child.id().expect("running").to_string();
        let _ = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status();
    }

    /// Its end (`bound` at most): what it printed, all of it.
    pub async fn finish(mut self, bound: Duration) -> Output {
        let status = tokio::time::timeout(bound, self.child.wait())
            .await
            .expect("tf-spawner ends in time")
            .expect("wait for tf-spawner");
        for reader in self.readers.drain(..) {
            reader.await.expect("read its output");
        }
        let take = |kept: &Mutex<String>| std::mem::take(&mut *kept.lock().unwrap());
        Output {
            code: status.code().unwrap_or(-1),
            stdout: take(&self.stdout),
            stderr: take(&self.stderr),
        }
    }
}
