//! `tf-spawner config`: the settings (`settings.rs`) and where each came from.

use anyhow::Result;
use serde::Serialize;

use crate::cli::ConfigArgs;
use crate::output::{self, ReportFormat};
use crate::settings::{Settings, Source, Sourced};

/// `config -o json`: `{"config_file", "config_file_found", "settings": {KEY: {"value", "source"}}}`;
/// `source` is one of flag, file, kubeconfig, in-cluster, default; `value` is null
/// where the built-in default depends on the template (image, pod_file).
#[derive(Debug, Serialize)]
pub struct ConfigJson {
    pub config_file: Option<String>,
    pub config_file_found: bool,
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// One row: the key, its value (`None`: the built-in default, described by
/// `default_text`), and its source.
struct Row {
    key: &'static str,
    value: Option<serde_json::Value>,
    default_text: &'static str,
    source: Source,
}

fn row<T>(
    key: &'static str,
    setting: &Sourced<Option<T>>,
    show: impl Fn(&T) -> serde_json::Value,
    default_text: &'static str,
) -> Row {
    Row {
        key,
        value: setting.value.as_ref().map(show),
        default_text,
        source: setting.source.clone(),
    }
}

/// The keys, in the order the defaults file documents them.
fn rows(settings: &Settings) -> Vec<Row> {
    let some = |s: &Sourced<String>| Sourced {
        value: Some(s.value.clone()),
        source: s.source.clone(),
    };
    let number = |value: u64, source: &Source| Sourced {
        value: Some(value),
        source: source.clone(),
    };
    vec![
        row(
            "namespace",
            &some(&settings.namespace),
            |v| v.clone().into(),
            "default",
        ),
        row(
            "image",
            &settings.image,
            |v| v.clone().into(),
            "(the pod template's, else tensorflow/tensorflow:2.15.0)",
        ),
        row(
            "pod_file",
            &settings.pod_file,
            |v| v.display().to_string().into(),
            "(the built-in templates/pod.yaml)",
        ),
        row(
            "port",
            &number(u64::from(settings.port.value), &settings.port.source),
            |v| (*v).into(),
            "",
        ),
        row(
            "workers",
            &number(u64::from(settings.workers.value), &settings.workers.source),
            |v| (*v).into(),
            "",
        ),
        row("queue", &settings.queue, |v| v.clone().into(), "(none)"),
        row(
            "priority_class",
            &settings.priority_class,
            |v| v.clone().into(),
            "(none)",
        ),
        row(
            "deadline",
            &settings.deadline,
            |v| humantime::format_duration(*v).to_string().into(),
            "(none)",
        ),
        row(
            "node_lost_after",
            &settings.node_lost_after,
            |v| humantime::format_duration(*v).to_string().into(),
            "(the cluster's, 5m)",
        ),
        row("gang", &settings.gang, |v| v.as_str().into(), "(none)"),
        row(
            "scheduler_name",
            &settings.scheduler_name,
            |v| v.clone().into(),
            "(none)",
        ),
        row(
            "volcano_queue",
            &settings.volcano_queue,
            |v| v.clone().into(),
            "(none)",
        ),
        row(
            "keep_running",
            &Sourced {
                value: Some(settings.keep_running.value),
                source: settings.keep_running.source.clone(),
            },
            |v| (*v).into(),
            "",
        ),
        row(
            "restarts",
            &number(
                u64::from(settings.restarts.value),
                &settings.restarts.source,
            ),
            |v| (*v).into(),
            "",
        ),
        row(
            "restart_on",
            &Sourced {
                value: Some(settings.restart_on.value.to_string()),
                source: settings.restart_on.source.clone(),
            },
            |v| v.clone().into(),
            "",
        ),
        row(
            "give_up_after",
            &Sourced {
                value: Some(settings.give_up_after.value),
                source: settings.give_up_after.source.clone(),
            },
            |v| humantime::format_duration(*v).to_string().into(),
            "",
        ),
        row(
            "start_timeout",
            &settings.start_timeout,
            |v| humantime::format_duration(*v).to_string().into(),
            "(none)",
        ),
        row("volume", &settings.volume, |v| v.clone().into(), "(none)"),
        row(
            "dir",
            &settings.dir,
            |v| v.display().to_string().into(),
            "(none: the script alone)",
        ),
        row(
            "tensorboard_image",
            &settings.tensorboard_image,
            |v| v.clone().into(),
            "(the run's image)",
        ),
    ]
}

pub fn exec(settings: &Settings, args: &ConfigArgs) -> Result<()> {
    let rows = rows(settings);
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
            serde_json::to_string_pretty(&json)? + "\n"
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
