//! `tf-spawner supervise -t TAG`: what the pod of a detached run's supervisor runs
//! (`spawn --detach`, `plan/supervisor.rs`); `--experiment NAME`, a detached sweep's
//! ([`experiment`]). It reads the follow's settings from the
//! run's supervisor Secret and runs the very follow `wait` runs (`ops/wait/`), taking
//! the run by its record (`cluster/follower.rs`), so a second supervisor pod (the Job's
//! next, after a lost node) or a `wait` on a laptop shows the run and acts on nothing.
//!
//! Its exit code is the Job's: 0 once the run has its verdict, whatever it is (the
//! record and `status` tell it; a failed run must not be followed again and again), or
//! once the run is gone; another code only when the follow itself failed (the API
//! server gone past `--give-up-after`), so that the Job starts a new pod that takes the
//! run up again.

use anyhow::{Result, anyhow};
use k8s_openapi::api::core::v1::Secret;

use crate::cluster::Cluster;
use crate::errors::{
    EXIT_CANNOT_START, EXIT_START_TIMEOUT, EXIT_TIMEOUT, EXIT_TRAINING_FAILED, exit_code, one_line,
};
use crate::labels::{
    EXPERIMENT_LABEL, HELPER_LABEL, supervisor_name, sweeper_name, whole_run_selector,
};
use crate::ops::sweep::Sweep;
use crate::ops::sweep::definition::{self, Asked, Definition};
use crate::ops::sweep::resume::Taking;
use crate::ops::wait::Wait;
use crate::output;
use crate::plan::supervisor::{FollowRecord, SUPERVISOR, SweepFollow, follow_of, sweep_of};

