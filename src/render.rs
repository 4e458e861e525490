//! `--dry-run` output: the plan as a YAML stream or a JSON `List`, both accepted by
//! `kubectl apply -f -`. Secret values are never printed. Objects are written one at a
//! time, so a 1,000-worker plan never sits in memory whole.

use std::io::Write;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::plan::Plan;

/// `-o` of `--dry-run` and of a spawn's or a delete's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Yaml,
    Json,
}

pub const REDACTED: &str = "<redacted>";

/// Writes the plan to `out`.
pub fn write(plan: &Plan, format: OutputFormat, out: &mut impl Write) -> Result<()> {
    write_plans(std::iter::once(Ok(plan)), format, out)
}

/// Writes several plans (a sweep's runs) to `out` as one YAML stream or one JSON `List`,
/// each plan made when its turn comes.
pub fn write_plans<P: std::borrow::Borrow<Plan>>(
    plans: impl IntoIterator<Item = Result<P>>,
    format: OutputFormat,
    out: &mut impl Write,
) -> Result<()> {
    match format {
        OutputFormat::Json => {
            out.write_all(b"{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [")?;
            let mut first = true;
            for plan in plans {
                for_each_object(plan?.borrow(), |object| {
                    out.write_all(if first { b"\n" } else { b",\n" })?;
                    first = false;
                    let text = serde_json::to_string_pretty(&object)?;
                    for (i, line) in text.lines().enumerate() {
                        if i > 0 {
                            out.write_all(b"\n")?;
                        }
                        out.write_all(b"    ")?;
                        out.write_all(line.as_bytes())?;
                    }
                    Ok(())
                })?;
            }
            out.write_all(b"\n  ]\n}\n")?;
        }
        OutputFormat::Yaml => {
            for plan in plans {
                for_each_object(plan?.borrow(), |object| {
                    out.write_all(b"---\n")?;
                    let yaml = serde_saphyr::to_string(&object).context("cannot write YAML")?;
                    out.write_all(yaml.as_bytes())?;
                    Ok(())
                })?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The whole output as a string (for tests).
#[cfg(test)]
pub fn render(plan: &Plan, format: OutputFormat) -> Result<String> {
    let mut out = Vec::new();
    write(plan, format, &mut out)?;
    String::from_utf8(out).context("output is UTF-8")
}

/// Writes to stdout; a reader that goes away (`| head`) ends the output quietly.
pub fn to_stdout(plan: &Plan, format: OutputFormat) -> Result<()> {
    crate::output::stream(|out| write(plan, format, out))?;
    Ok(())
}

/// [`write_plans`] to stdout, as [`to_stdout`].
pub fn plans_to_stdout(
    plans: impl IntoIterator<Item = Result<Plan>>,
    format: OutputFormat,
) -> Result<()> {
    crate::output::stream(|out| write_plans(plans, format, out))?;
    Ok(())
}

/// Calls `f` with each object of the plan as JSON, in creation order, the secret redacted.
fn for_each_object(plan: &Plan, mut f: impl FnMut(Value) -> Result<()>) -> Result<()> {
    f(serde_json::to_value(&plan.config_map)?)?;
    if let Some(secret) = &plan.secret {
        f(redact(serde_json::to_value(secret)?))?;
    }
    if let Some(policy) = &plan.network_policy {
        f(serde_json::to_value(policy)?)?;
    }
    if let Some(group) = &plan.pod_group {
        f(group.to_json()?)?;
    }
    for service in plan.services.iter() {
        f(serde_json::to_value(&service)?)?;
    }
    for pod in plan.pods.iter() {
        f(serde_json::to_value(&pod)?)?;
    }
    if let Some(supervisor) = &plan.supervisor {
        // Its settings may hold a --notify URL's token.
        f(redact(serde_json::to_value(&supervisor.secret)?))?;
        f(serde_json::to_value(&supervisor.job)?)?;
    }
    Ok(())
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
