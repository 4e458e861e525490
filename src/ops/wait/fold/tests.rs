//! The follow's rules, fed events: no server, no sleeping.

use std::time::{Duration, Instant};

use super::*;
use crate::verdict::{Failure, FailureKind};

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
        ends(&fold.step(Event::Run(seen(Verdict::Running)), at(t0, 1))),
        None
    );
    let done = fold.step(Event::Run(seen(Verdict::Succeeded)), at(t0, 2));
    assert_eq!(
        ends(&done),
        Some(&Outcome::Done(Done::Final(Verdict::Succeeded)))
    );
    let mut fold = Fold::new(rules());
    let done = fold.step(Event::Run(seen(failed())), at(t0, 2));
    assert_eq!(ends(&done), Some(&Outcome::Done(Done::Final(failed()))));
    let empty = RunSeen {
        empty: true,
        ..seen(Verdict::Pending)
    };
    let mut fold = Fold::new(rules());
    assert_eq!(
        ends(&fold.step(Event::Run(empty), at(t0, 1))),
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
        ends(&fold.step(Event::Run(seen(Verdict::Pending)), at(t0, 1))),
        None
    );
    let started = RunSeen {
        started: true,
        ..seen(Verdict::Running)
    };
    assert_eq!(
        ends(&fold.step(Event::Run(started), at(t0, 2))),
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
    let first = fold.step(Event::Run(with.clone()), at(t0, 1));
    assert_eq!(first, vec![Effect::Deciding(Some(pod))]);
    assert_eq!(fold.step(Event::Run(with), at(t0, 2)), vec![]);
    let gone = fold.step(Event::Run(seen(Verdict::Running)), at(t0, 3));
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
    fold.step(Event::Run(created.clone()), at(t0, 0));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(40)));
    assert_eq!(fold.step(Event::Tick, at(t0, 39)), vec![]);
    assert_eq!(
        ends(&fold.step(Event::Tick, at(t0, 40))),
        Some(&Outcome::NotStarted(limit))
    );
    // Started in time: the timer is off for good, even if a task goes back to waiting.
    let mut fold = Fold::new(rules);
    fold.step(Event::Run(created.clone()), at(t0, 0));
    let started = RunSeen {
        started: true,
        ..created.clone()
    };
    fold.step(Event::Run(started), at(t0, 10));
    fold.step(Event::Run(created), at(t0, 20));
    assert_eq!(fold.next_wake(), None);
    assert_eq!(fold.step(Event::Tick, at(t0, 50)), vec![]);
}

#[test]
fn a_stall_is_named_once_per_silence_and_only_after_progress() {
    let t0 = Instant::now();
    let after = Duration::from_secs(600);
    let mut fold = Fold::new(Rules {
        stall: Some(Stall {
            after,
            on: OnStall::Warn,
        }),
        ..rules()
    });
    // A script that prints no progress is never stalled.
    assert_eq!(fold.next_wake(), None);
    let t = progress(3);
    let shown = fold.step(Event::Training(t.clone()), at(t0, 5));
    assert_eq!(shown, vec![Effect::ShowTraining(t.clone())]);
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(605)));
    assert_eq!(fold.step(Event::Tick, at(t0, 604)), vec![]);
    let named = fold.step(Event::Tick, at(t0, 605));
    assert_eq!(
        named,
        vec![Effect::ShowStall(t.clone(), stalled_text(&t, after))]
    );
    // Named once: the next only after new progress.
    assert_eq!(fold.next_wake(), None);
    fold.step(Event::Training(progress(4)), at(t0, 700));
    assert_eq!(fold.next_wake(), Some(t0 + Duration::from_secs(1300)));
}

#[test]
fn a_stall_fails_the_run_with_on_stall_fail() {
    let t0 = Instant::now();
    let after = Duration::from_secs(60);
    let mut fold = Fold::new(Rules {
        stall: Some(Stall {
            after,
            on: OnStall::Fail,
        }),
        ..rules()
    });
    fold.step(Event::Training(progress(1)), at(t0, 0));
    assert_eq!(
        ends(&fold.step(Event::Tick, at(t0, 60))),
        Some(&Outcome::Stalled(after))
    );
}

#[test]
fn a_signal_ends_the_follow_with_its_code() {
    let mut fold = Fold::new(rules());
    let end = fold.step(Event::Signal(130), Now::now());
    assert_eq!(end, vec![Effect::End(Outcome::Signal(130))]);
}
