//! The binary in the background against the real server, its stdout read as it comes: a
//! test drives the pods once the binary has said it follows them (its first line),
//! instead of sleeping until it probably does.

use std::ffi::{OsStr, OsString};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::support::{BIN, Cred, Output, Real};

/// The binary started as [`Real::run`] runs it, its stdout read line by line.
pub struct Started {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    stdout: String,
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
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Started {
            child,
            lines,
            stdout: String::new(),
        }
    }

    /// Reads stdout until a line that starts with `prefix` (60 s at most).
    pub async fn line(&mut self, prefix: &str) {
        let read = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.stdout.push_str(&line);
                self.stdout.push('\n');
                if line.starts_with(prefix) {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            read,
            Ok(true),
            "no line {prefix:?}; stdout:\n{}",
            self.stdout
        );
    }

    /// What it printed on stdout up to the last line read.
    pub fn stdout(&self) -> &str {
        &self.stdout
    }

    /// Waits for its end: what it printed, all of it.
    pub async fn finish(mut self) -> Output {
        let mut err = self.child.stderr.take().expect("stderr");
        let mut stderr = String::new();
        let rest = async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.stdout.push_str(&line);
                self.stdout.push('\n');
            }
        };
        let (_, _) = tokio::join!(rest, err.read_to_string(&mut stderr));
        let status = self.child.wait().await.expect("tf-spawner ends");
        Output {
            code: status.code().unwrap_or(-1),
            stdout: self.stdout,
            stderr,
        }
    }
}
