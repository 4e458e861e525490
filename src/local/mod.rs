//! Local runs (`tf-spawner --local`): the tasks of a run as processes on this machine.
//!
//! The plan is the cluster's, with `127.0.0.1` and a free port per task instead of the
//! services: every task gets the same `cluster` in `TF_CONFIG` (the evaluator outside
//! it), `WORKER_NUMBER` (workers), `TOT_WORKERS`, the env file's variables, and
//! `TF_SPAWNER_SCRIPT_DIR`: a private temp dir holding `training-script.py` (and
//! `entrypoint.sh` with `-c`), where the pod sees `/script`.
//!
//! Each task runs in its own process group, so that stopping a task stops whatever it
//! started (an entrypoint's children too). When a task's main process ends, the rest of
//! its group is killed, as a container's would be. When the run has a verdict (or times
//! out, or is interrupted), the tasks still running get SIGTERM, then SIGKILL after
//! [`GRACE`](runner::GRACE). A guard kills every group still alive if anything goes
//! wrong on the way.
//!
//! Here: [`run`], which starts the tasks (`groups.rs`: one process group each) and
//! follows them (`runner.rs`: the stages, running → stopping → draining) to an
//! [`Outcome`] (`outcome.rs`: the verdict rule over processes, the notes, the metrics
//! kept); `setup.rs` writes the script and picks the ports, `pipe.rs` prints the
//! output, `reaper.rs` stops what a task detached, `gpus.rs` shares the GPUs out.
//!
//! No arithmetic here may panic, whatever the flags (`--timeout`) or the tasks do.

#![deny(clippy::arithmetic_side_effects)]

use anyhow::Result;
use tokio::sync::mpsc;

use crate::trainlog::Training;

mod gpus;
mod groups;
mod outcome;
mod pipe;
mod reaper;
mod runner;
mod setup;

use pipe::Event;
use runner::Runner;

pub use outcome::{Outcome, ids, keep_metrics};
pub use runner::RunOptions;
pub(crate) use setup::{LocalPlan, plan};

/// Lines (each at most `pipe::MAX_LINE` bytes) in flight between the tasks and the
/// terminal.
const LINES_IN_FLIGHT: usize = 1024;

/// Starts every task, prints their output, and returns when the run has an outcome and
/// every process has been stopped; with the outcome, what the deciding task's lines said
/// of the training (`trainlog`).
pub async fn run(
    plan: &LocalPlan,
    options: &RunOptions,
    stop: &mut (impl Future<Output = u8> + Unpin),
) -> Result<(Outcome, Training)> {
    let (tx, rx) = mpsc::channel::<Event>(LINES_IN_FLIGHT);
    // Orphans of the tasks become ours, to be stopped with the run (see `reaper.rs`).
    reaper::become_subreaper();
    let groups = groups::start(plan, &tx, options.env_file.as_deref())?;
    drop(tx);
    let mut runner = Runner::new(plan, options, groups);
    runner.run(rx, stop).await;
    Ok(runner.finish())
}

#[cfg(test)]
mod tests;
