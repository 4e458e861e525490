//! The follow of a run (`ops::wait::Wait`) lowered once, for every verb that follows
//! one (`wait`, `spawn --wait`, each run of a `sweep`): what the verb asked, from its
//! own flags ([`Follower`]), then the settings every follow reads the same way. A
//! setting that shapes the follow is read here and nowhere else; a flag of `wait`'s
//! own is named in [`of_wait`], which names every field of [`WaitArgs`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cli::{DEFAULT_MAX_IN_FLIGHT, OutputFormat, ReportFormat};
use crate::cli::{RestartArgs, SpawnArgs, WaitArgs};
use crate::ops::restart::{DEFAULT_BACKOFF, DEFAULT_NODE_GRACE, Restarts};
use crate::ops::wait::{OnCancel, OnStall, Stall, StallBound, Wait, WaitFor};

use super::Settings;

/// A verb that follows a run, with its flags.
pub(crate) enum Follower<'a> {
    /// `tf-spawner wait`.
    Wait(&'a WaitArgs),
    /// `spawn --wait`: the run it created, named by its tag.
    Spawn(&'a SpawnArgs, &'a str),
    /// A `sweep`: each of its runs to its end (`ops/sweep` names the run and restarts
    /// the clock for each).
    Sweep(&'a SpawnArgs),
}

/// What a verb asks of its follow, from its own flags.
struct Asked<'a> {
    tag: String,
    until: WaitFor,
    timeout: Option<Duration>,
    all_workers: bool,
    save_logs: Option<PathBuf>,
    cleanup: bool,
    max_in_flight: usize,
    restart: &'a RestartArgs,
    on_stall: OnStall,
    /// `None`: the settings' `--on-cancel`.
    on_cancel: Option<OnCancel>,
    output: ReportFormat,
}

/// The follow of a run, `started` when the command did (`--timeout` counts from then).
/// Every field of [`Wait`] is set here, so a new one fails to compile until it is
/// lowered.
pub(crate) fn wait(settings: &Settings, follower: Follower<'_>, started: Instant) -> Wait {
    let Asked {
        tag,
        until,
        timeout,
        all_workers,
        save_logs,
        cleanup,
        max_in_flight,
        restart,
        on_stall,
        on_cancel,
        output,
    } = match follower {
        Follower::Wait(args) => of_wait(args),
        Follower::Spawn(args, tag) => of_spawn(settings, args, tag),
        Follower::Sweep(args) => of_sweep(args),
    };
    Wait {
        tag,
        until,
        timeout,
        start_timeout: settings.start_timeout.value,
        started,
        all_workers,
        save_logs,
        cleanup,
        keep_running: settings.keep_running.value,
        max_in_flight,
        restarts: restarts(settings, restart),
        stall: Some(stall(settings, on_stall)),
        observer: None,
        // A sweep with early stopping sets it for each of its runs (`ops/sweep/early.rs`).
        early: None,
        notify: settings.notify.value.clone(),
        on_cancel: on_cancel.unwrap_or(settings.on_cancel.value),
        output,
        heartbeat: Some(settings.heartbeat.value).filter(|d| !d.is_zero()),
        supervising: false,
    }
}

/// `wait`'s flags: every field of [`WaitArgs`] is named here.
fn of_wait(args: &WaitArgs) -> Asked<'_> {
    #[rustfmt::skip]
    let WaitArgs {
        tag, until, timeout, on_stall, all_workers, save_logs, cleanup, output, restart,
        // The positional is `-t`'s (`commands::verbs::settle_tag`); the list's flags
        // are the settings'.
        run: _, table: _,
    } = args;
    Asked {
        tag: tag.to_string(),
        until: *until,
        timeout: *timeout,
        all_workers: *all_workers,
        save_logs: save_logs.clone(),
        cleanup: *cleanup,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        restart,
        on_stall: *on_stall,
        on_cancel: None,
        output: output.unwrap_or(ReportFormat::Table),
    }
}

/// `spawn --wait`'s: until the run starts, or to its verdict when restarts or the
/// notice of the verdict (`--notify`) need one (they happen only while the run is
/// followed); the stall bound named (the defaults file's, else derived) — `--on-stall`
/// is `wait`'s, `stall` in `--restart-on` restarts.
fn of_spawn<'a>(settings: &Settings, args: &'a SpawnArgs, tag: &str) -> Asked<'a> {
    let until = if settings.restarts.value > 0 || settings.notify.value.is_some() {
        WaitFor::End
    } else {
        WaitFor::Start
    };
    Asked {
        tag: tag.to_string(),
        until,
        timeout: args.timeout,
        all_workers: args.all_workers,
        save_logs: None,
        cleanup: false,
        max_in_flight: args.max_in_flight,
        restart: &args.restart,
        on_stall: OnStall::Warn,
        on_cancel: None,
        output: match args.output {
            Some(OutputFormat::Json) => ReportFormat::Json,
            Some(OutputFormat::Yaml) => ReportFormat::Yaml,
            None => ReportFormat::Table,
        },
    }
}

