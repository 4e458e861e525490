//! Each flag of the list (`flags.rs`) as clap and the help see it: a [`FlagDef`] per
//! entry with a flag clause ([`defs`], built by `flag_defs!` from the list), looked up by
//! key ([`def`], [`heading`], [`flag_name`]); clap's arguments of each place
//! ([`Place::args`]) and the structs `mod.rs` flattens them in by ([`SpawnFlags`]…);
//! `sweep`'s help lines for the flags `mod.rs` declares ([`SWEEP_LINES`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;

use super::flags::{Heading, Place, flag_list};
use super::parse::{self, Parse};

/// One entry's flag, as the list declares it.
#[derive(Clone)]
pub(crate) struct FlagDef {
    pub key: &'static str,
    pub places: &'static [Place],
    pub short: Option<char>,
    /// `None`: the key with `-` for `_`.
    long: Option<&'static str>,
    /// `None`: a switch.
    value_name: Option<&'static str>,
    pub heading: Option<Heading>,
    /// A spawn flag that needs another (`--start-timeout` needs `--wait`).
    requires: Option<&'static str>,
    /// The one-line text of the short help (`spawn -h`, a verb's help); `None`: the
    /// full text.
    pub brief: Option<&'static str>,
    /// The line of `sweep`'s help, which shows the flag; `None`: `sweep -h` leaves it to
    /// `spawn`'s help (the flags declared in `mod.rs`: [`SWEEP_LINES`]).
    pub sweep: Option<&'static str>,
    /// `spawn -h` (the first screen) shows it; without the mark, `spawn --help` only,
    /// so that a new flag cannot push the first screen past its 50 lines.
    pub short_help: bool,
    /// No help shows it, neither a verb's `-h` nor its `--help` (the man page, `config`
    /// and docs/reference.md do): a tuning knob another flag's text names.
    pub unshown: bool,
    /// The default the help shows (`[default: 2]`).
    shown: Option<String>,
    /// The doc comment's lines: the full help.
    doc: &'static [&'static str],
    parser: fn() -> clap::builder::ValueParser,
}

impl FlagDef {
    /// The flag's long name (`--image` for `tensorboard_image`).
    pub(crate) fn long(&self) -> String {
        self.long
            .map_or_else(|| self.key.replace('_', "-"), str::to_string)
    }

    /// The full help: the doc comment's lines joined.
    pub(crate) fn help(&self) -> String {
        let lines: Vec<&str> = self.doc.iter().map(|line| line.trim()).collect();
        lines.join(" ")
    }

    /// clap's argument at `place`; a value flag lets a negative number reach the
    /// parser, which words the refusal (`--gpus -1 …`), rather than clap's "unexpected
    /// argument".
    fn arg(&self, place: Place) -> clap::Arg {
        let mut arg = clap::Arg::new(self.key).long(self.long()).help(self.help());
        if let Some(short) = self.short {
            arg = arg.short(short);
        }
        arg = match self.value_name {
            Some(name) => match &self.shown {
                Some(shown) => arg.default_value(shown.clone()),
                None => arg,
            }
            .value_name(name)
            .action(clap::ArgAction::Set)
            .allow_negative_numbers(true)
            .value_parser((self.parser)()),
            None => arg.action(clap::ArgAction::SetTrue),
        };
        match place {
            Place::Global => arg.global(true),
            Place::Spawn => match self.requires {
                Some(other) => arg.requires(other),
                None => arg,
            },
            Place::Wait | Place::Tensorboard | Place::Logs | Place::Sweep => arg,
        }
    }
}

