//! The settings' lowering: the table of values a command reads, each with where it came
//! from, built from the one list of flags (`cli/flags.rs`, `flag_list!`): [`Table`] (a
//! field per entry), [`Table::load`] (a flag given on the command line, else the project
//! file's value, else the config file's, else the entry's default; each file value
//! through the flag's parser: `given.rs`), the files' [`KEYS`] and `config`'s rows
//! (`sourced.rs`'s `Row`s). An entry added to the list is in all of them, and nowhere
//! else.

use std::path::PathBuf;
use std::time::Duration;

pub(super) use super::given::Given;
use super::given::Marks;
use super::sourced::{Row, Source, Sourced, built_in};
use crate::cli::flag_defs::{flag_name, heading};
use crate::cli::flags::{Heading, flag_list};
use crate::cli::parse::{self, Parse};
use crate::errors::UsageError;

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
        let file = crate::settings::defaults::parse(text, Path::new("/etc/tfs/c.yaml"), KEYS)
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
