//! The follow as one stream of events: the run's pods (a list, then a watch:
//! `cluster::watch::events`), the training's progress from the deciding task's log
//! (`ops/training.rs`, a task of its own), the clock at the bound [`Fold`] names, and a
//! signal. Each event goes to the fold (`fold.rs`); this file only carries out what it
//! says (show, hand the reader its pod) until it says the follow is over.

use std::time::Duration;

use anyhow::{Result, anyhow};
use tokio::sync::watch;

use super::fold::{Done, Effect, Event, Fold, Now, Outcome, Rules, RunSeen};
use super::options::Wait;
use crate::cluster::Cluster;
use crate::labels::run_selector;
use crate::ops::holdups::{self, Why, until};
use crate::progress::Progress;
use crate::signals;
use crate::trainlog::Training;
use crate::verdict::{PodView, Tracker};

/// How long, after the verdict, the deciding task's log may take to deliver its last
/// progress lines (the stream ends with the container; this is a bound).
const PROGRESS_DRAIN: Duration = Duration::from_secs(3);

/// Follows the run with progress until it is done, the timeout, or a signal; the
/// training's progress read from the deciding task's log meanwhile.
pub(super) async fn follow(
    cluster: &Cluster,
    wait: &Wait,
    tracker: &mut Tracker,
) -> Result<(Outcome, Training)> {
    let mut progress = match &wait.observer {
        Some(to) => Progress::Observed {
            tag: wait.tag.clone(),
            to: to.clone(),
        },
        None => Progress::new(),
    };
    let (deciding, deciding_rx) = watch::channel(None::<PodView>);
    let (training_tx, training) = watch::channel(Training::default());
    let mut reader = tokio::spawn(crate::ops::training::follow(
        cluster.clone(),
        deciding_rx,
        training_tx,
    ));
    let mut sources = Sources {
        run: crate::cluster::watch::events(cluster, &run_selector(&wait.tag)),
        training,
        training_open: true,
        why: Why::new(cluster, wait.observer.is_none()),
        heartbeat: wait.heartbeat,
        early: wait.early.clone(),
        listed: false,
    };
    let mut fold = Fold::new(rules(wait));
    let outcome = drive(&mut sources, &mut fold, tracker, &mut progress, &deciding).await;
    let verdict = matches!(outcome, Ok(Outcome::Done(Done::Final(_))));
    // After a verdict the deciding task's log delivers its last lines, for the report.
    let read_to_end = verdict
        && matches!(
            tokio::time::timeout(PROGRESS_DRAIN, &mut reader).await,
            Ok(Ok(true))
        );
    reader.abort();
    let mut last = sources.training.borrow().clone();
    if verdict && !read_to_end {
        last = read_whole(cluster, tracker, last).await;
    }
    // What arrived after the follow ended is shown too: the line ends as the log did.
    progress.show_training(&last);
    progress.finish();
    outcome.map(|o| (o, last))
}

/// The training for the report when the follow did not read the deciding task's log to
/// its end (a stream that froze or broke for good, a verdict before the last lines
/// came): the log read again whole, else what was read, marked partial.
async fn read_whole(cluster: &Cluster, tracker: &Tracker, followed: Training) -> Training {
    match crate::ops::training::whole(cluster, tracker).await {
        Some(whole) if !whole.is_empty() || followed.is_empty() => whole,
        _ => {
            let mut partial = followed;
            partial.partial = !partial.is_empty();
            partial
        }
    }
}

/// The fold's bounds and aim, from the wait's.
fn rules(wait: &Wait) -> Rules {
    Rules {
        until: wait.until,
        deadline: wait.timeout.map(|d| (wait.started + d, d)),
        start_timeout: wait.start_timeout,
        stall: wait.stall,
    }
}

/// Where the events come from.
struct Sources {
    run: crate::cluster::watch::Events,
    training: watch::Receiver<Training>,
    /// The progress reader still runs.
    training_open: bool,
    /// Why the run waits, said as it changes (`ops/holdups.rs`).
    why: Why,
    /// `--heartbeat`.
    heartbeat: Option<Duration>,
    /// A sweep's decision to stop the run early ([`Wait::early`]).
    early: Option<crate::progress::EarlyStop>,
    /// The run's pods were listed once: a decision taken now stops what they hold.
    listed: bool,
}

impl Sources {
    /// Says why the run waits, if that changed (the Events read first when due).
    async fn say_why(&mut self, progress: &mut Progress) {
        if let Some(why) = self.why.news().await {
            progress.show_waiting(why.as_deref());
        }
    }

    /// The heartbeat line: the run's state, the training, why it waits.
    fn heartbeat(&self, tracker: &Tracker, progress: &mut Progress) {
        let training = self.training.borrow();
        let heard = self.run.heard_ago();
        progress.heartbeat(tracker.verdict().name(), &training, self.why.said(), heard);
    }
}

/// Feeds the fold the next event, and carries out what it says, until it ends the
/// follow (or the run's watch fails: its error).
async fn drive(
    sources: &mut Sources,
    fold: &mut Fold,
    tracker: &mut Tracker,
    progress: &mut Progress,
    deciding: &watch::Sender<Option<PodView>>,
) -> Result<Outcome> {
    let stop = signals::stop_requested();
    tokio::pin!(stop);
    loop {
        let event = tokio::select! {
            event = sources.run.next() => match event {
                Some(Ok((event, more))) => {
                    if !crate::ops::fold(tracker, event) || more {
                        continue;
                    }
                    sources.listed = true;
                    progress.show(tracker);
                    sources.why.seen(holdups::unstarted(tracker));
                    sources.say_why(progress).await;
                    Event::Run(Box::new(RunSeen::of(tracker)))
                }
                Some(Err(e)) => return Err(e),
                None => return Err(anyhow!("the follow of run '{}' ended", tracker.tag())),
            },
            changed = sources.training.changed(), if sources.training_open => {
                if changed.is_err() {
                    sources.training_open = false;
                    continue;
                }
                Event::Training(Box::new(sources.training.borrow_and_update().clone()))
            }
            () = until(fold.next_wake()) => Event::Tick,
            () = until(sources.why.due()) => {
                sources.say_why(progress).await;
                continue;
            }
            () = until(progress.heartbeat_due(sources.heartbeat)) => {
                sources.heartbeat(tracker, progress);
                continue;
            }
            code = &mut stop => Event::Signal(code),
            line = crate::progress::stopped_early(&mut sources.early), if sources.listed => {
                return Ok(Outcome::StoppedEarly(line));
            }
        };
        for effect in fold.step(event, Now::current()) {
            match effect {
                Effect::Deciding(pod) => {
                    deciding.send_replace(pod.map(|p| *p));
                }
                Effect::ShowTraining(training) => progress.show_training(&training),
                Effect::ShowStall(training, text) => progress.show_stall(&training, &text),
                Effect::End(outcome) => return Ok(outcome),
            }
        }
    }
}
