//! `tf-spawner config`: the effective defaults and where each came from.

use anyhow::Result;
use kube::config::Kubeconfig;
use serde::Serialize;

use crate::cli::{ClusterArgs, ConfigArgs, ReportFormat, SpawnArgs};
use crate::defaults::{Defaults, KEYS, Origin, Origins};
use crate::output;

/// `config -o json`: `{"config_file", "config_file_found", "settings": {KEY: {"value", "source"}}}`;
/// `source` is one of flag, file, kubeconfig, in-cluster, default; `value` is null
/// where the built-in default depends on the template (image, pod_file).
#[derive(Debug, Serialize)]
pub struct ConfigJson {
    pub config_file: Option<String>,
    pub config_file_found: bool,
    pub settings: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    pub value: Option<String>,
    /// What the built-in default is, when `value` is `None`.
    pub default_text: &'static str,
    pub source: Source,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    File,
    /// The kubeconfig context's namespace (its name).
    Kubeconfig(String),
    InCluster,
    Default,
}

impl Source {
    fn key(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::File => "file",
            Source::Kubeconfig(_) => "kubeconfig",
            Source::InCluster => "in-cluster",
            Source::Default => "default",
        }
    }
}

pub async fn exec(
    cluster: &ClusterArgs,
    spawn: &SpawnArgs,
    args: &ConfigArgs,
    defaults: &Defaults,
    origins: &Origins,
) -> Result<()> {
    let settings = settings(cluster, spawn, origins);
    let file = defaults.path.as_ref().map(|p| p.display().to_string());
    let text = match args.output {
        ReportFormat::Json => {
            let mut map = serde_json::Map::new();
            for s in &settings {
                let value = match (s.key, &s.value) {
                    (_, None) => serde_json::Value::Null,
                    ("port" | "workers", Some(v)) => v
                        .parse::<u64>()
                        .map_or_else(|_| v.clone().into(), serde_json::Value::from),
                    (_, Some(v)) => v.clone().into(),
                };
                map.insert(
                    s.key.to_string(),
                    serde_json::json!({"value": value, "source": s.source.key()}),
                );
            }
            let json = ConfigJson {
                config_file: file,
                config_file_found: defaults.found,
                settings: map,
            };
            serde_json::to_string_pretty(&json)? + "\n"
        }
        ReportFormat::Table => {
            let file_line = match (&file, defaults.found) {
                (Some(f), true) => format!("config file: {f}\n"),
                (Some(f), false) => format!("config file: {f} (not found; none is needed)\n"),
                (None, _) => "config file: none (neither HOME nor XDG_CONFIG_HOME is set)\n".into(),
            };
            let rows: Vec<Vec<String>> = settings
                .iter()
                .map(|s| {
                    let source = match &s.source {
                        Source::Flag => "flag".to_string(),
                        Source::File => format!("config file {}", file.as_deref().unwrap_or("")),
                        Source::Kubeconfig(ctx) => format!("kubeconfig (context {ctx})"),
                        Source::InCluster => "in-cluster service account".to_string(),
                        Source::Default => "default".to_string(),
                    };
                    let value = s
                        .value
                        .clone()
                        .unwrap_or_else(|| s.default_text.to_string());
                    vec![s.key.to_string(), value, source]
                })
                .collect();
            file_line + &output::table(&["KEY", "VALUE", "SOURCE"], &rows)
        }
    };
    output::print(&text)?;
    Ok(())
}

/// Every key's effective value and source.
pub fn settings(cluster: &ClusterArgs, spawn: &SpawnArgs, origins: &Origins) -> Vec<Setting> {
    KEYS.iter()
        .map(|&key| {
            let origin = origins.of(key);
            let source = match origin {
                Origin::Flag => Source::Flag,
                Origin::File => Source::File,
                Origin::Unset => Source::Default,
            };
            let (value, default_text) = match key {
                "namespace" => (cluster.namespace.clone(), "default"),
                "image" => (
                    spawn.image.clone(),
                    "(the pod template's, else tensorflow/tensorflow:2.15.0)",
                ),
                "pod_file" => (
                    spawn.pod_file.as_ref().map(|p| p.display().to_string()),
                    "(the built-in templates/pod.yaml)",
                ),
                "port" => (Some(spawn.port.to_string()), ""),
                _ => (Some(spawn.workers.to_string()), ""),
            };
            let mut setting = Setting {
                key,
                value,
                default_text,
                source,
            };
            if key == "namespace" && origin == Origin::Unset {
                if let Some((ns, source)) = namespace_from_environment(cluster) {
                    setting.value = Some(ns);
                    setting.source = source;
                } else {
                    setting.value = Some("default".to_string());
                }
            }
            setting
        })
        .collect()
}

/// The kubeconfig context's namespace, else the in-cluster service account's.
fn namespace_from_environment(args: &ClusterArgs) -> Option<(String, Source)> {
    let file = match &args.kubeconfig {
        Some(path) => Kubeconfig::read_from(path).ok(),
        None => Kubeconfig::read().ok(),
    };
    if let Some(file) = file {
        let name = args.context.clone().or(file.current_context.clone())?;
        let ns = file
            .contexts
            .iter()
            .find(|c| c.name == name)?
            .context
            .as_ref()?
            .namespace
            .clone()?;
        return Some((ns, Source::Kubeconfig(name)));
    }
    kube::Config::incluster()
        .ok()
        .map(|c| (c.default_namespace, Source::InCluster))
}
