//! Setting up a local run: the script in a private temp dir, a free port per task,
//! and each task's environment. No process is started here.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::TempDir;

use crate::errors::UsageError;
use crate::plan::{ENTRYPOINT_KEY, SCRIPT_KEY, SpawnRequest};
use crate::roles::{ClusterSpec, Task};

use super::gpus;

/// The variable that tells a task where its script and entrypoint are.
pub const SCRIPT_DIR_VAR: &str = "TF_SPAWNER_SCRIPT_DIR";

/// One task's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalTask {
    pub task: Task,
    /// `127.0.0.1:PORT`, for tasks in the training cluster.
    pub address: Option<String>,
    /// Set on top of tf-spawner's own environment, in this order.
    pub env: Vec<(String, String)>,
}

/// A local run ready to start: the files in place, a command, the tasks.
#[derive(Debug)]
pub struct LocalPlan {
    pub tag: String,
    /// The interpreter (or `bash` with `-c`) and its argument.
    pub program: String,
    pub args: Vec<PathBuf>,
    pub tasks: Vec<LocalTask>,
    /// `--dir`: the tasks' working directory (the unpacked directory).
    pub cwd: Option<PathBuf>,
    /// How this machine's GPUs were shared out among the tasks.
    pub gpus: gpus::Share,
    /// Removed when the plan is dropped.
    pub dir: TempDir,
}

impl LocalPlan {
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// `n` distinct free TCP ports on 127.0.0.1: bound to port 0 together, then released.
/// Another program may take one before the task binds it: a task then fails to listen.
pub fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// The environment tf-spawner sets for `task` (after the env file's variables).
pub fn task_env(
    req: &SpawnRequest,
    cluster: &ClusterSpec,
    task: Task,
    dir: &Path,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = req
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend(
        cluster
            .env(&req.roles, task, req.framework)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
    );
    // The framework's defaults (`KERAS_BACKEND=jax`), unless the env file or this
    // machine's environment sets them (as the pod template may, for pods).
    for (name, value) in req.framework.defaults() {
        if !req.env.contains_key(name) && std::env::var_os(name).is_none() {
            env.push((name.to_string(), value.to_string()));
        }
    }
    env.push((SCRIPT_DIR_VAR.into(), dir.display().to_string()));
    env
}

/// The tasks with their addresses and environments, for a run whose files are in `dir`.
pub fn tasks(req: &SpawnRequest, ports: &[u16], dir: &Path) -> Vec<LocalTask> {
    let mut by_task: BTreeMap<Task, String> = BTreeMap::new();
    let mut next = ports.iter();
    for task in req.roles.tasks().filter(|t| t.role.in_cluster()) {
        let port = next.next().expect("a port per cluster task");
        by_task.insert(task, format!("127.0.0.1:{port}"));
    }
    let cluster = ClusterSpec::with_hosts(&req.roles, |t| by_task[&t].clone());
    req.roles
        .tasks()
        .map(|task| LocalTask {
            task,
            address: by_task.get(&task).cloned(),
            env: task_env(req, &cluster, task, dir),
        })
        .collect()
}

/// `--python` as the tasks run it: a relative path (`.venv/bin/python`) is this
/// directory's, not the task's working directory (the unpacked `--dir`); a bare name is
/// looked up on PATH.
fn interpreter(python: &str) -> String {
    let path = Path::new(python);
    if python.contains('/')
        && path.is_relative()
        && let Ok(absolute) = std::path::absolute(path)
    {
        return absolute.display().to_string();
    }
    python.to_string()
}

/// Writes the script (and entrypoint) into a private temp dir and plans every task.
pub fn plan(req: &SpawnRequest, python: &str) -> Result<LocalPlan> {
    if python.trim().is_empty() {
        return Err(UsageError::new("--python must name an interpreter").into());
    }
    let dir = tempfile::Builder::new()
        .prefix("tf-spawner-")
        .tempdir()
        .context("creating a temp dir for the script")?;
    let script = dir.path().join(SCRIPT_KEY);
    std::fs::write(&script, &req.script)
        .with_context(|| format!("writing {}", script.display()))?;
    let (program, args) = match &req.entrypoint {
        Some(entrypoint) => {
            let path = dir.path().join(ENTRYPOINT_KEY);
            std::fs::write(&path, entrypoint)
                .with_context(|| format!("writing {}", path.display()))?;
            ("bash".to_string(), vec![path])
        }
        None => (interpreter(python), vec![script]),
    };
    let (cwd, args) = unpack_dir(req, dir.path(), args)?;
    // The arguments after `--`, as argv words: no shell in between.
    let args = args
        .into_iter()
        .chain(req.script_args.iter().map(PathBuf::from))
        .collect();
    let in_cluster = req.roles.tasks().filter(|t| t.role.in_cluster()).count();
    let ports = free_ports(in_cluster).context("finding free ports on 127.0.0.1")?;
    let mut tasks = tasks(req, &ports, dir.path());
    if let Some(work) = &cwd {
        add_work_dir(&mut tasks, work);
    }
    let gpus = share_gpus(&mut tasks, &gpus::visible_here());
    Ok(LocalPlan {
        tag: req.tag.clone(),
        program,
        args,
        tasks,
        cwd,
        gpus,
        dir,
    })
}

/// This machine's GPUs shared out among the tasks (see `gpus`): a variable the env file
/// set, or tf-spawner's own environment sets for memory growth, is left as it is.
fn share_gpus(tasks: &mut [LocalTask], visible: &[String]) -> gpus::Share {
    let ids: Vec<Task> = tasks.iter().map(|t| t.task).collect();
    let (extra, share) = gpus::share(&ids, visible);
    for (task, extra) in tasks.iter_mut().zip(extra) {
        for (name, value) in extra {
            let inherited = name == gpus::GROWTH_VAR && std::env::var_os(&name).is_some();
            if !inherited && !task.env.iter().any(|(k, _)| *k == name) {
                task.env.push((name, value));
            }
        }
    }
    share
}

/// `--dir`: unpacked from the archive a pod gets, into `DIR/work`, where the script then
/// is (with `-c`, the entrypoint runs as it is); the working directory, if any, and the
/// program's arguments.
fn unpack_dir(
    req: &SpawnRequest,
    dir: &Path,
    args: Vec<PathBuf>,
) -> Result<(Option<PathBuf>, Vec<PathBuf>)> {
    let Some(bundle) = &req.bundle else {
        return Ok((None, args));
    };
    let work = dir.join("work");
    crate::bundle::unpack(&bundle.archive, &work)?;
    let args = if req.entrypoint.is_some() {
        args
    } else {
        vec![work.join(&bundle.script)]
    };
    Ok((Some(work), args))
}

/// The unpacked directory, to every task: `TF_SPAWNER_WORK_DIR` and the head of
/// `PYTHONPATH`, as in a pod.
fn add_work_dir(tasks: &mut [LocalTask], work: &Path) {
    let work = work.display().to_string();
    let path = match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{work}:{p}"),
        _ => work.clone(),
    };
    for t in tasks {
        t.env.push(("TF_SPAWNER_WORK_DIR".into(), work.clone()));
        t.env.push(("PYTHONPATH".into(), path.clone()));
    }
}
