//! The follow's rules, pure: a state machine that folds the events of a followed run
//! (its pods settled after a change, the training's progress, the clock, a signal) into
//! what to do (hand the progress reader the deciding task's pod, show the training,
//! name a stall) and, once, how the follow ends. No I/O and no clock of its own: each
//! event comes with the time it was seen ([`Now`]), and [`Fold::next_wake`] says when
//! a bound passes, so that every rule is tested by feeding events.

use std::time::{Duration, Instant};

use super::options::{OnStall, Stall, StallBound, WaitFor};
use crate::trainlog::Training;
use crate::verdict::{PodView, Tracker, Verdict};

/// How the follow's part of a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Done {
    Empty,
    Started,
    Final(Verdict),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Done(Done),
    Timeout(Duration),
    /// `--start-timeout` passed with a task not running yet.
    NotStarted(Duration),
    /// No progress line for the stall bound, with `--on-stall fail` or `restart`.
    Stalled(Stalled),
    Signal(u8),
    /// A sweep's early stopping decided (its line).
    StoppedEarly(String),
}

/// A stall that ends the follow: what to say, and the cause a restart records.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stalled {
    /// `no progress from worker-0 since 21:03:12 UTC (--stall-after 30m)`.
    pub text: String,
    /// `stalled at epoch 7, step 1200, for 45m`.
    pub cause: String,
}

/// What the fold needs of the run at a settled moment (a list complete, a burst of
/// changes folded).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RunSeen {
    /// No pods.
    pub empty: bool,
    pub verdict: Verdict,
    /// Every task runs or has finished.
    pub started: bool,
    /// The run's creation (its earliest pod's), seconds since the epoch.
    pub created: Option<i64>,
    /// The deciding task's pod, if it is there.
    pub deciding: Option<PodView>,
}

impl RunSeen {
    pub fn of(tracker: &Tracker) -> RunSeen {
        RunSeen {
            empty: tracker.is_empty(),
            verdict: tracker.verdict(),
            started: tracker.started(),
            created: tracker.created(),
            deciding: crate::ops::training::deciding(tracker).cloned(),
        }
    }
}

/// One event of a followed run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Event {
    Run(Box<RunSeen>),
    /// The deciding task printed a new progress line: the training now.
    Training(Box<Training>),
    /// The time [`Fold::next_wake`] named has come.
    Tick,
    /// SIGINT or SIGTERM: the exit code.
    Signal(u8),
}

/// When an event was seen: the monotonic clock (our bounds) and the wall clock in
/// seconds (the API server's times, such as a pod's creation).
#[derive(Debug, Clone, Copy)]
pub(super) struct Now {
    pub at: Instant,
    pub wall: i64,
}

impl Now {
    pub fn current() -> Now {
        let wall = crate::duration::now();
        Now {
            at: Instant::now(),
            wall,
        }
    }
}

/// What the driver does for an event.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Effect {
    /// The deciding task's pod changed: the progress reader follows this one.
    Deciding(Option<Box<PodView>>),
    ShowTraining(Training),
    /// A stall named (the training, and what to say); the follow goes on.
    ShowStall(Training, String),
    /// The follow is over.
    End(Outcome),
}

/// The bounds and the aim of one follow.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    pub until: WaitFor,
    /// `--timeout`: when it passes, and the duration to report.
    pub deadline: Option<(Instant, Duration)>,
    pub start_timeout: Option<Duration>,
    pub stall: Option<Stall>,
}

/// The state of one follow.
#[derive(Debug)]
pub(super) struct Fold {
    rules: Rules,
    /// The run has started (then the start timer is off for good).
    started: bool,
    /// When `--start-timeout` passes: set once the run's creation is seen.
    start_due: Option<Instant>,
    deciding: Option<PodView>,
    training: Training,
    /// When the last new progress line came, while a stall can be named (cleared once
    /// one was: the next is named after new progress).
    last_progress: Option<Instant>,
}

impl Fold {
    pub fn new(rules: Rules) -> Fold {
        Fold {
            rules,
            started: false,
            start_due: None,
            deciding: None,
            training: Training::default(),
            last_progress: None,
        }
    }

    /// When the next bound passes (`--timeout`, `--start-timeout`, a stall); `None`:
    /// only an event can change anything.
    pub fn next_wake(&self) -> Option<Instant> {
        let deadline = self.rules.deadline.map(|(at, _)| at);
        let start = self.start_due.filter(|_| !self.started);
        [deadline, start, self.stall_due()]
            .into_iter()
            .flatten()
            .min()
    }

    fn stall_due(&self) -> Option<Instant> {
        let bound = self.rules.stall?.bound.of(&self.training)?;
        self.last_progress.map(|at| at + bound)
    }

