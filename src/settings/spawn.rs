//! The spawn's flags lowered, shared by the commands that spawn or follow a run
//! (`spawn`, `--local`, `wait`): the spawn's options with the defaults file's values
//! where no flag was given, its tag, the restart flags, and the flags `--local` cannot
//! honour. Commands use these; no command borrows them from another.

use crate::cli::{RestartArgs, SpawnArgs};
use crate::inputs::SpawnOptions;
use crate::ops::restart::{DEFAULT_BACKOFF, Restarts};
use crate::tag::Tag;

use super::{Settings, Source};

/// The spawn flags, with the defaults file's values where no flag was given.
pub(crate) fn options(args: &SpawnArgs, settings: &Settings) -> SpawnOptions {
    let roles = &args.roles;
    let from_file = |source: &Source| {
        (*source == Source::File)
            .then(|| settings.config_file.clone())
            .flatten()
    };
    SpawnOptions {
        script: args.script.clone(),
        workers: settings.workers.value,
        port: settings.port.value,
        command: args.command.clone(),
        pod_file: settings.pod_file.value.clone(),
        pod_file_from: from_file(&settings.pod_file.source),
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
        node_lost_after: settings.node_lost_after.value,
        priority_class: settings.priority_class.value.clone(),
        queue: settings.queue.value.clone(),
        gang: settings.gang.value,
        scheduler_name: settings.scheduler_name.value.clone(),
        volcano_queue: settings.volcano_queue.value.clone(),
        volume: settings.volume.value.clone(),
        script_args: args.script_args.clone(),
        dir: settings.dir.value.clone(),
        dir_from: from_file(&settings.dir.source),
    }
}

/// The tag a spawn uses: `-r` makes a random one, else `-t`.
pub(crate) fn tag(args: &SpawnArgs) -> Tag {
    if args.randomize_tag {
        Tag::random()
    } else {
        args.tag.clone()
    }
}

/// `--restarts`, `--restart-on` (each else the defaults file's) and `--restart-backoff`,
/// of `wait` or of `spawn --wait`.
pub(crate) fn restarts(settings: &Settings, args: &RestartArgs) -> Restarts {
    Restarts {
        max: settings.restarts.value,
        on: settings.restart_on.value.clone(),
        backoff: args.restart_backoff.unwrap_or(DEFAULT_BACKOFF),
    }
}

/// The first restart flag given on the command line.
pub(crate) fn restart_flag(args: &SpawnArgs) -> Option<&'static str> {
    let r = &args.restart;
    [
        (r.restarts.is_some(), "--restarts"),
        (r.restart_on.is_some(), "--restart-on"),
        (r.restart_backoff.is_some(), "--restart-backoff"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The first shared-cluster flag given, which `--local` cannot honour.
pub(crate) fn cluster_only_flag(args: &SpawnArgs) -> Option<&'static str> {
    [
        (args.deadline.is_some(), "--deadline"),
        (args.node_lost_after.is_some(), "--node-lost-after"),
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
