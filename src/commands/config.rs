//! `tf-spawner config`: the settings (`settings/table.rs`'s rows) and where each came
//! from.

use anyhow::Result;
use serde::Serialize;

use crate::cli::ConfigArgs;
use crate::output::{self, ReportFormat};
use crate::settings::{Settings, Source};

/// `config -o json`: `{"config_file", "config_file_found", "settings": {KEY: {"value", "source"}}}`;
/// `source` is one of flag, file, kubeconfig, in-cluster, default; `value` is null
/// where the built-in default depends on the template (image, pod_file).
#[derive(Debug, Serialize)]
pub struct ConfigJson {
    pub config_file: Option<String>,
    pub config_file_found: bool,
    pub settings: serde_json::Map<String, serde_json::Value>,
}

pub fn exec(settings: &Settings, args: &ConfigArgs) -> Result<()> {
    let rows = settings.rows();
    let file = settings
        .config_file
        .as_ref()
        .map(|p| p.display().to_string());
    let text = match args.output {
        ReportFormat::Json => {
            let mut map = serde_json::Map::new();
            for r in &rows {
                map.insert(
                    r.key.to_string(),
                    serde_json::json!({"value": r.value, "source": r.source.key()}),
                );
            }
            let json = ConfigJson {
                config_file: file,
                config_file_found: settings.config_file_found,
                settings: map,
            };
            output::json(&json)?
        }
        ReportFormat::Table => {
            let file_line = match (&file, settings.config_file_found) {
                (Some(f), true) => format!("config file: {f}\n"),
                (Some(f), false) => format!("config file: {f} (not found; none is needed)\n"),
                (None, _) => "config file: none (neither HOME nor XDG_CONFIG_HOME is set)\n".into(),
            };
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    let source = match &r.source {
                        Source::Flag => "flag".to_string(),
                        Source::File => format!("config file {}", file.as_deref().unwrap_or("")),
                        Source::Kubeconfig(ctx) => format!("kubeconfig (context {ctx})"),
                        Source::InCluster => "in-cluster service account".to_string(),
                        Source::Default => "default".to_string(),
                    };
                    let value = match &r.value {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => r.default_text.to_string(),
                    };
                    vec![r.key.to_string(), value, source]
                })
                .collect();
            file_line + &output::table(&["KEY", "VALUE", "SOURCE"], &table)
        }
    };
    output::print(&text)?;
    Ok(())
}
