//! `tf-spawner init [DIR]`: a new training project (`starter.rs`), and what to run next.

use anyhow::Result;

use crate::cli::InitArgs;
use crate::{output, starter};

pub fn exec(args: &InitArgs) -> Result<()> {
    let written = starter::write(
        &args.project_dir,
        (args.custom_loop, args.framework),
        args.force,
    )?;
    let here = args.project_dir.as_os_str() == ".";
    let shown = args.project_dir.display();
    let mut text = format!("created {}: {}\nnext:\n", shown, written.join(", "));
    if !here {
        text += &format!("  cd {shown}\n");
    }
    text += match args.framework {
        crate::framework::Framework::Keras => {
            "  tf-spawner --local -w 2 train.py   # train here (keras and jax: docs/tensorflow.md)\n"
        }
        _ => {
            "  tf-spawner --local -w 2 train.py   # train here (TensorFlow and tf-keras: docs/starting.md)\n"
        }
    };
    text += "  tf-spawner config                  # the settings, from tf-spawner.yaml\n";
    text += "  tf-spawner -w 4 train.py           # train on the cluster your kubeconfig names\n";
    output::print(&text)?;
    Ok(())
}
