//! A local run followed to its end: the [`Runner`] takes the tasks' output and exits,
//! the verdict, `--timeout`, a signal or a sweep's early stop, and moves through its
//! stages (running, stopping with [`GRACE`], draining) until every process has ended.

use std::pin::Pin;
use std::time::Duration;

use rustix::process::Signal;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::groups::Groups;
use super::outcome::{Ended, Outcome, decide, decision_note, ids};
use super::pipe::{Event, Piece, Printer};
use super::reaper;
use super::setup::LocalPlan;
use crate::roles::{Role, Task};
use crate::signals;
use crate::trainlog::Training;

/// How long tasks get between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long to wait for processes to go after SIGKILL (or for their output to end).
const AFTER_KILL: Duration = Duration::from_secs(5);

/// What the runner needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub timeout: Option<Duration>,
    /// The env file (`-e`), named when the environment cannot start a process.
    pub env_file: Option<String>,
    /// Colour the task prefixes.
    pub colour: bool,
    /// A sweep's view of its runs: the deciding task's training goes there (as
    /// `Seen::Training`) at each epoch's end.
    pub observer: Option<(String, crate::progress::Observer)>,
    /// A sweep's decision to stop the run early: its tasks stopped as after a verdict.
    pub early: Option<crate::progress::EarlyStop>,
}

/// The instant `d` from now (the constants here never pass the clock's range; if one
/// did, the wait would end at once instead of panicking).
fn in_(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d).unwrap_or(now)
}

/// Where a local run is.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// No outcome yet: until the verdict, `--timeout`, or a signal.
    Running,
    /// The outcome is known; the tasks left got SIGTERM and have until `kill_at`.
    Stopping { kill_at: Instant },
    /// SIGKILL was sent, or every process ended: the output has until `give_up_at`
    /// to drain.
    Draining { give_up_at: Instant },
}

/// The state of a local run while it is followed.
pub(super) struct Runner<'a> {
    plan: &'a LocalPlan,
    /// The deciding task's place in the plan, and what its lines say of the training.
    deciding: Option<usize>,
    training: Training,
    timeout: Option<Duration>,
    timeout_at: Option<Instant>,
    printer: Printer,
    ended: Vec<Option<Ended>>,
    streams_open: usize,
    outcome: Option<Outcome>,
    stage: Stage,
    groups: Groups,
    observer: Option<(String, crate::progress::Observer)>,
    early: Option<crate::progress::EarlyStop>,
}

impl<'a> Runner<'a> {
    /// The runner of `plan`'s tasks, started as `groups`.
    pub(super) fn new(plan: &'a LocalPlan, options: &RunOptions, groups: Groups) -> Runner<'a> {
        let has_chief = plan.tasks.iter().any(|t| t.task.role == Role::Chief);
        let deciding = Task::deciding(has_chief);
        Runner {
            plan,
            deciding: plan.tasks.iter().position(|t| t.task == deciding),
            training: Training::default(),
            timeout: options.timeout,
            // A timeout beyond the clock's range is no timeout.
            timeout_at: options.timeout.and_then(|t| Instant::now().checked_add(t)),
            printer: Printer::new(plan, options.colour),
            ended: vec![None; plan.tasks.len()],
            streams_open: plan.tasks.len().saturating_mul(2),
            outcome: None,
            stage: Stage::Running,
            groups,
            observer: options.observer.clone(),
            early: options.early.clone(),
        }
    }

    /// After [`Self::run`]: the live line ended, every group still alive killed, the
    /// outcome and what the deciding task's lines said of the training.
    pub(super) fn finish(mut self) -> (Outcome, Training) {
        self.printer.end_live();
        let Runner {
            outcome,
            groups,
            training,
            ..
        } = self;
        drop(groups);
        (outcome.expect("the loop ends with an outcome"), training)
    }
}

impl Runner<'_> {
    /// Handles events until every process has ended and its output is read (or until
    /// patience runs out).
    pub(super) async fn run(
        &mut self,
        mut rx: mpsc::Receiver<Event>,
        stop: &mut (impl Future<Output = u8> + Unpin),
    ) {
        // After `stop` fired: a second request, which skips what is left of the grace.
        let mut stop_fired = false;
        let mut early = self.early.take();
        let mut again: Pin<Box<dyn Future<Output = u8>>> = Box::pin(std::future::pending());
        while !self.done() {
            let deadline = self.deadline();
            let sleep = async {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = rx.recv() => self.event(event),
                () = sleep => {
                    if self.deadline_passed() {
                        return;
                    }
                }
                code = &mut *stop, if !stop_fired => {
                    stop_fired = true;
                    again = Box::pin(signals::stop_requested());
                    if self.outcome.is_none() {
                        let left = running(self.plan, &self.ended);
                        self.printer.note(&format!("interrupted; stopping {}", ids(&left)));
                        self.decided(Outcome::Interrupted(code));
                    } else {
                        self.kill_now();
                    }
                }
                _ = &mut again => {
                    again = Box::pin(std::future::pending());
                    self.kill_now();
                }
                line = crate::progress::stopped_early(&mut early), if self.outcome.is_none() => {
                    let left = running(self.plan, &self.ended);
                    self.printer.note(&format!("stopped early; stopping {}", ids(&left)));
                    self.decided(Outcome::StoppedEarly(line));
                }
            }
        }
    }

