//! `tf-spawner completions SHELL` and `tf-spawner man`: generated from the clap
//! definitions, so they always match the flags.

use std::io::Write;

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

fn write(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
