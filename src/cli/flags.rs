//! Every defaultable flag, declared ONCE ([`flag_list!`] below). An entry is a setting:
//! its key (the settings files' key, the clap id of its flag and `config`'s row), its
//! type, its built-in default and the text `config` shows for a value it has no words
//! for, its parser (`parse.rs`: the flag's `value_parser` and the files' value go through
//! the same function), its marks (`anchored`, `program`, `kubeconfig`: how a file's
//! value is read) and its flag: where it is ([`Place`]s: the spawn, `wait`,
//! `tensorboard`, or every command), its short and long names, value name or choices,
//! its heading in `--help`, the flag it needs on the spawn (`requires`), the one-line
//! text the short help shows (`brief`) and whether `spawn -h` shows it (`short_help`;
//! without the mark `spawn --help` only, so a new flag never breaks the first screen). The entry's doc comment is the flag's full help (`--help`, the man
//! page). From the list come clap's arguments (`flag_defs.rs`: `Place::args`, flattened
//! into the derive structs of `mod.rs`), the help's shaping (`commands/help.rs` reads
//! `flag_defs.rs::def`), completions and the man page (clap's), and, in
//! `settings/table.rs`, the table of values with their sources, its loading from flag,
//! project file and config file, and `config`'s rows. A flag added here is in all of
//! them, and nowhere else.
//!
//! The list is a macro that hands its entries to another (`flag_list!(then)`), so that
//! the lowering (`settings/`, a layer above) builds its table from the same entries
//! without this module knowing it. Here: the list, its grammar (`flag_entries!`) and its
//! words for where a flag is and its heading ([`Place`], [`Heading`]).

/// Where a flag is on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The spawn's flags (the top level, `spawn` and `sweep`).
    Spawn,
    /// `wait`'s.
    Wait,
    /// `tensorboard`'s.
    Tensorboard,
    /// `logs`'.
    Logs,
    /// `sweep`'s.
    Sweep,
    /// Every command's, before or after the verb (clap's `global`).
    Global,
}

/// The headings of `--help`; the flags outside the list name theirs in `mod.rs`
/// (`help_heading = Heading::Roles.title()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heading {
    /// A shared cluster's scheduling or policy; `--local` refuses these.
    Shared,
    /// What each task asks of its node (docs/resources.md); `--local` refuses these.
    Resources,
    /// The roles besides the workers (`--chief`, `--ps`…: fields of `mod.rs`).
    Roles,
    /// The options of every command.
    Global,
}

impl Heading {
    pub(crate) const fn title(self) -> &'static str {
        match self {
            Heading::Shared => "Shared clusters",
            Heading::Resources => "Resources (docs/resources.md)",
            Heading::Roles => "Roles",
            Heading::Global => "Global options (any command, before or after it)",
        }
    }
}

