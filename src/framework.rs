//! `--framework`: what the training script distributes with, and so what each task is
//! told about the others. A table, as roles and gangs are: every framework is in
//! [`Framework::ALL`] and described once by [`Framework::about`], so another one
//! (PyTorch: `MASTER_ADDR`, `WORLD_SIZE`, `RANK`) is one more row.
//!
//! - `tensorflow`: `tf.distribute` reads `TF_CONFIG` (`roles.rs`); chief, parameter
//!   servers and an evaluator mean something.
//! - `keras`: Keras 3's `keras.distribution.initialize()` reads
//!   `KERAS_DISTRIBUTION_JOB_ADDRESSES` (the coordinator's `host:port`; a list's first is
//!   the coordinator and the rest go unused, keras/src/backend/jax/distribution_lib.py),
//!   `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`; its only
//!   multi-process backend in the released Keras is JAX, so `KERAS_BACKEND=jax` unless the
//!   task's environment sets it.
//! - `jax`: `jax.distributed.initialize()` reads `JAX_COORDINATOR_ADDRESS` itself; the
//!   count and the index are for the script to pass (`JAX_NUM_PROCESSES`,
//!   `JAX_PROCESS_ID`: Kubeflow Trainer's names for them).
//!
//! Every framework's tasks get `WORKER_NUMBER` and `TOT_WORKERS` (the original tool's
//! contract); `TF_CONFIG` only where `tf.distribute` reads it. The coordinator is worker
//! 0, at the address its peers already reach it by (its Service, the run's port): one
//! address per task, never the whole list, so a run's objects do not grow as N².

use crate::errors::UsageError;

/// `--framework`. Adding one: a variant, its row in [`Framework::about`].
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// TensorFlow's tf.distribute (TF_CONFIG): MultiWorkerMirroredStrategy with tf-keras,
    /// ParameterServerStrategy
    #[default]
    Tensorflow,
    /// Keras 3's keras.distribution on the JAX backend (KERAS_DISTRIBUTION_* variables)
    Keras,
    /// JAX's jax.distributed (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)
    Jax,
}

/// The variables that tell one process where the coordinator is, how many processes
/// there are and which one it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessVars {
    pub coordinator: &'static str,
    pub count: &'static str,
    pub index: &'static str,
}

/// What tf-spawner knows of one framework.
#[derive(Debug, Clone, Copy)]
pub struct AboutFramework {
    /// The flag's and the settings files' spelling.
    pub name: &'static str,
    /// How a message names what the script calls.
    pub title: &'static str,
    /// Whether `tf.distribute` runs it: `TF_CONFIG` is given and the chief, parameter
    /// server and evaluator roles mean something.
    pub tf_distribute: bool,
    /// Its process variables (none for `tf.distribute`, which reads `TF_CONFIG`).
    pub processes: Option<ProcessVars>,
    /// Variables every task gets unless its environment sets them, with the values the
    /// framework can train on several processes with (the first is the default).
    pub defaults: &'static [(&'static str, &'static [&'static str])],
}

impl Framework {
    pub const ALL: [Framework; 3] = [Framework::Tensorflow, Framework::Keras, Framework::Jax];

    /// The one table of the frameworks' facts.
    pub const fn about(self) -> AboutFramework {
        match self {
            Framework::Tensorflow => AboutFramework {
                name: "tensorflow",
                title: "tf.distribute",
                tf_distribute: true,
                processes: None,
                defaults: &[],
            },
            Framework::Keras => AboutFramework {
                name: "keras",
                title: "keras.distribution",
                tf_distribute: false,
                processes: Some(ProcessVars {
                    coordinator: "KERAS_DISTRIBUTION_JOB_ADDRESSES",
                    count: "KERAS_DISTRIBUTION_NUM_PROCESSES",
                    index: "KERAS_DISTRIBUTION_PROCESS_ID",
                }),
                // keras.distribution's multi-process training: JAX only in Keras 3.15
                // (the torch backend's is unreleased).
                defaults: &[("KERAS_BACKEND", &["jax"])],
            },
            Framework::Jax => AboutFramework {
                name: "jax",
                title: "jax.distributed",
                tf_distribute: false,
                processes: Some(ProcessVars {
                    coordinator: "JAX_COORDINATOR_ADDRESS",
                    count: "JAX_NUM_PROCESSES",
                    index: "JAX_PROCESS_ID",
                }),
                defaults: &[],
            },
        }
    }