/// Builds [`defs`] from the list: each entry with a flag clause is a [`FlagDef`].
macro_rules! flag_defs {
    ($({
        doc: [$($doc:literal),*], key: $key:ident, ty: $ty:ty, default: $default:expr,
        parse: $parse:expr, none: $none:literal, marks: [$($mark:ident)*],
        flag: [$(
            places: [$($place:ident),+], short: [$($short:literal)?], long: [$($long:literal)?],
            value: [$($value_name:literal)?], choices: [$($choices:ty)?],
            heading: [$($heading:ident)?], requires: [$($requires:literal)?],
            brief: [$($brief:literal)?], sweep: [$($sweep:literal)?]
        )?]
    })*) => {
        /// The list's flags, in its order.
        pub(crate) fn defs() -> Vec<FlagDef> {
            // Each default has its entry's type (the settings table, `settings/table.rs`,
            // takes it when neither a flag nor a file gives one).
            $( let _default: fn() -> $ty = || $default; )*
            let mut defs = Vec::new();
            $( {
            // Named here, outside the flag clause: macro_rules cannot repeat an entry's
            // doc lines or marks inside its optional flag clause.
            let doc: &'static [&'static str] = &[$($doc),*];
            let short_help = flag_defs!(@has short_help; $($mark)*);
            let unshown = flag_defs!(@has unshown; $($mark)*);
            let shown: Option<String> = flag_defs!(@show_default $default; $($mark)*);
            $( defs.push(FlagDef {
                key: stringify!($key),
                places: &[$(Place::$place),+],
                short: flag_defs!(@opt $($short)?),
                long: flag_defs!(@opt $($long)?),
                value_name: flag_defs!(@opt $($value_name)?),
                heading: flag_defs!(@opt $(Heading::$heading)?),
                requires: flag_defs!(@opt $($requires)?),
                brief: flag_defs!(@opt $($brief)?),
                sweep: flag_defs!(@opt $($sweep)?),
                short_help,
                unshown,
                shown: shown.clone(),
                doc,
                parser: flag_defs!(@parser $ty, $parse, [$($choices)?]),
            }); )?
            let _ = (doc, short_help, unshown, shown); // used only by an entry with a flag
            } )*
            defs
        }
    };
    (@opt) => { None };
    (@opt $value:expr) => { Some($value) };
    (@show_default $default:expr;) => { None };
    (@show_default $default:expr; show_default $($rest:ident)*) => {
        Some($default.to_string())
    };
    (@show_default $default:expr; $other:ident $($rest:ident)*) => {
        flag_defs!(@show_default $default; $($rest)*)
    };
    (@has $mark:ident;) => { false };
    (@has short_help; short_help $($rest:ident)*) => { true };
    (@has unshown; unshown $($rest:ident)*) => { true };
    (@has $mark:ident; $other:ident $($rest:ident)*) => { flag_defs!(@has $mark; $($rest)*) };
    (@parser $ty:ty, $parse:expr, []) => {
        || clap::builder::ValueParser::new(parse::Flag($parse as Parse<_>))
    };
    (@parser $ty:ty, $parse:expr, [$choices:ty]) => {
        || clap::builder::ValueParser::new(parse::Choice::<$choices>::new())
    };
}

flag_list!(flag_defs);

/// The lines of `sweep`'s help for the flags `mod.rs` declares (a list flag's is its
/// entry's `sweep`); a flag in neither, `sweep -h` leaves to `spawn`'s help.
pub(crate) const SWEEP_LINES: &[(&str, &str)] = &[
    ("script", "The training script"),
    (
        "script_args",
        "Its arguments; {NAME} is a parameter's value",
    ),
    ("params", "A parameter: NAME=V1,V2,… or a range LO..HI"),
    ("samples", "A random search of K runs over the ranges"),
    ("seed", "The random search's seed [default: random]"),
    ("method", "grid, random or tpe (model-based; --objective)"),
    ("objective", "The metric runs are judged by, e.g. auc:max"),
    ("resume", "Take up experiment NAME where it stopped"),
    ("allow_changed", "With --resume: though the script changed"),
    ("tag", "The experiment's name: runs NAME-1 … NAME-K"),
    ("local", "Run here as processes, a run at a time"),
    ("dry_run", "Print every run's objects; create nothing"),
    ("output", "--dry-run's format: yaml or json"),
    ("yes", "Allow more than 1,000 runs"),
];

/// The list's flag of `key`, if it declares one.
pub(crate) fn def(key: &str) -> Option<FlagDef> {
    defs().into_iter().find(|d| d.key == key)
}

/// The heading of `key`'s flag, if any.
pub(crate) fn heading(key: &str) -> Option<Heading> {
    def(key).and_then(|d| d.heading)
}

/// The flag of a key, for an error (`tensorboard_image` is `tensorboard --image`).
pub(crate) fn flag_name(key: &str) -> String {
    def(key).map_or_else(|| key.replace('_', "-"), |d| d.long())
}

impl Place {
    /// The list's flags at this place, in its order.
    pub(crate) fn args(self) -> Vec<clap::Arg> {
        defs()
            .iter()
            .filter(|d| d.places.contains(&self))
            .map(|d| d.arg(self))
            .collect()
    }
}

/// The list's flags of one [`Place`], for clap's `#[command(flatten)]` in `mod.rs`.
macro_rules! place_flags {
    ($(#[$doc:meta])* $name:ident = $place:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(_: &ArgMatches) -> Result<Self, clap::Error> {
                // The values are the settings table's (`settings/table.rs` reads them by key).
                Ok($name)
            }
            fn update_from_arg_matches(&mut self, _: &ArgMatches) -> Result<(), clap::Error> {
                Ok(())
            }
        }

        impl clap::Args for $name {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                cmd.args(Place::$place.args())
            }
            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                Self::augment_args(cmd)
            }
        }
    };
}

place_flags! {
    /// The list's spawn flags (`-w`, `-i`, `--volume`, `--deadline`, `--cpu`…).
    SpawnFlags = Spawn
}
place_flags! {
    /// The list's `wait` flags (`--restarts`, `--start-timeout`, `--stall-after`…).
    WaitFlags = Wait
}
place_flags! {
    /// The list's `tensorboard` flags (`--image`).
    TensorboardFlags = Tensorboard
}
place_flags! {
    /// The list's `logs` flags (`--idle-timeout`).
    LogsFlags = Logs
}
place_flags! {
    /// The list's `sweep` flags (`--parallel`, `--early-stop`, `--eta`, `--min-epochs`).
    SweepFlags = Sweep
}
place_flags! {
    /// The list's global flags (`-n`, `--give-up-after`).
    GlobalFlags = Global
}
