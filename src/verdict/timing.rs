//! The run report (pure): when each task's container started and ended, and how long
//! the run took, from the first task's start to the end of the task that decided it.
//! A report over pod views (`verdict::PodView`: each task's start and end, read from
//! its container state in `verdict/pod/read.rs`), never from the logs; times are printed
//! by `duration.rs`.

use crate::roles::{Role, Task};
use crate::verdict::{PodView, Tracker, Verdict};

/// How long one task ran, in seconds, if it has ended.
pub fn duration(view: &PodView) -> Option<u64> {
    Some((view.times.finished_at? - view.times.started_at?).max(0) as u64)
}

/// How long a finished run took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTime {
    /// The first task's start.
    pub started: i64,
    /// The deciding task's end.
    pub ended: i64,
    /// Which task that was (`worker-0`, `chief-0`, or the one that failed).
    pub decided_by: String,
    /// `started` is an earlier attempt's (the run was restarted): the time covers every
    /// attempt.
    pub over_attempts: bool,
}

impl RunTime {
    pub fn seconds(&self) -> u64 {
        (self.ended - self.started).max(0) as u64
    }

    /// `took 1m 12s: from the first task's start (09:35:01 UTC) to worker-0's end (09:36:13 UTC)`,
    /// dates shown for times not on `now`'s day.
    pub fn line(&self, now: i64) -> String {
        format!(
            "took {}: from the {} ({}) to {}'s end ({})",
            humantime::format_duration(std::time::Duration::from_secs(self.seconds())),
            if self.over_attempts {
                "run's first start, every attempt included"
            } else {
                "first task's start"
            },
            crate::duration::clock(self.started, now),
            self.decided_by,
            crate::duration::clock(self.ended, now)
        )
    }
}

/// The run's time: from the earliest start of any task to the end of `decider` (the
/// failed pod's name, else the deciding task; with `all_workers`, the last worker's end
/// if later). `None` until those are known.
pub fn run_time(
    views: &[&PodView],
    failed_pod: Option<&str>,
    all_workers: bool,
) -> Option<RunTime> {
    let tasks = views.iter().copied().filter(|v| v.task.is_some());
    let this = tasks.clone().filter_map(|v| v.times.started_at).min()?;
    // A restarted run's pods carry its first attempt's start.
    let first = tasks.clone().filter_map(|v| v.times.run_started).min();
    let started = first.map_or(this, |f| f.min(this));
    let end_of = |v: &PodView| v.times.finished_at.map(|t| (t, v.label()));
    let (ended, decided_by) = match failed_pod {
        Some(pod) => tasks.clone().find(|v| v.name == pod).and_then(end_of)?,
        None => {
            let has_chief = tasks
                .clone()
                .any(|v| v.task.is_some_and(|t| t.role == Role::Chief));
            let deciding = Task::deciding(has_chief);
            let mut ends = vec![
                tasks
                    .clone()
                    .find(|v| v.task == Some(deciding))
                    .and_then(end_of)?,
            ];
            if all_workers {
                for v in tasks
                    .clone()
                    .filter(|v| v.task.is_some_and(|t| t.role == Role::Worker))
                {
                    ends.push(end_of(v)?);
                }
            }
            ends.into_iter().max_by_key(|(t, _)| *t)?
        }
    };
    Some(RunTime {
        started,
        ended,
        decided_by,
        over_attempts: started < this,
    })
}

/// The time of the run `tracker` follows, once its verdict is final.
pub fn of_run(tracker: &Tracker, all_workers: bool) -> Option<RunTime> {
    match tracker.verdict() {
        Verdict::Succeeded => run_time(&tracker.live().collect::<Vec<_>>(), None, all_workers),
        Verdict::Failed(f) => run_time(&tracker.live().collect::<Vec<_>>(), Some(&f.pod), false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::tests::view;
    use serde_json::json;

    fn pod(name: &str, role: &str, index: u32, started: &str, finished: Option<&str>) -> PodView {
        let state = match finished {
            Some(f) => {
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": f}})
            }
            None => json!({"running": {"startedAt": started}}),
        };
        view(json!({
            "metadata": {"name": name, "labels": {"tf-spawner/replica-type": role, "tf-spawner/replica-index": index.to_string()}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "tensorflow"}]},
            "status": {"phase": if finished.is_some() {"Succeeded"} else {"Running"},
                "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 0, "image": "i", "imageID": "", "state": state}]}
        }))
    }

    #[test]
    fn the_run_lasts_from_the_first_start_to_the_deciding_end() {
        let views = [
            pod(
                "t-worker-1",
                "worker",
                1,
                "2026-01-01T10:00:03Z",
                Some("2026-01-01T10:05:00Z"),
            ),
            pod(
                "t-worker-0",
                "worker",
                0,
                "2026-01-01T10:00:05Z",
                Some("2026-01-01T10:02:05Z"),
            ),
        ];
        let views: Vec<&PodView> = views.iter().collect();
        let t = run_time(&views, None, false).unwrap();
        assert_eq!((t.seconds(), t.decided_by.as_str()), (122, "worker-0"));
        assert_eq!(duration(views[1]), Some(120));
        let all = run_time(&views, None, true).unwrap();
        assert_eq!((all.seconds(), all.decided_by.as_str()), (297, "worker-1"));
        let failed = run_time(&views, Some("t-worker-1"), false).unwrap();
        assert_eq!(failed.decided_by, "worker-1");
    }

    #[test]
    fn a_restarted_runs_time_covers_every_attempt() {
        let mut v = pod(
            "t-worker-0",
            "worker",
            0,
            "2026-01-01T11:00:00Z",
            Some("2026-01-01T11:10:00Z"),
        );
        let t = run_time(&[&v], None, false).unwrap();
        assert!(
            !t.over_attempts
                && t.line(1_767_312_000)
                    .contains("from the first task's start")
        );
        v.times.run_started = Some(1767261600); // 10:00:00, attempt 0's start
        let t = run_time(&[&v], None, false).unwrap();
        assert_eq!(t.seconds(), 70 * 60);
        assert!(
            t.line(1_767_312_000).starts_with(
                "took 1h 10m: from the run's first start, every attempt included (2026-01-01 10:00:00 UTC)"
            ),
            "{}",
            t.line(1_767_312_000)
        );
    }

    #[test]
    fn a_container_that_never_started_has_no_start() {
        let v = pod(
            "t-worker-0",
            "worker",
            0,
            "1970-01-01T00:00:00Z",
            Some("2026-01-01T10:00:05Z"),
        );
        assert_eq!((v.times.started_at, duration(&v)), (None, None));
    }

    #[test]
    fn a_run_whose_deciding_task_runs_has_no_time_yet() {
        let views = [pod("t-worker-0", "worker", 0, "2026-01-01T10:00:05Z", None)];
        assert_eq!(run_time(&[&views[0]], None, false), None);
        assert_eq!(duration(&views[0]), None);
        assert_eq!(views[0].times.started_at, Some(1767261605));
    }
}
