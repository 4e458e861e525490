//! What one wait is asked to do: its options, from `wait`'s, `spawn --wait`'s and the
//! sweep's flags.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::metrics::notice::Target;
use crate::plan::supervisor::FollowRecord;
use crate::trainlog::Training;

/// `wait --for`: what to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitFor {
    /// Every pod is running or finished
    Start,
    /// The run has succeeded or failed
    End,
}

/// `--on-stall`: what a stall does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnStall {
    /// Name it (the training line, then the report) and go on waiting
    Warn,
    /// Fail the run: exit 3, the unfinished pods stopped as after any verdict
    Fail,
    /// Restart the run as for a preemption, counted against --restarts (fail once
    /// none is left)
    Restart,
}

impl OnStall {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            OnStall::Warn => "warn",
            OnStall::Fail => "fail",
            OnStall::Restart => "restart",
        }
    }
}

/// `--on-cancel`: what a cancelled wait (SIGINT, SIGTERM: a CI job cancelled, Ctrl-C)
/// does to the run it follows, without `--cleanup` (with it, the run is deleted, its
/// logs saved first, as at the end). Whatever it does, `--save-logs` is written first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnCancel {
    /// Leave the run as it is: only the watching stops (a person at a terminal)
    #[default]
    Leave,
    /// Stop the run's unfinished pods, keeping the finished ones, the logs and the
    /// record until -d (as after a verdict)
    Stop,
    /// Delete the run (as --cleanup does at the end)
    Delete,
}

impl OnCancel {
    /// The flag's and the defaults file's spelling.
    pub fn name(self) -> &'static str {
        match self {
            OnCancel::Leave => "leave",
            OnCancel::Stop => "stop",
            OnCancel::Delete => "delete",
        }
    }
}

/// How long a cancelled wait may take to do what `--on-cancel` or `--cleanup` asks
/// (logs saved, pods stopped, the run deleted) before it exits anyway: GitHub Actions
/// sends SIGTERM 7.5 s after its SIGINT and SIGKILL 2.5 s later; GitLab's runner, a
/// `docker stop` and Kubernetes give 10 s or more.
pub const CANCEL_BOUND: Duration = Duration::from_secs(7);

/// The derived stall bound's defaults: ten times the longest gap between two progress
/// lines seen so far, never under 30 minutes (`stall_factor`, `stall_floor`).
pub const DEFAULT_STALL_FACTOR: u32 = 10;
pub const DEFAULT_STALL_FLOOR: Duration = Duration::from_secs(30 * 60);

/// How long the deciding task may print no progress line before it is stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallBound {
    /// `--stall-after`: the user's bound.
    After(Duration),
    /// Derived from what the run has shown: `factor` × the longest gap between two
    /// progress lines so far, at least `floor`. A factor of 0: no stall is named.
    Derived { factor: u32, floor: Duration },
}

impl StallBound {
    /// The bound for the training so far; `None` while it printed no progress (a
    /// script that prints none is never stalled) or with a factor of 0.
    pub fn of(self, training: &Training) -> Option<Duration> {
        if training.is_empty() {
            return None;
        }
        match self {
            StallBound::After(d) => Some(d),
            StallBound::Derived { factor: 0, .. } => None,
            StallBound::Derived { factor, floor } => {
                let gap = u64::try_from(training.longest_gap.unwrap_or(0)).unwrap_or(0);
                let derived = Duration::from_millis(gap).saturating_mul(factor);
                Some(derived.max(floor))
            }
        }
    }

    /// Where the bound comes from, for the stall's line: `--stall-after 30m`, or
    /// `30m: at least 10 × its longest gap between progress lines, 40s`.
    pub fn source(self, training: &Training) -> String {
        let shown = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs()));
        match self {
            StallBound::After(d) => format!("--stall-after {}", humantime::format_duration(d)),
            StallBound::Derived { factor, floor } => {
                let bound = self.of(training).unwrap_or(floor);
                let gap = training.longest_gap.unwrap_or(0).max(0) as u64 / 1000;
                format!(
                    "{}: {factor} × its longest gap between progress lines, {}, at least {}",
                    shown(bound),
                    shown(Duration::from_secs(gap)),
                    shown(floor)
                )
            }
        }
    }
}

/// The stall bound and what a stall does (`--stall-after` or the derived bound, and
/// `--on-stall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub bound: StallBound,
    pub on: OnStall,
}

