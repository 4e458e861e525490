//! `tf-spawner wait -t TAG`: see `ops/wait.rs`.

use anyhow::{Context, Result};

use crate::cli::{DEFAULT_MAX_IN_FLIGHT, WaitArgs};
use crate::errors::UsageError;
use crate::ops::wait::{self, Wait, WaitFor};
use crate::settings::{Settings, spawn};

pub async fn exec(settings: &Settings, args: &WaitArgs) -> Result<()> {
    let started = std::time::Instant::now();
    if args.until == WaitFor::Start && (args.save_logs.is_some() || args.cleanup) {
        return Err(UsageError::new(
            "--save-logs and --cleanup act after the end of the run; they cannot be used with --for start",
        )
        .into());
    }
    if let Some(dir) = &args.save_logs {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("cannot create the --save-logs directory {}", dir.display())
        })?;
    }
    if args.on_stall == wait::OnStall::Restart && settings.restarts.value == 0 {
        return Err(UsageError::new(
            "--on-stall restart needs --restarts N: a stall's restart is counted against them",
        )
        .into());
    }
    let cluster = settings.connect()?;
    let wait = Wait {
        tag: args.tag.to_string(),
        until: args.until,
        timeout: args.timeout,
        start_timeout: settings.start_timeout.value,
        started,
        all_workers: args.all_workers,
        save_logs: args.save_logs.clone(),
        cleanup: args.cleanup,
        keep_running: settings.keep_running.value,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        restarts: spawn::restarts(settings, &args.restart),
        stall: Some(spawn::stall(settings, args.on_stall)),
        observer: None,
        notify: settings.notify.value.clone(),
        heartbeat: Some(settings.heartbeat.value).filter(|d| !d.is_zero()),
    };
    wait::run(&cluster, &wait).await
}
