//! `--dry-run` output: the plan as a YAML stream or a JSON `List`, both accepted by
//! `kubectl apply -f -`. Secret values are never printed.

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::plan::Plan;

pub const REDACTED: &str = "<redacted>";

pub fn render(plan: &Plan, format: OutputFormat) -> Result<String> {
    let objects = objects(plan)?;
    match format {
        OutputFormat::Json => {
            let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
            Ok(serde_json::to_string_pretty(&list)? + "\n")
        }
        OutputFormat::Yaml => {
            let mut out = String::new();
            for object in &objects {
                out.push_str("---\n");
                out.push_str(&serde_saphyr::to_string(object).context("cannot write YAML")?);
            }
            Ok(out)
        }
    }
}

/// The plan's objects as JSON values in creation order, the secret redacted.
pub fn objects(plan: &Plan) -> Result<Vec<Value>> {
    let mut objects = vec![serde_json::to_value(&plan.config_map)?];
    if let Some(secret) = &plan.secret {
        objects.push(redact(serde_json::to_value(secret)?));
    }
    for service in &plan.services {
        objects.push(serde_json::to_value(service)?);
    }
    for pod in &plan.pods {
        objects.push(serde_json::to_value(pod)?);
    }
    Ok(objects)
}

/// Keeps the keys (so the output still shows which variables are set), drops the values.
fn redact(mut secret: Value) -> Value {
    if let Some(obj) = secret.as_object_mut()
        && let Some(Value::Object(data)) = obj.remove("data")
    {
        let redacted = data
            .keys()
            .map(|k| (k.clone(), Value::String(REDACTED.to_string())))
            .collect();
        obj.insert("stringData".to_string(), Value::Object(redacted));
    }
    secret
}
