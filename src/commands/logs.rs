//! `tf-spawner logs -t TAG [-f]`: see `ops/logs/mod.rs`.

use anyhow::Result;

use crate::cli::LogsArgs;
use crate::cluster::pod_logs::LogOptions;
use crate::errors::UsageError;
use crate::ops::{self, logs::Pick};
use crate::roles::{Role, Task};
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &LogsArgs) -> Result<()> {
    let mut pick = pick(args)?;
    pick.heartbeat = Some(settings.heartbeat.value).filter(|d| !d.is_zero());
    let cluster = settings.connect()?;
    let options = LogOptions {
        follow: args.follow,
        since: args.since,
        tail: args.tail,
        timestamps: args.timestamps,
        raw: args.raw,
    };
    ops::logs::print(&cluster, args.tag.as_str(), &options, &pick).await
}

/// `--task` and `--max-log-requests`, checked.
fn pick(args: &LogsArgs) -> Result<Pick, UsageError> {
    if args.max_log_requests == 0 {
        return Err(UsageError::new("--max-log-requests must be at least 1"));
    }
    let tasks = args
        .tasks
        .iter()
        .map(|t| {
            parse_task(t).ok_or_else(|| {
                UsageError::new(format!(
                    "--task {t:?}: expected ROLE-INDEX, e.g. worker-3 or chief-0 (roles: chief, ps, worker, evaluator)"
                ))
            })
        })
        .collect::<Result<Vec<Task>, UsageError>>()?;
    if args.attempt.is_some() && (args.since.is_some() || args.timestamps) {
        return Err(UsageError::new(
            "--attempt takes no --since or --timestamps: an attempt's log is kept without the times of its lines; drop them",
        ));
    }
    Ok(Pick {
        tasks,
        max_streams: args.max_log_requests,
        attempt: args.attempt,
        heartbeat: None,
    })
}

fn parse_task(text: &str) -> Option<Task> {
    let (role, index) = text.rsplit_once('-')?;
    Some(Task {
        role: Role::parse(role)?,
        index: index.parse().ok()?,
    })
}
