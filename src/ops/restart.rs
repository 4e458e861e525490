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

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::apply::{self, Ledger};
use crate::cluster::attempt_logs;
use crate::cluster::recreate::{self, Templates};
use crate::cluster::vetting;
use crate::cluster::watch::{self, PodEvent};
use crate::errors::{EXIT_TIMEOUT, ExitError, UsageError};
use crate::labels::{KUEUE_QUEUE_LABEL, run_selector};
use crate::output;
use crate::roles::{ClusterSpec, Task};
use crate::signals;
use crate::verdict::retryable::{RestartOn, Scope, decide};
use crate::verdict::{Tracker, Verdict};

/// The first backoff's default; each attempt doubles it, up to [`MAX_BACKOFF`].
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(10);
/// The longest backoff between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// `--node-grace`'s default: the node-lifecycle controller's `--node-monitor-grace-period`
/// (50 s on v1.36, 40 s on v1.20) and its monitor period (5 s), with a margin.
pub const DEFAULT_NODE_GRACE: Duration = Duration::from_secs(60);

/// `--restarts`, `--restart-on`, `--restart-backoff`.
#[derive(Debug, Clone)]
pub struct Restarts {
    /// At most this many restarts in the run's life; 0: none (no request is made for them).
    pub max: u32,
    pub on: RestartOn,
    /// The first backoff.
    pub backoff: Duration,
    /// `--node-grace`: how long the cluster takes to name a node lost (see
    /// `ops/wait/mod.rs::settle`).
    pub node_grace: Duration,
}

impl Default for Restarts {
    fn default() -> Restarts {
        Restarts {
            max: 0,
            on: RestartOn::default(),
            backoff: DEFAULT_BACKOFF,
            node_grace: DEFAULT_NODE_GRACE,
        }
    }
}

/// One restart: the attempt it starts, what it re-creates, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Restart {
    attempt: u32,
    names: BTreeSet<String>,
    /// The failure the restart is for: on the new pods, for `status`.
    cause: String,
    /// Of `names`, the pods on a node that stopped reporting: deleted at once.
    lost: BTreeSet<String>,
    why: String,
    backoff: Duration,
    /// The port the attempt's tasks listen on (`roles::next_port` when it re-creates
    /// every task of the cluster); `None` when the run's ConfigMap does not say.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Following,
    Stopping(Restart),
    Backoff(Restart),
    Creating(Restart),
    /// No (more) restart: the verdict stands.
    Done,
}