/// The list: `flag_list!(then)` is `then! { entries }`. Each entry:
///
/// ```text
/// /// Full help (the flag's; a key without a flag: what it is)
/// key: Type = default, parser, "config's text for no value" [, mark]*
///     [=> [Place, …] (, short: 'c')? (, long: "name")? (, value: "NAME")?
///         (, choices: ValueEnum)? (, heading: Heading)? (, requires: "id")?
///         (, brief: "one line")? (, sweep: "sweep's line")?];
/// ```
///
/// Marks: `anchored` (a path a file gives is relative to the file), `program` (a
/// program this machine runs: relative to the file when it names a path, and from a
/// project file only once the user trusts it), `command` (a command line or URL this
/// machine runs or sends to: trusted as a program, never anchored: its words are the
/// shell's), `kubeconfig` (without a flag or a file,
/// the kubeconfig context's value before the default), `short_help` (`spawn -h`, the
/// first screen, shows the flag; without it only `spawn --help` does), `show_default`
/// (the help shows the default), `unshown` (no help shows it: a verb's `-h` and
/// `--help` leave it to the man page, `config` and docs/reference.md).
///
/// ```text
/// ```
macro_rules! flag_list {
    ($then:ident) => { $crate::cli::flags::flag_entries! { $then;
    /// Kubernetes namespace [default: the config file's, else the kubeconfig context's,
    /// else "default"]
    namespace: String = "default".to_string(), parse::namespace, "default", kubeconfig, short_help
        => [Global], short: 'n', value: "NAMESPACE", heading: Global,
            brief: "Namespace (tf-spawner config shows it)";
    /// Container image [default: the config file's, else the template's, else the pinned
    /// TensorFlow image]
    image: Option<String> = None, parse::image,
        "(the pod template's, else tensorflow/tensorflow:2.15.0)", short_help
        => [Spawn], short: 'i', value: "IMAGE",
            brief: "Container image [default: the template's]";
    /// Pod template (YAML) [default: the config file's pod_file, else the built-in
    /// templates/pod.yaml]
    pod_file: Option<PathBuf> = None, parse::path, "(the built-in templates/pod.yaml)", anchored, short_help
        => [Spawn], value: "FILE", brief: "Pod template (YAML) [default: built in]";
    /// gRPC port used in TF_CONFIG, on the containers and on the services (a restart of
    /// every task moves it one up)
    port: u16 = crate::cli::flags::DEFAULT_PORT, parse::port, "", show_default => [Spawn], short: 'p', value: "PORT";
    /// What the training script distributes with: tensorflow (tf.distribute, TF_CONFIG),
    /// keras (Keras 3's keras.distribution on JAX: KERAS_DISTRIBUTION_* variables) or jax
    /// (jax.distributed: JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID);
    /// keras and jax run workers only
    framework: crate::framework::Framework = crate::framework::Framework::Tensorflow,
        parse::value_enum::<crate::framework::Framework>, "", show_default
        => [Spawn], value: "NAME", choices: crate::framework::Framework;
    /// Number of worker pods (and services)
    workers: u32 = crate::cli::flags::DEFAULT_WORKERS, parse::workers, "", show_default, short_help
        => [Spawn], short: 'w', value: "N", brief: "Number of worker pods",
            sweep: "Worker pods of each run";
    /// Stop every pod of the run after it has been active this long (e.g. 12h, 90m): the
    /// pods' activeDeadlineSeconds, enforced by the kubelet; the run fails with reason
    /// DeadlineExceeded
    deadline: Option<Duration> = None, parse::deadline, "(none)"
        => [Spawn], value: "DURATION", heading: Shared;
    /// Give up a task's pod this long after its node stopped reporting (e.g. 30s, 2m): the
    /// pods tolerate the node.kubernetes.io/not-ready and unreachable taints (NoExecute)
    /// this long, then the cluster evicts them; the run fails as "lost with its node",
    /// which wait --restarts retries on another node [default: the config file's
    /// node_lost_after, else the cluster's, 5m]
    node_lost_after: Option<Duration> = None, parse::deadline, "(the cluster's, 5m)"
        => [Spawn], value: "DURATION", heading: Shared;
    /// The PriorityClass of every pod (priorityClassName)
    priority_class: Option<String> = None, parse::name, "(none)"
        => [Spawn], value: "NAME", heading: Shared;
    /// The ServiceAccount every pod runs as (serviceAccountName), e.g. one bound to a
    /// cloud identity that may read the data bucket; it must exist in the namespace
    /// [default: the config file's service_account, else the pod template's, else the
    /// namespace's default]
    service_account: Option<String> = None, parse::name, "(the pod template's, else default)"
        => [Spawn], value: "NAME", heading: Shared;
    /// Submit the run to this Kueue LocalQueue, as one pod group admitted whole (labels
    /// kueue.x-k8s.io/queue-name and pod-group-name on every pod); the LocalQueue must
    /// exist, and Kueue must hold the pods
    queue: Option<String> = None, parse::queue, "(none)"
        => [Spawn], value: "NAME", heading: Shared;
    /// Gang-schedule the run: one PodGroup of the training tasks (chief, ps, workers;
    /// minMember: all of them) scheduled by that scheduler; the evaluator is scheduled
    /// on its own
    gang: Option<crate::plan::podgroup::Gang> = None, parse::value_enum::<crate::plan::podgroup::Gang>, "(none)"
        => [Spawn], value: "SCHEDULER", choices: crate::plan::podgroup::Gang, heading: Shared;
    /// With --gang volcano: the Volcano queue of the PodGroup (spec.queue); it must
    /// exist and be open
    volcano_queue: Option<String> = None, parse::name, "(none)"
        => [Spawn], value: "NAME", heading: Shared;
    /// The schedulerName of every pod (default with --gang: volcano, or
    /// scheduler-plugins-scheduler for coscheduling)
    scheduler_name: Option<String> = None, parse::name, "(none)"
        => [Spawn], value: "NAME", heading: Shared;
    /// Run every task as this non-root user id, group and fsGroup (runAsNonRoot; the
    /// --volume claim made writable by the group; HOME a writable directory), as a
    /// namespace enforcing Pod Security "restricted" requires; cp and tensorboard run
    /// as the same user [default: the config file's run_as_user, else the image's user]
    run_as_user: Option<i64> = None, parse::uid, "(the image's user)"
        => [Spawn], value: "UID", heading: Shared;
    /// Create a NetworkPolicy with the run that admits traffic to its tasks from its
    /// own tasks (every port), for namespaces that deny traffic by default [default:
    /// the config file's network_policy, else false]
    network_policy: bool = false, parse::boolean, "" => [Spawn], heading: Shared;
    /// After the verdict, leave the tasks still running (parameter servers, workers
    /// hung after a peer failed) as they are; by default they are stopped (deleted),
    /// keeping the finished pods and their logs, as TFJob's cleanPodPolicy: Running
    /// (spawn: with --wait)
    keep_running: bool = false, parse::boolean, ""
        => [Spawn, Wait], requires: "wait",
            brief: "Leave a failed run's unfinished tasks running";
    /// What a cancelled wait (SIGINT or SIGTERM: Ctrl-C, a CI job cancelled) does to the
    /// run, without --cleanup (with it the run is deleted): leave it as it is (only the
    /// watching stops), stop its unfinished pods (kept with their logs until -d) or
    /// delete it; --save-logs is written first, within 7s; exit 130/143 [default: the
    /// config file's on_cancel, else leave]
    on_cancel: crate::ops::wait::OnCancel = crate::ops::wait::OnCancel::Leave,
        parse::value_enum::<crate::ops::wait::OnCancel>, "", unshown
        => [Spawn, Wait], value: "WHAT", choices: crate::ops::wait::OnCancel, requires: "wait",
            brief: "On a cancel: leave, stop or delete the run";
    /// Restart the run up to N times when it fails for a reason worth retrying
    /// (--restart-on): its pods deleted and created again, same names (a restart of every
    /// task moves the port one up). Only while tf-spawner follows the run (spawn --wait
    /// then waits for the end)
    /// [default: the config file's restarts, else 0]
    restarts: u32 = 0, parse::restarts, "", short_help
        => [Spawn, Wait], value: "N",
            brief: "Restart a retryable failure up to N times",
            sweep: "Restart each run's retryable failure N times";
    /// What is worth a restart, as changes to the default removed,exit:42,exit:137,exit:143:
    /// exit:N adds an exit code, no-exit:N and no-removed take one out, none empties it
    restart_on: crate::verdict::retryable::RestartOn = Default::default(), parse::restart_on, ""
        => [Spawn, Wait], value: "LIST",
            brief: "What is retryable [default: removed,exit:42,exit:137,exit:143]";
    /// How long wait, logs -f, spawn --wait and -d --wait keep reconnecting to an API
    /// server that cannot be reached before they give up (exit 1) [default: 10m, or the
    /// defaults file's give_up_after]
    give_up_after: Duration = crate::cluster::retry::GIVE_UP, parse::duration, "", short_help
        => [Global], value: "DURATION", heading: Global,
            brief: "Give up reconnecting after [default: 10m]";
    /// Fail the run (exit 5) unless every task runs or has finished this long (e.g. 10m)
    /// after its creation, naming the tasks still pending and why; the started pods are
    /// stopped (spawn: with --wait) [default: the config file's start_timeout, else none]
    start_timeout: Option<Duration> = None, parse::start_timeout, "(none)"
        => [Spawn, Wait], value: "DURATION", requires: "wait",
            brief: "Fail (exit 5) unless every task started this long after creation";
    /// How long a task's image may fail to pull (ErrImagePull, ImagePullBackOff) before
    /// the run fails, counted from its pod's creation (e.g. 10m; 0s: at once): a
    /// registry's hiccup or a slow mirror passes within it, a wrong --image does not
    /// [default: the config file's pull_grace, else 5m]
    pull_grace: Duration = crate::verdict::DEFAULT_PULL_GRACE, parse::duration, ""
        => [Spawn], value: "DURATION";
    /// A stall: the deciding task (chief, else worker 0) has printed no progress line
    /// (Keras' epoch and step lines, or tf-spawner's own: docs/progress.md) for this long
    /// (e.g. 30m), once it printed one; named on the training line ("no progress from
    /// worker-0 since …"), failing the run with --on-stall fail, restarting it with
    /// --on-stall restart. Replaces the bound derived from the run's progress
    /// (--stall-factor, --stall-floor) [default: the config file's stall_after, else
    /// derived]
    stall_after: Option<Duration> = None, parse::stall_after, "(derived: --stall-factor, --stall-floor)"
        => [Wait], value: "DURATION",
            brief: "No progress this long is a stall [default: --stall-factor]";
    /// Without --stall-after, a stall is this many times the longest gap between two
    /// progress lines the run has printed so far (never under --stall-floor); 0: no
    /// stall is named [default: the config file's stall_factor, else 10]
    stall_factor: u32 = crate::ops::wait::DEFAULT_STALL_FACTOR, parse::stall_factor, "", unshown
        => [Wait], value: "N",
            brief: "Else a stall: N × the longest progress gap [default: 10]";
    /// The least derived stall bound (see --stall-factor) [default: the config file's
    /// stall_floor, else 30m]
    stall_floor: Duration = crate::ops::wait::DEFAULT_STALL_FLOOR, parse::stall_after, "", unshown
        => [Wait], value: "DURATION",
            brief: "The least derived stall bound [default: 30m]";
    /// Mount the existing PersistentVolumeClaim CLAIM into every task at PATH (default
    /// /output); the script finds the path in $TF_SPAWNER_OUTPUT_DIR (with --local: the
    /// directory tf-spawner-output/TAG here). `cp` and `tensorboard` read it
    volume: Option<String> = None, parse::volume, "(none)", short_help
        => [Spawn], value: "CLAIM[:PATH]", brief: "Mount CLAIM at PATH (/output) in every task";
    /// Ship this directory with the run (a compressed tar in its ConfigMap, at most
    /// 1 MiB; .gitignore, .tfspawnerignore and hidden files excluded): the script's
    /// working directory and on PYTHONPATH; the training script is a file in it
    dir: Option<PathBuf> = None, parse::path, "(none: the script alone)", anchored, short_help
        => [Spawn], value: "DIR", brief: "Ship this directory (imports, files) too";
    /// CPUs of each chief, worker and evaluator (e.g. 4, 500m): the TF container's
    /// request and limit [default: the config file's cpu, else the template's]
    cpu: Option<String> = None, parse::cpu, "(the template's)", short_help
        => [Spawn], value: "N", heading: Resources,
            brief: "CPUs of each task (requests = limits)";
    /// Memory of each chief, worker and evaluator (e.g. 16Gi): the TF container's request
    /// and limit, plus /dev/shm's size on a task with GPUs [default: the config file's
    /// memory, else the template's]
    memory: Option<String> = None, parse::memory, "(the template's)", short_help
        => [Spawn], value: "SIZE", heading: Resources,
            brief: "Memory of each task (requests = limits)";
    /// GPUs of each chief, worker and evaluator: the TF container's limit of the GPU
    /// resource (--gpu-resource); 0 removes the template's [default: the config file's
    /// gpus, else the template's]
    gpus: Option<u32> = None, parse::gpus, "(the template's)", short_help
        => [Spawn], value: "N", heading: Resources,
            brief: "GPUs of each task (nvidia.com/gpu)";
    /// CPUs of each parameter server [default: the config file's ps_cpu, else --cpu]
    ps_cpu: Option<String> = None, parse::cpu, "(--cpu)"
        => [Spawn], value: "N", heading: Resources;
    /// Memory of each parameter server [default: the config file's ps_memory, else
    /// --memory]
    ps_memory: Option<String> = None, parse::memory, "(--memory)"
        => [Spawn], value: "SIZE", heading: Resources;
    /// GPUs of each parameter server [default: the config file's ps_gpus, else the
    /// template's]
    ps_gpus: Option<u32> = None, parse::gpus, "(the template's)"
        => [Spawn], value: "N", heading: Resources;
    /// The extended resource --gpus counts: amd.com/gpu, a MIG profile such as
    /// nvidia.com/mig-1g.10gb [default: the config file's gpu_resource, else
    /// nvidia.com/gpu]
    gpu_resource: String = crate::plan::DEFAULT_GPU_RESOURCE.to_string(), parse::gpu_resource, ""
        => [Spawn], value: "NAME", heading: Resources;
    /// Size of the memory-backed /dev/shm of each task with GPUs (NCCL needs more than a
    /// container's 64Mi); 0 for none [default: the config file's shm_size, else 2Gi]
    shm_size: String = crate::plan::DEFAULT_SHM_SIZE.to_string(), parse::shm_size, ""
        => [Spawn], value: "SIZE", heading: Resources;
    /// TensorBoard's image [default: the config file's tensorboard_image, else the
    /// run's image, as cp uses]
    tensorboard_image: Option<String> = None, parse::image, "(the run's image)"
        => [Tensorboard], long: "image", value: "IMAGE";
    /// A watch (wait; spawn --wait and -d --wait from the config file) or a followed log
    /// (logs -f) silent this long is taken as frozen: the pods are listed again, the log
    /// opened again from its last line; at least 2s [default: the config file's
    /// idle_timeout, else 5m]
    idle_timeout: Duration = crate::cluster::retry::IDLE, parse::idle_timeout, "", unshown
        => [Wait, Logs], value: "DURATION";
    /// In a pipe (not a terminal), when nothing was printed this long: wait and spawn
    /// --wait print one line (the state, the epoch and step if known, how long since the
    /// last news), logs -f one note on stderr while a task has not started, so that a CI
    /// job's no-output watchdog (CircleCI's 10 minutes) does not end it; never on a
    /// terminal (the live lines are there); 0s: never [default: the config file's
    /// heartbeat, else 5m]
    heartbeat: Duration = crate::ops::holdups::HEARTBEAT, parse::duration, "", unshown
        => [Wait, Logs], value: "DURATION",
            brief: "In a pipe, a line after this long without one [default: 5m]";
    /// With --local: the Python interpreter that runs the training script [default: the
    /// config files' python, else python3]
    python: String = crate::cli::flags::DEFAULT_PYTHON.to_string(), parse::program, "", program
        => [Spawn], value: "PROGRAM", requires: "local";
    /// With --detach: the image the supervisor runs, with tf-spawner on its PATH, from a
    /// registry the cluster reaches (tools/supervisor-image/build.sh makes one)
    /// [default: the config file's supervisor_image, else none]
    supervisor_image: Option<String> = None, parse::image, "(none)"
        => [Spawn], value: "IMAGE", requires: "detach";
    /// With --detach: the ServiceAccount the supervisor runs as, which needs the rights
    /// of examples/rbac.yaml's Role (that file makes tf-spawner-supervisor, bound to it)
    /// [default: the config file's supervisor_account, else tf-spawner-supervisor]
    supervisor_account: String = crate::plan::supervisor::DEFAULT_ACCOUNT.to_string(), parse::name, ""
        => [Spawn], value: "NAME", requires: "detach";
    /// At the verdict, run CMD (by sh -c; the verdict in $TF_SPAWNER_VERDICT, a JSON
    /// summary on its stdin) or POST that JSON to an http:// or https:// URL (its "text"
    /// is what Slack and Mattermost show); 10s at most, a failure only warns [default:
    /// the config file's notify, else none]
    notify: Option<crate::metrics::notice::Target> = None, parse::notify, "(none)", command
        => [Spawn, Wait], value: "CMD|URL", brief: "At the verdict, run CMD (sh -c) or POST to URL its JSON summary",
            sweep: "Tell CMD or URL each run's end and the sweep's";
    /// A sweep's runs at a time: with --queue or --gang every run (the queue decides);
    /// else, without this, as many as the namespace's quotas hold, and 4 when no quota
    /// bounds them (a shared cluster is not filled by one search); with --local 1
    /// [default: the config file's parallel, else as said]
    parallel: Option<u32> = None, parse::runs, "(as the quotas hold, else 4)"
        => [Sweep], value: "N", brief: "Runs at a time [default: as the quotas hold, else 4]",
            sweep: "Runs at a time [default: what the quota holds]";
    /// Stop a sweep's losing runs early, judged by --objective at the end of chosen
    /// epochs (docs/experiments.md): asha stops, at epochs min_epochs·η^k, a run outside
    /// the best 1/η of the runs that reached that epoch (once η have); median stops a
    /// run worse than the median of the other runs at the same epoch (once 3 have); off:
    /// every run trains to its end. A run stopped early is done, not failed, and its
    /// pods are kept with their logs [default: the config file's early_stop, else off]
    early_stop: crate::metrics::early::Rule = crate::metrics::early::Rule::Off,
        parse::value_enum::<crate::metrics::early::Rule>, ""
        => [Sweep], value: "RULE", choices: crate::metrics::early::Rule,
            brief: "Stop losing runs early: asha, median or off [default: off]",
            sweep: "Stop losing runs early: asha, median or off";
    /// With --early-stop asha: the reduction factor η, at least 2: rungs at epochs
    /// min_epochs·η^k, and at each only the best 1/η of the runs go on [default: the
    /// config file's eta, else 3]
    eta: u32 = crate::metrics::early::DEFAULT_ETA, parse::eta, ""
        => [Sweep], value: "N", brief: "ASHA's reduction factor η [default: 3]",
            sweep: "With asha: its reduction factor η [default: 3]";
    /// With --early-stop: the first epoch at whose end a run may be stopped (asha's
    /// first rung) [default: the config file's min_epochs, else 1]
    min_epochs: u32 = crate::metrics::early::DEFAULT_MIN_EPOCHS, parse::min_epochs, ""
        => [Sweep], value: "N", brief: "The first epoch a run may be stopped at [default: 1]",
            sweep: "First epoch a run may be stopped at [default: 1]";
    } };
}
pub(crate) use flag_list;

