//! Which failures are worth a restart, and what a restart re-creates (pure).
//!
//! `--restart-on` chooses the retryable failures: `removed` (a pod deleted, evicted,
//! preempted, or lost with its node), exit codes (`exit:N`) and, not by default, a
//! stall (`stall`: the same as `wait --on-stall restart`). The default set is
//! `removed,exit:42,exit:137,exit:143`: 137 and 143 are a SIGKILL and a SIGTERM from
//! outside, 42 is what TensorFlow's `PreemptionCheckpointHandler` exits with after
//! saving off Google's platforms (and 143 on GCP GPUs). A container killed for using too
//! much memory also exits 137, with reason `OOMKilled`: that is the training's own
//! failure and would happen again, so it is never retried.
//!
//! TensorFlow's failure model decides what a restart re-creates ([`Scope`]): an
//! all-reduce run (MultiWorkerMirroredStrategy) cannot go on without a lost worker, so
//! the whole run restarts; under ParameterServerStrategy (the run has parameter
//! servers) the chief's coordinator retries a lost worker's steps, so failed workers
//! come back alone, while a lost parameter server or chief restarts the whole run. An
//! evaluator is outside the training cluster: alone, it comes back alone.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use super::pod::DEADLINE_EXCEEDED;
use super::{Failure, FailureKind};
use crate::errors::UsageError;
use crate::roles::{Role, Task};

/// Exit codes retried by default (see the module docs).
pub const DEFAULT_EXIT_CODES: [i32; 3] = [42, 137, 143];

/// Pod reasons of a pod lost with its node or shut down with it (the node controller's
/// `NodeLost`, the kubelet's graceful node shutdown `Terminated`/`Shutdown`).
const NODE_REASONS: &[&str] = &["NodeLost", "Terminated", "Shutdown", "NodeShutdown"];

/// The reason of a container killed by the kernel's OOM killer.
const OOM_KILLED: &str = "OOMKilled";

/// What `--restart-on` retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartOn {
    /// A pod deleted, evicted, preempted or lost with its node.
    pub removed: bool,
    pub exit_codes: BTreeSet<i32>,
    /// A stall (no progress for the stall bound, `ops/wait`): not by default.
    pub stall: bool,
}

impl Default for RestartOn {
    fn default() -> RestartOn {
        RestartOn {
            removed: true,
            exit_codes: DEFAULT_EXIT_CODES.into_iter().collect(),
            stall: false,
        }
    }
}

/// `--restart-on LIST`: comma-separated changes to the default set. `exit:N` adds exit
/// code N (1-255), `removed` adds removals; `no-exit:N` and `no-removed` take them out;
/// `none` empties the set (then add what you want: `none,exit:42`).
impl FromStr for RestartOn {
    type Err = UsageError;

    fn from_str(text: &str) -> Result<RestartOn, UsageError> {
        let mut on = RestartOn::default();
        let bad = |token: &str, why: &str| {
            UsageError::new(format!(
                "--restart-on {text:?}: {token:?} {why} (a comma-separated list of removed, exit:N, stall, no-removed, no-exit:N, no-stall, none)"
            ))
        };
        for token in text.split(',').map(str::trim) {
            if token.is_empty() {
                return Err(bad(token, "is empty"));
            }
            let (keep, what) = match token.strip_prefix("no-") {
                Some(rest) => (false, rest),
                None => (true, token),
            };
            if what == "none" && keep {
                on.removed = false;
                on.exit_codes.clear();
                on.stall = false;
            } else if what == "removed" {
                on.removed = keep;
            } else if what == "stall" {
                on.stall = keep;
            } else if let Some(code) = what.strip_prefix("exit:") {
                let code = code
                    .parse::<i32>()
                    .ok()
                    .filter(|c| (1..=255).contains(c))
                    .ok_or_else(|| bad(token, "needs an exit code from 1 to 255"))?;
                if keep {
                    on.exit_codes.insert(code);
                } else {
                    on.exit_codes.remove(&code);
                }
            } else {
                return Err(bad(token, "is not one of them"));
            }
        }
        Ok(on)
    }
}

/// As `config` shows it: `removed,exit:42,exit:137,exit:143`, or `none`.
impl fmt::Display for RestartOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.removed {
            parts.push("removed".into());
        }
        parts.extend(self.exit_codes.iter().map(|c| format!("exit:{c}")));
        if self.stall {
            parts.push("stall".into());
        }
        if parts.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&parts.join(","))
    }
}

impl RestartOn {
    /// Whether `kind` is worth a restart.
    pub fn retries(&self, kind: &FailureKind) -> bool {
        match kind {
            FailureKind::Gone | FailureKind::Removed(_) => self.removed,
            FailureKind::Exited { reason, .. }
                if reason.as_deref().is_some_and(|r| NODE_REASONS.contains(&r)) =>
            {
                self.removed
            }
            FailureKind::Exited { reason, .. }
                if matches!(reason.as_deref(), Some(OOM_KILLED | DEADLINE_EXCEEDED)) =>
            {
                false
            }
            FailureKind::Exited { code: Some(c), .. } => self.exit_codes.contains(c),
            FailureKind::Exited { code: None, .. }
            | FailureKind::CannotStart(_)
            | FailureKind::Stopped => false,
        }
    }

