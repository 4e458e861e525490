//! The names tf-spawner gives and looks for on the cluster: labels, annotations, the
//! run's object names and the container that gets the TF variables. Written once here;
//! the plan writes them, the cluster code, the verdict and the operations read them.

pub const RUN_LABEL: &str = "training_attempt";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "tf-spawner";
pub const ROLE_LABEL: &str = "tf-spawner/replica-type";
pub const INDEX_LABEL: &str = "tf-spawner/replica-index";
/// Marks the objects of one invocation, so that a retried create can recognise its own
/// object and a rollback never deletes an object another invocation made.
pub const INVOCATION_ANNOTATION: &str = "tf-spawner/invocation";
/// On the run's ConfigMap: the name of the run's Secret, or [`NO_ENV_SECRET`]. It lets
/// `-d` know whether there is a Secret to delete without reading secrets, which many
/// credentials may not do.
pub const ENV_SECRET_ANNOTATION: &str = "tf-spawner/env-secret";
/// [`ENV_SECRET_ANNOTATION`] of a run without `-e`.
pub const NO_ENV_SECRET: &str = "none";
/// On every pod: the run's cluster as role counts (`chief=1,worker=4`), so that readers
/// of pods (the verdict) know every task without the addresses.
pub const CLUSTER_ANNOTATION: &str = "tf-spawner/cluster";

/// The container that gets the TF variables when the template has one of this name.
pub const TF_CONTAINER: &str = "tensorflow";

/// The label selector that finds every object of run `tag`.
pub fn run_selector(tag: &str) -> String {
    format!("{RUN_LABEL}={tag}")
}

pub fn config_map_name(tag: &str) -> String {
    format!("{tag}-script")
}

pub fn secret_name(tag: &str) -> String {
    format!("{tag}-env")
}
