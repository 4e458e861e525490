//! `tf-spawner --local [OPTIONS] TRAINING_SCRIPT`: the run's tasks as processes on this
//! machine, their logs merged and prefixed, and the end-wait's verdict and exit codes
//! (`ops/local_run.rs`).

use anyhow::Result;
use futures::FutureExt;

use crate::cli::SpawnArgs;
use crate::errors::{ExitError, UsageError};
use crate::ops::local_run::{self, Which};
use crate::settings::{Settings, spawn};
use crate::{inputs, signals};

pub async fn exec(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    // Catch Ctrl-C from now on, so no task can outlive an interruption.
    let mut stop = Box::pin(signals::stop_requested());
    if let Some(code) = (&mut stop).now_or_never() {
        return Err(ExitError::new(code, "interrupted before the run started").into());
    }
    if let Some(flag) = spawn::cluster_only_flag(settings, args) {
        return Err(UsageError::new(format!(
            "{flag} applies to pods on a cluster; --local runs processes"
        ))
        .into());
    }
    // The namespace is only a name here: nothing talks to a cluster.
    let request = inputs::spawn_request(
        &spawn::options(args, settings),
        spawn::tag(args),
        settings.namespace.value.clone(),
    )
    .await?;
    let which = Which::Alone {
        randomized: args.randomize_tag,
    };
    let local = spawn::local(settings, args);
    local_run::run(&local, request, which, &mut stop)
        .await?
        .verdict
}