/// One wait.
#[derive(Debug, Clone)]
pub struct Wait {
    pub tag: String,
    pub until: WaitFor,
    pub timeout: Option<Duration>,
    /// `--start-timeout`: the run fails unless every task runs (or has finished) this
    /// long after its creation (its earliest pod's `creationTimestamp`).
    pub start_timeout: Option<Duration>,
    /// When the command started: the timeout counts from then, whatever the command
    /// did first (a spawn's creates, a list of many pages).
    pub started: Instant,
    pub all_workers: bool,
    pub save_logs: Option<PathBuf>,
    pub cleanup: bool,
    /// `--keep-running`: leave the unfinished pods after a verdict.
    pub keep_running: bool,
    pub max_in_flight: usize,
    /// `--restarts`, `--restart-on`, `--restart-backoff` (see `ops/restart/options.rs`).
    pub restarts: crate::ops::restart::Restarts,
    /// The stall bound and `--on-stall` (`None`: no stall is ever named).
    pub stall: Option<Stall>,
    /// A view of several runs (a sweep's) that shows this run: its state and training
    /// go there instead of this wait's own progress lines.
    pub observer: Option<crate::progress::Observer>,
    /// A sweep's early stopping: the line of its decision to stop this run, once made
    /// (`ops/sweep/early.rs`); the wait then ends as after a verdict, the run's pods
    /// stopped and kept, the run recorded as stopped early.
    pub early: Option<crate::progress::EarlyStop>,
    /// `--notify`: where the verdict is told (`ops/notify.rs`).
    pub notify: Option<crate::metrics::notice::Target>,
    /// `--on-cancel`: what a SIGINT or SIGTERM does to the run (without `--cleanup`).
    pub on_cancel: OnCancel,
    /// `-o json|yaml`: the verdict document on stdout (`Table`: none, the lines alone).
    pub output: crate::output::ReportFormat,
    /// `--heartbeat`: in a pipe, a line after this long without one (`None`: never).
    pub heartbeat: Option<std::time::Duration>,
    /// The run's supervisor follows (`tf-spawner supervise`): its cleanup deletes the
    /// supervisor's own objects last.
    pub supervising: bool,
}

impl Wait {
    /// What a supervisor follows the run with (`spawn --detach`, `plan/supervisor.rs`):
    /// this wait's settings a pod can carry out. `None` with why when it has one a pod
    /// cannot: a `--notify` command (a pod has no shell for it).
    pub fn to_record(&self) -> Result<FollowRecord, String> {
        let notify = match &self.notify {
            None => None,
            Some(Target::Url(url)) => Some(url.clone()),
            Some(Target::Command(_)) => {
                return Err("--notify with --detach takes an http:// or https:// URL: the supervisor's pod has no shell to run a command in".to_string());
            }
        };
        let (stall_after, stall_factor, stall_floor) = match self.stall.map(|s| s.bound) {
            Some(StallBound::After(d)) => (Some(d.as_secs()), 0, 0),
            Some(StallBound::Derived { factor, floor }) => (None, factor, floor.as_secs()),
            None => (None, 0, 0),
        };
        Ok(FollowRecord {
            start_timeout: self.start_timeout.map(|d| d.as_secs()),
            all_workers: self.all_workers,
            cleanup: self.cleanup,
            keep_running: self.keep_running,
            max_in_flight: self.max_in_flight,
            restarts: self.restarts.max,
            // From none: the default set's codes a user took out stay out.
            restart_on: format!("none,{}", self.restarts.on),
            restart_backoff: self.restarts.backoff.as_secs(),
            node_grace: self.restarts.node_grace.as_secs(),
            stall_after,
            stall_factor,
            stall_floor,
            on_stall: self.stall.map_or("warn", |s| s.on.name()).to_string(),
            notify,
        })
    }

