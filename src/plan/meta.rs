//! The metadata every object of a run carries: its name and namespace, the run's and
//! the task's labels (a sweep's experiment too), and the invocation.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::request::SpawnRequest;
use crate::labels::{
    EXPERIMENT_LABEL, INDEX_LABEL, INVOCATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, ROLE_LABEL,
    RUN_LABEL,
};
use crate::roles::Task;

pub(super) fn run_labels(tag: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
    ])
}

pub(super) fn task_selector(tag: &str, task: Task) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (ROLE_LABEL.to_string(), task.role.to_string()),
        (INDEX_LABEL.to_string(), task.index.to_string()),
    ])
}

pub(super) fn task_labels(tag: &str, task: Task) -> BTreeMap<String, String> {
    let mut labels = run_labels(tag);
    labels.extend(task_selector(tag, task));
    labels
}

pub(super) fn meta(
    req: &SpawnRequest,
    name: String,
    mut labels: BTreeMap<String, String>,
) -> ObjectMeta {
    add_experiment_label(req, &mut labels);
    ObjectMeta {
        name: Some(name),
        namespace: Some(req.namespace.clone()),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            INVOCATION_ANNOTATION.to_string(),
            req.invocation.clone(),
        )])),
        ..ObjectMeta::default()
    }
}

/// A sweep's run: [`EXPERIMENT_LABEL`] on every object.
pub(super) fn add_experiment_label(req: &SpawnRequest, labels: &mut BTreeMap<String, String>) {
    if let Some(experiment) = &req.experiment {
        labels.insert(EXPERIMENT_LABEL.to_string(), experiment.name.clone());
    }
}
