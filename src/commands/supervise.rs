//! `tf-spawner supervise -t TAG | --experiment NAME` (hidden): the supervisor's pod runs
//! it; see `ops/supervise.rs`.

use anyhow::Result;

use crate::cli::SuperviseArgs;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &SuperviseArgs) -> Result<()> {
    let cluster = settings.connect()?;
    match (&args.tag, &args.experiment) {
        (_, Some(name)) => crate::ops::supervise::experiment(&cluster, name.as_str()).await,
        (Some(tag), None) => crate::ops::supervise::run(&cluster, tag.as_str()).await,
        (None, None) => Err(crate::errors::UsageError::new(
            "supervise follows a run or an experiment: give -t TAG or --experiment NAME",
        )
        .into()),
    }
}