/// A sweep's run: to its end, with `--restarts` and the defaults file's stall bound;
/// the tag is each run's.
fn of_sweep(args: &SpawnArgs) -> Asked<'_> {
    Asked {
        tag: String::new(),
        until: WaitFor::End,
        timeout: args.timeout,
        all_workers: false,
        save_logs: None,
        cleanup: false,
        max_in_flight: args.max_in_flight,
        restart: &args.restart,
        on_stall: OnStall::Warn,
        // A sweep's Ctrl-C is the sweep's (`ops/sweep`); its runs print no document.
        on_cancel: Some(OnCancel::Leave),
        output: ReportFormat::Table,
    }
}

/// `--restarts`, `--restart-on` (each else the defaults file's) and `--restart-backoff`,
/// of `wait` or of `spawn --wait`.
fn restarts(settings: &Settings, args: &RestartArgs) -> Restarts {
    let RestartArgs {
        restart_backoff,
        node_grace,
    } = args;
    Restarts {
        max: settings.restarts.value,
        on: settings.restart_on.value.clone(),
        backoff: restart_backoff.unwrap_or(DEFAULT_BACKOFF),
        node_grace: node_grace.unwrap_or(DEFAULT_NODE_GRACE),
    }
}

/// The stall bound (`--stall-after`, else the one derived from `stall_factor` and
/// `stall_floor`) and what a stall does: `on`, made a restart by `stall` in
/// `--restart-on` unless it is `fail`.
pub(crate) fn stall(settings: &Settings, on: OnStall) -> Stall {
    let bound = match settings.stall_after.value {
        Some(after) => StallBound::After(after),
        None => StallBound::Derived {
            factor: settings.stall_factor.value,
            floor: settings.stall_floor.value,
        },
    };
    let on = match on {
        OnStall::Warn if settings.restart_on.value.stall && settings.restarts.value > 0 => {
            OnStall::Restart
        }
        on => on,
    };
    Stall { bound, on }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::settings::table::{Given, KEYS, Table};

    /// The follow `args` (a spawn's, `wait`'s or `sweep`'s) asks for, with a defaults
    /// file of `text`.
    fn followed(args: &[&str], text: &str) -> Wait {
        let words = std::iter::once("tf-spawner").chain(args.iter().copied());
        let matches = Cli::command().try_get_matches_from(words).unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        let file =
            crate::settings::defaults::parse(text, Path::new("/etc/tfs/c.yaml"), KEYS).unwrap();
        let given = Given {
            matches: &matches,
            file: &file,
            project: None,
            kubeconfig: None,
            untrusted: Default::default(),
        };
        let settings = Settings {
            config_file: None,
            config_file_found: true,
            project: None,
            table: Table::load(&given).unwrap(),
            output: Default::default(),
            retry: Default::default(),
            kube: Err("no cluster".to_string()),
        };
        let follower = match &cli.command {
            Some(Command::Wait(args)) => Follower::Wait(args),
            Some(Command::Sweep(args)) => Follower::Sweep(&args.spawn),
            _ => Follower::Spawn(&cli.spawn, "sp"),
        };
        wait(&settings, follower, Instant::now())
    }

    #[test]
    fn every_follower_reads_the_settings_but_a_sweeps_runs_leave_a_cancel_to_the_sweep() {
        let file = "on_cancel: delete\nkeep_running: true\nheartbeat: 0s\n";
        let sweep = ["sweep", "--param", "n=1,2", "t.py"];
        for (args, cancel) in [
            (&["wait", "-t", "w"][..], OnCancel::Delete),
            (&["--wait", "t.py"][..], OnCancel::Delete),
            (&sweep[..], OnCancel::Leave),
        ] {
            let wait = followed(args, file);
            assert_eq!(wait.on_cancel, cancel, "{args:?}");
            assert!(wait.keep_running && wait.heartbeat.is_none(), "{args:?}");
            assert!(wait.observer.is_none(), "{args:?}");
        }
        let wait = followed(&["wait", "-t", "w", "--on-cancel", "stop"], "");
        assert_eq!((wait.on_cancel, wait.tag.as_str()), (OnCancel::Stop, "w"));
    }

    #[test]
    fn spawn_wait_follows_to_the_verdict_only_when_restarts_or_a_notice_need_it() {
        let wait = followed(&["--wait", "t.py"], "");
        assert_eq!((wait.until, wait.tag.as_str()), (WaitFor::Start, "sp"));
        let wait = followed(&["--wait", "--restarts", "2", "t.py"], "");
        assert_eq!((wait.until, wait.restarts.max), (WaitFor::End, 2));
        let wait = followed(&["--wait", "t.py"], "notify: echo done\n");
        assert_eq!(wait.until, WaitFor::End);
        let wait = followed(&["sweep", "--param", "n=1", "t.py"], "");
        assert_eq!((wait.until, wait.tag.as_str()), (WaitFor::End, ""));
    }

    #[test]
    fn a_stall_restarts_when_restart_on_says_so_unless_wait_says_fail() {
        let file = "restarts: 1\nrestart_on: stall\n";
        let on = |args: &[&str]| followed(args, file).stall.map(|s| s.on);
        assert_eq!(on(&["--wait", "t.py"]), Some(OnStall::Restart));
        assert_eq!(on(&["wait", "-t", "w"]), Some(OnStall::Restart));
        assert_eq!(
            on(&["wait", "-t", "w", "--on-stall", "fail"]),
            Some(OnStall::Fail)
        );
        assert_eq!(
            followed(&["wait", "-t", "w"], "").stall.map(|s| s.on),
            Some(OnStall::Warn)
        );
    }
}
