//! What a restart re-creates from, read when the follow begins: the run's pods, a
//! restart recorded in its ConfigMap and stopped before it was done (taken up), the
//! pods its spawn recorded (a run whose pods all vanished), each vetted first.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::recreate::{self, Templates};
use crate::cluster::vetting;
use crate::output;
use crate::roles::ClusterSpec;

use super::options::Restarts;
use super::state::Restart;
use super::steps::listed;

/// The templates to restart from (the run's pods, a restart under way, the pods its
/// spawn recorded, in this order), the restart to take up, and why the spawn's record
/// could not be used; what was read and not believed said as warnings.
pub(super) async fn read_templates(
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
    record: Option<recreate::RestartRecord>,
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
