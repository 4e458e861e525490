//! The client configuration built from the kubeconfig by hand, for the one case the
//! kube client refuses: a `NO_PROXY` it cannot parse (`foo, *`: it takes `*` only
//! alone; `a,,b`). The client parses the variable while it reads the kubeconfig,
//! whenever a proxy is set, though tf-spawner's own reading (`api_proxy.rs`, Go's rules)
//! replaces its answer; the process environment cannot be changed from safe code. So
//! the same fields are filled here as the client fills them (kube-client 5's
//! `Config::new_from_loader`), and the command goes on with one warning line.

use base64::Engine;
use kube::config::{Kubeconfig, KubeconfigError};

/// Whether `err` is the kube client's refusal of `NO_PROXY`.
pub(super) fn is_no_proxy(err: &KubeconfigError) -> bool {
    matches!(err, KubeconfigError::ParseNoProxy(_))
}

/// The configuration of `context` (else the current one) of `file`, without a proxy
/// (the caller sets it). The error is one line for the user.
pub(super) fn config(file: &Kubeconfig, context: Option<&str>) -> Result<kube::Config, String> {
    let name = context
        .map(String::from)
        .or(file.current_context.clone())
        .ok_or("kubeconfig: no current context is set (use --context)")?;
    let ctx = file
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| format!("kubeconfig: no context '{name}'"))?;
    let cluster = file
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| {
            format!(
                "kubeconfig: no cluster '{}' (context '{name}')",
                ctx.cluster
            )
        })?;
    let mut auth = ctx
        .user
        .as_ref()
        .and_then(|user| file.auth_infos.iter().find(|a| &a.name == user))
        .and_then(|a| a.auth_info.clone())
        .unwrap_or_default();
    if let Some(exec) = auth.exec.as_mut()
        && exec.provide_cluster_info
    {
        exec.cluster = Some(
            (&cluster)
                .try_into()
                .map_err(|e| format!("kubeconfig: {e}"))?,
        );
    }
    let server = cluster
        .server
        .as_deref()
        .ok_or_else(|| format!("kubeconfig: cluster '{}' has no server", ctx.cluster))?;
    let mut config = kube::Config::new(
        server
            .parse()
            .map_err(|_| format!("kubeconfig: the server {server:?} is not a URL"))?,
    );
    config.default_namespace = ctx.namespace.clone().unwrap_or_else(|| "default".into());
    config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
    config.disable_compression = cluster.disable_compression.unwrap_or(false);
    config.tls_server_name = cluster.tls_server_name.clone();
    config.root_cert = authority(&cluster)?;
    config.auth_info = auth;
    Ok(config)
}

/// The cluster's CA certificates (DER), from `certificate-authority-data` (base64 of
/// PEM) or the `certificate-authority` file.
fn authority(cluster: &kube::config::Cluster) -> Result<Option<Vec<Vec<u8>>>, String> {
    let pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|_| "kubeconfig: certificate-authority-data is not base64".to_string())?,
        (None, Some(path)) => std::fs::read(path)
            .map_err(|e| format!("kubeconfig: certificate-authority {path}: {e}"))?,
        (None, None) => return Ok(None),
    };
    let certs: Vec<Vec<u8>> = pem::parse_many(&pem)
        .map_err(|_| "kubeconfig: the certificate authority is not PEM".to_string())?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(pem::Pem::into_contents)
        .collect();
    Ok(Some(certs))
}
