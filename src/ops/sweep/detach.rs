//! `sweep --detach`: the experiment handed to a supervisor in its namespace (a Job whose
//! pod runs `tf-spawner supervise --experiment NAME`, `ops/supervise.rs`), which runs
//! this very sweep from the record, as `--resume` would. And one sweeper at a time: a
//! sweep, here or in that pod, takes the experiment by its record
//! (`cluster/follower.rs`) before it starts or follows a run, and checks in while it
//! does, so that two never start the same run or judge the same rung.

use anyhow::Result;

use crate::cluster::follower::{self, Followed, Holder, Lease, Taken};
use crate::cluster::{Cluster, apply};
use crate::errors::UsageError;
use crate::labels::sweeper_name;
use crate::output;
use crate::plan::supervisor::{self, Charge, Supervisor, SupervisorSpec, SweepFollow};

/// What `--detach` adds to a sweep: who supervises it, and with what.
pub(crate) struct Detach {
    pub spec: SupervisorSpec,
    pub settings: SweepFollow,
}

impl Detach {
    /// The supervisor's objects, made by the invocation `invocation`.
    pub(super) fn objects(&self, name: &str, namespace: &str, invocation: &str) -> Supervisor {
        let charge = Charge::Sweep {
            name,
            sweep: &self.settings,
        };
        supervisor::supervisor((charge, namespace, invocation), &self.spec)
    }
}

/// The sweep handed over, then how to follow and stop it. A new sweep's supervisor was
/// made with its first run (`begin`: a refusal takes both back); on `--resume` it is
/// made now, unless a live sweeper has the experiment.
pub(super) async fn hand_over(
    cluster: &Cluster,
    (name, resumed): (&str, bool),
    detach: &Detach,
) -> Result<()> {
    let ns = cluster.namespace();
    if resumed {
        if let Some(h) = live_holder(cluster, name).await? {
            return Err(held(name, ns, &h));
        }
        let invocation = crate::inputs::invocation_id();
        let objects = detach.objects(name, ns, &invocation);
        let made = apply::create_supervisor(cluster, &objects, &invocation).await;
        if let Err(e) = made {
            if e.downcast_ref::<apply::AlreadyThere>().is_none() {
                return Err(e);
            }
            let job = sweeper_name(name);
            return Err(UsageError::new(format!(
                "experiment '{name}' has a supervisor already (job/{job}, which ended or was stopped): remove it with kubectl delete job,secret {job} -n {ns}, then run this again; nothing was made"
            ))
            .into());
        }
    }
    let (job, me) = (sweeper_name(name), output::name());
    output::print(&format!(
        "experiment {name}: followed from the cluster by job/{job}, which starts, follows, stops and records its runs as sweep would; nothing needs to run here
         next:
           {me} compare {name} -n {ns}        its runs and their metrics so far
           kubectl logs -f job/{job} -n {ns}   the sweep's own lines
           kubectl delete job {job} -n {ns}    stop the supervisor, keep the runs
           {me} -d --experiment {name} -n {ns}   stop the supervisor and delete the runs
"
    ))?;
    Ok(())
}

/// Who has experiment `name` now, if a live sweeper other than this process does.
pub(super) async fn live_holder(cluster: &Cluster, name: &str) -> Result<Option<Holder>> {
    let now = crate::duration::now();
    let meta = follower::read(cluster, &Followed::Experiment(name.to_string())).await?;
    let me = follower::me();
    Ok(meta
        .and_then(|m| follower::holder(&m, now))
        .filter(|h| h.acts_against(&me, now)))
}

/// What taking the experiment found.
pub(super) enum Hold {
    /// This process's, checked in while the sweep runs, with its name as a follower.
    Ours(Lease, String),
    /// Its record is gone: the sweep starts nothing.
    Gone,
    /// Another live sweeper has it (`attached.rs`).
    Held(Holder),
}

/// Takes the experiment for this process.
pub(super) async fn hold(cluster: &Cluster, name: &str) -> Result<Hold> {
    let (what, me) = (Followed::Experiment(name.to_string()), follower::me());
    Ok(match follower::take(cluster, &what, &me).await? {
        Taken::Ours => Hold::Ours(Lease::hold(cluster, &what, &me), me),
        Taken::NoRecord => Hold::Gone,
        Taken::Held(h) => Hold::Held(h),
    })
}

/// Lets go of the experiment, recording the sweep's exit code.
pub(super) async fn release(cluster: &Cluster, name: &str, me: &str, result: &Result<()>) {
    let code = match result {
        Ok(()) => 0,
        Err(e) => crate::errors::exit_code(e),
    };
    let what = Followed::Experiment(name.to_string());
    follower::release(cluster, &what, me, Some(code)).await;
}

/// The refusal of a second supervisor while `holder` has experiment `name`.
fn held(name: &str, ns: &str, holder: &Holder) -> anyhow::Error {
    UsageError::new(format!(
        "experiment '{name}' is followed by {}, which starts and follows its runs: watch them with tf-spawner compare {name} -n {ns}; to hand it to a supervisor, stop that sweeper first ({})",
        holder.cell(crate::duration::now()),
        super::attached::stop_hint(name, ns, holder)
    ))
    .into()
}
