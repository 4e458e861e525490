//! `tf-spawner cp -t TAG REMOTE LOCAL`: a file or directory out of the run's volume.

use anyhow::Result;

use crate::cli::CpArgs;
use crate::ops::cp::{self, Copy};
use crate::output;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &CpArgs) -> Result<()> {
    let cluster = settings.connect()?;
    let copy = Copy {
        tag: args.tag.to_string(),
        remote: args.remote.clone(),
        local: args.local.clone(),
        timeout: args.timeout,
        whole_volume: args.whole_volume,
    };
    let copied = cp::run(&cluster, &copy).await?;
    for skipped in &copied.skipped {
        output::note(&format!("skipped {skipped}"));
    }
    output::print(&format!(
        "copied {} ({} file{}, {} bytes) to {}\n",
        args.remote,
        copied.files,
        if copied.files == 1 { "" } else { "s" },
        copied.bytes,
        copied.destination.display()
    ))?;
    Ok(())
}
