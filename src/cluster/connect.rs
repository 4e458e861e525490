//! Finding the cluster the way kubectl does: `--kubeconfig`, else `$KUBECONFIG`, else
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context.

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use std::path::{Path, PathBuf};

use crate::inputs::files::{self, Limit};

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

/// The bound of a kubeconfig: many clusters with embedded certificates fit in far less.
const KUBECONFIG_LIMIT: Limit = Limit {
    bytes: 16 * 1024 * 1024,
    why: "; a kubeconfig is a few kilobytes",
};

/// Why no kubeconfig was loaded.
enum NoFile {
    /// None of the files exists: the in-cluster configuration may be used.
    Missing(String),
    /// A file exists but cannot be used: that is the error.
    Bad(String),
}

/// Reads the kubeconfig (or the in-cluster configuration). No request is made. Fails
/// only when a signal ends the read of a kubeconfig that is a FIFO.
pub(crate) async fn read(target: &Target) -> Result<Found> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let file = match &target.kubeconfig {
        Some(path) => match load(path).await? {
            Err(NoFile::Missing(e)) => Err(NoFile::Bad(e)),
            other => other,
        },
        None => load_default().await?,
    };
    Ok(match file {
        Ok(file) => {
            let namespace = context_namespace(&file, target.context.as_deref());
            let explicit = cluster_proxy_url(&file, target.context.as_deref());
            let config = match referenced_file_problem(&file, target.context.as_deref()) {
                Some(problem) => Err(problem),
                None => match kube::Config::from_custom_kubeconfig(file.clone(), &options).await {
                    Ok(config) => Ok(config),
                    Err(e) if super::fallback::is_no_proxy(&e) => {
                        no_proxy_warning(&e);
                        super::fallback::config(&file, target.context.as_deref())
                    }
                    Err(e) => Err(match &target.kubeconfig {
                        Some(path) => {
                            format!("kubeconfig {}: {}", path.display(), source_text(&e))
                        }
                        None => format!("kubeconfig: {}", source_text(&e)),
                    }),
                }
                .and_then(|config| with_proxy(config, explicit.as_deref())),
            };
            Found { config, namespace }
        }
        Err(NoFile::Bad(e)) => Found {
            config: Err(e),
            namespace: None,
        },
        Err(NoFile::Missing(file_err)) => in_cluster(target, &file_err),
    })
}

/// One line when the kube client cannot parse `NO_PROXY`: tf-spawner goes on with its
/// own reading of it (`api_proxy.rs`, as Go's client reads it).
fn no_proxy_warning(err: &KubeconfigError) {
    let (name, value) = ["NO_PROXY", "no_proxy"]
        .into_iter()
        .find_map(|n| {
            std::env::var(n)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| (n, v))
        })
        .unwrap_or(("NO_PROXY", String::new()));
    let why = source_text(err);
    let why = why.rsplit(": ").next().unwrap_or(&why);
    crate::output::warning(&format!(
        "{name}={value:?}: an entry the Kubernetes client cannot parse ({why}); tf-spawner reads the list as kubectl does"
    ));
}

/// Where a pod's service account token is mounted (kube's in-cluster config reads it).
const TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// No kubeconfig file: the in-cluster service account, if there is one.
fn in_cluster(target: &Target, file_err: &str) -> Found {
    let in_cluster = kube::Config::incluster();
    let in_a_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|h| !h.is_empty());
    let pod_err = match &in_cluster {
        Err(_) if in_a_pod => Some(format!(
            "this is a pod (KUBERNETES_SERVICE_HOST is set) without a service account token at {TOKEN_FILE} (automountServiceAccountToken: false, or a pod without a service account): mount one, or give a kubeconfig with --kubeconfig or KUBECONFIG ({file_err})"
        )),
        _ => None,
    };
    let in_cluster = in_cluster.ok();
    let namespace = in_cluster
        .as_ref()
        .map(|c| (c.default_namespace.clone(), ConfigNamespace::InCluster));
    let config = if target.context.is_some() {
        Err(format!(
            "--context needs a kubeconfig, and none could be read: {file_err}"
        ))
    } else {
        in_cluster.ok_or_else(|| {
            pod_err.unwrap_or_else(|| format!(
                "no Kubernetes configuration found: {file_err} (set --kubeconfig or KUBECONFIG, or run inside a pod)"
            ))
        })
    };
    Found { config, namespace }
}

/// `$KUBECONFIG`'s files merged (a missing one skipped, as kubectl does), else
/// `~/.kube/config`.
async fn load_default() -> Result<Result<Kubeconfig, NoFile>> {
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if listed.is_empty() {
        let Some(home) = std::env::home_dir() else {
            return Ok(Err(NoFile::Missing("HOME is not set".into())));
        };
        return load(&home.join(".kube").join("config")).await;
    }
    let mut merged: Option<Kubeconfig> = None;
    for path in &listed {
        let next = match load(path).await? {
            Ok(next) => next,
            Err(NoFile::Missing(_)) => continue,
            Err(bad) => return Ok(Err(bad)),
        };
        merged = Some(match merged {
            None => next,
            Some(first) => match first.merge(next) {
                Ok(m) => m,
                Err(e) => return Ok(Err(NoFile::Bad(bad_file(path, &e)))),
            },
        });
    }
    Ok(merged.ok_or_else(|| {
        NoFile::Missing(format!(
            "none of the files in KUBECONFIG exists ({})",
            std::env::join_paths(&listed)
                .map_or_else(|_| String::new(), |p| p.to_string_lossy().into_owned())
        ))
    }))
}

