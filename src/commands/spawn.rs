//! `tf-spawner [OPTIONS] TRAINING_SCRIPT`: plan a run, then create it (or print it).

use anyhow::Result;

use crate::cli::SpawnArgs;
use crate::inputs::{self, SpawnOptions};
use crate::labels::{self, RUN_LABEL};
use crate::ops::wait::{Wait, WaitFor};
use crate::ops::{self, summary};
use crate::output;
use crate::plan::{self, Plan};
use crate::render::{self, OutputFormat};
use crate::settings::Settings;
use crate::tag::Tag;

pub async fn exec(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    // `--timeout` counts from here: the creates are part of the time it bounds.
    let started = std::time::Instant::now();
    let request = inputs::spawn_request(
        &options(args, settings),
        tag(args),
        settings.namespace.value.clone(),
    )
    .await?;
    // Inputs are checked before the cluster configuration, so a bad flag is reported as
    // such even on a machine without a cluster.
    let plan = plan::build(&request)?;
    let restarts = super::wait::restarts(settings, &args.restart);
    if let Some(flag) = restart_flag(args).filter(|_| !args.wait) {
        return Err(crate::errors::UsageError::new(format!(
            "{flag} acts while a run is followed: add --wait (or use: tf-spawner wait {flag} …)"
        ))
        .into());
    }
    if args.dry_run {
        return render::to_stdout(&plan, args.output.unwrap_or(OutputFormat::Yaml));
    }
    let cluster = settings.connect()?;
    ops::spawn::create(&cluster, &plan, args.max_in_flight).await?;
    report(&plan, args.output, args.wait)?;
    if args.wait {
        if args.output.is_some() {
            // The summary stays parseable: the wait's progress is not added to it.
            output::silence();
        }
        // Restarts happen only while the run is followed: then to its end.
        let until = if restarts.max > 0 {
            WaitFor::End
        } else {
            WaitFor::Start
        };
        let wait = Wait {
            tag: plan.tag.clone(),
            until,
            timeout: args.timeout,
            start_timeout: settings.start_timeout.value,
            started,
            all_workers: false,
            save_logs: None,
            cleanup: false,
            keep_running: settings.keep_running.value,
            max_in_flight: args.max_in_flight,
            restarts,
        };
        ops::wait::run(&cluster, &wait).await?;
    }
    Ok(())
}

/// The first restart flag given on the command line.
fn restart_flag(args: &SpawnArgs) -> Option<&'static str> {
    let r = &args.restart;
    [
        (r.restarts.is_some(), "--restarts"),
        (r.restart_on.is_some(), "--restart-on"),
        (r.restart_backoff.is_some(), "--restart-backoff"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The tag a spawn uses: `-r` makes a random one, else `-t`.
pub(crate) fn tag(args: &SpawnArgs) -> Tag {
    if args.randomize_tag {
        Tag::random()
    } else {
        args.tag.clone()
    }
}

/// The first shared-cluster flag given, which `--local` cannot honour.
pub(crate) fn cluster_only_flag(args: &SpawnArgs) -> Option<&'static str> {
    [
        (args.deadline.is_some(), "--deadline"),
        (args.start_timeout.is_some(), "--start-timeout"),
        (args.priority_class.is_some(), "--priority-class"),
        (args.queue.is_some(), "--queue"),
        (args.gang.is_some(), "--gang"),
        (args.scheduler_name.is_some(), "--scheduler-name"),
        (args.volcano_queue.is_some(), "--volcano-queue"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
    .or_else(|| restart_flag(args))
}

/// The spawn flags, with the defaults file's values where no flag was given.
pub(crate) fn options(args: &SpawnArgs, settings: &Settings) -> SpawnOptions {
    let roles = &args.roles;
    SpawnOptions {
        script: args.script.clone(),
        workers: settings.workers.value,
        port: settings.port.value,
        command: args.command.clone(),
        pod_file: settings.pod_file.value.clone(),
        pod_file_from: (settings.pod_file.source == crate::settings::Source::File)
            .then(|| settings.config_file.clone())
            .flatten(),
        env_file: args.env_file.clone(),
        image: settings.image.value.clone(),
        strategy: roles.strategy,
        chief: roles.chief,
        ps: roles.ps,
        evaluator: roles.evaluator,
        chief_pod_file: roles.chief_pod_file.clone(),
        ps_pod_file: roles.ps_pod_file.clone(),
        evaluator_pod_file: roles.evaluator_pod_file.clone(),
        deadline: settings.deadline.value,
        priority_class: settings.priority_class.value.clone(),
        queue: settings.queue.value.clone(),
        gang: settings.gang.value,
        scheduler_name: settings.scheduler_name.value.clone(),
        volcano_queue: settings.volcano_queue.value.clone(),
        volume: settings.volume.value.clone(),
        script_args: args.script_args.clone(),
        dir: settings.dir.value.clone(),
        dir_from: (settings.dir.source == crate::settings::Source::File)
            .then(|| settings.config_file.clone())
            .flatten(),
    }
}

/// What a successful spawn prints: with `-q` only the tag, with `-o json|yaml` the
/// summary (see `ops/summary.rs`), else a human report and the next commands (none with
/// `--wait`: the wait is under way). A closed stdout cuts the report short; the run
/// stays created.
fn report(plan: &Plan, format: Option<OutputFormat>, waiting: bool) -> Result<()> {
    let (tag, ns) = (&plan.tag, &plan.namespace);
    if output::is_quiet() {
        output::data(&format!("{tag}\n"))?;
        return Ok(());
    }
    if let Some(format) = format {
        let created = summary::created(tag, ns, &summary::plan_objects(plan));
        output::print(&summary::render(&created, format)?)?;
        return Ok(());
    }
    let mut parts = vec![format!("configmap/{}", labels::config_map_name(tag))];
    if plan.secret.is_some() {
        parts.push(format!("secret/{}", labels::secret_name(tag)));
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
