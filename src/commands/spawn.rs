//! `tf-spawner [OPTIONS] TRAINING_SCRIPT`: plan a run, then create it (or print it).

use anyhow::Result;

use crate::cli::SpawnArgs;
use crate::inputs;
use crate::labels::{self, RUN_LABEL};
use crate::ops::{self, summary};
use crate::output;
use crate::plan::{self, Plan};
use crate::render::{self, OutputFormat};
use crate::settings::follow::{self, Follower};
use crate::settings::{Settings, Source, spawn};

pub async fn exec(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    // `--timeout` counts from here: the creates are part of the time it bounds.
    let started = std::time::Instant::now();
    let request = inputs::spawn_request(
        &spawn::options(args, settings),
        spawn::tag(args),
        settings.namespace.value.clone(),
    )
    .await?;
    // Inputs are checked before the cluster configuration, so a bad flag is reported as
    // such even on a machine without a cluster.
    let mut plan = plan::build(&request)?;
    followed_only(settings, args)?;
    if args.detach {
        supervised(settings, args, &mut plan, started)?;
    }
    if args.dry_run {
        return render::to_stdout(&plan, args.output.unwrap_or(OutputFormat::Yaml));
    }
    let cluster = settings.connect()?;
    ops::spawn::create(&cluster, &plan, args.max_in_flight).await?;
    if args.wait && args.output.is_some() {
        // One document on stdout, the verdict's (it names the run), after the wait;
        // the wait's progress on stderr.
        output::progress_to_stderr();
    } else {
        report(&plan, args.output, args.wait || args.detach)?;
    }
    if args.detach && args.output.is_none() {
        detached(&plan)?;
    }
    if args.wait {
        // Until the run starts, or to its verdict (`settings/follow.rs`).
        let follower = Follower::Spawn(args, &plan.tag);
        ops::wait::run(&cluster, &follow::wait(settings, follower, started)).await?;
    }
    Ok(())
}

/// `--detach`: the run's supervisor added to the plan, following as `spawn --wait`
/// would to the verdict, with this spawn's settings.
fn supervised(
    settings: &Settings,
    args: &SpawnArgs,
    plan: &mut Plan,
    started: std::time::Instant,
) -> Result<()> {
    let spec = supervisor_spec(settings)?;
    let mut wait = follow::wait(settings, Follower::Spawn(args, &plan.tag), started);
    wait.cleanup = args.cleanup;
    let record = wait.to_record().map_err(crate::errors::UsageError::new)?;
    let charge = plan::supervisor::Charge::Run {
        tag: &plan.tag,
        follow: &record,
    };
    let of = (charge, plan.namespace.as_str(), plan.invocation.as_str());
    plan.supervisor = Some(plan::supervisor::supervisor(of, &spec));
    Ok(())
}

/// Who supervises a detached run or sweep: `--supervisor-image` (needed) and
/// `--supervisor-account`.
pub(crate) fn supervisor_spec(settings: &Settings) -> Result<plan::supervisor::SupervisorSpec> {
    let Some(image) = settings.supervisor_image.value.clone() else {
        return Err(crate::errors::UsageError::new(
            "--detach needs the supervisor's image: --supervisor-image IMAGE (or supervisor_image in the config file), an image with tf-spawner on its PATH that the cluster can pull (tools/supervisor-image/build.sh makes one)",
        )
        .into());
    };
    Ok(plan::supervisor::SupervisorSpec {
        image,
        account: settings.supervisor_account.value.clone(),
    })
}

/// What a detached spawn says once the run and its supervisor are made: who follows
/// the run, how to watch it, how to stop it.
fn detached(plan: &Plan) -> Result<()> {
    let (tag, ns, me) = (&plan.tag, &plan.namespace, output::name());
    let job = labels::supervisor_name(tag);
    output::print(&format!(
        "run {tag}: followed from the cluster by job/{job}, which restarts, stops and records it as wait would; nothing needs to run here
         next:
           {me} wait {tag} -n {ns}       watch it and get its verdict (acts on nothing while the supervisor follows)
           {me} status {tag} -n {ns}     its pods, its verdict, who follows it
           kubectl delete job {job} -n {ns}   stop the supervisor, keep the run
           {me} -d -t {tag} -n {ns}      stop the supervisor and delete the run
"
    ))?;
    Ok(())
}

/// The flags that act while a run is followed, refused without `--wait`; `--all-workers`
/// needs a wait for the verdict (`--restarts N` or `--notify`).
fn followed_only(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    if args.detach {
        // The supervisor follows to the verdict: every follow flag is its.
        return Ok(());
    }
    if let Some(flag) = spawn::restart_flag(settings, args).filter(|_| !args.wait) {
        return Err(crate::errors::UsageError::new(format!(
            "{flag} acts while a run is followed: add --wait (or use: tf-spawner wait {flag} …)"
        ))
        .into());
    }
    if settings.notify.source == Source::Flag && !args.wait {
        return Err(crate::errors::UsageError::new(
            "--notify tells the verdict of a run that is followed: add --wait (or use: tf-spawner wait --notify …)",
        )
        .into());
    }
    if args.all_workers && settings.restarts.value == 0 && settings.notify.value.is_none() {
        return Err(crate::errors::UsageError::new(
            "--all-workers decides a verdict, and spawn --wait waits for one only with --restarts N (else until every pod runs); follow the run with: tf-spawner wait TAG --all-workers",
        )
        .into());
    }
    Ok(())
}

/// What a successful spawn prints: with `-q` only the tag, with `-o json|yaml` the
/// summary (see `ops/summary.rs`), else a human report and the next commands (none with
/// `--wait`: the wait is under way). A closed stdout cuts the report short; the run
/// stays created.
fn report(plan: &Plan, format: Option<OutputFormat>, waiting: bool) -> Result<()> {
    let (tag, ns) = (&plan.tag, &plan.namespace);
    if let Some(format) = format {
        let created = summary::created(tag, ns, &summary::plan_objects(plan));
        // What a script asked for, with -q too (`-q -o json`: the summary, not the tag).
        output::data(&summary::render(&created, format)?)?;
        return Ok(());
    }
    if output::is_quiet() {
        output::data(&format!("{tag}\n"))?;
        return Ok(());
    }
    let mut parts = vec![format!("configmap/{}", labels::config_map_name(tag))];
    if plan.secret.is_some() {
        parts.push(format!("secret/{}", labels::secret_name(tag)));
    }
    if plan.network_policy.is_some() {
        parts.push(format!(
            "networkpolicy/{}",
            labels::network_policy_name(tag)
        ));
    }
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    parts.push(count(plan.services.len(), "service"));
    parts.push(count(plan.pods.len(), "pod"));
    let created = format!(
        "run {tag} created in namespace {ns} (label {RUN_LABEL}={tag}): {}\n",
        parts.join(", ")
    );
    if waiting {
        output::print(&created)?;
        return Ok(());
    }
    let me = output::name();
    let ns_flag = format!("-n {ns}");
    output::print(&format!(
        "{created}\
         next:\n  \
         {me} wait {tag} {ns_flag}       wait for its verdict (exit 0 if it succeeded)\n  \
         {me} logs -f {tag} {ns_flag}    follow the merged logs of its pods\n  \
         {me} status {tag} {ns_flag}     its pods and verdict\n  \
         {me} -d -t {tag} {ns_flag}      delete it\n"
    ))?;
    Ok(())
}
