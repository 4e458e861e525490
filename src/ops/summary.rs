//! The machine-readable summary of a spawn or a delete (`-o json|yaml`), a documented
//! and stable shape: `{"tag", "namespace", "created"|"deleted": [{"kind", "name"}]}`,
//! objects in the order they were created (config map, secret, services, pods) or
//! deleted; `kind` is kubectl's lowercase name (pod, service, configmap, secret).

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cluster::{Kind, ObjectRef};
use crate::labels;
use crate::plan::Plan;
use crate::render::OutputFormat;

#[derive(Debug, Serialize)]
pub struct Summary {
    pub tag: String,
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Vec<ObjectJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Vec<ObjectJson>>,
}

#[derive(Debug, Serialize)]
pub struct ObjectJson {
    pub kind: &'static str,
    pub name: String,
}

impl From<&ObjectRef> for ObjectJson {
    fn from(o: &ObjectRef) -> Self {
        ObjectJson {
            kind: o.kind.as_str(),
            name: o.name.clone(),
        }
    }
}

/// Every object of a plan, in creation order.
pub fn plan_objects(plan: &Plan) -> Vec<ObjectRef> {
    let mut objects = vec![ObjectRef {
        kind: Kind::ConfigMap,
        name: labels::config_map_name(&plan.tag),
    }];
    if plan.secret.is_some() {
        objects.push(ObjectRef {
            kind: Kind::Secret,
            name: labels::secret_name(&plan.tag),
        });
    }
    if plan.network_policy.is_some() {
        objects.push(ObjectRef {
            kind: Kind::NetworkPolicy,
            name: labels::network_policy_name(&plan.tag),
        });
    }
    if let Some(group) = &plan.pod_group {
        objects.push(ObjectRef {
            kind: Kind::PodGroup(group.gang()),
            name: group.metadata().name.clone().unwrap_or_default(),
        });
    }
    objects.extend(plan.services.names().map(|name| ObjectRef {
        kind: Kind::Service,
        name,
    }));
    objects.extend(plan.pods.names().map(|name| ObjectRef {
        kind: Kind::Pod,
        name,
    }));
    if plan.supervisor.is_some() {
        let name = labels::supervisor_name(&plan.tag);
        objects.push(ObjectRef {
            kind: Kind::Secret,
            name: name.clone(),
        });
        objects.push(ObjectRef {
            kind: Kind::Job,
            name,
        });
    }
    objects
}

pub fn created(tag: &str, namespace: &str, objects: &[ObjectRef]) -> Summary {
    Summary {
        tag: tag.to_string(),
        namespace: namespace.to_string(),
        created: Some(objects.iter().map(ObjectJson::from).collect()),
        deleted: None,
    }
}

pub fn deleted(tag: &str, namespace: &str, objects: &[ObjectRef]) -> Summary {
    Summary {
        tag: tag.to_string(),
        namespace: namespace.to_string(),
        created: None,
        deleted: Some(objects.iter().map(ObjectJson::from).collect()),
    }
}

/// The summary as pretty JSON or YAML, ending with a newline.
pub fn render(summary: &Summary, format: OutputFormat) -> Result<String> {
    Ok(match format {
        OutputFormat::Json => crate::output::json(summary)?,
        OutputFormat::Yaml => serde_saphyr::to_string(summary).context("cannot write YAML")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_shape_is_the_documented_one() {
        let objects = [
            ObjectRef {
                kind: Kind::ConfigMap,
                name: "t-script".into(),
            },
            ObjectRef {
                kind: Kind::Pod,
                name: "t-worker-0".into(),
            },
        ];
        let text = render(&created("t", "ns", &objects), OutputFormat::Json).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"tag": "t", "namespace": "ns", "created": [
                {"kind": "configmap", "name": "t-script"},
                {"kind": "pod", "name": "t-worker-0"}]})
        );
        let text = render(&deleted("t", "ns", &[]), OutputFormat::Yaml).unwrap();
        assert!(
            text.contains("deleted:") && !text.contains("created"),
            "{text}"
        );
    }
}
