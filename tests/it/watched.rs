//! The binary in the background, its stdout and stderr read as it writes them: a test
//! awaits a line it prints (a marker) instead of sleeping until it probably has.

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::{BINARY_BOUND, Env, Output, Watchdog};

/// The binary started in the background, its output kept as it comes.
pub struct Watched {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// Reads `from` into `into` as it comes, until its end.
fn keep(mut from: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

impl Watched {
    pub fn start(env: &Env, args: &[&str]) -> Watched {
        Watched::start_with(env.cmd().args(args))
    }

    /// `cmd` (made by `Env::cmd`) started so.
    pub fn start_with(cmd: &mut std::process::Command) -> Watched {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tf-spawner");
        let (stdout, stderr) = (Arc::default(), Arc::default());
        let readers = vec![
            keep(child.stdout.take().unwrap(), Arc::clone(&stdout)),
            keep(child.stderr.take().unwrap(), Arc::clone(&stderr)),
        ];
        Watched {
            child,
            stdout,
            stderr,
            readers,
        }
    }

    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Blocks until stdout has `text` (60 s at most; failing at once if it ended).
    pub fn await_stdout(&mut self, text: &str) {
        let stdout = Arc::clone(&self.stdout);
        self.await_text("stdout", text, &stdout);
    }

    /// Blocks until stderr has `text` (60 s at most; failing at once if it ended).
    pub fn await_stderr(&mut self, text: &str) {
        let stderr = Arc::clone(&self.stderr);
        self.await_text("stderr", text, &stderr);
    }

    fn await_text(&mut self, stream: &str, text: &str, kept: &Mutex<String>) {
        let start = Instant::now();
        loop {
            // Its end read first: then what it wrote is all in.
            let drained = self.readers.iter().all(JoinHandle::is_finished);
            if kept.lock().unwrap().contains(text) {
                return;
            }
            let said = format!(
                "stdout:\n{}\nstderr:\n{}",
                self.stdout(),
                self.stderr.lock().unwrap()
            );
            if drained {
                let ended = self.child.wait().expect("wait");
                panic!("tf-spawner ended ({ended}) without {text:?} on {stream}; {said}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {text:?} on {stream} after 60s; {said}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process, for helpers that watch it end (`await_while_running`).
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for its end: what it printed, all of it.
    pub fn finish(mut self) -> Output {
        let dog = Watchdog::arm(self.child.id(), BINARY_BOUND);
        let status = self.child.wait().expect("tf-spawner ends");
        let killed = dog.disarm();
        for reader in self.readers.drain(..) {
            reader.join().expect("read its output");
        }
        let out = Output {
            code: status.code().unwrap_or(-1),
            stdout: std::mem::take(&mut self.stdout.lock().unwrap()),
            stderr: std::mem::take(&mut self.stderr.lock().unwrap()),
        };
        assert!(
            !killed,
            "tf-spawner still ran after {} s (killed): {out:#?}",
            BINARY_BOUND.as_secs()
        );
        out
    }
}
