//! The follow's rules, fed events: no server, no sleeping.

use std::time::{Duration, Instant};

use super::*;
use crate::verdict::{Failure, FailureKind};

fn run_event(seen: RunSeen) -> Event {
    Event::Run(Box::new(seen))
}

fn training_event(training: Training) -> Event {
    Event::Training(Box::new(training))
}

fn rules() -> Rules {
    Rules {
        until: WaitFor::End,
        deadline: None,
        start_timeout: None,
        stall: None,
    }
}

fn seen(verdict: Verdict) -> RunSeen {
    RunSeen {
        empty: false,
        verdict,
        started: false,
        created: None,
        deciding: None,
    }
}

fn at(t0: Instant, secs: u64) -> Now {
    Now {
        at: t0 + Duration::from_secs(secs),
        wall: 1_000_000 + secs as i64,
    }
}

fn ends(effects: &[Effect]) -> Option<&Outcome> {
    effects.iter().find_map(|e| match e {
        Effect::End(o) => Some(o),
        _ => None,
    })
}

fn progress(epoch: u32) -> Training {
    let mut t = Training::default();
    t.read(1_000, &format!("Epoch {epoch}/10"), true);
    t
}

fn failed() -> Verdict {
    Verdict::Failed(Failure::new("w-0".to_string(), None, FailureKind::Gone))
}

#[test]
fn a_final_verdict_or_no_pods_ends_the_follow_and_a_running_run_does_not() {
    let t0 = Instant::now();
    let mut fold = Fold::new(rules());
    assert_eq!(
        ends(&fold.step(run_event(seen(Verdict::Running)), at(t0, 1))),
        None
    );
    let done = fold.step(run_event(seen(Verdict::Succeeded)), at(t0, 2));
    assert_eq!(
        ends(&done),
        Some(&Outcome::Done(Done::Final(Verdict::Succeeded)))
    );
    let mut fold = Fold::new(rules());
    let done = fold.step(run_event(seen(failed())), at(t0, 2));
    assert_eq!(ends(&done), Some(&Outcome::Done(Done::Final(failed()))));
    let empty = RunSeen {
        empty: true,
        ..seen(Verdict::Pending)
    };
    let mut fold = Fold::new(rules());
    assert_eq!(
        ends(&fold.step(run_event(empty), at(t0, 1))),
        Some(&Outcome::Done(Done::Empty))
    );
}

#[test]
fn waiting_for_the_start_ends_once_every_task_started() {
    let t0 = Instant::now();
    let mut fold = Fold::new(Rules {
        until: WaitFor::Start,
        ..rules()
    });
    assert_eq!(
        ends(&fold.step(run_event(seen(Verdict::Pending)), at(t0, 1))),
        None
    );
    let started = RunSeen {
        started: true,
        ..seen(Verdict::Running)
    };
    assert_eq!(
        ends(&fold.step(run_event(started), at(t0, 2))),
        Some(&Outcome::Done(Done::Started))
    );
}

#[test]
fn the_progress_reader_hears_of_the_deciding_pod_only_when_it_changes() {
    let t0 = Instant::now();
    let mut fold = Fold::new(rules());
    let pod = crate::verdict::tests::view(serde_json::json!({
        "metadata": {"name": "t-chief-0", "labels": {"training_attempt": "t"}},
        "status": {"phase": "Running"}
    }));
    let with = RunSeen {
        deciding: Some(pod.clone()),
        ..seen(Verdict::Running)
    };
    let first = fold.step(run_event(with.clone()), at(t0, 1));
    assert_eq!(first, vec![Effect::Deciding(Some(Box::new(pod)))]);
    assert_eq!(fold.step(run_event(with), at(t0, 2)), vec![]);
    let gone = fold.step(run_event(seen(Verdict::Running)), at(t0, 3));
    assert_eq!(gone, vec![Effect::Deciding(None)]);
}

#[test]
fn the_timeout_passes_at_its_time_and_not_before() {
    let t0 = Instant::now();
    let d = Duration::from_secs(90);
    let mut fold = Fold::new(Rules {
        deadline: Some((t0 + d, d)),
        ..rules()
    });
    assert_eq!(fold.next_wake(), Some(t0 + d));
    assert_eq!(fold.step(Event::Tick, at(t0, 89)), vec![]);
    assert_eq!(
        ends(&fold.step(Event::Tick, at(t0, 90))),
        Some(&Outcome::Timeout(d))
    );
}

