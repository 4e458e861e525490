//! `tf-spawner logs -t TAG [-f]`: see `ops/logs.rs`.

use anyhow::Result;

use crate::cli::LogsArgs;
use crate::cluster::logs::LogOptions;
use crate::ops;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &LogsArgs) -> Result<()> {
    let cluster = settings.connect()?;
    let options = LogOptions {
        follow: args.follow,
        since: args.since,
        tail: args.tail,
        timestamps: args.timestamps,
    };
    ops::logs::print(&cluster, args.tag.as_str(), &options).await
}
