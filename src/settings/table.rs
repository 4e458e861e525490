//! The settings' lowering: the table of values a command reads, each with where it came
//! from, built from the one list of flags (`cli/flags.rs`, `flag_list!`): [`Table`] (a
//! field per entry), [`Table::load`] (a flag given on the command line, else the project
//! file's value, else the config file's, else the entry's default; each file value
//! through the flag's parser), the files' [`KEYS`] and `config`'s [`Row`]s. An entry
//! added to the list is in all of them, and nowhere else.

use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;
use serde_json::Value;

use crate::cli::flag_defs::{flag_name, heading};
use crate::cli::flags::{Heading, flag_list};
use crate::cli::parse::{self, Parse};
use crate::cluster::connect::ConfigNamespace;
use crate::defaults::Defaults;
use crate::errors::UsageError;
use crate::metrics::notice::Target;
use crate::podgroup::Gang;
use crate::verdict::retryable::RestartOn;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Flag,
    /// The project file (`tf-spawner.yaml` here or above, `project.rs`).
    Project,
    /// The defaults file.
    File,
    /// The kubeconfig context's namespace (the context's name).
    Kubeconfig(String),
    InCluster,
    Default,
}

impl Source {
    /// The name `config -o json` shows.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Project => "project",
            Source::File => "file",
            Source::Kubeconfig(_) => "kubeconfig",
            Source::InCluster => "in-cluster",
            Source::Default => "default",
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// Generates [`Table`], [`KEYS`], [`Table::load`] and [`Table::rows`] from the list
/// (`flag_list!(settings)`: its entries as `cli/flags.rs`'s grammar hands them on, the
/// flag clause passed by).
macro_rules! settings {
    ($({
        doc: [$($doc:literal),*], key: $key:ident, ty: $ty:ty, default: $default:expr,
        parse: $parse:expr, none: $none:literal, marks: [$($mark:ident)*], flag: $flag:tt
    })*) => {
        /// The settings the files may set, each with where it came from.
        #[derive(Debug)]
        pub(crate) struct Table {
            $( $(#[doc = $doc])* pub $key: Sourced<$ty>, )*
        }

        /// The settings files' keys, in `config`'s order.
        pub(crate) const KEYS: &[&str] = &[$(stringify!($key)),*];

        impl Table {
            /// Each setting from its flag, else the files, else (`kubeconfig`: the
            /// kubeconfig context's, then) its default.
            pub(super) fn load(given: &Given<'_>) -> Result<Table, UsageError> {
                Ok(Table {
                    $( $key: match given.pick(
                        stringify!($key),
                        $parse as Parse<_>,
                        Marks {
                            anchored: settings!(@has anchored; $($mark)*),
                            program: settings!(@has program; $($mark)*)
                                || settings!(@has command; $($mark)*),
                            command: settings!(@has command; $($mark)*),
                        },
                    )? {
                        Some(picked) => picked,
                        None => settings!(@default given, $default; $($mark)*),
                    }, )*
                })
            }

            /// `config`'s rows, in the list's order.
            pub(crate) fn rows(&self) -> Vec<Row> {
                vec![$( Row::new(stringify!($key), &self.$key, $none), )*]
            }
        }

        // Every mark is one of those below: a misspelt one fails to compile.
        const _: () = { $( $( settings!(@mark $mark); )* )* };
    };
    // The marks (`cli/flags.rs` says what each means).
    (@mark anchored) => { () };
    (@mark program) => { () };
    (@mark command) => { () };
    (@mark kubeconfig) => { () };
    (@mark short_help) => { () };
    (@mark show_default) => { () };
    (@mark unshown) => { () };
    (@default $given:ident, $default:expr;) => { built_in($default) };
    (@default $given:ident, $default:expr; kubeconfig $($rest:ident)*) => {
        $given.kubeconfig_namespace()
    };
    (@default $given:ident, $default:expr; $other:ident $($rest:ident)*) => {
        settings!(@default $given, $default; $($rest)*)
    };
    (@has $want:ident;) => { false };
    (@has anchored; anchored $($rest:ident)*) => { true };
    (@has program; program $($rest:ident)*) => { true };
    (@has command; command $($rest:ident)*) => { true };
    (@has $want:ident; $other:ident $($rest:ident)*) => { settings!(@has $want; $($rest)*) };
}

flag_list!(settings);

impl Table {
    /// The first setting under `heading` given as a flag, in the list's order: its flag
    /// (`--local` cannot honour a shared cluster's or a pod's resources).
    pub(crate) fn flag_given(&self, under: Heading) -> Option<String> {
        self.rows()
            .into_iter()
            .find(|row| row.source == Source::Flag && heading(row.key) == Some(under))
            .map(|row| format!("--{}", flag_name(row.key)))
    }
}

/// A built-in default.
fn built_in<T>(value: T) -> Sourced<T> {
    Sourced {
        value,
        source: Source::Default,
    }
}

/// Where the settings' values come from: the command line, the project file, the
/// defaults file and the kubeconfig's namespace.
pub(super) struct Given<'a> {
    pub matches: &'a ArgMatches,
    pub file: &'a Defaults,
    /// The project file, and whether its user trusts it (`project.rs`).
    pub project: Option<(&'a Defaults, bool)>,
    /// The kubeconfig context's namespace (or the in-cluster one), if any.
    pub kubeconfig: Option<(String, ConfigNamespace)>,
    /// What an untrusted project file set that it may set only once trusted: each key
    /// and why (filled by [`Table::load`]).
    pub untrusted: std::cell::RefCell<Vec<Untrusted>>,
}

/// A key of an untrusted project file that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Untrusted {
    pub key: &'static str,
    /// `None`: the key runs a program; `Some(path)`: its path is outside the project.
    pub outside: Option<PathBuf>,
}

/// An entry's marks (see `settings!`).
#[derive(Clone, Copy)]
struct Marks {
    anchored: bool,
    /// Run by this machine (a `program` or a `command`): refused from an untrusted
    /// project file.
    program: bool,
    /// A command line or URL: never anchored.
    command: bool,
}

impl Given<'_> {
    /// `key`'s value from its flag, else the project file, else the defaults file (each
    /// through the same parser), else `None`. A path a file gives is `anchored` at the
    /// file's directory; a project file's program, or its path outside the project, is
    /// left for [`Given::untrusted`] unless the user trusts the file.
    fn pick<T, V: From<T>>(
        &self,
        key: &'static str,
        parse: Parse<T>,
        marks: Marks,
    ) -> Result<Option<Sourced<V>>, UsageError> {
        if let Some(text) = flag_text(self.matches, key) {
            let value = text
                .to_str()
                .ok_or_else(|| format!("{text:?} is not valid UTF-8"))
                .and_then(parse)
                .map_err(|problem| UsageError::new(format!("--{} {problem}", flag_name(key))))?;
            return Ok(Some(Sourced {
                value: V::from(value),
                source: Source::Flag,
            }));
        }
        let files = self
            .project
            .map(|(file, trusted)| (file, Source::Project, trusted))
            .into_iter()
            .chain([(self.file, Source::File, true)]);
        for (file, source, trusted) in files {
            let Some(value) = file.values.get(key) else {
                continue;
            };
            let said = |problem: String| file_problem(file, &source, key, &problem);
            let text = file_text(file, value, marks).map_err(said)?;
            if !trusted {
                let outside = project_outside(file, &text, marks);
                if marks.program || outside.is_some() {
                    self.untrusted.borrow_mut().push(Untrusted { key, outside });
                    continue;
                }
            }
            let value = parse(&text).map_err(said)?;
            return Ok(Some(Sourced {
                value: V::from(value),
                source,
            }));
        }
        Ok(None)
    }

    /// The kubeconfig context's namespace (or the in-cluster service account's), else
    /// `default`.
    fn kubeconfig_namespace(&self) -> Sourced<String> {
        let (value, source) = match &self.kubeconfig {
            Some((ns, ConfigNamespace::Context(name))) => {
                (ns.clone(), Source::Kubeconfig(name.clone()))
            }
            Some((ns, ConfigNamespace::InCluster)) => (ns.clone(), Source::InCluster),
            None => ("default".to_string(), Source::Default),
        };
        Sourced { value, source }
    }
}

/// A file's problem with `key`'s value: `config file F: key 'k': …` (or `project file`).
fn file_problem(file: &Defaults, source: &Source, key: &str, problem: &str) -> UsageError {
    let what = match source {
        Source::Project => "project file",
        _ => "config file",
    };
    let path = file.path.as_deref().unwrap_or(std::path::Path::new(""));
    UsageError::new(format!("{what} {}: key '{key}': {problem}", path.display()))
}

/// A file's value as a flag's text, a path anchored at the file's directory (a
/// program's only when it names a path: `python3` is looked up on PATH). An empty path
/// stays empty, for the parser to refuse as it refuses `--dir ''`.
fn file_text(file: &Defaults, value: &Value, marks: Marks) -> Result<String, String> {
    let text = scalar(value)?;
    let anchored = marks.anchored || (marks.program && !marks.command && text.contains('/'));
    match &file.path {
        Some(path) if anchored && !text.is_empty() => {
            Ok(crate::defaults::resolve(std::path::Path::new(&text), path)
                .display()
                .to_string())
        }
        _ => Ok(text),
    }
}

/// The path a project file's anchored value names, if it is outside the project's
/// directory (the file's): `..` and `/` lead out, judged on the text (no symlink is
/// followed), as a cloned repository must not point tf-spawner at the user's files.
fn project_outside(file: &Defaults, text: &str, marks: Marks) -> Option<PathBuf> {
    let project = file.path.as_deref()?.parent()?;
    let anchored = marks.anchored || (marks.program && !marks.command && text.contains('/'));
    let path = std::path::Path::new(text);
    (anchored && !text.is_empty() && !lexically_under(path, project)).then(|| path.to_path_buf())
}

/// Whether `path` (absolute) is `dir` or below it once `.` and `..` are taken away.
fn lexically_under(path: &std::path::Path, dir: &std::path::Path) -> bool {
    use std::path::Component;
    let mut normal: Vec<Component> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(normal.last(), Some(Component::Normal(_))) {
                    normal.pop();
                }
            }
            other => normal.push(other),
        }
    }
    normal.iter().collect::<PathBuf>().starts_with(dir)
}