/// Follows run `tag` to its verdict as its supervisor.
pub async fn run(cluster: &Cluster, tag: &str) -> Result<()> {
    let Some(record) = settings(cluster, tag).await? else {
        output::print(&format!(
            "run {tag} has no supervisor settings (secret/{}): it was deleted; nothing to follow\n",
            supervisor_name(tag)
        ))?;
        return Ok(());
    };
    let wait = Wait::from_record(tag, &record, std::time::Instant::now())
        .map_err(|why| anyhow!("secret/{}: {why}", supervisor_name(tag)))?;
    output::print(&format!(
        "supervising run {tag} in namespace {}: {} restarts at most{}\n",
        cluster.namespace(),
        record.restarts,
        if record.cleanup {
            ", deleted at its verdict"
        } else {
            ""
        }
    ))?;
    let result = crate::ops::wait::run(cluster, &wait).await;
    match result {
        Ok(()) => Ok(()),
        Err(e) if decided(&e) => {
            output::print(&format!(
                "supervisor of run {tag}: done: {}\n",
                one_line(&e)
            ))?;
            Ok(())
        }
        Err(e)
            if crate::cluster::follower::read(
                cluster,
                &crate::cluster::follower::Followed::Run(tag.to_string()),
            )
            .await
            .is_ok_and(|r| r.is_none()) =>
        {
            output::print(&format!(
                "run {tag} is gone ({}); nothing to follow\n",
                one_line(&e)
            ))?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The follow ended with the run's outcome (a failure, a time-out, a run stopped early):
/// the supervisor's work is done.
fn decided(e: &anyhow::Error) -> bool {
    e.downcast_ref::<crate::metrics::early::StoppedEarly>()
        .is_some()
        || [
            EXIT_TRAINING_FAILED,
            EXIT_TIMEOUT,
            EXIT_START_TIMEOUT,
            EXIT_CANNOT_START,
        ]
        .contains(&exit_code(e))
}

/// The follow's settings, from the run's supervisor Secret; `None` without one.
async fn settings(cluster: &Cluster, tag: &str) -> Result<Option<FollowRecord>> {
    let selector = format!("{},{HELPER_LABEL}={SUPERVISOR}", whole_run_selector(tag));
    settings_in(cluster, &selector, &supervisor_name(tag), follow_of).await
}

/// A supervisor's settings from its Secret `name` (listed by `selector`: a forged
/// Secret of that name without its labels is not read), read by `read`; `None` without
/// one.
async fn settings_in<T>(
    cluster: &Cluster,
    selector: &str,
    name: &str,
    read: fn(&Secret) -> Result<T, String>,
) -> Result<Option<T>> {
    let found = cluster
        .list::<Secret>(selector)
        .await
        .map_err(|e| cluster.explain("reading the supervisor's settings", &e))?;
    let Some(secret) = found
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(name))
    else {
        return Ok(None);
    };
    read(secret)
        .map(Some)
        .map_err(|why| anyhow!("secret/{name}: {why}"))
}

/// Runs experiment `name`'s sweep as its supervisor (`sweep --detach`): the sweep its
/// command defined (the Secret's [`SweepFollow`]), taken up from the experiment's record
/// as `sweep --resume` takes it (`ops/sweep/`): the runs that exist followed, those
/// that ended not started again, the others started as runs end. One sweeper at a
/// time: a second pod (the Job's next, after a lost node) waits until the first stops
/// checking in. Exit 0 once the sweep has its verdict, whatever it is, or once the
/// experiment is gone.
pub async fn experiment(cluster: &Cluster, name: &str) -> Result<()> {
    let secret = sweeper_name(name);
    let Some(settings) = sweep_settings(cluster, name).await? else {
        output::print(&format!(
            "experiment {name} has no supervisor settings (secret/{secret}): it was deleted; nothing to follow\n"
        ))?;
        return Ok(());
    };
    if gone(cluster, name).await {
        output::print(&format!(
            "experiment {name} has no record: it was deleted; nothing to follow\n"
        ))?;
        return Ok(());
    }
    let sweep = sweep_of_settings(cluster, name, settings).await?;
    wait_for_turn(cluster, name).await?;
    output::print(&format!(
        "supervising experiment {name} in namespace {}: {} runs\n",
        cluster.namespace(),
        sweep.record.runs.len()
    ))?;
    match crate::ops::sweep::run(cluster, &sweep).await {
        Err(e) if exit_code(&e) != EXIT_TRAINING_FAILED && !gone(cluster, name).await => Err(e),
        result => {
            let verdict = result.map_or_else(|e| one_line(&e), |()| "done".to_string());
            output::print(&format!("supervisor of experiment {name}: {verdict}\n"))?;
            Ok(())
        }
    }
}

/// The sweep its settings define, its record taken up as `sweep --resume` takes it
/// (`ops/sweep/resume.rs`: vetted, the digests of the script and files compared).
async fn sweep_of_settings(cluster: &Cluster, name: &str, s: SweepFollow) -> Result<Sweep> {
    let definition = Definition::parse(&Asked {
        name,
        params: &s.params,
        samples: s.samples,
        seed: s.seed,
        search: s.method,
        parallel: s.parallel,
        args: &s.args,
        yes: true,
        objective: s.objective.clone(),
        stopping: s.stopping,
    })
    .map_err(|e| anyhow!("secret/{}: {}", sweeper_name(name), one_line(&e)))?;
    let digests = definition::digests(&s.base)?;
    let taking = Taking {
        definition: &definition,
        digests: &digests,
        allow_changed: false,
        script: "the sweep's script",
        dir: None,
    };
    let record = crate::ops::sweep::resume::read(cluster, &taking).await?;
    let wait = Wait::from_record(name, &s.follow, std::time::Instant::now())
        .map_err(|why| anyhow!("secret/{}: {why}", sweeper_name(name)))?;
    Ok(Sweep {
        record,
        base: s.base,
        args: s.args,
        parallel: s.parallel.map(|n| (n, "the sweep's --parallel")),
        queued: s.queued,
        wait,
        max_in_flight: s.max_in_flight,
        resume: true,
        hint: s.hint,
        detach: None,
    })
}

/// Until no other live sweeper has the experiment (a pod of the Job before this one,
/// on a node that stopped answering: it holds it for `follower::HOLD` after its last
/// check-in).
async fn wait_for_turn(cluster: &Cluster, name: &str) -> Result<()> {
    use crate::cluster::follower::{self, CHECK_IN, Followed, Taken};
    let (what, me) = (Followed::Experiment(name.to_string()), follower::me());
    let mut said = false;
    while let Taken::Held(h) = follower::take(cluster, &what, &me).await? {
        if !said {
            output::print(&format!(
                "experiment {name} is followed by {}; taking it over once it stops checking in\n",
                h.cell(crate::duration::now())
            ))?;
            said = true;
        }
        tokio::time::sleep(CHECK_IN).await;
    }
    Ok(())
}

/// The experiment's record is gone (`-d --experiment`).
async fn gone(cluster: &Cluster, name: &str) -> bool {
    crate::cluster::experiment::read(cluster, name)
        .await
        .is_ok_and(|r| r.is_none())
}

/// A detached sweep's settings, from its supervisor's Secret; `None` without one.
async fn sweep_settings(cluster: &Cluster, name: &str) -> Result<Option<SweepFollow>> {
    let selector = format!("{EXPERIMENT_LABEL}={name},{HELPER_LABEL}={SUPERVISOR}");
    settings_in(cluster, &selector, &sweeper_name(name), sweep_of).await
}
