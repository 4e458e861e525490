//! `wait --restarts N` (and `spawn --wait --restarts N`): a run that fails for a reason
//! worth retrying (`verdict/retryable.rs`) is restarted, up to N times in its life, while
//! this process follows it.
//!
//! A state machine folded from events: `Following{attempt}` hears the follow's final
//! verdict; a retryable failure with restarts left makes it `Stopping` (the pods of the
//! restart's scope deleted, then followed until gone: the new pods have the same names),
//! `Backoff` (10 s by default, doubling per attempt, at most 5 minutes), `Creating` (the
//! next attempt's pods made from the templates read when the follow began, through the
//! ledger of `cluster/apply.rs`), then `Following{attempt + 1}` again; anything else is
//! `Done`, and the verdict stands. A step that fails ends the restart (`Done`): what the
//! restart had created is deleted again, and the run's verdict is the failure that
//! called for it.
//!
//! The attempt is counted on the pods (`tf-spawner/attempt`, `TF_SPAWNER_ATTEMPT`): a
//! second `wait` on the same run goes on counting, it does not start over. Restarts
//! happen only while a tf-spawner process follows the run; stopped (Ctrl-C, a
//! `--timeout`) in the middle of one, it says in what state it left the run, never
//! with half of an attempt's pods created.
//!
//! Its rooms: `options.rs` (the flags), `state.rs` (the state machine, pure),
//! `templates.rs` (what a restart re-creates from), `steps.rs` (each step bounded by
//! the follow's end); this file the [`Restarter`] that plans and drives them.

mod options;
mod state;
mod steps;
mod templates;

use std::collections::BTreeSet;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::apply::{self, Ledger};
use crate::cluster::attempt_logs;
use crate::cluster::recreate::{self, Templates};
use crate::errors::UsageError;
use crate::labels::KUEUE_QUEUE_LABEL;
use crate::output;
use crate::roles::{ClusterSpec, Task};
use crate::verdict::retryable::{Scope, decide};
use crate::verdict::{Tracker, Verdict};

pub use options::{DEFAULT_BACKOFF, DEFAULT_NODE_GRACE, MAX_BACKOFF, Restarts};
use state::{Event, Restart, State, backoff, next};
pub(crate) use steps::Bounds;
use steps::{NOT_CREATED, NOT_DELETED, Stop, bounded, gone, listed, wait_out};
use templates::read_templates;

/// The restarts of one follow.
pub(crate) struct Restarter {
    options: Restarts,
    templates: Templates,
    /// The latest attempt known: of the templates, of the pods followed, of a restart
    /// begun. Not only the pods there now: a re-created pod may be gone again.
    attempt: u32,
    state: State,
    /// Why a pod gone before the follow began has no template, when the pods its spawn
    /// recorded cannot be used (`cluster/recreate/mod.rs::Found`).
    unknown: Option<String>,
    /// A restart recorded in the run's ConfigMap that was stopped before its pods were
    /// created again: [`Restarter::resume`] takes it up.
    pending: Option<Restart>,
    /// The cluster part of the tasks' `TF_CONFIG` in the run's ConfigMap, as the next
    /// pods made read it.
    cluster: Option<ClusterSpec>,
}