    /// The settings files' spelling (`framework: keras`).
    pub fn as_str(self) -> &'static str {
        self.about().name
    }

    /// Every framework's process variables: tf-spawner sets them, an env file may not.
    pub fn process_vars() -> impl Iterator<Item = &'static str> {
        Framework::ALL
            .into_iter()
            .filter_map(|f| f.about().processes)
            .flat_map(|p| [p.coordinator, p.count, p.index])
    }

    /// Every framework's coordinator variable (a `host:port` a restart's port move
    /// rewrites: `cluster/recreate/attempt.rs`).
    pub fn coordinator_vars() -> impl Iterator<Item = &'static str> {
        Framework::ALL
            .into_iter()
            .filter_map(|f| f.about().processes)
            .map(|p| p.coordinator)
    }

    /// A value the task's environment gives one of the framework's defaults that it
    /// cannot train on several processes with, in one line naming where it was set.
    pub fn check_env(self, name: &str, value: &str, whence: &str) -> Result<(), UsageError> {
        let about = self.about();
        let Some((_, allowed)) = about.defaults.iter().find(|(n, _)| *n == name) else {
            return Ok(());
        };
        if allowed.contains(&value) {
            return Ok(());
        }
        Err(UsageError::new(format!(
            "{whence} sets {name}={value}, and --framework {} trains several processes with {} only on {}: set {name}={}, or leave it out",
            about.name,
            about.title,
            allowed.join(", "),
            allowed[0]
        )))
    }

    /// The process variables of worker `index` of `count`, the coordinator at
    /// `coordinator` (worker 0's `host:port`); none for `tf.distribute`.
    pub fn process_env(
        self,
        coordinator: &str,
        count: u32,
        index: u32,
    ) -> Vec<(&'static str, String)> {
        let Some(vars) = self.about().processes else {
            return Vec::new();
        };
        vec![
            (vars.coordinator, coordinator.to_string()),
            (vars.count, count.to_string()),
            (vars.index, index.to_string()),
        ]
    }

    /// The variables every task gets unless its environment sets them.
    pub fn defaults(self) -> impl Iterator<Item = (&'static str, &'static str)> {
        self.about().defaults.iter().map(|(name, v)| (*name, v[0]))
    }
}

impl std::fmt::Display for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_framework_names_itself_as_clap_spells_it() {
        use clap::ValueEnum;
        for f in Framework::ALL {
            let value = f.to_possible_value().expect("a value");
            assert_eq!(value.get_name(), f.as_str());
            assert_eq!(Framework::from_str(f.as_str(), false), Ok(f));
        }
        assert_eq!(Framework::value_variants(), Framework::ALL);
    }

    #[test]
    fn the_process_variables_name_the_coordinator_the_count_and_the_index() {
        assert!(Framework::Tensorflow.process_env("a:1", 2, 1).is_empty());
        assert_eq!(
            Framework::Keras.process_env("t-worker-0.ns.svc:1999", 4, 3),
            [
                (
                    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
                    "t-worker-0.ns.svc:1999".to_string()
                ),
                ("KERAS_DISTRIBUTION_NUM_PROCESSES", "4".to_string()),
                ("KERAS_DISTRIBUTION_PROCESS_ID", "3".to_string()),
            ]
        );
        assert_eq!(
            Framework::Jax.process_env("h:5", 2, 0),
            [
                ("JAX_COORDINATOR_ADDRESS", "h:5".to_string()),
                ("JAX_NUM_PROCESSES", "2".to_string()),
                ("JAX_PROCESS_ID", "0".to_string()),
            ]
        );
        assert_eq!(Framework::process_vars().count(), 6);
    }

    #[test]
    fn keras_defaults_to_jax_and_refuses_a_backend_it_cannot_distribute() {
        assert_eq!(
            Framework::Keras.defaults().collect::<Vec<_>>(),
            [("KERAS_BACKEND", "jax")]
        );
        assert!(
            Framework::Keras
                .check_env("KERAS_BACKEND", "jax", "x")
                .is_ok()
        );
        assert_eq!(
            Framework::Keras
                .check_env("KERAS_BACKEND", "tensorflow", "env file e.env")
                .unwrap_err()
                .to_string(),
            "env file e.env sets KERAS_BACKEND=tensorflow, and --framework keras trains several processes with keras.distribution only on jax: set KERAS_BACKEND=jax, or leave it out"
        );
        assert!(
            Framework::Tensorflow
                .check_env("KERAS_BACKEND", "torch", "x")
                .is_ok()
        );
        assert!(Framework::Keras.check_env("OTHER", "1", "x").is_ok());
    }
}
