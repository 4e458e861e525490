//! Help that fits a screen. `tf-spawner --help` is an overview: the verbs, and where
//! the spawn flags are. `tf-spawner spawn -h` (= `tf-spawner help spawn`) is the spawn
//! summary: each flag in a line, the ones most runs never need (shared-cluster
//! scheduling, per-role templates, tuning) left to `tf-spawner spawn --help`, which
//! shows every flag in full under headings. A verb's `-h` and `--help` are one compact
//! screen: its flags, then the global ones under their heading. The man page keeps
//! every flag's full text (it is made from `cli.rs` unshaped).
//!
//! The shaping is done on the command clap derives from `cli.rs`, so that `cli.rs`
//! keeps one doc comment per flag (the full text) and a new flag shows as written.

use std::ffi::OsString;

use clap::{Arg, Command};

use crate::cli::flags::{self, Heading};

/// Headings of `--help`.
const ROLES: &str = "Roles";
const GLOBAL: &str = Heading::Global.title();

/// Spawn flags only `spawn --help` shows (by clap id), with their heading (`None`:
/// the spawn options). The flags of `cli/flags.rs`'s list are not here: each entry says
/// its heading, its one-line text and whether `spawn -h` shows it ([`by_the_list`]).
const LONG_ONLY: &[(&str, Option<&str>)] = &[
    ("chief_pod_file", Some(ROLES)),
    ("ps_pod_file", Some(ROLES)),
    ("evaluator_pod_file", Some(ROLES)),
    ("max_in_flight", None),
    ("all_workers", None),
    ("restart_backoff", None),
    ("node_grace", None),
    ("yes", None),
    ("experiment", None),
    ("finished", None),
    ("older_than", None),
    ("randomize_tag", None),
    ("tag_from", None),
    ("ignore_not_found", None),
    ("strategy", Some(ROLES)),
];

/// Headings of flags `-h` shows too.
const HEADED: &[(&str, &str)] = &[
    ("kubeconfig", GLOBAL),
    ("context", GLOBAL),
    ("request_timeout", GLOBAL),
    ("retries", GLOBAL),
    ("verbose", GLOBAL),
    ("quiet", GLOBAL),
    ("chief", ROLES),
    ("ps", ROLES),
    ("evaluator", ROLES),
];

/// The one-line summary `-h` shows of a flag whose full text is longer (the full text
/// stays for `spawn --help`; a global flag has only this one, so that a verb's help
/// stays compact). Each fits beside its flag on 80 columns.
const SHORT: &[(&str, &str)] = &[
    ("script", "The TensorFlow script to run"),
    (
        "script_args",
        "Arguments after --, passed to the script unchanged",
    ),
    ("kubeconfig", "Kubeconfig file [default: $KUBECONFIG]"),
    ("context", "Kubeconfig context [default: current]"),
    ("request_timeout", "Time limit per request"),
    ("retries", "Retries of a failed request"),
    ("verbose", "Log each API call to stderr (-vv: more)"),
    ("quiet", "Print only errors (and a new run's tag)"),
    ("command", "Run this bash entrypoint instead"),
    ("tag", "The run's tag"),
    ("env_file", "KEY=VALUE lines for every pod (a Secret)"),
    ("delete", "Delete the run tagged -t TAG"),
    ("dry_run", "Print the objects instead of creating them"),
    ("output", "yaml or json: --dry-run's objects or the summary"),
    ("wait", "Wait until every pod runs (-d: until gone)"),
    ("timeout", "With --wait/--local: give up after it (exit 4)"),
    ("local", "Run the tasks as processes here (no cluster)"),
    ("chief", "Add a chief task, whose exit decides the run"),
    ("ps", "Parameter-server tasks"),
    ("evaluator", "Add an evaluator task"),
];

/// Flags whose values their summary names.
const VALUES_IN_TEXT: &[&str] = &["output"];

/// Flags of the list a verb's help leaves out, to stay within a screen: the derived
/// stall bound's two settings (`wait --stall-after`'s text names them;
/// docs/reference.md and `config` show them), `--on-cancel` (docs/reference.md,
/// `config`, `spawn --help`).
const VERB_UNSHOWN: &[&str] = &["stall_factor", "stall_floor", "on_cancel"];

