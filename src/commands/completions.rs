//! `tf-spawner completions SHELL` and `tf-spawner man`: generated from the clap
//! definitions, so they always match the flags.

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

/// The script for `shell` on stdout, for the binary's name (`tf-spawner`).
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "tf-spawner", &mut out);
    write(&out)
}

/// The man page (section 1, roff) on stdout.
pub fn man() -> Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    write(&out)
}

/// A closed pipe (`| head`) is not an error.
fn write(bytes: &[u8]) -> Result<()> {
    crate::output::print(&String::from_utf8_lossy(bytes))?;
    Ok(())
}