    /// The supervisor's follow of run `tag`, from its record; `Err` with why, in words,
    /// for a record no spawn writes (anyone who may edit the namespace's Secrets may
    /// write one).
    pub fn from_record(tag: &str, r: &FollowRecord, started: Instant) -> Result<Wait, String> {
        let secs = Duration::from_secs;
        let on: crate::verdict::retryable::RestartOn =
            r.restart_on.parse().map_err(|e| format!("{e}"))?;
        let on_stall = match r.on_stall.as_str() {
            "warn" => OnStall::Warn,
            "fail" => OnStall::Fail,
            "restart" => OnStall::Restart,
            other => return Err(format!("on_stall {other:?} is none of warn, fail, restart")),
        };
        let notify = match &r.notify {
            None => None,
            Some(url) => match Target::parse(url)? {
                Target::Url(u) => Some(Target::Url(u)),
                Target::Command(_) => {
                    return Err("notify is not an http:// or https:// URL".to_string());
                }
            },
        };
        let bound = match r.stall_after {
            Some(after) => StallBound::After(secs(after)),
            None => StallBound::Derived {
                factor: r.stall_factor,
                floor: secs(r.stall_floor),
            },
        };
        Ok(Wait {
            tag: tag.to_string(),
            until: WaitFor::End,
            timeout: None,
            start_timeout: r.start_timeout.map(secs),
            started,
            all_workers: r.all_workers,
            save_logs: None,
            cleanup: r.cleanup,
            keep_running: r.keep_running,
            max_in_flight: r.max_in_flight.max(1),
            restarts: crate::ops::restart::Restarts {
                max: r.restarts,
                on,
                backoff: secs(r.restart_backoff),
                node_grace: secs(r.node_grace),
            },
            stall: Some(Stall {
                bound,
                on: on_stall,
            }),
            observer: None,
            early: None,
            notify,
            on_cancel: OnCancel::Leave,
            output: crate::output::ReportFormat::Table,
            heartbeat: Some(crate::ops::holdups::HEARTBEAT),
            supervising: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(times: &[i64]) -> Training {
        let mut t = Training::default();
        for (k, at) in times.iter().enumerate() {
            t.read(*at, &format!("Epoch {}/9", k + 1), true);
        }
        t
    }

    const DERIVED: StallBound = StallBound::Derived {
        factor: DEFAULT_STALL_FACTOR,
        floor: DEFAULT_STALL_FLOOR,
    };

    fn wait() -> Wait {
        let record = crate::plan::supervisor::tests::follow();
        Wait::from_record("t", &record, Instant::now()).unwrap()
    }

    #[test]
    fn a_supervisors_settings_make_the_same_follow_back() {
        let mut w = wait();
        w.restarts.on = "no-exit:137,exit:42,stall".parse().unwrap();
        w.stall = Some(Stall {
            bound: StallBound::After(Duration::from_secs(90)),
            on: OnStall::Restart,
        });
        let record = w.to_record().unwrap();
        let back = Wait::from_record("t", &record, w.started).unwrap();
        // A default code the user took out stays out.
        assert_eq!(back.restarts.on, w.restarts.on);
        assert_eq!(back.stall, w.stall);
        assert_eq!(back.notify, w.notify);
        assert_eq!(back.start_timeout, w.start_timeout);
        assert_eq!(back.to_record().unwrap(), record);
        assert!(back.supervising);
    }

    #[test]
    fn a_forged_record_is_refused_in_words() {
        let mut r = crate::plan::supervisor::tests::follow();
        r.notify = Some("curl evil".to_string());
        let why = Wait::from_record("t", &r, Instant::now()).unwrap_err();
        assert_eq!(why, "notify is not an http:// or https:// URL");
        let mut r = crate::plan::supervisor::tests::follow();
        r.on_stall = "explode".to_string();
        assert!(Wait::from_record("t", &r, Instant::now()).is_err());
        let mut w = wait();
        w.notify = Some(Target::Command("./tell.sh".to_string()));
        assert!(
            w.to_record()
                .unwrap_err()
                .contains("takes an http:// or https:// URL")
        );
    }

    #[test]
    fn no_progress_is_never_stalled() {
        let t = Training::default();
        assert_eq!(DERIVED.of(&t), None);
        assert_eq!(StallBound::After(Duration::from_secs(5)).of(&t), None);
    }

    #[test]
    fn the_derived_bound_is_a_multiple_of_the_longest_gap_never_under_the_floor() {
        let min = |m: u64| Duration::from_secs(60 * m);
        // One line, or short gaps: the floor.
        assert_eq!(DERIVED.of(&printed(&[0])), Some(min(30)));
        assert_eq!(DERIVED.of(&printed(&[0, 60_000, 90_000])), Some(min(30)));
        // An epoch line every 12 minutes: 120 minutes.
        let slow = printed(&[0, 5 * 60_000, 17 * 60_000]);
        assert_eq!(DERIVED.of(&slow), Some(min(120)));
        let three = StallBound::Derived {
            factor: 3,
            floor: min(1),
        };
        assert_eq!(three.of(&slow), Some(min(36)));
        let off = StallBound::Derived {
            factor: 0,
            floor: min(1),
        };
        assert_eq!(off.of(&slow), None);
        // The explicit bound replaces the derived one.
        assert_eq!(StallBound::After(min(5)).of(&slow), Some(min(5)));
    }

    #[test]
    fn the_bound_says_where_it_comes_from() {
        let slow = printed(&[0, 12 * 60_000]);
        assert_eq!(
            DERIVED.source(&slow),
            "2h: 10 × its longest gap between progress lines, 12m, at least 30m"
        );
        assert_eq!(
            StallBound::After(Duration::from_secs(90)).source(&slow),
            "--stall-after 1m 30s"
        );
    }
}
