//! Finding the cluster the way kubectl does: `--kubeconfig`, else `$KUBECONFIG`, else
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context.

use anyhow::{Context, Result, anyhow};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::ClusterArgs;

/// Reads the client configuration. No request is made.
pub async fn load_config(args: &ClusterArgs) -> Result<kube::Config> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    if let Some(path) = &args.kubeconfig {
        let file = Kubeconfig::read_from(path).map_err(|e| {
            anyhow!(
                "cannot read kubeconfig {}: {}",
                path.display(),
                source_text(&e)
            )
        })?;
        return kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(|e| anyhow!("kubeconfig {}: {}", path.display(), source_text(&e)));
    }
    match Kubeconfig::read() {
        Ok(file) => kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(|e| anyhow!("kubeconfig: {}", source_text(&e))),
        Err(file_err) => {
            if args.context.is_some() {
                return Err(anyhow!(
                    "--context needs a kubeconfig, and none could be read: {}",
                    source_text(&file_err)
                ));
            }
            kube::Config::incluster().map_err(|_| {
                anyhow!(
                    "no Kubernetes configuration found: {} (set --kubeconfig or KUBECONFIG, or run inside a pod)",
                    source_text(&file_err)
                )
            })
        }
    }
}

/// `-n`, else the context's namespace, else `default`; without reaching the cluster,
/// and without failing when there is no configuration at all (for `--dry-run`).
pub async fn namespace_offline(args: &ClusterArgs) -> String {
    if let Some(ns) = &args.namespace {
        return ns.clone();
    }
    load_config(args)
        .await
        .map(|c| c.default_namespace)
        .unwrap_or_else(|_| "default".to_string())
}

pub fn client(mut config: kube::Config) -> Result<kube::Client> {
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