impl Restarter {
    /// Reads the run's pods as templates when restarts are asked for (one list).
    pub async fn begin(cluster: &Cluster, tag: &str, options: &Restarts) -> Result<Restarter> {
        let (templates, pending, unknown, spec) = if options.max > 0 {
            read_templates(cluster, tag, options).await?
        } else {
            (Templates::new(), None, None, None)
        };
        if let Some(queue) = templates.values().find_map(|p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(KUEUE_QUEUE_LABEL))
        }) {
            return Err(UsageError::new(format!(
                "--restarts: run '{tag}' was submitted to Kueue queue '{queue}', whose pod group ends when a pod fails and takes no new pods; wait without --restarts"
            ))
            .into());
        }
        let mut restarter = Restarter {
            options: options.clone(),
            attempt: templates
                .values()
                .map(recreate::attempt_of)
                .max()
                .unwrap_or(0),
            templates,
            unknown,
            state: State::Following,
            pending,
            cluster: spec,
        };
        if let Some(mut r) = restarter.pending.take()
            && !restarter.deadline_passed(tag, &r.names, r.attempt)
        {
            r.port = r.port.or_else(|| restarter.port_for(&r.names));
            restarter.pending = Some(r);
        }
        Ok(restarter)
    }

    /// Takes up a restart that was stopped before its pods were created again (recorded
    /// in the run's ConfigMap, see [`recreate::RestartRecord`]): its pods that are left are
    /// deleted, then all of them created, without a backoff. Before the follow.
    pub async fn resume(&mut self, cluster: &Cluster, bounds: &Bounds) -> Result<()> {
        let Some(r) = self.pending.take() else {
            return Ok(());
        };
        self.attempt = self.attempt.max(r.attempt);
        self.state = State::Stopping(r);
        let resumed = self.drive(cluster, bounds).await;
        // Whatever came of it, the run is followed next, and may restart after.
        self.state = State::Following;
        resumed.map(drop)
    }

    /// After a final verdict: `true` when the run was restarted (follow it again),
    /// `false` when the verdict stands. An error: stopped by a signal or the timeout in
    /// the middle of a restart, saying in what state the run was left.
    pub async fn after(
        &mut self,
        cluster: &Cluster,
        bounds: &Bounds,
        tracker: &Tracker,
        verdict: &Verdict,
    ) -> Result<bool> {
        self.attempt = self.attempt.max(tracker.attempt());
        let restart = match verdict {
            Verdict::Failed(failure) if self.options.max > 0 => self.plan(bounds, tracker, failure),
            _ => None,
        };
        if let Some(r) = &restart {
            self.attempt = r.attempt;
        }
        self.state = next(self.state.clone(), Event::Verdict(restart));
        self.drive(cluster, bounds).await
    }

    /// After a stall with `--on-stall restart` (`cause`: `stalled at epoch 7, step
    /// 1200, for 45m`): the whole run restarted as for a preemption, counted against
    /// `--restarts` (`true`: follow it again); `false` when no restart is left (said
    /// why): the stall fails the run.
    pub async fn after_stall(
        &mut self,
        cluster: &Cluster,
        bounds: &Bounds,
        tracker: &Tracker,
        cause: &str,
    ) -> Result<bool> {
        self.attempt = self.attempt.max(tracker.attempt());
        let restart = if self.options.max > 0 {
            self.planned(bounds, tracker, &Scope::Whole, cause)
        } else {
            output::note(&format!(
                "run {}: not restarted: a stall is restarted only with --restarts N",
                bounds.tag
            ));
            None
        };
        if let Some(r) = &restart {
            self.attempt = r.attempt;
        }
        self.state = next(self.state.clone(), Event::Verdict(restart));
        self.drive(cluster, bounds).await
    }

    /// Runs the steps from the current state until the run is followed again (`true`)
    /// or the verdict stands (`false`).
    async fn drive(&mut self, cluster: &Cluster, bounds: &Bounds) -> Result<bool> {
        loop {
            let event = match &self.state {
                State::Following => return Ok(true),
                State::Done => return Ok(false),
                State::Stopping(r) => self.stop(cluster, bounds, r).await?,
                State::Backoff(r) => wait_out(bounds, r, self.options.max).await?,
                State::Creating(r) => {
                    let port = r.port;
                    let event = self.create(cluster, bounds, r).await?;
                    if let (Event::Created, Some(port)) = (&event, port) {
                        self.cluster = self.cluster.as_ref().map(|c| c.with_port(port));
                    }
                    event
                }
            };
            self.state = next(self.state.clone(), event);
        }
    }

    /// The restart `failure` calls for: retryable, a restart left, every pod's template
    /// at hand. Says why not when the failure was retryable.
    fn plan(
        &self,
        bounds: &Bounds,
        tracker: &Tracker,
        failure: &crate::verdict::Failure,
    ) -> Option<Restart> {
        let tag = &bounds.tag;
        let tasks = tracker.tasks();
        if let Some(why) = self.options.on.why_not(&failure.kind) {
            output::note(&format!("run {tag}: not restarted: {why}"));
            return None;
        }
        let scope = decide(&self.options.on, failure, &tracker.failures(), &tasks)?;
        self.planned(bounds, tracker, &scope, &failure.to_string())
    }

    /// The restart of `scope` for `cause`: a restart left, every pod's template at
    /// hand, the run's `--deadline` not passed. Says why not.
    fn planned(
        &self,
        bounds: &Bounds,
        tracker: &Tracker,
        scope: &Scope,
        cause: &str,
    ) -> Option<Restart> {
        let tag = &bounds.tag;
        let tasks = tracker.tasks();
        let attempt = self.attempt + 1;
        if attempt > self.options.max {
            output::note(&format!(
                "run {tag}: not restarted: its {} restart{} (--restarts) {} used",
                self.options.max,
                if self.options.max == 1 { "" } else { "s" },
                if self.options.max == 1 { "is" } else { "are" },
            ));
            return None;
        }
        let chosen: Vec<Task> = match scope {
            Scope::Whole => tasks.into_iter().collect(),
            Scope::Tasks(t) => t.iter().copied().collect(),
        };
        let names: BTreeSet<String> = chosen.iter().map(|t| t.name(tag)).collect();
        if let Some(missing) = names.iter().find(|n| !self.templates.contains_key(*n)) {
            let why = self.unknown.as_deref().unwrap_or(recreate::NOT_RECORDED);
            output::note(&format!(
                "run {tag}: not restarted: pod {missing} was already gone when this wait began, and {why}"
            ));
            return None;
        }
        if self.deadline_passed(tag, &names, attempt) {
            return None;
        }
        let what = match scope {
            Scope::Whole => format!("re-creating its {} pods", names.len()),
            Scope::Tasks(_) => {
                let ids: Vec<String> = chosen.iter().map(|t| t.id()).collect();
                format!("re-creating {} alone", ids.join(", "))
            }
        };
        let backoff = backoff(self.options.backoff, attempt);
        let lost = tracker
            .on_lost_nodes()
            .into_iter()
            .filter(|n| names.contains(n))
            .collect();
        Some(Restart {
            attempt,
            port: self.port_for(&names),
            names,
            cause: cause.to_string(),
            lost,
            why: format!("{cause}; {what}"),
            backoff,
        })
    }

    /// The port of the attempt that re-creates `names`: the next one when they are every
    /// task of the cluster (a task of the replaced attempt left running, on a node cut
    /// off, cannot reach the new ones), else the cluster's own (the tasks re-created
    /// rejoin the ones that run on).
    fn port_for(&self, names: &BTreeSet<String>) -> Option<u16> {
        let spec = self.cluster.as_ref()?;
        let port = spec.port()?;
        Some(if spec.names().is_subset(names) {
            crate::roles::next_port(port)
        } else {
            port
        })
    }

    /// Whether the run's `--deadline` (counted once, from its first start) has passed, or
    /// would before the restart's pods are made: said in one line.
    fn deadline_passed(&self, tag: &str, names: &BTreeSet<String>, attempt: u32) -> bool {
        let now = crate::duration::timestamp();
        let left = names
            .iter()
            .filter_map(|n| recreate::deadline_left(self.templates.get(n)?, now))
            .min();
        let passed =
            left.is_some_and(|l| l <= backoff(self.options.backoff, attempt).as_secs().max(1));
        if passed {
            output::note(&format!(
                "run {tag}: not restarted: the run's --deadline has passed, or would before the restart (it counts once, from the run's first start: raise --deadline)"
            ));
        }
        passed
    }

    /// The restart's line, and what its lost nodes mean for it.
    fn announce(&self, tag: &str, r: &Restart) -> Result<()> {
        output::print(&format!(
            "run {tag}: restart {}/{} in {}: {} (attempt {})\n",
            r.attempt,
            self.options.max,
            crate::duration::age(r.backoff.as_secs()),
            r.why,
            r.attempt,
        ))?;
        if !r.lost.is_empty() {
            output::print(&format!(
                "run {tag}: force-deleting {} (its node stopped reporting: no kubelet will confirm a graceful deletion)\n",
                listed(&r.lost)
            ))?;
        }
        if !r.lost.is_empty() && r.lost == r.names {
            // No task of the attempt on a reachable node, whose stop would break the
            // others' collectives: behind a partition they could train on.
            output::note(&format!(
                "run {tag}: every task of attempt {} was on a node that stopped reporting; if it is cut off rather than dead, they may train on and write to the run's volume (see docs/preemption.md, \"A partitioned node\")",
                r.attempt.saturating_sub(1)
            ));
        }
        Ok(())
    }

    /// Deletes the restart's pods and follows them until they are gone.
    async fn stop(&self, cluster: &Cluster, bounds: &Bounds, r: &Restart) -> Result<Event> {
        let tag = &bounds.tag;
        self.announce(tag, r)?;
        let record = recreate::RestartRecord {
            attempt: r.attempt,
            cause: Some(r.cause.clone()),
            port: r.port,
            templates: r
                .names
                .iter()
                .filter_map(|n| Some((n.clone(), self.templates.get(n)?.clone())))
                .collect(),
        };
        // How far the stop got, for the message if it is interrupted.
        let deleting = std::cell::Cell::new(false);
        let work = async {
            // Recorded first: stopped after the deletes, the restart can be taken up.
            if !recreate::save(cluster, tag, &record).await? {
                output::note(&format!(
                    "run {tag}: the restart's pods do not fit in its configmap; stopped before they are created again, it cannot be resumed"
                ));
            }
            // The replaced attempt's logs, kept until -d (`cluster/attempt_logs.rs`).
            let max = bounds.max_in_flight;
            for line in attempt_logs::keep(cluster, tag, &r.names, &r.lost, &r.cause, max).await {
                output::note(&format!("run {tag}: {line}"));
            }
            deleting.set(true);
            recreate::delete_pods(cluster, tag, &r.names, &r.lost, bounds.max_in_flight).await?;
            gone(cluster, tag, &r.names).await
        };
        match bounded(bounds, work).await {
            Ok(()) => Ok(Event::Stopped),
            Err(Stop::By(s)) => {
                let left = if deleting.get() {
                    NOT_CREATED
                } else {
                    NOT_DELETED
                };
                Err(s.error(bounds, r, left, self.options.max))
            }
            Err(Stop::Failed(e)) => {
                output::note(&format!("run {tag}: restart {} failed: {e:#}", r.attempt));
                Ok(Event::StepFailed)
            }
        }
    }

    /// Creates the next attempt's pods; on an error or a signal, deletes again what it
    /// created.
    async fn create(&self, cluster: &Cluster, bounds: &Bounds, r: &Restart) -> Result<Event> {
        let tag = &bounds.tag;
        let invocation = format!("{:016x}", rand::random::<u64>());
        let now = crate::duration::timestamp();
        let by = crate::cluster::follower::me();
        let next = recreate::Next {
            attempt: r.attempt,
            invocation: &invocation,
            cause: &r.cause,
            by: &by,
            port: r.port,
        };
        let new: Vec<_> = r
            .names
            .iter()
            .filter_map(|n| self.templates.get(n))
            .map(|t| recreate::next_attempt(t, &next, now))
            .collect();
        let ledger = Ledger::for_invocation(&invocation);
        let moved = match (&self.cluster, r.port) {
            (Some(spec), Some(port)) if spec.port() != Some(port) => Some(spec.with_port(port)),
            _ => None,
        };
        let work = async {
            // The pods read their cluster from the ConfigMap when their containers start.
            if let Some(spec) = &moved {
                recreate::set_cluster(cluster, tag, spec).await?;
            }
            apply::create_pods(cluster, &new, &ledger, bounds.max_in_flight).await
        };
        let stop = match bounded(bounds, work).await {
            Ok(()) => {
                if let Err(e) = recreate::clear(cluster, tag).await {
                    output::note(&format!("run {tag}: {e:#}"));
                }
                return Ok(Event::Created);
            }
            Err(stop) => stop,
        };
        let left = apply::roll_back(cluster, &ledger).await;
        let rolled = match apply::rollback_report(&left, tag, cluster.namespace()) {
            Some(e) => e.to_string(),
            None => format!(
                "what it had created was deleted again: no pod {} now (the services and ConfigMap are kept)",
                listed(&r.names)
            ),
        };
        match stop {
            Stop::By(s) => Err(s.error(bounds, r, &rolled, self.options.max)),
            Stop::Failed(e) => {
                output::note(&format!(
                    "run {tag}: restart {} failed: {e:#}; {rolled}",
                    r.attempt
                ));
                Ok(Event::StepFailed)
            }
        }
    }
}