    /// Whether the run is over; moves to draining once every process has ended.
    fn done(&mut self) -> bool {
        if !self.ended.iter().all(Option::is_some) {
            return false;
        }
        if self.outcome.is_none() {
            // Every process ended without a verdict: cannot happen with the rule (the
            // deciding task's end decides), but never hang.
            self.decided(Outcome::Failed {
                task: None,
                ended: None,
                stopped: Vec::new(),
            });
        }
        match self.stage {
            _ if self.streams_open == 0 => true,
            Stage::Draining { give_up_at } => Instant::now() >= give_up_at,
            Stage::Running | Stage::Stopping { .. } => {
                // Output may be held open by a process that left its group: stop it (it
                // is ours once its parent ended), and wait a little.
                reaper::kill_orphans(&self.groups.leaders());
                self.stage = Stage::Draining {
                    give_up_at: in_(AFTER_KILL),
                };
                false
            }
        }
    }

    /// Before the outcome: the timeout; then SIGKILL time; then the end of patience.
    fn deadline(&self) -> Option<Instant> {
        match self.stage {
            Stage::Running => self.timeout_at,
            Stage::Stopping { kill_at } => Some(kill_at),
            Stage::Draining { give_up_at } => Some(give_up_at),
        }
    }

    /// The deadline of the stage passed; `true` when the run is to be left as it is.
    fn deadline_passed(&mut self) -> bool {
        match self.stage {
            Stage::Running => {
                let running = running(self.plan, &self.ended);
                let after = self.timeout.unwrap_or_default();
                self.printer.note(&format!(
                    "timed out after {}; stopping {}",
                    humantime::format_duration(after),
                    ids(&running)
                ));
                self.decided(Outcome::TimedOut { after, running });
                false
            }
            Stage::Stopping { .. } => {
                let left = running(self.plan, &self.ended);
                self.printer.note(&format!(
                    "{} still running {}s after SIGTERM: sending SIGKILL",
                    ids(&left),
                    GRACE.as_secs()
                ));
                self.signal_all(Signal::KILL);
                self.stage = Stage::Draining {
                    give_up_at: in_(AFTER_KILL),
                };
                false
            }
            Stage::Draining { .. } => true,
        }
    }

    fn event(&mut self, event: Option<Event>) {
        match event {
            Some(Event::Output(at, piece)) => {
                if let Piece::Line(line) = &piece
                    && Some(at) == self.deciding
                {
                    let now = crate::duration::now_ms();
                    let before = self.training.history.points.last().cloned();
                    self.training.read_line(now, line);
                    if self.training.history.points.last() != before.as_ref() {
                        self.observed();
                    }
                }
                self.printer.piece(at, &piece);
            }
            Some(Event::Closed) => self.streams_open = self.streams_open.saturating_sub(1),
            Some(Event::Exited(at, status)) => {
                self.ended[at] = Some(Ended::from_status(status));
                if self.outcome.is_none() {
                    let states: Vec<(Task, Option<Ended>)> = self
                        .plan
                        .tasks
                        .iter()
                        .zip(&self.ended)
                        .map(|(t, e)| (t.task, *e))
                        .collect();
                    if let Some(o) = decide(&self.plan.tag, &states) {
                        self.printer.note(&decision_note(&o));
                        self.decided(o);
                    }
                }
            }
            None => {
                self.streams_open = 0;
                for e in self.ended.iter_mut().filter(|e| e.is_none()) {
                    *e = Some(Ended::Code(-1));
                }
            }
        }
    }

    /// An epoch's end (or its metrics drawn again): the training to the sweep's view.
    fn observed(&self) {
        if let Some((tag, to)) = &self.observer {
            let _ = to.send(crate::progress::Seen::Training {
                tag: tag.clone(),
                training: Box::new(self.training.clone()),
            });
        }
    }

    /// The outcome is known: the tasks still running get SIGTERM and [`GRACE`].
    fn decided(&mut self, outcome: Outcome) {
        self.outcome = Some(outcome);
        for (at, _) in self.ended.iter().enumerate().filter(|(_, e)| e.is_none()) {
            self.groups.signal(at, Signal::TERM);
        }
        if let Stage::Running = self.stage {
            self.stage = Stage::Stopping {
                kill_at: in_(GRACE),
            };
        }
    }

    /// Asked to stop while stopping: no more grace.
    fn kill_now(&mut self) {
        self.signal_all(Signal::KILL);
        if !matches!(self.stage, Stage::Draining { .. }) {
            self.stage = Stage::Draining {
                give_up_at: in_(AFTER_KILL),
            };
        }
    }

    fn signal_all(&self, sig: Signal) {
        self.groups.signal_all(sig);
    }
}

fn running(plan: &LocalPlan, ended: &[Option<Ended>]) -> Vec<Task> {
    plan.tasks
        .iter()
        .zip(ended)
        .filter(|(_, e)| e.is_none())
        .map(|(t, _)| t.task)
        .collect()
}
