//! Help that fits a screen. `tf-spawner --help` is an overview: the verbs, and where
//! the spawn flags are. `tf-spawner spawn -h` (= `tf-spawner help spawn`) is the spawn
//! summary: each flag in a line, the ones most runs never need (shared-cluster
//! scheduling, per-role templates, tuning) left to `tf-spawner spawn --help`, which
//! shows every flag in full under headings. A verb's `-h` and `--help` are one compact
//! screen: its flags, then the global ones under their heading. The man page keeps
//! every flag's full text (it is made from `cli/` unshaped).
//!
//! The shaping is done on the command clap derives from `cli/`, so that `cli/`
//! keeps one doc comment per flag (the full text) and a new flag shows as written.

use std::ffi::OsString;

use clap::{Arg, Command};

use crate::cli::flag_defs;

/// The command line's definition with help shaped as above; `name` is what usage
/// shows. Without the explicit `spawn` verb, the top level's help is the overview.
pub fn command(base: Command, name: &str, spawn_verb: bool) -> Command {
    let mut cmd = base
        .bin_name(name)
        .after_help(MORE)
        .after_long_help(EXAMPLES);
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    for id in &ids {
        cmd = cmd.mut_arg(id.as_str(), |a| shape(a, id));
    }
    for (verb, about) in ABOUTS {
        cmd = cmd.mut_subcommand(verb, |v| v.about(*about));
    }
    cmd = cmd.mut_subcommand("sweep", sweep);
    let verbs: Vec<String> = cmd
        .get_subcommands()
        .map(|v| v.get_name().to_string())
        .filter(|v| v != "sweep")
        .collect();
    for verb in verbs {
        cmd = cmd.mut_subcommand(verb, compact);
    }
    if spawn_verb {
        // The spawn help: its flags, not the verbs.
        let verbs: Vec<String> = cmd
            .get_subcommands()
            .map(|v| v.get_name().to_string())
            .collect();
        for verb in verbs {
            cmd = cmd.mut_subcommand(verb, |v| v.hide(true));
        }
        cmd.disable_help_subcommand(true)
    } else {
        cmd.help_template(OVERVIEW)
            .after_help(SPAWN_HELP)
            .after_long_help(SPAWN_HELP)
    }
}

/// The overview: what `tf-spawner --help` shows.
const OVERVIEW: &str = "{about-with-newline}\n{usage-heading} {usage}\n\nCommands:\n  spawn        Spawn a run (the default: tf-spawner -w 4 train.py)\n{subcommands}{after-help}\n";

/// Below the overview.
const SPAWN_HELP: &str = "The spawn flags: tf-spawner help spawn (every one: tf-spawner spawn --help).\n\
A verb's flags: tf-spawner help VERB.\n\
Examples:\n  tf-spawner init exp                start a project: exp/train.py, exp/tf-spawner.yaml\n  tf-spawner -w 4 train.py           spawn 4 workers running train.py\n  tf-spawner --local -w 2 train.py   run the same job as processes here\n  tf-spawner wait exp42              follow run exp42 to its verdict\n  tf-spawner logs -f exp42           follow its merged logs\n  tf-spawner -d -t exp42             delete it";

/// The verbs' one-line descriptions in the overview and their help (`cli/mod.rs` has the
/// full ones, for the man page).
const ABOUTS: &[(&str, &str)] = &[
    (
        "wait",
        "Wait for a run's verdict: exit 0 succeeded, 3 failed, 4 timed out, 5 not started",
    ),
    (
        "logs",
        "Print the logs of a run's pods as one stream (-f: follow)",
    ),
    (
        "cp",
        "Copy a path out of the run's volume (--volume) to here",
    ),
    (
        "tensorboard",
        "Serve the run's TensorBoard summaries on a local port",
    ),
    (
        "compare",
        "Compare the runs of an experiment, or runs by tag: metrics and curves",
    ),
    (
        "config",
        "Show the effective defaults and where each comes from",
    ),
    ("completions", "Print a shell completion script"),
    (
        "sweep",
        "Run an experiment: a run per combination of --param values, followed to the end",
    ),
    (
        "init",
        "Start a training project: train.py, tf-spawner.yaml (settings)",
    ),
];

/// A flag at the top level, as its declaration says: a field of `cli/`'s structs by its
/// clap attributes (a one-line `help` beside the doc comment's `long_help` names its
/// values in its text), a flag of the list by its entry ([`by_the_list`]). A global
/// flag keeps only its one line: every verb's help stays compact.
fn shape(arg: Arg, id: &str) -> Arg {
    let arg = match flag_defs::def(id) {
        Some(def) => by_the_list(arg, &def),
        None => {
            let brief = arg.get_long_help().is_some();
            let values = arg.get_action().takes_values();
            arg.hide_possible_values(brief && values)
        }
    };
    if arg.is_global_set() {
        arg.long_help(None)
    } else {
        arg
    }
}

