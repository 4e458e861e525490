//! `tf-spawner wait -t TAG`: see `ops/wait/`.

use anyhow::Result;

use crate::cli::{ReportFormat, WaitArgs};
use crate::errors::UsageError;
use crate::ops::wait::{self, WaitFor};
use crate::settings::Settings;
use crate::settings::follow::{self, Follower};

pub async fn exec(settings: &Settings, args: &WaitArgs) -> Result<()> {
    let started = std::time::Instant::now();
    if args.until == WaitFor::Start && (args.save_logs.is_some() || args.cleanup) {
        return Err(UsageError::new(
            "--save-logs and --cleanup act after the end of the run; they cannot be used with --for start",
        )
        .into());
    }
    if let Some(dir) = &args.save_logs {
        writable_dir(dir)?;
    }
    if args.on_stall == wait::OnStall::Restart && settings.restarts.value == 0 {
        return Err(UsageError::new(
            "--on-stall restart needs --restarts N: a stall's restart is counted against them",
        )
        .into());
    }
    let cluster = settings.connect()?;
    let wait = follow::wait(settings, Follower::Wait(args), started);
    if wait.output != ReportFormat::Table {
        // stdout is the verdict document's alone.
        crate::output::progress_to_stderr();
    }
    wait::run(&cluster, &wait).await
}

/// `--save-logs DIR` made, and a file written in it and removed, before anything else:
/// a directory the logs cannot go to is a usage error (exit 2) found at once, not
/// after hours of training.
pub fn writable_dir(dir: &std::path::Path) -> Result<()> {
    let shown = crate::output::shown_path(dir);
    let refused = |e: std::io::Error| {
        UsageError::new(format!(
            "--save-logs: cannot write in the directory {shown}: {e}; name a directory you can write"
        ))
    };
    std::fs::create_dir_all(dir).map_err(refused)?;
    let probe = dir.join(format!(".tf-spawner-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(refused)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