/// A verb's flags whose full text is more than a screen wants.
const VERB_SHORT: &[(&str, &str, &str)] = &[
    ("compare", "names", "An experiment's name, or runs' tags"),
    (
        "compare",
        "sort",
        "Sort by this metric's best: loss-like lowest first; -M highest, +M lowest",
    ),
    (
        "compare",
        "chart",
        "The metric the chart draws [default: the sort's]",
    ),
    ("compare", "output", "table (and a chart), json or csv"),
    (
        "compare",
        "local",
        "Compare --local runs (./tf-spawner-output)",
    ),
    (
        "tensorboard",
        "names",
        "An experiment's name, or runs' tags: one TensorBoard over them",
    ),
    (
        "tensorboard",
        "whole_volume",
        "Serve the whole claim, not the run's folder",
    ),
    (
        "cp",
        "whole_volume",
        "A relative REMOTE is in the whole claim",
    ),
    (
        "wait",
        "until",
        "end (the verdict) or start (every pod running)",
    ),
    (
        "wait",
        "timeout",
        "Give up this long after the start (exit 4)",
    ),
    (
        "wait",
        "on_stall",
        "warn, fail (exit 3) or restart on a stall",
    ),
    (
        "wait",
        "all_workers",
        "Succeed only when every worker exits 0",
    ),
    (
        "wait",
        "save_logs",
        "After the verdict, write each pod's log to DIR/POD.log",
    ),
    (
        "wait",
        "cleanup",
        "After the verdict, delete the run (logs saved first)",
    ),
    (
        "wait",
        "restart_backoff",
        "Pause before a restart, doubled each time [default: 10s, at most 5m]",
    ),
    (
        "wait",
        "node_grace",
        "How long the cluster takes to name a node lost [default: 60s]",
    ),
];

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
        cmd = cmd.mut_subcommand(verb, verb_by_the_list);
    }
    for (verb, id, short) in VERB_SHORT {
        cmd = cmd.mut_subcommand(verb, |v| {
            v.mut_arg(id, |a| {
                let values = a.get_action().takes_values();
                a.hide_possible_values(values).help(*short)
            })
        });
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

/// The verbs' one-line descriptions in the overview and their help (`cli.rs` has the
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

fn shape(arg: Arg, id: &str) -> Arg {
    if let Some(def) = flags::def(id) {
        return by_the_list(arg, &def);
    }
    let mut arg = arg;
    if let Some((_, short)) = SHORT.iter().find(|(i, _)| *i == id) {
        let full = arg.get_help().map(ToString::to_string);
        arg = arg.help(*short);
        if VALUES_IN_TEXT.contains(&id) {
            arg = arg.hide_possible_values(true);
        }
        // Global flags keep one text: a long one would make every verb's --help long.
        if !arg.is_global_set()
            && let Some(full) = full
        {
            arg = arg.long_help(full);
        }
    }
    if let Some((_, heading)) = LONG_ONLY.iter().find(|(i, _)| *i == id) {
        arg = arg.hide_short_help(true);
        if let Some(heading) = heading {
            arg = arg.help_heading(*heading);
        }
    }
    if let Some((_, heading)) = HEADED.iter().find(|(i, _)| *i == id) {
        arg = arg.help_heading(*heading);
    }
    arg
}

/// A flag of `cli/flags.rs`'s list at the top level, as its entry says: its one-line
/// text for `-h` (the full one kept for `--help`, but for a global flag: every verb's
/// help stays compact), left to `spawn --help` unless marked `short_help`, under its
/// heading.
fn by_the_list(arg: Arg, def: &flags::FlagDef) -> Arg {
    let mut arg = arg;
    if let Some(brief) = def.brief {
        let full = arg.get_help().map(ToString::to_string);
        arg = arg.help(brief);
        if !arg.is_global_set()
            && let Some(full) = full
        {
            arg = arg.long_help(full);
        }
    }
    if !def.short_help {
        arg = arg.hide_short_help(true);
    }
    if let Some(heading) = def.heading {
        arg = arg.help_heading(heading.title());
    }
    arg
}

/// A verb's flags of the list: their one-line text, in `-h` and `--help` alike.
fn verb_by_the_list(verb: Command) -> Command {
    let ids: Vec<String> = verb
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut verb = verb;
    for id in ids {
        if VERB_UNSHOWN.contains(&id.as_str()) {
            verb = verb.mut_arg(id.as_str(), |a| a.hide(true));
            continue;
        }
        if let Some(brief) = flags::def(&id).and_then(|d| d.brief) {
            verb = verb.mut_arg(id.as_str(), |a| {
                let values = a.get_action().takes_values();
                a.hide_possible_values(values).help(brief)
            });
        }
    }
    verb
}

/// `sweep`'s help: its own flags and the spawn's most used, a line each; the other
/// spawn flags (each applies to every run) are `spawn`'s help.
const SWEEP_SHOWN: &[(&str, &str)] = &[
    ("script", "The training script"),
    (
        "script_args",
        "Its arguments; {NAME} is a parameter's value",
    ),
    ("params", "A parameter: NAME=V1,V2,… or a range LO..HI"),
    ("samples", "A random search of K runs over the ranges"),
    ("seed", "The random search's seed [default: random]"),
    ("parallel", "Runs at a time [default: what the quota holds]"),
    ("resume", "Take up experiment NAME where it stopped"),
    ("tag", "The experiment's name: runs NAME-1 … NAME-K"),
    ("workers", "Worker pods of each run"),
    ("restarts", "Restart each run's retryable failure N times"),
    ("notify", "Tell CMD or URL each run's end and the sweep's"),
    ("local", "Run here as processes, a run at a time"),
    ("dry_run", "Print every run's objects; create nothing"),
    ("output", "--dry-run's format: yaml or json"),
    ("yes", "Allow more than 1,000 runs"),
];

/// Below `sweep`'s help.
const SWEEP_MORE: &str = "Every spawn flag applies to each run (--gpus, --volume, --dir, --queue…):\ntf-spawner help spawn. Parameters and recipes: docs/experiments.md";

fn sweep(verb: Command) -> Command {
    let ids: Vec<String> = verb
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut verb = verb.after_help(SWEEP_MORE);
    for id in ids {
        verb = verb.mut_arg(id.as_str(), |a| {
            match SWEEP_SHOWN.iter().find(|(i, _)| *i == id) {
                Some((_, text)) => {
                    let values = a.get_action().takes_values();
                    a.help(*text).long_help(None).hide_possible_values(values)
                }
                None => a.hide(true).long_help(None),
            }
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
