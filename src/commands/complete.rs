//! Dynamic shell completion: the scripts `tf-spawner completions SHELL` prints call the
//! binary back (`TF_SPAWNER_COMPLETE=SHELL tf-spawner -- WORDS…`, clap_complete's
//! `CompleteEnv`) at each Tab, and it answers with the flags and verbs (from the clap
//! definitions) and, where a verb takes a run, the run tags (and experiment names) of
//! the namespace the words name, as kubectl completes resource names. Asking the
//! cluster is bounded by [`BOUND`]; without a cluster, credentials or an answer in
//! time, nothing is offered and nothing is printed.

use std::collections::BTreeMap;
use std::time::Duration;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{CommandFactory, FromArgMatches};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::{self, EnvCompleter};

use crate::cli::Cli;
use crate::settings::Settings;

/// The variable that makes the binary answer a completion instead of running.
pub const VAR: &str = "TF_SPAWNER_COMPLETE";

/// How long a Tab may wait for the cluster's runs.
const BOUND: Duration = Duration::from_secs(2);

/// The flags of the words that pick the cluster and namespace (taken by every verb).
const CLUSTER_FLAGS: [&str; 4] = ["-n", "--namespace", "--context", "--kubeconfig"];

/// What a completed value is: the verbs' arguments that name one, by verb ("" the
/// main command) and clap id.
#[derive(Clone, Copy)]
enum Names {
    /// A run's tag.
    Runs,
    /// An experiment's name (`sweep --resume`, `list --experiment`, `-d --experiment`).
    Experiments,
    /// Either (`compare NAME…`, `tensorboard NAME…`).
    Both,
    /// A run's tag, when the words delete one (`-d -t TAG`): a new run's tag is new.
    RunsToDelete,
}

const COMPLETED: &[(&str, &str, Names)] = &[
    ("", "tag", Names::RunsToDelete),
    ("", "experiment", Names::Experiments),
    ("list", "experiment", Names::Experiments),
    ("wait", "tag", Names::Runs),
    ("wait", "run", Names::Runs),
    ("status", "tag", Names::Runs),
    ("status", "run", Names::Runs),
    ("logs", "tag", Names::Runs),
    ("logs", "run", Names::Runs),
    ("cp", "tag", Names::Runs),
    ("tensorboard", "tag", Names::Runs),
    ("tensorboard", "names", Names::Both),
    ("compare", "tag", Names::Runs),
    ("compare", "names", Names::Both),
    ("sweep", "resume", Names::Experiments),
];

/// Run tags were offered for the word being completed (see [`RunsFirst`]).
static OFFERED: AtomicBool = AtomicBool::new(false);

/// The shells whose answers [`RunsFirst`] trims; the others as clap_complete has them.
const SHELLS: &[&dyn EnvCompleter] = &[
    &RunsFirst(&env::Bash),
    &RunsFirst(&env::Zsh),
    &RunsFirst(&env::Fish),
    &env::Elvish,
    &env::Powershell,
];

/// A shell's completer that, where run tags match the word being completed, offers only
/// them, as kubectl offers only names after `get pods`: `status <Tab>` lists the runs,
/// `status -<Tab>` the flags.
struct RunsFirst(&'static dyn EnvCompleter);

impl EnvCompleter for RunsFirst {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn is(&self, name: &str) -> bool {
        self.0.is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.0.write_registration(var, name, bin, completer, buf)
    }

    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<std::ffi::OsString>,
        current_dir: Option<&std::path::Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut all = Vec::new();
        self.0.write_complete(cmd, args, current_dir, &mut all)?;
        if !OFFERED.load(Ordering::Relaxed) {
            return buf.write_all(&all);
        }
        // One candidate per separator (the script's _CLAP_IFS), each `VALUE[help]`.
        let separator = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".to_string());
        let text = String::from_utf8_lossy(&all);
        let (flags, names): (Vec<&str>, Vec<&str>) = text
            .split(separator.as_str())
            .filter(|c| !c.is_empty())
            .partition(|c| c.starts_with('-'));
        let kept = if names.is_empty() { flags } else { names };
        buf.write_all(kept.join(&separator).as_bytes())
    }
}

/// Answers a completion request and exits, if the variable asks for one; else returns.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(command)
        .var(VAR)
        .shells(clap_complete::env::Shells(SHELLS))
        .bin("tf-spawner")
        .completer("tf-spawner")
        .complete();
}

/// The command line as completion sees it: clap's, with the run arguments' candidates.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for &(verb, id, names) in COMPLETED {
        let add = |arg: clap::Arg| arg.add(ArgValueCandidates::new(move || candidates(names)));
        cmd = match verb {
            "" => cmd.mut_arg(id, add),
            verb => cmd.mut_subcommand(verb, |sub| sub.mut_arg(id, add)),
        };
    }
    cmd
}

/// The script `tf-spawner completions SHELL` prints: it registers the call back.
pub fn registration(shell: clap_complete::Shell) -> std::io::Result<Vec<u8>> {
    use clap_complete::Shell;
    let completer: &dyn EnvCompleter = match shell {
        Shell::Zsh => &env::Zsh,
        Shell::Fish => &env::Fish,
        Shell::Elvish => &env::Elvish,
        Shell::PowerShell => &env::Powershell,
        _ => &env::Bash,
    };
    let mut out = Vec::new();
    completer.write_registration(VAR, "tf-spawner", "tf-spawner", "tf-spawner", &mut out)?;
    Ok(out)
}

