//! What a run held (pure): task-seconds and GPU-seconds, each task's pod counted from
//! its start (`status.startTime`: the kubelet took it, and with it the node's resources)
//! to its TF container's end (else its removal, else now), times the GPUs it asks for;
//! and where that time went: waiting for the last task to start (a task held its GPUs
//! while a peer was pending or pulling its image), attempts a restart ended, and
//! training (everything from the moment every task ran).
//!
//! Not counted: a pod no node took (it holds nothing), the backoff between two attempts
//! (no pod exists then), the seconds a stopped pod takes to end after its container, the
//! helper pods of `cp` and `tensorboard`, CPUs and memory (a task-hour is one task for
//! an hour, whatever it asks for).

use serde::{Deserialize, Serialize};

use crate::verdict::{Phase, PodView};

/// Task-seconds and GPU-seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub task_seconds: u64,
    pub gpu_seconds: u64,
}

impl Held {
    fn add(self, other: Held) -> Held {
        Held {
            task_seconds: self.task_seconds + other.task_seconds,
            gpu_seconds: self.gpu_seconds + other.gpu_seconds,
        }
    }

    fn of(seconds: i64, gpus: u32) -> Held {
        let seconds = seconds.max(0) as u64;
        Held {
            task_seconds: seconds,
            gpu_seconds: seconds * u64::from(gpus),
        }
    }
}

/// What a run held, in all and by part: `total` is `waiting + restarts + training`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub total: Held,
    pub waiting: Held,
    pub restarts: Held,
    pub training: Held,
    /// Counted up to this time (seconds since the epoch) for a restart: the next
    /// attempt's count starts there. `None`: the run's final count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
}

/// One task's pod: held from `from` to `to`, running since `up` (if its container
/// started), with `gpus` GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: i64,
    pub up: Option<i64>,
    pub to: i64,
    pub gpus: u32,
}

impl Span {
    /// A task's pod as its view says, `now` for one that has not ended; `None` for a pod
    /// no kubelet took. A pod tf-spawner stopped before its container started has no
    /// end of its container: once it has ended, it held its node until the stop.
    pub fn of(v: &PodView, now: i64) -> Option<Span> {
        v.task?;
        let from = v.times.held_from.or(v.times.started_at)?;
        let ended = matches!(v.phase, Phase::Succeeded | Phase::Failed);
        let to = v
            .times
            .finished_at
            .or(v.times.removed_at)
            .or(v.times.stopped_at.filter(|_| ended))
            .unwrap_or(now)
            .max(from);
        Some(Span {
            from,
            up: v.times.started_at,
            to,
            gpus: v.setup.gpus,
        })
    }
}

/// The cost of the attempt `spans` describe, after the attempts before (`earlier`, the
/// count at the last restart: all of it goes to restarts, and this attempt counts from
/// its `until`). With `restart`, the count is for a restart made at `now`.
pub fn count(earlier: Option<&Cost>, spans: &[Span], restart: Option<i64>) -> Cost {
    let since = earlier.and_then(|e| e.until).unwrap_or(i64::MIN);
    // The run is up once every task's container has started: the latest start.
    let up = spans
        .iter()
        .map(|s| s.up)
        .collect::<Option<Vec<_>>>()
        .and_then(|ups| ups.into_iter().max());
    let (mut waiting, mut training) = (Held::default(), Held::default());
    for s in spans {
        let from = s.from.max(since);
        let to = restart.map_or(s.to, |r| s.to.min(r)).max(from);
        let ready = up.unwrap_or(to).clamp(from, to);
        waiting = waiting.add(Held::of(ready - from, s.gpus));
        training = training.add(Held::of(to - ready, s.gpus));
    }
    let restarts = earlier.map(|e| e.total).unwrap_or_default();
    Cost {
        total: waiting.add(restarts).add(training),
        waiting,
        restarts,
        training,
        until: restart,
    }
}

/// The cost of the run whose pods `views` are: the count of the attempts before
/// (`earlier`), then this attempt's up to `now` (or up to a restart at `now`).
pub fn of_views<'a>(
    earlier: Option<&Cost>,
    views: impl Iterator<Item = &'a PodView>,
    now: i64,
    restart: bool,
) -> Cost {
    let spans: Vec<Span> = views.filter_map(|v| Span::of(v, now)).collect();
    count(earlier, &spans, restart.then_some(now))
}

/// What the run held, for `status`: its record's count when it is final (`recorded`),
/// else that count (a restart's, or none) and its pods' `views` up to `now`. `None`
/// when nothing was held.
pub fn so_far<'a>(
    recorded: Option<&Cost>,
    views: impl Iterator<Item = &'a PodView>,
    now: i64,
) -> Option<Cost> {
    if let Some(c) = recorded.filter(|c| c.until.is_none()) {
        return Some(*c);
    }
    let c = of_views(recorded, views, now, false);
    (c.total != Held::default()).then_some(c)
}

/// Hours to one decimal (two under one hour).
fn hours(seconds: u64) -> String {
    let h = seconds as f64 / 3600.0;
    if h < 1.0 {
        format!("{h:.2}")
    } else {
        format!("{h:.1}")
    }
}

