//! The restart's state machine: one [`Restart`] (the attempt it starts, what it
//! re-creates, why), the [`State`]s it goes through, the [`Event`]s that move it
//! ([`next`], a pure fold), and the backoff before each attempt.

use std::collections::BTreeSet;
use std::time::Duration;

use super::options::MAX_BACKOFF;

/// One restart: the attempt it starts, what it re-creates, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Restart {
    pub(super) attempt: u32,
    pub(super) names: BTreeSet<String>,
    /// The failure the restart is for: on the new pods, for `status`.
    pub(super) cause: String,
    /// Of `names`, the pods on a node that stopped reporting: deleted at once.
    pub(super) lost: BTreeSet<String>,
    pub(super) why: String,
    pub(super) backoff: Duration,
    /// The port the attempt's tasks listen on (`roles::next_port` when it re-creates
    /// every task of the cluster); `None` when the run's ConfigMap does not say.
    pub(super) port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    Following,
    Stopping(Restart),
    Backoff(Restart),
    Creating(Restart),
    /// No (more) restart: the verdict stands.
    Done,
}

#[derive(Debug)]
pub(super) enum Event {
    /// The follow's final verdict, and the restart it calls for, if any.
    Verdict(Option<Restart>),
    /// The restart's pods are gone.
    Stopped,
    Waited,
    Created,
    /// A step failed: the restart cannot be made.
    StepFailed,
}

/// The fold: the state after `event`.
pub(super) fn next(state: State, event: Event) -> State {
    match (state, event) {
        (State::Following, Event::Verdict(Some(r))) => State::Stopping(r),
        (State::Stopping(r), Event::Stopped) => State::Backoff(r),
        (State::Backoff(r), Event::Waited) => State::Creating(r),
        (State::Creating(_), Event::Created) => State::Following,
        _ => State::Done,
    }
}

/// The backoff before `attempt` (1 for the first restart).
pub(super) fn backoff(first: Duration, attempt: u32) -> Duration {
    let doubled = first.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    doubled.min(MAX_BACKOFF.max(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restart(attempt: u32) -> Restart {
        Restart {
            attempt,
            names: ["t-worker-0".to_string()].into(),
            cause: "c".into(),
            lost: BTreeSet::new(),
            why: "w".into(),
            backoff: Duration::ZERO,
            port: None,
        }
    }

    #[test]
    fn a_restart_goes_through_every_step_and_follows_again() {
        let r = restart(1);
        let mut state = next(State::Following, Event::Verdict(Some(r.clone())));
        assert_eq!(state, State::Stopping(r.clone()));
        for (event, then) in [
            (Event::Stopped, State::Backoff(r.clone())),
            (Event::Waited, State::Creating(r.clone())),
            (Event::Created, State::Following),
        ] {
            state = next(state, event);
            assert_eq!(state, then);
        }
    }

    #[test]
    fn no_restart_or_a_failed_step_is_done() {
        assert_eq!(next(State::Following, Event::Verdict(None)), State::Done);
        for state in [
            State::Stopping(restart(1)),
            State::Backoff(restart(1)),
            State::Creating(restart(1)),
        ] {
            assert_eq!(next(state, Event::StepFailed), State::Done);
        }
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let s = Duration::from_secs;
        let b: Vec<Duration> = (1..=7).map(|a| backoff(s(10), a)).collect();
        assert_eq!(b, [s(10), s(20), s(40), s(80), s(160), s(300), s(300)]);
        assert_eq!(backoff(Duration::ZERO, 3), Duration::ZERO);
        assert_eq!(backoff(s(3600), 2), s(3600));
    }
}