/// The list's grammar (above), written once: hands `$then!` each entry as a record of
/// one shape, `{ doc: [..], key: k, ty: T, default: e, parse: e, none: "…", marks: [..],
/// flag: [..] }`, `flag` empty without a flag clause, else every clause of it, each a
/// `[..]` that is empty when the entry leaves it out. `settings/table.rs` reads the
/// records and passes `flag` by; `flag_defs.rs`'s `defs` reads the flag's clauses.
macro_rules! flag_entries {
    ($then:ident; $(
        $(#[doc = $doc:literal])*
        $key:ident: $ty:ty = $default:expr, $parse:expr, $none:literal $(, $mark:ident)*
            $(=> [$($place:ident),+] $(, short: $short:literal)? $(, long: $long:literal)?
                $(, value: $value_name:literal)? $(, choices: $choices:ty)?
                $(, heading: $heading:ident)? $(, requires: $requires:literal)?
                $(, brief: $brief:literal)? $(, sweep: $sweep:literal)?)?;
    )*) => { $then! { $( {
        doc: [$($doc),*], key: $key, ty: $ty, default: $default, parse: $parse, none: $none,
        marks: [$($mark)*],
        flag: [$(
            places: [$($place),+], short: [$($short)?], long: [$($long)?],
            value: [$($value_name)?], choices: [$($choices)?], heading: [$($heading)?],
            requires: [$($requires)?], brief: [$($brief)?], sweep: [$($sweep)?]
        )?]
    } )* } };
}
pub(crate) use flag_entries;

/// The built-in `--python`.
pub const DEFAULT_PYTHON: &str = "python3";

/// The built-in `--port` and `--workers`.
pub const DEFAULT_PORT: u16 = 1999;
pub const DEFAULT_WORKERS: u32 = 2;