impl Cost {
    /// Two counts added up (an experiment's runs'): a final count.
    pub fn plus(&self, other: &Cost) -> Cost {
        Cost {
            total: self.total.add(other.total),
            waiting: self.waiting.add(other.waiting),
            restarts: self.restarts.add(other.restarts),
            training: self.training.add(other.training),
            until: None,
        }
    }

    /// `held 9.6 GPU-hours` (task-hours when the tasks had no GPU).
    pub fn held(&self) -> String {
        if self.total.gpu_seconds > 0 {
            format!("held {} GPU-hours", hours(self.total.gpu_seconds))
        } else {
            format!("held {} task-hours", hours(self.total.task_seconds))
        }
    }

    /// `held 2.4 task-hours, 9.6 GPU-hours: 0.40 waiting for the last task to start,
    /// 1.2 in restarts, 8.0 training` (GPU-hours when the tasks had GPUs, else task-hours).
    pub fn line(&self) -> String {
        let gpus = self.total.gpu_seconds > 0;
        let part = |h: Held| hours(if gpus { h.gpu_seconds } else { h.task_seconds });
        let mut line = format!("held {} task-hours", hours(self.total.task_seconds));
        if gpus {
            line.push_str(&format!(", {} GPU-hours", hours(self.total.gpu_seconds)));
        }
        line.push_str(&format!(
            ": {} waiting for the last task to start, ",
            part(self.waiting)
        ));
        if self.restarts != Held::default() {
            line.push_str(&format!("{} in restarts, ", part(self.restarts)));
        }
        line.push_str(&format!("{} training", part(self.training)));
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(from: i64, up: Option<i64>, to: i64, gpus: u32) -> Span {
        Span { from, up, to, gpus }
    }

    #[test]
    fn waiting_is_until_the_last_task_started() {
        // worker-0 held its 4 GPUs from 0, up at 10; worker-1 pulled until 600.
        let spans = [span(0, Some(10), 3600, 4), span(0, Some(600), 3600, 4)];
        let c = count(None, &spans, None);
        assert_eq!(c.total.task_seconds, 7200);
        assert_eq!(c.total.gpu_seconds, 28800);
        assert_eq!(c.waiting.task_seconds, 1200);
        assert_eq!(c.waiting.gpu_seconds, 4800);
        assert_eq!(c.training.task_seconds, 6000);
        assert_eq!(c.restarts, Held::default());
        assert_eq!(c.until, None);
    }

    /// A pod stopped before its container started (an image never pulled) held its node
    /// until the stop once it has ended, however late it is looked at; not ended, until
    /// now.
    #[test]
    fn a_pod_stopped_before_it_started_held_its_node_until_the_stop() {
        let mut v = PodView {
            task: Some(crate::roles::Task {
                role: crate::roles::Role::Worker,
                index: 0,
            }),
            phase: Phase::Failed,
            ..PodView::default()
        };
        v.times.held_from = Some(100);
        v.times.stopped_at = Some(400);
        let later = Span::of(&v, 100_000).unwrap();
        assert_eq!((later.from, later.up, later.to), (100, None, 400));
        v.phase = Phase::Pending;
        assert_eq!(Span::of(&v, 1_000).unwrap().to, 1_000);
    }

    #[test]
    fn a_run_never_up_only_waited() {
        let spans = [span(0, Some(10), 100, 1), span(50, None, 100, 1)];
        let c = count(None, &spans, None);
        assert_eq!(c.waiting.task_seconds, 150);
        assert_eq!(c.training.task_seconds, 0);
    }

    #[test]
    fn a_restart_moves_the_attempt_into_restarts() {
        let first = count(None, &[span(0, Some(0), 500, 2)], Some(400));
        assert_eq!(first.until, Some(400));
        assert_eq!(first.total.task_seconds, 400);
        // The next attempt: a new pod, and a survivor of a partial restart counted from
        // the restart on, not twice.
        let spans = [span(410, Some(420), 1000, 2), span(0, Some(0), 1000, 2)];
        let last = count(Some(&first), &spans, None);
        assert_eq!(last.restarts.task_seconds, 400);
        assert_eq!(last.restarts.gpu_seconds, 800);
        assert_eq!(last.waiting.task_seconds, 10 + 20);
        assert_eq!(last.training.task_seconds, 580 + 580);
        assert_eq!(
            last.total.task_seconds,
            last.restarts.task_seconds + last.waiting.task_seconds + last.training.task_seconds
        );
    }

    #[test]
    fn the_line_says_gpu_hours_when_there_were_gpus() {
        let c = count(None, &[span(0, Some(360), 7200, 4)], None);
        assert_eq!(
            c.line(),
            "held 2.0 task-hours, 8.0 GPU-hours: 0.40 waiting for the last task to start, 7.6 training"
        );
        let cpu = count(None, &[span(0, Some(0), 1800, 0)], None);
        assert_eq!(
            cpu.line(),
            "held 0.50 task-hours: 0.00 waiting for the last task to start, 0.50 training"
        );
        let restarted = count(Some(&cpu), &[span(0, Some(0), 1800, 0)], None);
        assert!(
            restarted.line().contains("0.50 in restarts, "),
            "{}",
            restarted.line()
        );
    }
}
