//! `tf-spawner config`: the settings (`settings/table.rs`'s rows) and where each came
//! from; `config --trust` trusts the project file (`settings/project.rs`).

use anyhow::Result;
use serde::Serialize;

use crate::cli::ConfigArgs;
use crate::errors::UsageError;
use crate::output::{self, ReportFormat};
use crate::settings::project::{self, ProjectFile};
use crate::settings::{Settings, Source};

/// `config -o json`: `{"config_file", "config_file_found", "project_file",
/// "project_trusted", "project_untrusted_keys", "project_ignored" (only when it is),
/// "settings": {KEY: {"value", "source"}}}`;
/// `source` is one of flag, project, file, kubeconfig, in-cluster, default; `value` is
/// null where the built-in default depends on the template (image, pod_file).
#[derive(Debug, Serialize)]
pub struct ConfigJson {
    pub config_file: Option<String>,
    pub config_file_found: bool,
    pub project_file: Option<String>,
    pub project_trusted: bool,
    pub project_untrusted_keys: Vec<&'static str>,
    /// Why the project file is ignored whole (someone else could have written it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_ignored: Option<String>,
    pub settings: serde_json::Map<String, serde_json::Value>,
}

pub fn exec(settings: &Settings, args: &ConfigArgs) -> Result<()> {
    if args.trust {
        return trust(settings.project.as_ref());
    }
    let text = match args.output {
        ReportFormat::Json | ReportFormat::Yaml => json(settings, args.output)?,
        ReportFormat::Table => table(settings),
    };
    output::print(&text)?;
    Ok(())
}

fn shown(path: Option<&std::path::Path>) -> Option<String> {
    path.map(|p| p.display().to_string())
}

/// `config -o json|yaml` ([`ConfigJson`]).
fn json(settings: &Settings, format: ReportFormat) -> Result<String> {
    let mut map = serde_json::Map::new();
    for r in settings.rows() {
        map.insert(
            r.key.to_string(),
            serde_json::json!({"value": r.value, "source": r.source.key()}),
        );
    }
    let project = settings.project.as_ref();
    let json = ConfigJson {
        config_file: shown(settings.config_file.as_deref()),
        config_file_found: settings.config_file_found,
        project_file: shown(project.map(|p| p.path.as_path())),
        project_trusted: project.is_some_and(|p| p.trusted),
        project_untrusted_keys: project
            .map(|p| p.untrusted.iter().map(|u| u.key).collect())
            .unwrap_or_default(),
        project_ignored: project.and_then(|p| p.ignored.clone()),
        settings: map,
    };
    output::document(&json, format)
}

/// `config`'s table: the files, then each setting's value and source.
fn table(settings: &Settings) -> String {
    let project = settings.project.as_ref();
    let project_path = shown(project.map(|p| p.path.as_path()));
    let file = shown(settings.config_file.as_deref());
    let file_line = match (&file, settings.config_file_found) {
        (Some(f), true) => format!("config file: {f}\n"),
        (Some(f), false) => format!("config file: {f} (not found; none is needed)\n"),
        (None, _) => "config file: none (neither HOME nor XDG_CONFIG_HOME is set)\n".into(),
    };
    let table: Vec<Vec<String>> = settings
        .rows()
        .iter()
        .map(|r| {
            let source = match &r.source {
                Source::Flag => "flag".to_string(),
                Source::Project => {
                    format!("project file {}", project_path.as_deref().unwrap_or(""))
                }
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
    project_line(project) + &file_line + &output::table(&["KEY", "VALUE", "SOURCE"], &table)
}

/// `config`'s line on the project file: where it is, and what of it is not used.
fn project_line(project: Option<&ProjectFile>) -> String {
    let Some(project) = project else {
        return format!(
            "project file: none ({} here or in a parent directory)\n",
            project::FILE_NAME
        );
    };
    let path = project.path.display();
    if let Some(why) = &project.ignored {
        return format!(
            "project file: {path} (ignored: {why}; read it, then tf-spawner config --trust)\n"
        );
    }
    if project.untrusted.is_empty() {
        let trusted = if project.trusted { " (trusted)" } else { "" };
        return format!("project file: {path}{trusted}\n");
    }
    let keys: Vec<&str> = project.untrusted.iter().map(|u| u.key).collect();
    format!(
        "project file: {path} (not trusted: {} not used; read it, then tf-spawner config --trust)\n",
        keys.join(", ")
    )
}

/// `config --trust`: records the project file as it is now.
fn trust(project: Option<&ProjectFile>) -> Result<()> {
    let Some(project) = project else {
        return Err(UsageError::new(format!(
            "--trust trusts a project file, and there is no {} here or in a parent directory",
            project::FILE_NAME
        ))
        .into());
    };
    let store = project::trust(project)?;
    output::print(&format!(
        "trusted {} as it is now ({}), recorded in {}; after an edit, trust it again\n",
        project.path.display(),
        project.hash,
        store.display()
    ))?;
    Ok(())
}
