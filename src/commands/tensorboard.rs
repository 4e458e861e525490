//! `tf-spawner tensorboard -t TAG`: the run's summaries in TensorBoard, on a local port.

use anyhow::Result;

use crate::cli::TensorboardArgs;
use crate::labels;
use crate::ops::tensorboard::{self, Board};
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &TensorboardArgs) -> Result<()> {
    if args.local {
        let dir = std::path::absolute(labels::local_output_dir(args.tag.as_str()))?;
        return tensorboard::local(dir, args.port).await;
    }
    let cluster = settings.connect()?;
    let board = Board {
        tag: args.tag.to_string(),
        port: args.port,
        image: settings.tensorboard_image.value.clone(),
        keep: args.keep,
        timeout: args.timeout,
        whole_volume: args.whole_volume,
        names: args.names.clone(),
    };
    tensorboard::run(&cluster, &board).await
}
