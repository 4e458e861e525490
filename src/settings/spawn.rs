//! The spawn's flags lowered, shared by the commands that spawn a run (`spawn`,
//! `--local`, `sweep`): the spawn's options with the defaults file's values where no
//! flag was given, its tag, how a `--local` run is run, the restart flags given, and the
//! flags `--local` cannot honour. The follow's are `follow.rs`'s. Commands use these; no
//! command borrows them from another.

use crate::cli::{RoleArgs, SpawnArgs};
use crate::inputs::SpawnOptions;
use crate::local::RunOptions;
use crate::ops::local_run::LocalOptions;
use crate::plan::security::Hardening;
use crate::plan::{Resources, Scheduling, TaskResources};
use crate::tag::Tag;

use super::{Settings, Source};
use crate::cli::flags::Heading;

/// The spawn flags, with the defaults file's values where no flag was given. Every
/// field of [`SpawnArgs`] is named here, so that a new flag fails to compile until it
/// is lowered (or said to be another command's business).
pub(crate) fn options(args: &SpawnArgs, settings: &Settings) -> SpawnOptions {
    #[rustfmt::skip]
    let SpawnArgs {
        script, command, env_file, roles, script_args,
        // The list's flags (`cli/flags.rs`; their values are the settings table's,
        // below: the shared settings into `Scheduling` and `Hardening`, the resources
        // into `Resources`).
        table: _,
        // The commands' own: the tag (`tag`), what to do with the plan (`spawn`,
        // `delete`, `local`), the follow (`spawn --wait`, `restarts`).
        tag: _, randomize_tag: _, tag_from: _, delete: _, yes: _, experiment: _, finished: _, older_than: _, ignore_not_found: _, dry_run: _, output: _, max_in_flight: _,
        wait: _, all_workers: _, timeout: _, restart: _, local: _, detach: _, cleanup: _,
    } = args;
    #[rustfmt::skip]
    let RoleArgs {
        strategy, chief, ps, evaluator, chief_pod_file, ps_pod_file, evaluator_pod_file,
    } = roles;
    let from_file = |source: &Source| match source {
        Source::File => {
            (settings.config_file.as_ref()).map(|f| format!("config file {}", f.display()))
        }
        Source::Project => {
            (settings.project.as_ref()).map(|p| format!("project file {}", p.path.display()))
        }
        _ => None,
    };
    SpawnOptions {
        script: script.clone(),
        workers: settings.workers.value,
        port: settings.port.value,
        command: command.clone(),
        pod_file: settings.pod_file.value.clone(),
        pod_file_from: from_file(&settings.pod_file.source),
        env_file: env_file.clone(),
        image: settings.image.value.clone(),
        strategy: *strategy,
        framework: settings.framework.value,
        chief: *chief,
        ps: *ps,
        evaluator: *evaluator,
        chief_pod_file: chief_pod_file.clone(),
        ps_pod_file: ps_pod_file.clone(),
        evaluator_pod_file: evaluator_pod_file.clone(),
        scheduling: scheduling(settings),
        volume: settings.volume.value.clone(),
        script_args: script_args.clone(),
        dir: settings.dir.value.clone(),
        dir_from: from_file(&settings.dir.source),
        hardening: Hardening {
            run_as_user: settings.run_as_user.value,
            network_policy: settings.network_policy.value,
        },
        resources: resources(settings),
    }
}

/// What each task asks for (docs/resources.md): the parameter servers take `--cpu` and
/// `--memory` unless their own are given, never `--gpus`; a `/dev/shm` size of 0 is none.
fn resources(settings: &Settings) -> Resources {
    let cpu = settings.cpu.value.clone();
    let memory = settings.memory.value.clone();
    let shm = &settings.shm_size.value;
    Resources {
        compute: TaskResources {
            cpu: cpu.clone(),
            memory: memory.clone(),
            gpus: settings.gpus.value,
        },
        ps: TaskResources {
            cpu: settings.ps_cpu.value.clone().or(cpu),
            memory: settings.ps_memory.value.clone().or(memory),
            gpus: settings.ps_gpus.value,
        },
        gpu_resource: settings.gpu_resource.value.clone(),
        shm_size: (shm != "0").then(|| shm.clone()),
    }
}

/// The shared-cluster settings, as the plan takes them.
fn scheduling(settings: &Settings) -> Scheduling {
    Scheduling {
        deadline_seconds: settings
            .deadline
            .value
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        node_lost_after_seconds: settings
            .node_lost_after
            .value
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        priority_class: settings.priority_class.value.clone(),
        service_account: settings.service_account.value.clone(),
        queue: settings.queue.value.clone(),
        gang: settings.gang.value,
        scheduler_name: settings.scheduler_name.value.clone(),
        volcano_queue: settings.volcano_queue.value.clone(),
        // The run carries its grace when it is not the built-in one.
        pull_grace_seconds: (settings.pull_grace.source != Source::Default)
            .then(|| settings.pull_grace.value.as_secs()),
    }
}

/// The tag a spawn uses: `-r` makes a random one (after `--tag-from`'s prefix), else
/// `-t` (which `--tag-from` alone has set: `commands::verbs::settle_tag`).
pub(crate) fn tag(args: &SpawnArgs) -> Tag {
    if args.randomize_tag {
        Tag::random_after(args.tag_from.as_deref())
    } else {
        args.tag.clone()
    }
}

/// The first restart flag given on the command line.
pub(crate) fn restart_flag(settings: &Settings, args: &SpawnArgs) -> Option<&'static str> {
    let r = &args.restart;
    [
        (settings.restarts.source == Source::Flag, "--restarts"),
        (settings.restart_on.source == Source::Flag, "--restart-on"),
        (r.restart_backoff.is_some(), "--restart-backoff"),
        (r.node_grace.is_some(), "--node-grace"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The first flag given that `--local` cannot honour: a shared cluster's (the table's
/// [`Heading::Shared`]), `--start-timeout`, a pod's resources ([`Heading::Resources`]), a
/// restart flag.
pub(crate) fn cluster_only_flag(settings: &Settings, args: &SpawnArgs) -> Option<String> {
    settings
        .flag_given(Heading::Shared)
        .or_else(|| {
            (settings.start_timeout.source == Source::Flag).then(|| "--start-timeout".to_string())
        })
        .or_else(|| settings.flag_given(Heading::Resources))
        .or_else(|| restart_flag(settings, args).map(str::to_string))
}

/// How a `--local` run is run (alone, or each run of a `--local` sweep).
pub(crate) fn local(settings: &Settings, args: &SpawnArgs) -> LocalOptions {
    LocalOptions {
        python: settings.python.value.clone(),
        run: RunOptions {
            timeout: args.timeout,
            env_file: args.env_file.as_ref().map(|f| f.display().to_string()),
            colour: crate::output::fancy_stdout(),
            // A `--local` sweep with early stopping sets both for each of its runs.
            observer: None,
            early: None,
        },
        notify: settings.notify.value.clone(),
    }
}