/// A value of the file as the text a flag would take: a string (trimmed), a number, a
/// boolean; nothing (`key:`) is the empty text.
fn scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.trim().to_string()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok(String::new()),
        Value::Array(_) | Value::Object(_) => {
            let mut shown = value.to_string();
            if shown.chars().count() > 40 {
                shown = format!("{}…", shown.chars().take(40).collect::<String>());
            }
            Err(format!("expected one value, got {shown}"))
        }
    }
}

/// The text of flag `id` when it was given on the command line (at the top level, or
/// after the verb).
fn flag_text<'m>(matches: &'m ArgMatches, id: &str) -> Option<&'m std::ffi::OsStr> {
    let given = |m: &'m ArgMatches| {
        let source = m.try_get_raw(id).ok().flatten().map(|_| m.value_source(id));
        match source {
            Some(Some(ValueSource::CommandLine | ValueSource::EnvVariable)) => {
                m.get_raw(id).and_then(|mut raw| raw.next())
            }
            _ => None,
        }
    };
    given(matches).or_else(|| matches.subcommand().and_then(|(_, sub)| given(sub)))
}

/// One row of `config`: the key, its value (`None`: the built-in default, described by
/// `default_text`), and its source.
pub(crate) struct Row {
    pub key: &'static str,
    pub value: Option<Value>,
    pub default_text: &'static str,
    pub source: Source,
}

