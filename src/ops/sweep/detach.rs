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
        let now = crate::duration::now();
        let meta = follower::read(cluster, &Followed::Experiment(name.to_string())).await?;
        if let Some(h) = meta
            .and_then(|m| follower::holder(&m, now))
            .filter(|h| h.is_live(now))
        {
            return Err(held(name, ns, &h));
        }
        let invocation = crate::inputs::invocation_id();
        let objects = detach.objects(name, ns, &invocation);
        apply::create_supervisor(cluster, &objects, &invocation).await?;
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

/// The experiment taken for this process, checked in while the sweep runs, with this
/// process's name as a follower; `None` when its record is gone (the sweep then starts
/// nothing). Refused in one line while another live sweeper has it.
pub(super) async fn hold(cluster: &Cluster, name: &str) -> Result<Option<(Lease, String)>> {
    let (what, me) = (Followed::Experiment(name.to_string()), follower::me());
    match follower::take(cluster, &what, &me).await? {
        Taken::Ours => Ok(Some((Lease::hold(cluster, &what, &me), me))),
        Taken::NoRecord => Ok(None),
        Taken::Held(h) => Err(held(name, cluster.namespace(), &h)),
    }
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

/// The refusal while `holder` has experiment `name`: who, how to watch it, how to stop it.
pub(crate) fn held(name: &str, ns: &str, holder: &Holder) -> anyhow::Error {
    let job = sweeper_name(name);
    let stop = if holder.who.contains(&format!(" on {job}-")) {
        format!(
            "stop its supervisor with kubectl delete job {job} -n {ns} (the runs go on) to take it up here"
        )
    } else {
        "stop that sweep first (Ctrl-C where it runs), or let it end".to_string()
    };
    UsageError::new(format!(
        "experiment '{name}' is followed by {}, which starts and follows its runs: watch them with tf-spawner compare {name} -n {ns}; {stop}",
        holder.cell(crate::duration::now())
    ))
    .into()
}