#[derive(Debug)]
enum Event {
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
fn next(state: State, event: Event) -> State {
    match (state, event) {
        (State::Following, Event::Verdict(Some(r))) => State::Stopping(r),
        (State::Stopping(r), Event::Stopped) => State::Backoff(r),
        (State::Backoff(r), Event::Waited) => State::Creating(r),
        (State::Creating(_), Event::Created) => State::Following,
        _ => State::Done,
    }
}

/// The backoff before `attempt` (1 for the first restart).
fn backoff(first: Duration, attempt: u32) -> Duration {
    let doubled = first.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    doubled.min(MAX_BACKOFF.max(first))
}

/// The restarts of one follow.
pub(crate) struct Restarter {
    options: Restarts,
    templates: Templates,
    /// The latest attempt known: of the templates, of the pods followed, of a restart
    /// begun. Not only the pods there now: a re-created pod may be gone again.
    attempt: u32,
    state: State,
    /// Why a pod gone before the follow began has no template, when the pods its spawn
    /// recorded cannot be used (`cluster/recreate.rs::Found`).
    unknown: Option<String>,
    /// A restart recorded in the run's ConfigMap that was stopped before its pods were
    /// created again: [`Restarter::resume`] takes it up.
    pending: Option<Restart>,
    /// The cluster part of the tasks' `TF_CONFIG` in the run's ConfigMap, as the next
    /// pods made read it.
    cluster: Option<ClusterSpec>,
}

/// How the follow's end bounds a restart: its deadline (`--timeout`), the one of the wait.
pub(crate) struct Bounds {
    pub tag: String,
    pub deadline: Option<(Instant, Duration)>,
    pub max_in_flight: usize,
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
    /// in the run's ConfigMap, see [`recreate::Record`]): its pods that are left are
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
        let now = k8s_openapi::jiff::Timestamp::now();
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
        let record = recreate::Record {
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
        let now = k8s_openapi::jiff::Timestamp::now();
        let next = recreate::Next {
            attempt: r.attempt,
            invocation: &invocation,
            cause: &r.cause,
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

/// `a, b and 2 more`.
fn listed(names: &BTreeSet<String>) -> String {
    const SHOWN: usize = 3;
    let mut out: Vec<&str> = names.iter().take(SHOWN).map(String::as_str).collect();
    let more = names.len().saturating_sub(SHOWN);
    let more_text = format!("{more} more");
    if more > 0 {
        out.push(&more_text);
    }
    out.join(", ")
}

/// What a restart left when it was stopped before it created anything.
const NOT_CREATED: &str = "its pods were deleted and none has been created again";
/// What a restart left when it was stopped before it deleted anything (its record may
/// be written: the next `wait --restarts` takes it up).
const NOT_DELETED: &str = "it had deleted none of its pods yet; they are as the failure left them";

/// The templates to restart from (the run's pods, a restart under way, the pods its
/// spawn recorded, in this order), the restart to take up, and why the spawn's record
/// could not be used; what was read and not believed said as warnings.
async fn read_templates(
    cluster: &Cluster,
    tag: &str,
    options: &Restarts,
) -> Result<(
    Templates,
    Option<Restart>,
    Option<String>,
    Option<ClusterSpec>,
)> {
    let book = recreate::recorded(cluster, tag).await?;
    let found = recreate::templates(cluster, tag, &book).await?;
    for warning in &found.warnings {
        output::warning(&format!("run {tag}: {warning}"));
    }
    let none_left = found.live.is_empty();
    let spawned = found.spawned.and_then(|pods| {
        match vetting::vet(&pods, tag, cluster.namespace(), &found.live) {
            Ok(()) => Ok(pods),
            Err(why) => Err(format!(
                "the pods recorded at its spawn are refused: {why} (a record is trusted no further than the run's pods on the server: docs/hardened.md)"
            )),
        }
    });
    let (mut templates, mut pending) =
        unfinished(cluster, tag, options, found.live, book.restart).await?;
    let unknown = match spawned {
        Ok(spawned) => {
            for (name, pod) in spawned {
                templates.entry(name).or_insert(pod);
            }
            None
        }
        Err(why) => Some(why),
    };
    if none_left && pending.is_none() {
        pending = vanished(cluster, tag, options, &templates, unknown.as_deref()).await?;
    }
    Ok((templates, pending, unknown, book.cluster))
}

/// Every pod of the run gone before the follow began, and no verdict recorded (it
/// vanished while nobody followed it): the whole run restarted at once from the pods
/// its spawn recorded, counted against `--restarts` after the attempts whose logs were
/// kept; an error in one line when those pods cannot be used (`unknown`: why). A run
/// with a verdict is left as it ended.
async fn vanished(
    cluster: &Cluster,
    tag: &str,
    options: &Restarts,
    templates: &Templates,
    unknown: Option<&str>,
) -> Result<Option<Restart>> {
    let Some(record) = crate::cluster::record::read(cluster, tag).await? else {
        return Ok(None);
    };
    if record.verdict.is_some() {
        return Ok(None);
    }
    let cause = "every pod of the run was gone when this wait began";
    if let Some(why) = unknown {
        anyhow::bail!("run '{tag}' cannot be restarted: {cause}, and {why}");
    }
    if templates.is_empty() {
        return Ok(None);
    }
    let replaced = record.attempts.iter().map(|(a, _)| a + 1).max();
    let attempt = replaced.unwrap_or(0) + 1;
    if attempt > options.max {
        output::note(&format!(
            "run {tag}: not restarted: {cause}; its {} restart(s) (--restarts) are used",
            options.max
        ));
        return Ok(None);
    }
    let names: BTreeSet<String> = templates.keys().cloned().collect();
    Ok(Some(Restart {
        attempt,
        why: format!(
            "{cause}; re-creating its {} pods from its record",
            names.len()
        ),
        names,
        cause: cause.to_string(),
        lost: BTreeSet::new(),
        backoff: Duration::ZERO,
        port: None,
    }))
}

/// The templates to restart from and the restart to take up, from the run's pods and
/// the restart recorded in its ConfigMap: a recorded restart whose pods are not all
/// there with its attempt was stopped before it was done; one that is done is cleared.
/// A record that is not the run's own (`cluster/vetting.rs`) is refused in one line and
/// left alone: only the pods read from the server are templates then.
async fn unfinished(
    cluster: &Cluster,
    tag: &str,
    options: &Restarts,
    mut templates: Templates,
    record: Option<recreate::Record>,
) -> Result<(Templates, Option<Restart>)> {
    let Some(record) = record else {
        return Ok((templates, None));
    };
    if let Err(why) = vetting::vet(&record.templates, tag, cluster.namespace(), &templates) {
        output::warning(&format!(
            "run {tag}: the restart recorded in its configmap is not taken up: {why} (tf-spawner records only the run's own pods; the record was edited)"
        ));
        return Ok((templates, None));
    }
    let names: BTreeSet<String> = record.templates.keys().cloned().collect();
    let done = names.iter().all(|n| {
        templates
            .get(n)
            .is_some_and(|p| recreate::attempt_of(p) >= record.attempt)
    });
    if done {
        recreate::clear(cluster, tag).await?;
        return Ok((templates, None));
    }
    for (name, pod) in record.templates {
        templates.entry(name).or_insert(pod);
    }
    if record.attempt > options.max {
        output::note(&format!(
            "run {tag}: its restart {} was stopped before its pods were created again; --restarts {} does not allow it",
            record.attempt, options.max
        ));
        return Ok((templates, None));
    }
    let pending = Restart {
        attempt: record.attempt,
        cause: record
            .cause
            .unwrap_or_else(|| "a restart stopped before its pods were created".to_string()),
        why: format!(
            "taking up the restart that was stopped; re-creating {}",
            listed(&names)
        ),
        names,
        // Not known before the follow: a pod still on a lost node is deleted gracefully.
        lost: BTreeSet::new(),
        backoff: Duration::ZERO,
        // A record is data: a port tf-spawner never chooses (0) is not taken up.
        port: record.port.filter(|p| *p != 0),
    };
    Ok((templates, Some(pending)))
}

/// Waits out the restart's backoff, bounded like every step.
async fn wait_out(bounds: &Bounds, r: &Restart, max: u32) -> Result<Event> {
    match bounded(bounds, async {
        tokio::time::sleep(r.backoff).await;
        Ok(())
    })
    .await
    {
        Ok(()) => Ok(Event::Waited),
        Err(Stop::By(s)) => Err(s.error(bounds, r, NOT_CREATED, max)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// Why a step ended early.
enum Stop {
    /// The step's own error.
    Failed(anyhow::Error),
    /// A signal or the wait's deadline.
    By(Stopped),
}

/// A signal (its exit code) or the deadline (exit 4), and what it was.
struct Stopped {
    code: u8,
    why: String,
}

impl Stopped {
    /// The error that ends the wait: what stopped it during which restart, and in what
    /// `state` the run was left.
    fn error(self, bounds: &Bounds, r: &Restart, state: &str, max: u32) -> anyhow::Error {
        let tag = &bounds.tag;
        ExitError::new(
            self.code,
            format!(
                "{} while restarting run '{tag}' (attempt {}): {state} (see: tf-spawner status -t {tag}; take the restart up again: tf-spawner wait -t {tag} --restarts {max}; or delete the run: tf-spawner -d -t {tag})",
                self.why, r.attempt
            ),
        )
        .into()
    }
}

/// Runs one step of a restart, unless a signal or the wait's deadline comes first.
async fn bounded<T>(
    bounds: &Bounds,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T, Stop> {
    let deadline = async {
        match bounds.deadline {
            Some((at, d)) => {
                tokio::time::sleep_until(at.into()).await;
                d
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = work => result.map_err(Stop::Failed),
        d = deadline => Err(Stop::By(Stopped {
            code: EXIT_TIMEOUT,
            why: format!("timed out after {}", crate::duration::age(d.as_secs())),
        })),
        code = signals::stop_requested() => Err(Stop::By(Stopped {
            code,
            why: "interrupted".to_string(),
        })),
    }
}

/// Follows the run's pods until none of `names` is left (a deleted pod lingers for its
/// grace period). One list and one watch.
async fn gone(cluster: &Cluster, tag: &str, names: &BTreeSet<String>) -> Result<()> {
    let mut left: BTreeSet<String> = BTreeSet::new();
    let mut listing: Option<BTreeSet<String>> = None;
    let ours = |name: &String| names.contains(name);
    watch::follow(cluster, &run_selector(tag), |event, more| {
        match event {
            PodEvent::ListBegin => listing = Some(BTreeSet::new()),
            PodEvent::Page(pods) => {
                let found = pods.into_iter().filter_map(|p| p.metadata.name);
                match &mut listing {
                    Some(listed) => listed.extend(found.filter(ours)),
                    None => left.extend(found.filter(ours)),
                }
                return None;
            }
            PodEvent::ListEnd => left = listing.take().unwrap_or_default(),
            PodEvent::Changed(pod) => left.extend(pod.metadata.name.filter(ours)),
            PodEvent::Deleted(name) => {
                left.remove(&name);
            }
            PodEvent::Lost(_) | PodEvent::Back(_) => super::link_note(&event),
        }
        if more || listing.is_some() {
            return None;
        }
        left.is_empty().then_some(())
    })
    .await
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
