//! The tasks of a training cluster and the `TF_CONFIG` each one reads.
//!
//! tf.distribute wants the same `cluster` in every training task and its own `task`.
//! The evaluator is not part of the training cluster (TensorFlow's docs; it would
//! otherwise be counted in collective ops): it sees the training cluster and its own
//! task `{"type":"evaluator","index":0}`, and no other task connects to it.

#![deny(clippy::arithmetic_side_effects)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::errors::UsageError;
use crate::framework::Framework;

/// `--strategy`: a preset that checks the roles (and adds a chief for parameter-server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// MultiWorkerMirroredStrategy: workers (and an optional chief), no parameter servers
    MultiWorker,
    /// ParameterServerStrategy: a chief as coordinator, workers and parameter servers
    ParameterServer,
}

/// The variables tf-spawner gives every task (see [`ClusterSpec::env`]); an env file
/// may not set them.
pub const TF_VARS: [&str; 4] = ["TF_CONFIG", "WORKER_NUMBER", "TOT_WORKERS", CLUSTER_VAR];
/// Variables every task gets unless its environment already sets them (the pod template,
/// `-e FILE`; with `--local`, tf-spawner's own environment too): Python writes each
/// line as it is printed, so `logs -f` and `--local` show it then, not at the end (a
/// pipe makes Python buffer its output in blocks of 8 KB otherwise).
pub const TASK_DEFAULTS: [(&str, &str); 1] = [("PYTHONUNBUFFERED", "1")];
/// A pod's variable holding the `cluster` part of its `TF_CONFIG` (from the run's
/// ConfigMap); `TF_CONFIG` refers to it as `$(TF_SPAWNER_CLUSTER)`.
pub const CLUSTER_VAR: &str = "TF_SPAWNER_CLUSTER";

