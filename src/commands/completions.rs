//! `tf-spawner completions SHELL` and `tf-spawner man`: generated from the clap
//! definitions, so they always match the flags.

use crate::cli::CompletionsArgs;
use anyhow::Result;

/// The script for `shell` on stdout, for the binary's name (`tf-spawner`): it asks the
/// binary at each Tab (`commands/complete.rs`), so flags, verbs and run tags complete.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    write(&super::complete::registration(args.shell)?)
}

/// The man page (section 1, roff) on stdout.
pub fn man() -> Result<()> {
    write(page()?.as_bytes())
}

/// One page, `tf-spawner(1)`: the spawn flags, then a COMMANDS section with each
/// verb's synopsis and flags (clap_mangen's own SUBCOMMANDS section would refer to
/// pages `tf-spawner-wait(1)`… that are not installed).
fn page() -> Result<String> {
    let cli = crate::cli::unshaped();
    let man = clap_mangen::Man::new(cli.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    out.extend_from_slice(b".SH COMMANDS\n");
    for verb in cli.get_subcommands().filter(|v| !v.is_hide_set()) {
        let name = format!("tf-spawner {}", verb.get_name());
        let verb = verb.clone().bin_name(&name);
        out.extend_from_slice(format!(".SS \"{name}\"\n").as_bytes());
        let man = clap_mangen::Man::new(verb.clone());
        let mut part = Vec::new();
        man.render_description_section(&mut part)?;
        man.render_synopsis_section(&mut part)?;
        if verb.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        // Within the verb's subsection: its parts as paragraphs, not sections.
        for line in String::from_utf8_lossy(&part).lines() {
            match line.strip_prefix(".SH ") {
                Some("OPTIONS") => out.extend_from_slice(b".PP\nOptions:\n"),
                Some(_) => out.extend_from_slice(b".PP\n"),
                None => {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
            }
        }
    }
    out.extend_from_slice(b".SH \"GLOBAL OPTIONS\"\n");
    out.extend_from_slice(b"The cluster and output options above (\\fB\\-n\\fR, \\fB\\-\\-kubeconfig\\fR, \\fB\\-\\-context\\fR, \\fB\\-q\\fR, \\fB\\-v\\fR...) are taken by every command, before or after it.\n");
    man.render_extra_section(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A closed pipe (`| head`) is not an error.
fn write(bytes: &[u8]) -> Result<()> {
    // The script is clap's, ours, as it is.
    let script = crate::output::Styled::unaltered(&String::from_utf8_lossy(bytes));
    crate::output::print_styled(&script)?;
    Ok(())
}