    /// Why `kind` is not retried, and what would change it (one line, for `wait
    /// --restarts`); `None` when it is retried.
    pub fn why_not(&self, kind: &FailureKind) -> Option<String> {
        if self.retries(kind) {
            return None;
        }
        let reason = match kind {
            FailureKind::Exited { reason, .. } => reason.as_deref(),
            _ => None,
        };
        Some(match (kind, reason) {
            (_, Some(DEADLINE_EXCEEDED)) => {
                "the run's --deadline ended it, and a deadline is never retried (it counts once, from the run's first start: raise --deadline)".to_string()
            }
            (_, Some(OOM_KILLED)) => {
                "OOMKilled is not retried (it would run out of memory again): raise --memory".to_string()
            }
            (_, Some(r)) if NODE_REASONS.contains(&r) => {
                format!("a removal is not in --restart-on ({self}; add removed to retry it)")
            }
            (FailureKind::Exited { code: Some(c), .. }, _) => {
                format!("exit {c} is not in --restart-on ({self}; add exit:{c} to retry it)")
            }
            (FailureKind::Exited { code: None, .. }, _) => {
                "a pod that failed without an exit code is not retried".to_string()
            }
            (FailureKind::CannotStart(r), _) => format!(
                "a pod that cannot start ({}) is not retried: it would not start again (check --image and the pod's settings)",
                r.reason
            ),
            (FailureKind::Stopped, _) => "a pod stopped by tf-spawner is not retried".to_string(),
            (FailureKind::Gone | FailureKind::Removed(_), _) => {
                format!("a removal is not in --restart-on ({self}; add removed to retry it)")
            }
        })
    }
}

/// What a restart re-creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every task of the run.
    Whole,
    /// Only these tasks (failed workers of a parameter-server run, an evaluator).
    Tasks(BTreeSet<Task>),
}

