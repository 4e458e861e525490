//! Finding the cluster the way kubectl does: `--kubeconfig`, else `$KUBECONFIG`, else
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context.

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

use std::path::PathBuf;

/// Which kubeconfig and context: `--kubeconfig` and `--context`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// Where the configuration's namespace comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConfigNamespace {
    /// The kubeconfig context's (its name).
    Context(String),
    /// The in-cluster service account's.
    InCluster,
}

/// What the kubeconfig (or the in-cluster service account) says, read once.
#[derive(Debug)]
pub(crate) struct Found {
    /// The client configuration, or why there is none (one line for the user).
    pub config: Result<kube::Config, String>,
    /// The namespace the configuration names, if any.
    pub namespace: Option<(String, ConfigNamespace)>,
}

/// Reads the kubeconfig (or the in-cluster configuration). No request is made.
pub(crate) async fn read(target: &Target) -> Found {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let file = match &target.kubeconfig {
        Some(path) => Kubeconfig::read_from(path).map_err(|e| {
            format!(
                "cannot read kubeconfig {}: {}",
                path.display(),
                source_text(&e)
            )
        }),
        None => Kubeconfig::read().map_err(|e| source_text(&e)),
    };
    match file {
        Ok(file) => {
            let namespace = context_namespace(&file, target.context.as_deref());
            let config = kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| match &target.kubeconfig {
                    Some(path) => format!("kubeconfig {}: {}", path.display(), source_text(&e)),
                    None => format!("kubeconfig: {}", source_text(&e)),
                });
            Found { config, namespace }
        }
        Err(file_err) => {
            let in_cluster = kube::Config::incluster().ok();
            let namespace = in_cluster
                .as_ref()
                .map(|c| (c.default_namespace.clone(), ConfigNamespace::InCluster));
            let config = if target.kubeconfig.is_some() {
                Err(file_err)
            } else if target.context.is_some() {
                Err(format!(
                    "--context needs a kubeconfig, and none could be read: {file_err}"
                ))
            } else {
                in_cluster.ok_or_else(|| {
                    format!(
                        "no Kubernetes configuration found: {file_err} (set --kubeconfig or KUBECONFIG, or run inside a pod)"
                    )
                })
            };
            Found { config, namespace }
        }
    }
}

/// The namespace of `--context`, else of the current context.
fn context_namespace(
    file: &Kubeconfig,
    context: Option<&str>,
) -> Option<(String, ConfigNamespace)> {
    let name = context.map(String::from).or(file.current_context.clone())?;
    let ns = file
        .contexts
        .iter()
        .find(|c| c.name == name)?
        .context
        .as_ref()?
        .namespace
        .clone()?;
    Some((ns, ConfigNamespace::Context(name)))
}

pub(crate) fn client(mut config: kube::Config) -> Result<kube::Client> {
    // Retries are ours (cluster/retry.rs): they also cover 500s and dropped
    // connections, honour Retry-After, and know when a create may have landed.
    config.default_retry = false;
    let builder = kube::client::ClientBuilder::try_from(config)
        .context("cannot set up the Kubernetes client")?;
    Ok(builder.with_layer(&super::apilog::ApiLogLayer).build())
}

/// The error and its sources in one line, without Debug noise.
fn source_text(err: &(dyn std::error::Error + 'static)) -> String {
    tidy(&crate::errors::causes(err).join(": "))
}

/// kube quotes paths as `'"/x"'` and io errors end in `(os error 2)`: neither helps.
fn tidy(text: &str) -> String {
    let mut out = text.replace("'\"", "'").replace("\"'", "'");
    while let Some(at) = out.find(" (os error ") {
        match out[at..].find(')') {
            Some(end) => out.replace_range(at..at + end + 1, ""),
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn tidy_drops_double_quoting_and_os_error_numbers() {
        assert_eq!(
            super::tidy(
                "failed to read kubeconfig from '\"/root/.kube/config\"': No such file or directory (os error 2)"
            ),
            "failed to read kubeconfig from '/root/.kube/config': No such file or directory"
        );
    }
}