#[test]
fn the_start_timeout_counts_from_the_runs_creation_and_stops_once_it_started() {
    let t0 = Instant::now();
    let limit = Duration::from_secs(60);
    let rules = Rules {
        start_timeout: Some(limit),
        ..rules()
    };
    // Created 20 s before it was first seen (the wall clock at t0+0 is 1_000_000).
    let created = RunSeen {
        created: Some(1_000_000 - 20),
        ..seen(Verdict::Pending)
    };
    let mut fold = Fold::new(rules);
    assert_eq!(fold.next_wake(), None);
    fold.step(run_event(created.clone()), at(t0, 0));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(40)));
    assert_eq!(fold.step(Event::Tick, at(t0, 39)), vec![]);
    assert_eq!(
        ends(&fold.step(Event::Tick, at(t0, 40))),
        Some(&Outcome::NotStarted(limit))
    );
    // Started in time: the timer is off for good, even if a task goes back to waiting.
    let mut fold = Fold::new(rules);
    fold.step(run_event(created.clone()), at(t0, 0));
    let started = RunSeen {
        started: true,
        ..created.clone()
    };
    fold.step(run_event(started), at(t0, 10));
    fold.step(run_event(created), at(t0, 20));
    assert_eq!(fold.next_wake(), None);
    assert_eq!(fold.step(Event::Tick, at(t0, 50)), vec![]);
}

#[test]
fn a_stall_is_named_once_per_silence_and_only_after_progress() {
    let t0 = Instant::now();
    let bound = StallBound::After(Duration::from_secs(600));
    let mut fold = Fold::new(Rules {
        stall: Some(Stall {
            bound,
            on: OnStall::Warn,
        }),
        ..rules()
    });
    // A script that prints no progress is never stalled.
    assert_eq!(fold.next_wake(), None);
    let t = progress(3);
    let shown = fold.step(training_event(t.clone()), at(t0, 5));
    assert_eq!(shown, vec![Effect::ShowTraining(t.clone())]);
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(605)));
    assert_eq!(fold.step(Event::Tick, at(t0, 604)), vec![]);
    let named = fold.step(Event::Tick, at(t0, 605));
    assert_eq!(
        named,
        vec![Effect::ShowStall(
            t.clone(),
            stalled_text(None, &t, bound, 1_000_605)
        )]
    );
    // Named once: the next only after new progress.
    assert_eq!(fold.next_wake(), None);
    fold.step(training_event(progress(4)), at(t0, 700));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(1300)));
}

#[test]
fn the_derived_bound_follows_the_longest_gap_the_training_showed() {
    let t0 = Instant::now();
    let mut fold = Fold::new(Rules {
        stall: Some(Stall {
            bound: StallBound::Derived {
                factor: 10,
                floor: Duration::from_secs(60),
            },
            on: OnStall::Warn,
        }),
        ..rules()
    });
    // One line: the floor.
    let mut t = Training::default();
    t.read(0, "Epoch 1/10", true);
    fold.step(training_event(t.clone()), at(t0, 0));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(60)));
    // A 20 s gap between two lines: 200 s from the last.
    t.read(20_000, "Epoch 2/10", true);
    fold.step(training_event(t.clone()), at(t0, 20));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(220)));
    assert_eq!(fold.step(Event::Tick, at(t0, 219)), vec![]);
    let named = fold.step(Event::Tick, at(t0, 220));
    assert!(
        matches!(&named[..], [Effect::ShowStall(_, text)] if text.contains("(3m 20s: 10 × its longest gap between progress lines, 20s, at least 1m)")),
        "{named:?}"
    );
}

#[test]
fn a_stall_fails_or_restarts_the_run_with_its_cause() {
    for on in [OnStall::Fail, OnStall::Restart] {
        let t0 = Instant::now();
        let bound = StallBound::After(Duration::from_secs(60));
        let mut fold = Fold::new(Rules {
            stall: Some(Stall { bound, on }),
            ..rules()
        });
        let mut t = Training::default();
        // Printed at the wall clock's 1_000_000 s (`at`'s second 0).
        t.read(1_000_000_000, "Epoch 7/10", true);
        t.read(1_000_000_000, "1200/5000 - loss: 0.5", true);
        fold.step(training_event(t.clone()), at(t0, 0));
        let end = fold.step(Event::Tick, at(t0, 2700));
        assert_eq!(
            ends(&end),
            Some(&Outcome::Stalled(Stalled {
                text: stalled_text(None, &t, bound, 1_002_700),
                cause: "stalled at epoch 7, step 1200, for 45m".to_string(),
            }))
        );
    }
}

#[test]
fn a_signal_ends_the_follow_with_its_code() {
    let mut fold = Fold::new(rules());
    let end = fold.step(Event::Signal(130), Now::current());
    assert_eq!(end, vec![Effect::End(Outcome::Signal(130))]);
}