/// One kubeconfig file, read with a bound: kube reads a regular file (making its
/// relative paths absolute); a FIFO (`--kubeconfig <(…)`) is read here, with Ctrl-C
/// still ending the wait.
async fn load(path: &Path) -> Result<Result<Kubeconfig, NoFile>> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Err(NoFile::Missing(format!(
                "cannot read kubeconfig {shown}: No such file or directory"
            ))));
        }
        Err(e) => {
            return Ok(Err(NoFile::Bad(format!(
                "cannot read kubeconfig {shown}: {}",
                files::io_reason(&e)
            ))));
        }
    };
    if meta.is_file() {
        if meta.len() > KUBECONFIG_LIMIT.bytes as u64 {
            return Ok(Err(NoFile::Bad(format!(
                "kubeconfig {shown} is larger than {} bytes{}",
                KUBECONFIG_LIMIT.bytes, KUBECONFIG_LIMIT.why
            ))));
        }
        return Ok(Kubeconfig::read_from(path).map_err(|e| NoFile::Bad(bad_file(path, &e))));
    }
    let bytes = match files::read(path, "kubeconfig", KUBECONFIG_LIMIT).await {
        Ok(bytes) => bytes,
        Err(e) if e.downcast_ref::<crate::errors::ExitError>().is_some() => return Err(e),
        Err(e) => return Ok(Err(NoFile::Bad(e.to_string()))),
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(Kubeconfig::from_yaml(&text).map_err(|e| NoFile::Bad(bad_file(path, &e))))
}

/// `cannot read kubeconfig FILE: line 3 column 1: …`, the YAML error in our words.
fn bad_file(path: &Path, err: &KubeconfigError) -> String {
    let why = match err {
        KubeconfigError::Parse(yaml) => crate::yaml::describe(yaml),
        other => {
            let text = source_text(other);
            // kube's first words repeat the path: "failed to read kubeconfig from '…': …".
            match text.find("': ") {
                Some(at) if text.starts_with("failed to read kubeconfig from") => {
                    text[at + 3..].to_string()
                }
                _ => text,
            }
        }
    };
    format!("cannot read kubeconfig {}: {why}", path.display())
}

/// The files the context in use names (its cluster's CA, its user's certificate, key
/// and token file), which kube reads whole: one that is not a regular file, or is
/// larger than a kubeconfig may be, is refused here. A missing one is left to kube.
fn referenced_file_problem(file: &Kubeconfig, context: Option<&str>) -> Option<String> {
    let name = context.map(String::from).or(file.current_context.clone())?;
    let ctx = file
        .contexts
        .iter()
        .find(|c| c.name == name)?
        .context
        .as_ref()?;
    let cluster = file
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref());
    let user = file
        .auth_infos
        .iter()
        .find(|u| Some(&u.name) == ctx.user.as_ref())
        .and_then(|u| u.auth_info.as_ref());
    let named = [
        (
            "certificate-authority",
            cluster.and_then(|c| c.certificate_authority.clone()),
        ),
        (
            "client-certificate",
            user.and_then(|u| u.client_certificate.clone()),
        ),
        ("client-key", user.and_then(|u| u.client_key.clone())),
        ("tokenFile", user.and_then(|u| u.token_file.clone())),
    ];
    named.into_iter().find_map(|(key, path)| {
        let path = path?;
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() {
            Some(format!("kubeconfig: {key} {path} is not a regular file"))
        } else if meta.len() > KUBECONFIG_LIMIT.bytes as u64 {
            Some(format!(
                "kubeconfig: {key} {path} is larger than {} bytes",
                KUBECONFIG_LIMIT.bytes
            ))
        } else {
            None
        }
    })
}

/// The proxy kubectl would use for the config's server ([`super::api_proxy::proxy_for`]),
/// in place of the kube client's choice.
fn with_proxy(mut config: kube::Config, explicit: Option<&str>) -> Result<kube::Config, String> {
    config.proxy_url =
        super::api_proxy::proxy_for(&config.cluster_url, explicit, |k| std::env::var(k).ok())?;
    Ok(config)
}

/// The `proxy-url` of the cluster of `--context`, else of the current context.
fn cluster_proxy_url(file: &Kubeconfig, context: Option<&str>) -> Option<String> {
    let name = context.map(String::from).or(file.current_context.clone())?;
    let cluster = file
        .contexts
        .iter()
        .find(|c| c.name == name)?
        .context
        .as_ref()?
        .cluster
        .clone();
    file.clusters
        .iter()
        .find(|c| c.name == cluster)?
        .cluster
        .as_ref()?
        .proxy_url
        .clone()
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
