//! How runs are named on the command line, the way kubectl, stern and arena do it: the
//! explicit verb `spawn` (`tf-spawner spawn -w 2 x.py` = `tf-spawner -w 2 x.py`), a
//! run's tag as the positional of the verbs acting on a run (`tf-spawner status exp42`)
//! or `-t` before the verb (`tf-spawner -t exp42 status`), and the short usage of a
//! bare `tf-spawner`. Entry layer: it sees clap's types.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::parser::ValueSource;

use crate::cli::{Cli, Command};
use crate::errors::UsageError;
use crate::tag::Tag;

/// The explicit verb for spawning a run.
pub const SPAWN: &str = "spawn";

/// `argv` without the explicit `spawn` verb: the first word that is neither an option
/// nor an option's value, before `--`.
pub fn without_spawn_verb(mut argv: Vec<OsString>) -> Vec<OsString> {
    let command = Cli::command();
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let mut at = 1;
    while let Some(word) = argv.get(at).and_then(|w| w.to_str()) {
        if word == "--" {
            break;
        }
        let skip_next = if let Some(long) = word.strip_prefix("--") {
            !long.contains('=')
                && command
                    .get_arguments()
                    .any(|a| a.get_long() == Some(long) && takes_value(a))
        } else if let Some(shorts) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            // `-w2` carries its value; `-qw` takes the next word.
            let last = shorts.chars().position(|c| {
                command
                    .get_arguments()
                    .any(|a| a.get_short() == Some(c) && takes_value(a))
            });
            last.is_some_and(|i| i + 1 == shorts.chars().count())
        } else {
            if word == SPAWN {
                argv.remove(at);
            }
            break;
        };
        at += if skip_next { 2 } else { 1 };
    }
    argv
}

/// The tag of the run a verb acts on, as a positional (`status exp42`) or `-t` before
/// the verb (`-t exp42 status`), moved into the verb's own `--tag`; two different tags
/// are a usage error.
pub fn settle_tag(cli: &mut Cli, matches: &clap::ArgMatches) -> Result<(), UsageError> {
    // `--tag-from TEXT` without -r is the tag (made valid when clap parsed it).
    if let Some(text) = cli
        .spawn
        .tag_from
        .as_ref()
        .filter(|_| !cli.spawn.randomize_tag)
    {
        cli.spawn.tag = text.parse()?;
    }
    let Some((verb, sub)) = matches.subcommand() else {
        return Ok(());
    };
    let before = (matches.value_source("tag") == Some(ValueSource::CommandLine))
        .then(|| cli.spawn.tag.clone());
    let (tag, positional) = match &mut cli.command {
        Some(Command::Wait(a)) => (&mut a.tag, a.run.take()),
        Some(Command::Status(a)) => (&mut a.tag, a.run.take()),
        Some(Command::Logs(a)) => (&mut a.tag, a.run.take()),
        Some(Command::Tensorboard(a)) => (&mut a.tag, None),
        Some(Command::Compare(a)) => {
            // `compare -t A -t B NAME`: the tags first, then the names, one list.
            let tags = before.into_iter().chain(a.tag.drain(..));
            let names: Vec<String> = tags.map(|t| t.to_string()).collect();
            a.names.splice(0..0, names);
            return Ok(());
        }
        Some(Command::Cp(a)) => {
            // `cp [TAG] REMOTE LOCAL`: clap takes two or three words.
            let local = a.paths.pop().unwrap_or_default();
            a.remote = a.paths.pop().unwrap_or_default();
            a.local = local.into();
            let tag = a.paths.pop().map(|t| t.parse::<Tag>()).transpose()?;
            (&mut a.tag, tag)
        }
        _ => return Ok(()),
    };
    let after = (sub.value_source("tag") == Some(ValueSource::CommandLine)).then(|| tag.clone());
    let given: Vec<Tag> = [before, after, positional].into_iter().flatten().collect();
    if let Some(first) = given.first() {
        if given.iter().any(|t| t != first) {
            let shown: Vec<&str> = given.iter().map(Tag::as_str).collect();
            return Err(UsageError::new(format!(
                "`{verb}` was given two runs ({}): name one, as `tf-spawner {verb} TAG`",
                shown.join(" and ")
            )));
        }
        *tag = first.clone();
    }
    Ok(())
}

/// `tf-spawner` alone: a short usage naming the verbs, as the one `error:` line.
pub fn short_usage(name: &str) -> UsageError {
    let verbs: Vec<String> = Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .filter(|v| v != "help")
        .collect();
    UsageError::new(format!(
        "a training script or a verb is needed: {name} [spawn] [OPTIONS] TRAINING_SCRIPT [-- SCRIPT_ARGS] spawns a run, {name} VERB [TAG] acts on one (verbs: {}), {name} -d -t TAG deletes one; see {name} --help",
        verbs.join(", ")
    ))
}