/// The restart a failure calls for, or `None`: the failure that decided the run
/// (`decisive`) is not retryable. `failures` are every task's failures (the decisive
/// one among them), `tasks` the run's tasks.
pub fn decide(
    on: &RestartOn,
    decisive: &Failure,
    failures: &[Failure],
    tasks: &BTreeSet<Task>,
) -> Option<Scope> {
    if !on.retries(&decisive.kind) {
        return None;
    }
    let parameter_servers = tasks.iter().any(|t| t.role == Role::Ps);
    let alone = |f: &Failure| match f.task {
        Some(t) if t.role == Role::Evaluator => true,
        Some(t) if t.role == Role::Worker => parameter_servers && on.retries(&f.kind),
        _ => false,
    };
    if failures.iter().all(alone) && !failures.is_empty() {
        Some(Scope::Tasks(
            failures.iter().filter_map(|f| f.task).collect(),
        ))
    } else {
        Some(Scope::Whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Reason;

    fn task(role: Role, index: u32) -> Task {
        Task { role, index }
    }

    fn failure(t: Task, kind: FailureKind) -> Failure {
        Failure::new(t.name("r"), Some(t), kind)
    }

    fn exited(code: i32, reason: &str) -> FailureKind {
        FailureKind::Exited {
            code: Some(code),
            reason: Some(reason.into()),
            message: None,
        }
    }

    fn removed(reason: &str) -> FailureKind {
        FailureKind::Removed(Reason {
            reason: reason.into(),
            message: None,
        })
    }

    fn tasks(list: &[Task]) -> BTreeSet<Task> {
        list.iter().copied().collect()
    }

    #[test]
    fn removals_and_the_default_exit_codes_are_retried_other_failures_not() {
        let on = RestartOn::default();
        for kind in [
            FailureKind::Gone,
            removed("Deleted"),
            removed("PreemptionByScheduler"),
            removed("Evicted"),
            exited(137, "Error"),
            exited(143, "Error"),
            exited(42, "Error"),
            exited(1, "NodeLost"),
        ] {
            assert!(on.retries(&kind), "{kind:?}");
        }
        for kind in [
            exited(1, "Error"),
            exited(2, "Error"),
            exited(137, "OOMKilled"),
            FailureKind::CannotStart(Reason {
                reason: "ImagePullBackOff".into(),
                message: None,
            }),
        ] {
            assert!(!on.retries(&kind), "{kind:?}");
        }
    }

    #[test]
    fn a_deadline_kill_is_never_retried_and_every_refusal_says_what_would_change_it() {
        let on: RestartOn = "exit:1".parse().unwrap();
        let deadline = FailureKind::Exited {
            code: Some(143),
            reason: Some("DeadlineExceeded".into()),
            message: None,
        };
        assert!(!on.retries(&deadline));
        assert!(on.why_not(&deadline).unwrap().contains("raise --deadline"));
        assert_eq!(on.why_not(&exited(1, "Error")), None);
        let on = RestartOn::default();
        let cases = [
            (exited(137, "OOMKilled"), "OOMKilled is not retried"),
            (exited(137, "OOMKilled"), "raise --memory"),
            (exited(1, "Error"), "exit 1 is not in --restart-on"),
            (exited(1, "Error"), "add exit:1"),
            (
                FailureKind::CannotStart(Reason {
                    reason: "ErrImagePull".into(),
                    message: None,
                }),
                "--image",
            ),
        ];
        for (kind, says) in cases {
            let why = on.why_not(&kind).unwrap();
            assert!(why.contains(says), "{why}");
            assert!(!why.contains('\n'), "{why}");
        }
        let none: RestartOn = "none".parse().unwrap();
        for kind in [removed("Evicted"), exited(1, "NodeLost")] {
            assert!(none.why_not(&kind).unwrap().contains("add removed"));
        }
    }

    #[test]
    fn the_list_adds_to_the_defaults_or_takes_from_them() {
        let on: RestartOn = "exit:3".parse().unwrap();
        assert!(on.retries(&exited(3, "Error")) && on.retries(&exited(143, "Error")));
        assert_eq!(on.to_string(), "removed,exit:3,exit:42,exit:137,exit:143");
        let on: RestartOn = "no-removed, no-exit:137".parse().unwrap();
        assert!(!on.retries(&FailureKind::Gone) && !on.retries(&exited(137, "Error")));
        assert_eq!(on.to_string(), "exit:42,exit:143");
        let on: RestartOn = "none,exit:42".parse().unwrap();
        assert_eq!(on.to_string(), "exit:42");
        assert_eq!("none".parse::<RestartOn>().unwrap().to_string(), "none");
        // A stall is not in the default set; `stall` adds it, `none` takes it out.
        assert!(!RestartOn::default().stall);
        let on: RestartOn = "stall".parse().unwrap();
        assert!(on.stall && on.removed);
        assert_eq!(on.to_string(), "removed,exit:42,exit:137,exit:143,stall");
        assert!(!"stall,none".parse::<RestartOn>().unwrap().stall);
        assert!(!"stall,no-stall".parse::<RestartOn>().unwrap().stall);
        for bad in [
            "",
            "exit:0",
            "exit:256",
            "exit:x",
            "sometimes",
            "removed,,exit:3",
        ] {
            let err = bad.parse::<RestartOn>().unwrap_err().to_string();
            assert!(err.starts_with("--restart-on"), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn an_all_reduce_run_restarts_whole() {
        let all = tasks(&[task(Role::Worker, 0), task(Role::Worker, 1)]);
        let lost = failure(task(Role::Worker, 1), removed("Deleted"));
        let on = RestartOn::default();
        assert_eq!(
            decide(&on, &lost, std::slice::from_ref(&lost), &all),
            Some(Scope::Whole)
        );
        let failed = failure(task(Role::Worker, 1), exited(1, "Error"));
        assert_eq!(
            decide(&on, &failed, std::slice::from_ref(&failed), &all),
            None
        );
    }

    #[test]
    fn a_parameter_server_run_brings_a_lost_worker_back_alone() {
        let all = tasks(&[
            task(Role::Chief, 0),
            task(Role::Ps, 0),
            task(Role::Worker, 0),
            task(Role::Worker, 1),
        ]);
        let on = RestartOn::default();
        let worker = failure(task(Role::Worker, 1), removed("Evicted"));
        assert_eq!(
            decide(&on, &worker, std::slice::from_ref(&worker), &all),
            Some(Scope::Tasks(tasks(&[task(Role::Worker, 1)])))
        );
        // A lost parameter server or chief restarts the whole run.
        for t in [task(Role::Ps, 0), task(Role::Chief, 0)] {
            let lost = failure(t, exited(137, "Error"));
            let both = [lost.clone(), worker.clone()];
            assert_eq!(decide(&on, &lost, &both, &all), Some(Scope::Whole));
        }
        // A worker that failed on its own next to the lost one: the whole run.
        let own = failure(task(Role::Worker, 0), exited(1, "Error"));
        assert_eq!(
            decide(&on, &worker, &[own, worker.clone()], &all),
            Some(Scope::Whole)
        );
    }

    #[test]
    fn an_evaluator_comes_back_alone() {
        let all = tasks(&[task(Role::Worker, 0), task(Role::Evaluator, 0)]);
        let lost = failure(task(Role::Evaluator, 0), removed("Deleted"));
        assert_eq!(
            decide(
                &RestartOn::default(),
                &lost,
                std::slice::from_ref(&lost),
                &all
            ),
            Some(Scope::Tasks(tasks(&[task(Role::Evaluator, 0)])))
        );
    }
}
