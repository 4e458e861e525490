//! Plumbing of the TensorFlow suite: the interpreter named by `TF_SPAWNER_TF_PYTHON`, a
//! temp dir per test (the binary's HOME and working directory, where the data set, the env
//! file and the model go), and the binary run as `tf-spawner --local --python PY ...`.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

#[path = "../common/output.rs"]
mod output;
#[path = "../common/tensorflow.rs"]
mod tensorflow;

pub use output::Output;
pub use tensorflow::{epochs, is_keras_file, series, task_lines, write_synthetic_mnist};

pub const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
/// The Python interpreter with TensorFlow (and tf_keras).
pub const VAR: &str = "TF_SPAWNER_TF_PYTHON";

/// One test's interpreter and temp dir.
pub struct Tf {
    pub python: PathBuf,
    pub dir: TempDir,
}

impl Tf {
    /// The interpreter and a temp dir, or `None` (with a visible notice) when
    /// `TF_SPAWNER_TF_PYTHON` is not set.
    pub fn new(test: &str) -> Option<Tf> {
        let Some(python) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
            // Straight to the process's stderr: libtest captures `eprintln!` of passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {VAR} not set (the TensorFlow suite; tools/tensorflow/setup.sh makes the venv, .ci/run sets it)"
            );
            return None;
        };
        let python = PathBuf::from(python);
        assert!(
            python.is_file(),
            "{VAR}={}: no such interpreter",
            python.display()
        );
        Some(Tf {
            python,
            dir: tempfile::tempdir().expect("temp dir"),
        })
    }

    /// A path in the temp dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes an env file (`KEY=VALUE` lines) for `-e` and returns its path.
    pub fn env_file(&self, name: &str, vars: &[(&str, &str)]) -> PathBuf {
        let text: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        let path = self.path(name);
        std::fs::write(&path, text).expect("write env file");
        path
    }

    /// A synthetic `mnist.npz` of 512 training and 128 test samples in the temp dir.
    pub fn mnist_npz(&self) -> PathBuf {
        let path = self.path("mnist.npz");
        write_synthetic_mnist(&path, 512, 128);
        path
    }

    /// `tf-spawner --local --python PY ARGS...`, with only PATH and HOME (the temp dir)
    /// from this environment.
    fn command(&self, args: &[&str]) -> Command {
        let python = self.python.to_str().expect("UTF-8 interpreter path");
        let mut cmd = Command::new(BIN);
        cmd.args(["--local", "--python", python])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        cmd
    }

    /// Starts [`Tf::command`] with stdout and stderr piped, for a test that acts while it runs.
    pub fn start_local(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tf-spawner")
    }

    /// `tf-spawner sweep --local --python PY ARGS...` to its end, as [`Tf::local`].
    pub fn sweep(&self, args: &[&str]) -> Output {
        let python = self.python.to_str().expect("UTF-8 interpreter path");
        let mut cmd = Command::new(BIN);
        cmd.args(["sweep", "--local", "--python", python])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        let out = cmd.output().expect("run tf-spawner");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// [`Tf::command`] to its end: what the user saw.
    pub fn local(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().expect("run tf-spawner");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A file of this repository.
pub fn repo_file(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .to_str()
        .expect("UTF-8 repository path")
        .to_string()
}
