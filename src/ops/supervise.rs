//! `tf-spawner supervise -t TAG`: what the pod of a detached run's supervisor runs
//! (`spawn --detach`, `plan/supervisor.rs`). It reads the follow's settings from the
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
use crate::labels::{HELPER_LABEL, supervisor_name, whole_run_selector};
use crate::ops::wait::Wait;
use crate::output;
use crate::plan::supervisor::{FollowRecord, SUPERVISOR, follow_of};

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
            if crate::cluster::follower::read(cluster, tag)
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
    let name = supervisor_name(tag);
    let selector = format!("{},{HELPER_LABEL}={SUPERVISOR}", whole_run_selector(tag));
    let found = cluster
        .list::<Secret>(&selector)
        .await
        .map_err(|e| cluster.explain("reading the supervisor's settings", &e))?;
    let Some(secret) = found
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(&name))
    else {
        return Ok(None);
    };
    follow_of(secret)
        .map(Some)
        .map_err(|why| anyhow!("secret/{name}: {why}"))
}
