//! `tf-spawner supervise -t TAG` (hidden): the supervisor's pod runs it; see
//! `ops/supervise.rs`.

use anyhow::Result;

use crate::cli::SuperviseArgs;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &SuperviseArgs) -> Result<()> {
    let cluster = settings.connect()?;
    crate::ops::supervise::run(&cluster, args.tag.as_str()).await
}