/// The words being completed (after the `--` the script passes), the binary's name
/// first.
fn words() -> Vec<String> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.iter().position(|a| a == "--") {
        Some(at) => args[at + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// The candidates for `names`, from the namespace the words name; none when the
/// cluster cannot tell within [`BOUND`].
fn candidates(names: Names) -> Vec<CompletionCandidate> {
    let words = words();
    if matches!(names, Names::RunsToDelete) && !deletes(&words) {
        return Vec::new();
    }
    crate::output::mute();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let runs = runtime.block_on(async {
        tokio::time::timeout(BOUND, runs(&words))
            .await
            .ok()
            .flatten()
    });
    // A request still on its way (a DNS lookup in a thread) is not waited for.
    runtime.shutdown_background();
    let offered = runs.map(|runs| offered(&runs, names)).unwrap_or_default();
    OFFERED.store(!offered.is_empty(), Ordering::Relaxed);
    offered
}

/// `-d`/`--delete` among the words (alone or in a cluster of short switches, `-dy`).
fn deletes(words: &[String]) -> bool {
    words.iter().skip(1).take_while(|w| *w != "--").any(|w| {
        w == "--delete"
            || w.strip_prefix('-').is_some_and(|s| {
                !s.starts_with('-') && s.contains('d') && s.chars().all(|c| c.is_ascii_alphabetic())
            })
    })
}

/// The words' cluster flags (`-n NS`, `--context=C`…) before the verb `list`.
fn list_argv(words: &[String]) -> Vec<String> {
    let mut argv = vec!["tf-spawner".to_string()];
    let mut rest = words.iter().skip(1);
    while let Some(word) = rest.next() {
        if CLUSTER_FLAGS.contains(&word.as_str()) {
            if let Some(value) = rest.next() {
                argv.extend([word.clone(), value.clone()]);
            }
        } else if CLUSTER_FLAGS.iter().any(|f| {
            word.strip_prefix(f)
                .is_some_and(|v| v.starts_with('=') || (*f == "-n" && !v.is_empty()))
        }) {
            argv.push(word.clone());
        }
    }
    argv.extend(["--retries", "0", "list"].map(String::from));
    argv
}

/// The runs (tag, verdict, experiment) of the namespace, as `list` finds them.
async fn runs(words: &[String]) -> Option<Vec<(String, &'static str, Option<String>)>> {
    let matches = Cli::command().try_get_matches_from(list_argv(words)).ok()?;
    let cli = Cli::from_arg_matches(&matches).ok()?;
    let settings = Settings::load(&cli, &matches).await.ok()?;
    let cluster = settings.connect().ok()?;
    let runs = crate::ops::list::list(&cluster, false).await.ok()?;
    Some(
        runs.into_iter()
            .map(|r| (r.tag, r.verdict, r.experiment))
            .collect(),
    )
}

/// The values offered: tags with their verdict, experiments with their runs' count. A
/// name the server gives that is no name a run can have (Kubernetes' name rules) is not
/// offered: a shell would print its escape sequences raw, and a newline would split it
/// into candidates of the server's choosing.
fn offered(
    runs: &[(String, &'static str, Option<String>)],
    names: Names,
) -> Vec<CompletionCandidate> {
    let plain = |n: &str| crate::labels::name_problem(n, 63).is_none();
    let runs: Vec<_> = runs
        .iter()
        .filter(|(tag, _, experiment)| plain(tag) && experiment.as_deref().is_none_or(plain))
        .cloned()
        .collect();
    let runs = &runs[..];
    let mut out = Vec::new();
    if matches!(names, Names::Experiments | Names::Both) {
        let mut experiments: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, _, experiment) in runs {
            if let Some(name) = experiment {
                *experiments.entry(name).or_default() += 1;
            }
        }
        out.extend(experiments.into_iter().map(|(name, n)| {
            CompletionCandidate::new(name).help(Some(format!("experiment, {n} runs").into()))
        }));
    }
    if !matches!(names, Names::Experiments) {
        out.extend(
            runs.iter().map(|(tag, verdict, _)| {
                CompletionCandidate::new(tag).help(Some((*verdict).into()))
            }),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_cluster_flags_of_the_words_pick_the_namespace() {
        assert_eq!(
            list_argv(&words("tf-spawner wait -n team --context=c2 -t ")),
            words("tf-spawner -n team --context=c2 --retries 0 list")
        );
        assert_eq!(
            list_argv(&words("tf-spawner logs -nteam --kubeconfig k -f")),
            words("tf-spawner -nteam --kubeconfig k --retries 0 list")
        );
        assert_eq!(
            list_argv(&words("tf-spawner --notify x -n")),
            words("tf-spawner --retries 0 list")
        );
    }

    /// Issue 57: what a hostile server lists as a tag is offered only if it is a name.
    #[test]
    fn a_tag_that_is_no_name_is_not_offered() {
        let runs = vec![
            ("good-1".to_string(), "Running", Some("exp".to_string())),
            ("x\u{1b}]52;c;aGk=\u{7}".to_string(), "Running", None),
            ("a\nrm -rf".to_string(), "Running", None),
            ("ok".to_string(), "Succeeded", Some("e\nvil".to_string())),
        ];
        let values: Vec<String> = offered(&runs, Names::Both)
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert_eq!(values, ["exp", "good-1"]);
    }

    #[test]
    fn only_a_delete_completes_the_main_commands_tag() {
        assert!(deletes(&words("tf-spawner -d -t ")));
        assert!(deletes(&words("tf-spawner -dy -t ")));
        assert!(deletes(&words("tf-spawner --delete -t ")));
        assert!(!deletes(&words("tf-spawner -t ")));
        assert!(!deletes(&words("tf-spawner -t x train.py -- -d")));
        assert!(!deletes(&words("tf-spawner --dry-run -t ")));
    }

    #[test]
    fn every_run_argument_named_is_one_of_the_command_line() {
        command().debug_assert();
    }
}