    /// Folds one event seen at `now`; what to do, in order.
    pub fn step(&mut self, event: Event, now: Now) -> Vec<Effect> {
        match event {
            Event::Run(seen) => self.run(*seen, now),
            Event::Training(training) => {
                if !training.is_empty() {
                    self.last_progress = Some(now.at);
                }
                self.training.clone_from(&training);
                vec![Effect::ShowTraining(*training)]
            }
            Event::Tick => self.tick(now).into_iter().collect(),
            Event::Signal(code) => vec![Effect::End(Outcome::Signal(code))],
        }
    }

    fn run(&mut self, seen: RunSeen, now: Now) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.deciding != seen.deciding {
            self.deciding.clone_from(&seen.deciding);
            effects.push(Effect::Deciding(seen.deciding.clone().map(Box::new)));
        }
        self.start_seen(&seen, now);
        if let Some(done) = done(&seen, self.rules.until) {
            effects.push(Effect::End(Outcome::Done(done)));
        }
        effects
    }

    /// The start timer: counted from the run's creation (the API server's clock, to the
    /// second) once it is seen, off for good once every task has started.
    fn start_seen(&mut self, seen: &RunSeen, now: Now) {
        let Some(limit) = self.rules.start_timeout else {
            return;
        };
        if self.started || seen.started {
            self.started = true;
            return;
        }
        if let (None, Some(created)) = (self.start_due, seen.created) {
            let limit = i64::try_from(limit.as_secs()).unwrap_or(i64::MAX);
            let left = created
                .saturating_add(limit)
                .saturating_sub(now.wall)
                .max(0);
            self.start_due = Some(now.at + Duration::from_secs(left as u64));
        }
    }

    /// The bounds that have passed by `now`: the timeout first, then the start
    /// timeout, then a stall.
    fn tick(&mut self, now: Now) -> Option<Effect> {
        if let Some((at, d)) = self.rules.deadline
            && now.at >= at
        {
            return Some(Effect::End(Outcome::Timeout(d)));
        }
        if let (Some(at), Some(limit)) = (self.start_due, self.rules.start_timeout)
            && !self.started
            && now.at >= at
        {
            return Some(Effect::End(Outcome::NotStarted(limit)));
        }
        let (stall, due) = self.rules.stall.zip(self.stall_due())?;
        if now.at < due {
            return None;
        }
        self.last_progress = None;
        if self.training.finished() {
            return None;
        }
        let task = self.deciding.as_ref().and_then(|p| p.task).map(|t| t.id());
        let text = stalled_text(task.as_deref(), &self.training, stall.bound, now.wall);
        Some(match stall.on {
            OnStall::Fail | OnStall::Restart => Effect::End(Outcome::Stalled(Stalled {
                text,
                cause: stall_cause(&self.training, now.wall),
            })),
            OnStall::Warn => Effect::ShowStall(self.training.clone(), text),
        })
    }
}

/// Whether the follow is done: no pods, a final verdict, or (`--for start`) every pod
/// started.
fn done(seen: &RunSeen, until: WaitFor) -> Option<Done> {
    if seen.empty {
        Some(Done::Empty)
    } else if seen.verdict.is_final() {
        Some(Done::Final(seen.verdict.clone()))
    } else if until == WaitFor::Start && seen.started {
        Some(Done::Started)
    } else {
        None
    }
}

/// `no progress from worker-0 since 21:03:12 UTC (--stall-after 30m)`, the deciding
/// task named when known; the bound says where it comes from (`StallBound::source`).
pub fn stalled_text(
    task: Option<&str>,
    training: &Training,
    bound: StallBound,
    now: i64,
) -> String {
    let since = training.last_at.map_or_else(
        || "its start".to_string(),
        |ms| crate::duration::clock(ms / 1000, now),
    );
    let from = task.map(|t| format!(" from {t}")).unwrap_or_default();
    format!(
        "no progress{from} since {since} ({})",
        bound.source(training)
    )
}

/// What a restart for a stall records: `stalled at epoch 7, step 1200, for 45m`
/// (`wall`: now, in seconds).
pub(super) fn stall_cause(training: &Training, wall: i64) -> String {
    let mut at: Vec<String> = Vec::new();
    if let Some(k) = training.epoch {
        at.push(format!("epoch {k}"));
    }
    if let Some(s) = training.step {
        at.push(format!("step {s}"));
    }
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {},", at.join(", "))
    };
    let quiet = training
        .last_at
        .map_or(0, |ms| wall.saturating_sub(ms / 1000).max(0));
    let quiet = Duration::from_secs(quiet as u64);
    format!("stalled{at} for {}", humantime::format_duration(quiet))
}

#[cfg(test)]
mod tests;