/// A flag of `cli/flags.rs`'s list at the top level, as its entry says: its one-line
/// text for `-h` (the full one kept for `--help`), left to `spawn --help` unless marked
/// `short_help`, under its heading.
fn by_the_list(arg: Arg, def: &flag_defs::FlagDef) -> Arg {
    let mut arg = arg;
    if let Some(brief) = def.brief {
        if let Some(full) = arg.get_help().cloned() {
            arg = arg.long_help(full);
        }
        arg = arg.help(brief);
    }
    if !def.short_help {
        arg = arg.hide_short_help(true);
    }
    if let Some(heading) = def.heading {
        arg = arg.help_heading(heading.title());
    }
    arg
}

/// A verb's flags: one line each, in `-h` and `--help` alike (a field's `help`, a list
/// entry's `brief`, the value names in it), none left to `--help` alone, no heading.
fn compact(verb: Command) -> Command {
    verb.mut_args(|a| {
        let def = flag_defs::def(a.get_id().as_str());
        let brief = def.as_ref().and_then(|d| d.brief);
        let shortened = brief.is_some() || a.get_long_help().is_some();
        let values = shortened && a.get_action().takes_values();
        let hidden = a.is_hide_set() || def.is_some_and(|d| d.unshown);
        match brief {
            Some(brief) => a.help(brief),
            None => a,
        }
        .long_help(None)
        .hide_possible_values(values)
        .hide_short_help(false)
        .help_heading(None)
        .hide(hidden)
    })
}

/// The line of `sweep`'s help for the flag `id`, if that help shows it: a list flag's
/// on its entry, another's in `flag_defs::SWEEP_LINES`.
fn sweep_line(id: &str) -> Option<&'static str> {
    match flag_defs::def(id) {
        Some(def) => def.sweep,
        None => (flag_defs::SWEEP_LINES.iter())
            .find(|(i, _)| *i == id)
            .map(|(_, line)| *line),
    }
}

/// Below `sweep`'s help.
const SWEEP_MORE: &str = "Every spawn flag applies to each run (--gpus, --volume, --dir, --queue…):\ntf-spawner help spawn. Parameters and recipes: docs/experiments.md";

/// `sweep`'s help: its own flags and the spawn's most used, a line each
/// ([`sweep_line`]); the other spawn flags (each applies to every run) are
/// `spawn`'s help.
fn sweep(verb: Command) -> Command {
    let ids: Vec<String> = verb
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut verb = verb.after_help(SWEEP_MORE);
    for id in ids {
        verb = verb.mut_arg(id.as_str(), |a| match sweep_line(&id) {
            Some(text) => {
                let values = a.get_action().takes_values();
                a.help(text)
                    .long_help(None)
                    .hide_possible_values(values)
                    .hide_short_help(false)
                    .help_heading(None)
            }
            None => a.hide(true).long_help(None),
        });
    }
    verb
}

/// Below `spawn -h`.
const MORE: &str = "More flags (shared clusters, per-role templates and resources, --port, --python, --keep-running, --start-timeout, --restart-on): tf-spawner spawn --help";

/// Below `spawn --help`.
const EXAMPLES: &str = "Examples:\n  tf-spawner -w 4 train.py              spawn 4 workers running train.py\n  tf-spawner --dry-run -w 4 train.py    print the objects instead of creating them\n  tf-spawner -d -t tf-spawner           delete the run tagged tf-spawner\n  tf-spawner wait -t T --save-logs out/   wait for run T to end; exit 0 if it succeeded\n  tf-spawner logs -f -t T               follow the merged logs of run T";

/// `tf-spawner help spawn` is `tf-spawner spawn -h`, as `help VERB` is `VERB`'s help.
pub fn help_spawn(argv: Vec<OsString>) -> Vec<OsString> {
    match argv.get(1..) {
        Some([help, spawn]) if help == "help" && spawn == super::verbs::SPAWN => {
            vec![argv[0].clone(), spawn.clone(), "-h".into()]
        }
        _ => argv,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::{Cli, flag_defs};

    /// Each line of `sweep`'s help names one of its flags, declared in `mod.rs` (a list
    /// flag's is on its entry), and the help shows each: a renamed flag cannot lose its
    /// line and leave the help quietly.
    #[test]
    fn sweep_help_shows_a_line_on_each_of_its_flags() {
        let base = Cli::command();
        let plain = base.find_subcommand("sweep").unwrap();
        for (id, _) in flag_defs::SWEEP_LINES {
            let arg = plain.get_arguments().find(|a| a.get_id() == *id);
            assert!(arg.is_some(), "SWEEP_LINES names {id}, no flag of sweep");
            assert!(
                flag_defs::def(id).is_none(),
                "{id} is the list's: its line goes on its entry"
            );
        }
        let shaped = super::command(base.clone(), "tf-spawner", false);
        let sweep = shaped.find_subcommand("sweep").unwrap();
        let shown: Vec<(String, String)> = (sweep.get_arguments())
            .filter(|a| !a.is_hide_set() && a.get_id() != "help")
            .map(|a| (a.get_id().to_string(), a.get_help().unwrap().to_string()))
            .collect();
        let lines = (sweep.get_arguments()).filter_map(|a| {
            Some((
                a.get_id().to_string(),
                super::sweep_line(a.get_id().as_str())?.to_string(),
            ))
        });
        assert_eq!(shown, lines.collect::<Vec<_>>());
        assert_eq!(shown.len(), 21, "{shown:?}");
    }
}
