//! The binary in the background against the real server, its output read as it comes: a
//! test acts once the binary has said a line (it follows the run: its first line), instead
//! of sleeping until it probably has.

use std::ffi::{OsStr, OsString};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, Lines};
use tokio::process::Child;

use crate::support::{BIN, Cred, Output, Real};

/// One of its streams, read line by line: what was read so far.
struct Stream {
    lines: Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
    text: String,
}

impl Stream {
    fn new(from: impl AsyncRead + Unpin + Send + 'static) -> Stream {
        let from: Box<dyn AsyncRead + Unpin + Send> = Box::new(from);
        Stream {
            lines: BufReader::new(from).lines(),
            text: String::new(),
        }
    }

    /// Reads until a line that has `text` (60 s at most).
    async fn line(&mut self, name: &str, text: &str) {
        let read = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.text.push_str(&line);
                self.text.push('\n');
                if line.contains(text) {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            read,
            Ok(true),
            "no line with {text:?} on {name}:\n{}",
            self.text
        );
    }

    /// The rest, to its end.
    async fn rest(&mut self) {
        while let Ok(Some(line)) = self.lines.next_line().await {
            self.text.push_str(&line);
            self.text.push('\n');
        }
    }
}

/// The binary started as [`Real::run`] runs it, its stdout and stderr read line by line.
pub struct Started {
    child: Child,
    out: Stream,
    err: Stream,
}

impl Started {
    pub fn new(real: &Real, cred: Cred, args: &[&str]) -> Started {
        Started::with_kubeconfig(real, real.kubeconfig(cred).as_os_str(), args)
    }

    /// The same with a kubeconfig of the test's own (a ServiceAccount's).
    pub fn with_kubeconfig(real: &Real, kubeconfig: &OsStr, args: &[&str]) -> Started {
        let mut full: Vec<OsString> = vec!["--kubeconfig".into(), kubeconfig.into()];
        full.extend(args.iter().map(OsString::from));
        let mut child = tokio::process::Command::new(BIN)
            .args(&full)
            .env_clear()
            .env("HOME", real.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(real.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start tf-spawner");
        let out = Stream::new(child.stdout.take().unwrap());
        let err = Stream::new(child.stderr.take().unwrap());
        Started { child, out, err }
    }

    /// Reads stdout until a line that has `text` (60 s at most).
    pub async fn line(&mut self, text: &str) {
        self.out.line("stdout", text).await;
    }

    /// Reads stderr until a line that has `text` (60 s at most).
    pub async fn err_line(&mut self, text: &str) {
        self.err.line("stderr", text).await;
    }

    /// What it printed on stdout up to the last line read.
    pub fn stdout(&self) -> &str {
        &self.out.text
    }

    /// Waits for its end: what it printed, all of it.
    pub async fn finish(mut self) -> Output {
        tokio::join!(self.out.rest(), self.err.rest());
        let status = self.child.wait().await.expect("tf-spawner ends");
        Output {
            code: status.code().unwrap_or(-1),
            stdout: self.out.text,
            stderr: self.err.text,
        }
    }
}