/// Upper bound on tasks in one run: far beyond real runs, low enough to catch a typo.
pub const MAX_TASKS: u32 = 10_000;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Chief,
    Ps,
    Worker,
    Evaluator,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Chief, Role::Ps, Role::Worker, Role::Evaluator];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Chief => "chief",
            Role::Ps => "ps",
            Role::Worker => "worker",
            Role::Evaluator => "evaluator",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether peers connect to this task (it is in `cluster` and gets a Service).
    pub fn in_cluster(self) -> bool {
        self != Role::Evaluator
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task: a pod `TAG-ROLE-INDEX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Task {
    pub role: Role,
    pub index: u32,
}

impl Task {
    /// `ROLE-INDEX`, the suffix of the object names and the log prefix.
    pub fn id(self) -> String {
        format!("{}-{}", self.role, self.index)
    }

    pub fn name(self, tag: &str) -> String {
        format!("{tag}-{}", self.id())
    }

    /// The task whose exit decides a run: the chief if there is one, else worker 0.
    pub fn deciding(has_chief: bool) -> Task {
        let role = if has_chief { Role::Chief } else { Role::Worker };
        Task { role, index: 0 }
    }
}

/// How many tasks of each role a run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Roles {
    pub chief: bool,
    pub ps: u32,
    pub workers: u32,
    pub evaluator: bool,
}

impl Roles {
    /// The roles a framework without `tf.distribute` refuses (`--framework`), in one line.
    pub fn check_framework(&self, framework: Framework, strategy: bool) -> Result<(), UsageError> {
        let (roles, about) = (self, framework.about());
        if about.tf_distribute {
            return Ok(());
        }
        let refused = [
            (strategy, "--strategy"),
            (roles.chief, "--chief"),
            (roles.ps > 0, "--ps"),
            (roles.evaluator, "--evaluator"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        match refused {
            Some(flag) => Err(UsageError::new(format!(
                "--framework {} runs workers only ({} has no chief, parameter servers or evaluator; they are tf.distribute's roles): leave out {flag}",
                about.name, about.title
            ))),
            None => Ok(()),
        }
    }

    /// Checks a combination against what TensorFlow can run; a strategy preset adds
    /// the roles it implies (a chief for parameter-server).
    pub fn new(
        strategy: Option<Strategy>,
        chief: bool,
        ps: u32,
        workers: u32,
        evaluator: bool,
    ) -> Result<Roles, UsageError> {
        if workers == 0 {
            return Err(UsageError::new(
                "--workers must be at least 1 (tf.distribute needs a worker)",
            ));
        }
        let chief = match strategy {
            Some(Strategy::MultiWorker) if ps > 0 => {
                return Err(UsageError::new(
                    "--strategy multi-worker (MultiWorkerMirroredStrategy) has no parameter servers: drop --ps, or use --strategy parameter-server",
                ));
            }
            Some(Strategy::ParameterServer) if ps == 0 => {
                return Err(UsageError::new(
                    "--strategy parameter-server needs at least one parameter server: add --ps N",
                ));
            }
            Some(Strategy::ParameterServer) => true,
            None if ps > 0 && !chief => {
                return Err(UsageError::new(
                    "parameter servers need a coordinator: add --chief, or use --strategy parameter-server",
                ));
            }
            _ => chief,
        };
        let total = u64::from(workers)
            .saturating_add(u64::from(ps))
            .saturating_add(u64::from(chief))
            .saturating_add(u64::from(evaluator));
        if total > u64::from(MAX_TASKS) {
            return Err(UsageError::new(format!(
                "{total} tasks requested; a run has at most {MAX_TASKS} (check --workers and --ps)"
            )));
        }
        Ok(Roles {
            chief,
            ps,
            workers,
            evaluator,
        })
    }

    /// Workers only: the original tool's shape.
    #[cfg(test)]
    pub fn workers(workers: u32) -> Result<Roles, UsageError> {
        Roles::new(None, false, 0, workers, false)
    }

    pub fn count(&self, role: Role) -> u32 {
        match role {
            Role::Chief => u32::from(self.chief),
            Role::Ps => self.ps,
            Role::Worker => self.workers,
            Role::Evaluator => u32::from(self.evaluator),
        }
    }

    /// Every task, chief first, then parameter servers, workers, evaluator.
    pub fn tasks(&self) -> impl Iterator<Item = Task> + '_ {
        Role::ALL
            .into_iter()
            .flat_map(move |role| (0..self.count(role)).map(move |index| Task { role, index }))
    }

    /// The object-name suffix of greatest length, for tag length checks.
    pub fn longest_suffix(&self) -> String {
        self.tasks()
            .filter(|t| t.index.saturating_add(1) == self.count(t.role))
            .map(|t| format!("-{}", t.id()))
            .max_by_key(String::len)
            .unwrap_or_default()
    }
}

/// Builds `TF_CONFIG` values for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    cluster: BTreeMap<&'static str, Vec<String>>,
}

#[derive(Serialize)]
struct TaskRef {
    #[serde(rename = "type")]
    role: Role,
    index: u32,
}

impl ClusterSpec {
    /// Host names are the tasks' headless services: `TAG-ROLE-I.NAMESPACE.svc:PORT`.
    pub fn new(roles: &Roles, tag: &str, namespace: &str, port: u16) -> ClusterSpec {
        Self::with_hosts(roles, |task| {
            format!("{}.{namespace}.svc:{port}", task.name(tag))
        })
    }

    /// A cluster whose addresses come from `host` (local runs use 127.0.0.1 and free ports).
    pub fn with_hosts(roles: &Roles, mut host: impl FnMut(Task) -> String) -> ClusterSpec {
        let mut cluster: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for task in roles.tasks().filter(|t| t.role.in_cluster()) {
            cluster
                .entry(task.role.as_str())
                .or_default()
                .push(host(task));
        }
        ClusterSpec { cluster }
    }

    /// The variables of `task`, in this order: `TF_CONFIG` (where `framework` is
    /// `tf.distribute`), `WORKER_NUMBER` (workers only: their index), `TOT_WORKERS` (the
    /// number of workers), then the framework's process variables (workers only:
    /// `framework.rs`), with `cluster` as the cluster part of `TF_CONFIG`: the JSON itself
    /// for local processes (`local/setup.rs`), the `$(TF_SPAWNER_CLUSTER)` reference for
    /// pods (`plan/`). The one rule for both.
    pub fn env_around(
        &self,
        roles: &Roles,
        task: Task,
        cluster: &str,
        framework: Framework,
    ) -> Vec<(&'static str, String)> {
        let mut env = Vec::new();
        if framework.about().tf_distribute {
            env.push(("TF_CONFIG", tf_config_around(cluster, task)));
        }
        if task.role == Role::Worker {
            env.push(("WORKER_NUMBER", task.index.to_string()));
        }
        env.push(("TOT_WORKERS", roles.workers.to_string()));
        if task.role == Role::Worker
            && let Some(coordinator) = self.coordinator()
        {
            env.extend(framework.process_env(coordinator, roles.workers, task.index));
        }
        env
    }

    /// [`Self::env_around`] with the cluster written out: what every process sees.
    pub fn env(
        &self,
        roles: &Roles,
        task: Task,
        framework: Framework,
    ) -> Vec<(&'static str, String)> {
        self.env_around(roles, task, &self.cluster_json(), framework)
    }

    /// Worker 0's address: the coordinator of the frameworks that have one.
    fn coordinator(&self) -> Option<&str> {
        self.cluster
            .get(Role::Worker.as_str())?
            .first()
            .map(String::as_str)
    }

    /// Compact JSON, cluster keys sorted: `{"cluster":{...},"task":{"type":"worker","index":0}}`.
    #[cfg(test)]
    pub fn tf_config(&self, task: Task) -> String {
        tf_config_around(&self.cluster_json(), task)
    }

    /// The `cluster` part of every task's `TF_CONFIG`: `{"chief":[...],"worker":[...]}`.
    pub fn cluster_json(&self) -> String {
        serde_json::to_string(&self.cluster).expect("the cluster is plain strings")
    }

    /// The cluster part of a `TF_CONFIG` as a run's ConfigMap holds it
    /// ([`Self::cluster_json`]); `None` when it is not one (an unknown role, an address
    /// without a port).
    pub fn parse(json: &str) -> Option<ClusterSpec> {
        let read: BTreeMap<String, Vec<String>> = serde_json::from_str(json).ok()?;
        let mut cluster = BTreeMap::new();
        for (role, hosts) in read {
            let role = Role::parse(&role).filter(|r| r.in_cluster())?;
            if hosts.iter().any(|h| port_of(h).is_none()) {
                return None;
            }
            cluster.insert(role.as_str(), hosts);
        }
        Some(ClusterSpec { cluster })
    }

    /// The port of the first address: every address of a run's cluster has the same.
    pub fn port(&self) -> Option<u16> {
        self.cluster
            .values()
            .flatten()
            .next()
            .and_then(|h| port_of(h))
    }

    /// The same cluster with every address on `port`.
    pub fn with_port(&self, port: u16) -> ClusterSpec {
        let moved = |h: &String| match h.rsplit_once(':') {
            Some((host, _)) => format!("{host}:{port}"),
            None => h.clone(),
        };
        let cluster = self
            .cluster
            .iter()
            .map(|(role, hosts)| (*role, hosts.iter().map(moved).collect()))
            .collect();
        ClusterSpec { cluster }
    }

    /// The host names of the addresses (`TAG-worker-0.NS.svc`'s `TAG-worker-0`: the
    /// task's pod and service).
    pub fn names(&self) -> BTreeSet<String> {
        let name = |h: &String| h.split([':', '.']).next().unwrap_or_default().to_string();
        self.cluster.values().flatten().map(name).collect()
    }

    /// The number of tasks per cluster role, e.g. `chief=1,worker=3` (keys sorted as in
    /// `cluster`): what a reader of a pod needs to know the run's tasks without the
    /// cluster's addresses.
    pub fn sizes(&self) -> String {
        self.cluster
            .iter()
            .map(|(role, hosts)| format!("{role}={}", hosts.len()))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The port of `host:port`.
fn port_of(address: &str) -> Option<u16> {
    address.rsplit_once(':')?.1.parse().ok()
}

/// The port a run's tasks listen on after a restart of them all, from the one before:
/// one up (from 65535 to 1024). A task of the replaced attempt still running on a node
/// cut off from the API server resolves its peers' names to the new pods; on another
/// port it cannot reach them (TensorFlow's coordination service aborts a cluster that
/// hears from a task it does not know).
pub fn next_port(port: u16) -> u16 {
    port.checked_add(1).unwrap_or(1024)
}

/// `TF_CONFIG` with `cluster` as written (JSON, or a `$(VAR)` reference the kubelet
/// expands): `{"cluster":CLUSTER,"task":{"type":"worker","index":0}}`.
pub fn tf_config_around(cluster: &str, task: Task) -> String {
    let task = TaskRef {
        role: task.role,
        index: task.index,
    };
    let task = serde_json::to_string(&task).expect("TF_CONFIG's task is plain");
    format!("{{\"cluster\":{cluster},\"task\":{task}}}")
}

/// How many tasks of each role a run's cluster has: what a pod says about the run
/// (from [`ClusterSpec::sizes`]), four numbers however many tasks there are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoleSizes([u32; 4]);

impl RoleSizes {
    /// Parses [`ClusterSpec::sizes`] (`chief=1,worker=3`); `None` if it is not that shape.
    pub fn parse(sizes: &str) -> Option<RoleSizes> {
        let mut out = RoleSizes::default();
        for part in sizes.split(',').filter(|p| !p.is_empty()) {
            let (role, count) = part.split_once('=')?;
            let role = Role::parse(role)?;
            out.0[role as usize] = count.parse().ok()?;
        }
        Some(out)
    }

    pub fn set(&mut self, role: Role, count: u32) {
        self.0[role as usize] = count;
    }

    pub fn get(&self, role: Role) -> u32 {
        self.0[role as usize]
    }

    /// The larger count of each role.
    pub fn merge(&mut self, other: &RoleSizes) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine = (*mine).max(theirs);
        }
    }

    /// Every task, in task order.
    pub fn tasks(&self) -> impl Iterator<Item = Task> + '_ {
        Role::ALL
            .into_iter()
            .flat_map(|role| (0..self.get(role)).map(move |index| Task { role, index }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keras_and_jax_refuse_tf_distributes_roles_and_tensorflow_takes_them() {
        let ps = Roles::new(None, true, 1, 2, false).unwrap();
        assert!(ps.check_framework(Framework::Tensorflow, true).is_ok());
        let workers = Roles::new(None, false, 0, 3, false).unwrap();
        for f in [Framework::Keras, Framework::Jax] {
            assert!(workers.check_framework(f, false).is_ok());
            let e = ps.check_framework(f, false).unwrap_err().to_string();
            assert!(e.contains("leave out --chief"), "{e}");
            assert!(
                e.starts_with(&format!("--framework {f} runs workers only")),
                "{e}"
            );
            let eval = Roles::new(None, false, 0, 2, true).unwrap();
            assert!(
                eval.check_framework(f, false)
                    .unwrap_err()
                    .to_string()
                    .ends_with("leave out --evaluator")
            );
            assert!(
                workers
                    .check_framework(f, true)
                    .unwrap_err()
                    .to_string()
                    .ends_with("leave out --strategy")
            );
        }
    }

    #[test]
    fn workers_only_matches_the_original_shape() {
        let roles = Roles::workers(2).unwrap();
        let spec = ClusterSpec::new(&roles, "t", "ns", 1999);
        assert_eq!(
            spec.tf_config(Task {
                role: Role::Worker,
                index: 1
            }),
            r#"{"cluster":{"worker":["t-worker-0.ns.svc:1999","t-worker-1.ns.svc:1999"]},"task":{"type":"worker","index":1}}"#
        );
    }

    #[test]
    fn a_clusters_port_moves_and_its_names_stay() {
        let roles = Roles::new(Some(Strategy::MultiWorker), true, 0, 2, false).unwrap();
        let spec = ClusterSpec::new(&roles, "t", "ns", 1999);
        let read = ClusterSpec::parse(&spec.cluster_json()).unwrap();
        assert_eq!(read, spec);
        assert_eq!(read.port(), Some(1999));
        let moved = read.with_port(next_port(1999));
        assert_eq!(
            moved.cluster_json(),
            r#"{"chief":["t-chief-0.ns.svc:2000"],"worker":["t-worker-0.ns.svc:2000","t-worker-1.ns.svc:2000"]}"#
        );
        assert_eq!(
            moved.names().into_iter().collect::<Vec<_>>(),
            ["t-chief-0", "t-worker-0", "t-worker-1"]
        );
        assert_eq!(next_port(65535), 1024);
        for bad in [
            r#"{"worker":["t-worker-0.ns.svc"]}"#,
            r#"{"evaluator":["t-evaluator-0.ns.svc:1999"]}"#,
            r#"{"worker":"t"}"#,
        ] {
            assert_eq!(ClusterSpec::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn roles_are_sorted_and_the_evaluator_is_outside_the_cluster() {
        let roles = Roles::new(Some(Strategy::ParameterServer), false, 1, 1, true).unwrap();
        assert!(roles.chief);
        let spec = ClusterSpec::new(&roles, "t", "ns", 5);
        assert_eq!(
            spec.tf_config(Task {
                role: Role::Evaluator,
                index: 0
            }),
            r#"{"cluster":{"chief":["t-chief-0.ns.svc:5"],"ps":["t-ps-0.ns.svc:5"],"worker":["t-worker-0.ns.svc:5"]},"task":{"type":"evaluator","index":0}}"#
        );
        let ids: Vec<String> = roles.tasks().map(Task::id).collect();
        assert_eq!(ids, ["chief-0", "ps-0", "worker-0", "evaluator-0"]);
    }

    #[test]
    fn tf_config_around_a_reference_and_sizes_round_trip() {
        let roles = Roles::new(None, true, 2, 3, true).unwrap();
        let spec = ClusterSpec::new(&roles, "t", "ns", 5);
        let task = Task {
            role: Role::Worker,
            index: 2,
        };
        assert_eq!(
            tf_config_around(&spec.cluster_json(), task),
            spec.tf_config(task)
        );
        assert_eq!(
            tf_config_around("$(C)", task),
            r#"{"cluster":$(C),"task":{"type":"worker","index":2}}"#
        );
        assert_eq!(spec.sizes(), "chief=1,ps=2,worker=3");
        let cluster: Vec<Task> = roles.tasks().filter(|t| t.role.in_cluster()).collect();
        let mut parsed: Vec<Task> = RoleSizes::parse(&spec.sizes()).unwrap().tasks().collect();
        parsed.sort();
        let mut expected = cluster.clone();
        expected.sort();
        assert_eq!(parsed, expected);
        assert_eq!(RoleSizes::parse("worker=x"), None);
        assert_eq!(RoleSizes::parse("boss=1"), None);
    }

    #[test]
    fn refuses_what_tensorflow_cannot_run() {
        let e = |r: Result<Roles, UsageError>| r.unwrap_err().to_string();
        assert!(e(Roles::workers(0)).contains("--workers must be at least 1"));
        assert!(
            e(Roles::new(
                Some(Strategy::ParameterServer),
                true,
                0,
                2,
                false
            ))
            .contains("add --ps N")
        );
        assert!(
            e(Roles::new(Some(Strategy::MultiWorker), false, 1, 2, false)).contains("drop --ps")
        );
        assert!(e(Roles::new(None, false, 2, 2, false)).contains("add --chief"));
        assert!(e(Roles::workers(20_000)).contains("at most 10000"));
    }

    #[test]
    fn longest_suffix_and_deciding_task() {
        let roles = Roles::new(None, true, 2, 10, true).unwrap();
        assert_eq!(roles.longest_suffix(), "-evaluator-0");
        assert_eq!(Task::deciding(roles.count(Role::Chief) > 0).id(), "chief-0");
        let roles = Roles::workers(100).unwrap();
        assert_eq!(roles.longest_suffix(), "-worker-99");
        assert_eq!(
            Task::deciding(roles.count(Role::Chief) > 0).id(),
            "worker-0"
        );
    }
}