impl Row {
    fn new<T: Shown>(key: &'static str, setting: &Sourced<T>, default_text: &'static str) -> Row {
        Row {
            key,
            value: setting.value.shown(),
            default_text,
            source: setting.source.clone(),
        }
    }
}

/// How `config` shows a value (`None`: it has none).
trait Shown {
    fn shown(&self) -> Option<Value>;
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> Option<Value> {
        self.as_ref().and_then(Shown::shown)
    }
}

impl Shown for String {
    fn shown(&self) -> Option<Value> {
        Some(self.clone().into())
    }
}

impl Shown for PathBuf {
    fn shown(&self) -> Option<Value> {
        Some(self.display().to_string().into())
    }
}

impl Shown for u16 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for u32 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for i64 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for bool {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for Target {
    fn shown(&self) -> Option<Value> {
        Some(self.to_string().into())
    }
}

impl Shown for Duration {
    fn shown(&self) -> Option<Value> {
        Some(humantime::format_duration(*self).to_string().into())
    }
}

impl Shown for Gang {
    fn shown(&self) -> Option<Value> {
        Some(self.as_str().into())
    }
}

impl Shown for crate::metrics::early::Rule {
    fn shown(&self) -> Option<Value> {
        Some(self.name().into())
    }
}

impl Shown for crate::ops::wait::OnCancel {
    fn shown(&self) -> Option<Value> {
        Some(self.name().into())
    }
}

impl Shown for RestartOn {
    fn shown(&self) -> Option<Value> {
        Some(self.to_string().into())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;

    use super::*;

    /// The table loaded from `args` and a defaults file of `text` at /etc/tfs/c.yaml.
    fn load(args: &[&str], text: &str) -> Result<Table, String> {
        let matches = crate::cli::Cli::command()
            .try_get_matches_from(std::iter::once("tf-spawner").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let file = crate::defaults::parse(text, Path::new("/etc/tfs/c.yaml"), KEYS)
            .map_err(|e| e.to_string())?;
        let given = Given {
            matches: &matches,
            file: &file,
            project: None,
            kubeconfig: None,
            untrusted: Default::default(),
        };
        Table::load(&given).map_err(|e| e.to_string())
    }

    #[test]
    fn a_path_is_under_the_project_once_dots_are_taken_away() {
        let p = std::path::Path::new("/home/u/exp");
        let under = |path: &str| lexically_under(std::path::Path::new(path), p);
        assert!(under("/home/u/exp/.") && under("/home/u/exp/a/../pods/x.yaml"));
        assert!(!under("/home/u/exp/../exp2/x") && !under("/home/u/exp2"));
        assert!(!under("/home/u/exp/a/../../x") && !under("/etc/passwd"));
    }

    #[test]
    fn every_key_is_a_flag_of_the_command_line() {
        let cli = crate::cli::Cli::command();
        let ids: Vec<String> = cli
            .get_arguments()
            .chain(cli.get_subcommands().flat_map(|s| s.get_arguments()))
            .map(|a| a.get_id().to_string())
            .collect();
        for key in KEYS {
            assert!(ids.iter().any(|id| id == key), "{key} has no flag");
            assert!(
                cli.get_arguments()
                    .chain(cli.get_subcommands().flat_map(|s| s.get_arguments()))
                    .filter(|a| a.get_id() == key)
                    .all(|a| a.get_long() == Some(&flag_name(key))),
                "{key}'s flag is not --{}",
                flag_name(key)
            );
        }
    }

    #[test]
    fn the_shared_flag_given_is_named_for_local_not_a_shared_value_from_the_file() {
        let t = load(&["--network-policy", "train.py"], "priority_class: p\n").unwrap();
        assert_eq!(t.priority_class.source, Source::File);
        assert_eq!(
            t.flag_given(Heading::Shared).as_deref(),
            Some("--network-policy")
        );
        let t = load(&["--priority-class", "p", "-w", "2", "train.py"], "").unwrap();
        assert_eq!(
            t.flag_given(Heading::Shared).as_deref(),
            Some("--priority-class")
        );
        let t = load(&["--dir", ".", "--cpu", "2", "train.py"], "deadline: 1h\n").unwrap();
        assert_eq!(t.flag_given(Heading::Shared), None);
        let is_shared = |key| heading(key) == Some(Heading::Shared);
        assert!(is_shared("volcano_queue") && is_shared("run_as_user"));
        assert!(!is_shared("image") && !is_shared("cpu") && !is_shared("start_timeout"));
    }

    #[test]
    fn the_list_declares_the_shared_and_resource_flags_whole() {
        let cli = crate::cli::Cli::command();
        let arg = |id: &str| cli.get_arguments().find(|a| a.get_id() == id).unwrap();
        let help = |id: &str| arg(id).get_help().map(ToString::to_string);
        assert_eq!(
            help("priority_class").as_deref(),
            Some("The PriorityClass of every pod (priorityClassName)")
        );
        assert!(
            help("run_as_user")
                .unwrap()
                .ends_with("[default: the config file's run_as_user, else the image's user]")
        );
        assert_eq!(arg("shm_size").get_value_names().unwrap(), ["SIZE"]);
        assert!(!arg("network_policy").get_action().takes_values());
        let gangs: Vec<String> = arg("gang")
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(gangs, ["volcano", "coscheduling"]);
        let declared: Vec<String> = crate::cli::flag_defs::defs()
            .into_iter()
            .filter(|d| matches!(d.heading, Some(Heading::Shared | Heading::Resources)))
            .map(|d| d.key.to_string())
            .collect();
        assert_eq!(declared.len(), 18);
        assert!(declared.iter().all(|id| KEYS.contains(&id.as_str())));
        // The flag and the file go through the one parser, each named its way.
        // (`lib.rs::clap_error` prints the flag's problem, clap's error's source, alone.)
        let flag = cli
            .clone()
            .try_get_matches_from(["tf-spawner", "--gang", "kube-batch", "t.py"])
            .unwrap_err();
        assert_eq!(
            std::error::Error::source(&flag)
                .map(ToString::to_string)
                .as_deref(),
            Some("--gang \"kube-batch\" is not one of volcano, coscheduling")
        );
        assert_eq!(
            load(&["config"], "gang: kube-batch\n").unwrap_err(),
            "config file /etc/tfs/c.yaml: key 'gang': \"kube-batch\" is not one of volcano, coscheduling"
        );
    }

    /// Issue 36: every defaults-file value is checked by exactly the code that checks the
    /// flag. Each key's flags (a key may have one on several verbs) and the file accept
    /// and refuse the same texts, with the same problem.
    #[test]
    fn each_flag_and_its_key_accept_and_refuse_alike() {
        let cli = crate::cli::Cli::command();
        let texts = [
            "",
            "x y",
            "-1",
            "0",
            "2",
            "70000",
            "99999999999999999999",
            "90m",
            "1h",
            "abc",
            "16",
            "16Gi",
            "500m",
            "/out",
            "out:/data",
            "volcano",
            "true",
            "exit:42",
            "A",
        ];
        let file_prefix = |key: &str| format!("config file /etc/tfs/c.yaml: key '{key}': ");
        let mut compared = 0;
        for key in KEYS {
            // Each of the key's flags, with the verb it follows (none: the top level).
            let args: Vec<(Option<&str>, &clap::Arg)> = cli
                .get_arguments()
                .map(|a| (None, a))
                .chain(
                    cli.get_subcommands()
                        .flat_map(|s| s.get_arguments().map(move |a| (Some(s.get_name()), a))),
                )
                .filter(|(_, a)| a.get_id() == key && a.get_action().takes_values())
                .collect();
            for (verb, arg) in args {
                let long = arg.get_long().unwrap();
                for text in texts {
                    let argv = ["tf-spawner"]
                        .into_iter()
                        .chain(verb)
                        .map(String::from)
                        .chain([format!("--{long}={text}")]);
                    // A refusal of the value comes before clap checks what the flag needs.
                    let flag = match cli.clone().try_get_matches_from(argv) {
                        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
                            let problem = std::error::Error::source(&e).unwrap().to_string();
                            let problem = problem.strip_prefix(&format!("--{long} "));
                            Err(problem.unwrap_or_else(|| panic!("{key}: {e}")).to_string())
                        }
                        _ => Ok(()),
                    };
                    let yaml = serde_json::to_string(text).unwrap();
                    let file = load(&["config"], &format!("{key}: {yaml}\n")).map(drop);
                    let file =
                        file.map_err(|e| e.strip_prefix(&file_prefix(key)).unwrap().to_string());
                    assert_eq!(flag, file, "{key} given {text:?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 30 * texts.len(), "{compared}");
        // A verb's flag of the same name is not the setting: `tensorboard --port 0` (a
        // free local port) is not the spawn's gRPC port.
        let t = load(&["tensorboard", "-t", "x", "--port", "0"], "").unwrap();
        assert_eq!(
            (t.port.value, t.port.source),
            (crate::cli::flags::DEFAULT_PORT, Source::Default)
        );
    }

    #[test]
    fn a_flag_beats_the_file_which_beats_the_default_and_paths_are_anchored() {
        let t = load(
            &["-w", "3", "config"],
            "workers: 4\nport: 2222\npod_file: gpu.yaml\ndir: .\nkeep_running: true\n",
        )
        .unwrap();
        assert_eq!((t.workers.value, t.workers.source), (3, Source::Flag));
        assert_eq!((t.port.value, t.port.source), (2222, Source::File));
        assert_eq!(t.pod_file.value, Some(PathBuf::from("/etc/tfs/gpu.yaml")));
        assert_eq!(t.dir.value, Some(PathBuf::from("/etc/tfs/.")));
        assert!(t.keep_running.value);
        assert_eq!(t.deadline.source, Source::Default);
        assert_eq!(t.namespace.value, "default");
        let t = load(&["wait", "--keep-running", "--restarts", "2"], "").unwrap();
        assert_eq!(
            (t.keep_running.value, t.keep_running.source),
            (true, Source::Flag)
        );
        assert_eq!(t.restarts.value, 2);
    }

    #[test]
    fn resource_settings_come_from_the_flag_else_the_file_else_their_default() {
        let t = load(
            &["--cpu", "2", "config"],
            "cpu: 8\nmemory: 16Gi\ngpus: 1\nshm_size: 0\n",
        )
        .unwrap();
        assert_eq!(
            (t.cpu.value.as_deref(), t.cpu.source),
            (Some("2"), Source::Flag)
        );
        assert_eq!(
            (t.memory.value.as_deref(), t.memory.source),
            (Some("16Gi"), Source::File)
        );
        assert_eq!(t.gpus.value, Some(1), "a YAML number is its text");
        assert_eq!(t.shm_size.value, "0");
        assert_eq!(
            (t.gpu_resource.value.as_str(), t.gpu_resource.source),
            ("nvidia.com/gpu", Source::Default)
        );
        assert_eq!(t.ps_cpu.value, None);
        assert_eq!(
            load(&["config"], "memory: 16\n").unwrap_err(),
            "config file /etc/tfs/c.yaml: key 'memory': \"16\" is 16 bytes; give a unit: 16Gi, 16Mi"
        );
    }

    #[test]
    fn a_file_value_is_refused_by_the_flags_parser_naming_the_key() {
        let err = |text: &str| load(&["config"], text).unwrap_err();
        let key =
            |k: &str, problem: &str| format!("config file /etc/tfs/c.yaml: key '{k}': {problem}");
        assert_eq!(
            err("port: 70000\n"),
            key("port", "\"70000\" is not a port number from 1 to 65535")
        );
        assert_eq!(
            err("image: [a, b]\n"),
            key("image", "expected one value, got [\"a\",\"b\"]")
        );
        assert_eq!(
            err("queue: Team GPU\n"),
            key(
                "queue",
                "\"Team GPU\" is not a valid name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 63 characters)"
            )
        );
        assert_eq!(
            err("deadline: 2147483648\n"),
            key(
                "deadline",
                "68years 18days 3h 14m 8s is too long: at most 2147483647 seconds (about 68 years), the API's limit"
            )
        );
        // Issue 41: what the flags refuse, the file refuses too.
        let max = u64::MAX;
        for k in ["start_timeout", "give_up_after"] {
            assert_eq!(
                err(&format!("{k}: {max}\n")),
                key(k, &format!("\"{max}\": longer than 100 years"))
            );
        }
        assert_eq!(
            err("tensorboard_image: \"has space\"\n"),
            key(
                "tensorboard_image",
                "\"has space\" is not a valid image name"
            )
        );
        // The file's volume is blamed on the file, not on --volume.
        assert_eq!(
            err("volume: \"out:relative\"\n"),
            key(
                "volume",
                "\"out:relative\": the mount path \"relative\" must be an absolute directory such as /output (not /, no '..' or ':')"
            )
        );
    }
}
