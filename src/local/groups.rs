//! The tasks' processes: one process group per task, started with the task's
//! environment, its output and its end sent to the runner as events; the groups
//! signalled as a whole, and every group still alive killed when [`Groups`] is dropped.

use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use rustix::process::{Pid, Signal};
use tokio::sync::mpsc;

use super::pipe::{self, Event};
use super::reaper;
use super::setup::{LocalPlan, LocalTask};
use crate::errors::UsageError;

/// Process groups started so far; the ones whose leader has not been reaped are killed
/// when this is dropped (an error, a panic, an early return).
pub(super) struct Groups(Vec<(i32, Arc<AtomicBool>)>);

impl Groups {
    /// The tasks' main processes.
    pub(super) fn leaders(&self) -> Vec<i32> {
        self.0.iter().map(|(pid, _)| *pid).collect()
    }

    pub(super) fn signal(&self, at: usize, sig: Signal) {
        let (pgid, gone) = &self.0[at];
        if !gone.load(Ordering::SeqCst) {
            kill_group(*pgid, sig);
        }
    }

    /// `sig` to every group whose leader has not been reaped.
    pub(super) fn signal_all(&self, sig: Signal) {
        for at in 0..self.0.len() {
            self.signal(at, sig);
        }
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        self.signal_all(Signal::KILL);
        // What the tasks detached from their groups (see `reaper.rs`).
        reaper::kill_orphans(&self.leaders());
    }
}

fn kill_group(pgid: i32, sig: Signal) {
    if pgid > 1
        && let Some(pid) = Pid::from_raw(pgid)
    {
        // The group may be gone already: nothing to do then.
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// Starts one process group per task; their output and exits arrive on `tx`.
pub(super) fn start(
    plan: &LocalPlan,
    tx: &mpsc::Sender<Event>,
    env_file: Option<&str>,
) -> Result<Groups> {
    let mut groups = Groups(Vec::new());
    for (at, local) in plan.tasks.iter().enumerate() {
        let mut cmd = tokio::process::Command::new(&plan.program);
        cmd.args(&plan.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = &plan.cwd {
            cmd.current_dir(cwd);
        }
        for (name, value) in crate::roles::TASK_DEFAULTS {
            let set = std::env::var_os(name).is_some() || local.env.iter().any(|(k, _)| k == name);
            if !set {
                cmd.env(name, value);
            }
        }
        cmd.envs(local.env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd
            .spawn()
            .map_err(|e| start_error(plan, local, e, env_file))?;
        let pid = child.id().map_or(0, |p| p as i32);
        let gone = Arc::new(AtomicBool::new(false));
        groups.0.push((pid, gone.clone()));
        if let Some(out) = child.stdout.take() {
            tokio::spawn(pipe::read(at, out, tx.clone()));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(pipe::read(at, err, tx.clone()));
        }
        let tx = tx.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            gone.store(true, Ordering::SeqCst);
            // Whatever the task started dies with it, as in a container.
            kill_group(pid, Signal::KILL);
            if let Ok(status) = status {
                let _ = tx.send(Event::Exited(at, status)).await;
            }
        });
    }
    Ok(groups)
}

fn start_error(
    plan: &LocalPlan,
    local: &LocalTask,
    e: io::Error,
    env_file: Option<&str>,
) -> anyhow::Error {
    let env_path = env_file.and_then(|file| {
        let path = local.env.iter().find(|(k, _)| k == "PATH")?;
        Some((file, &path.1))
    });
    if e.kind() == io::ErrorKind::NotFound {
        let why = match env_path {
            Some((file, path)) => format!(" in PATH={path:?}, which the env file {file} sets"),
            None if plan.program == "bash" => String::new(),
            None => " (choose the interpreter with --python)".to_string(),
        };
        return UsageError::new(format!("cannot run {}: not found{why}", plan.program)).into();
    }
    let reason = crate::inputs::files::io_reason(&e);
    if e.raw_os_error() == Some(7) {
        // E2BIG: the environment (and arguments) passed the kernel's limit.
        let bytes = local.env.iter().fold(0usize, |n, (k, v)| {
            n.saturating_add(k.len())
                .saturating_add(v.len())
                .saturating_add(2)
        });
        let blame = env_file.map_or_else(String::new, |file| {
            let (key, value) = local
                .env
                .iter()
                .max_by_key(|(_, v)| v.len())
                .map_or(("", 0), |(k, v)| (k.as_str(), v.len()));
            format!(" set from the env file {file} (its largest value: {key}, {value} bytes)")
        });
        return UsageError::new(format!(
            "cannot start {} for {}: {reason}: the environment of {bytes} bytes{blame} is more than a process may get; pass large values in a file",
            plan.program,
            local.task.id()
        ))
        .into();
    }
    anyhow::Error::new(e).context(format!("starting {} for {}", plan.program, local.task.id()))
}
