//! `--notify URL` through a proxy, as curl takes one: `HTTPS_PROXY` for an https URL
//! (a CONNECT tunnel to the proxy, TLS to the server inside it), `HTTP_PROXY` for an
//! http one (the request sent to the proxy with its whole URL), `ALL_PROXY` for both,
//! `NO_PROXY` the hosts reached directly; lower-case names too. hyper-util's matcher
//! reads them as curl does.

use std::future::poll_fn;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use hyper_util::rt::TokioExecutor;
use tower_service::Service;

type Body = Full<Bytes>;
type Answer = http::Response<Incoming>;

/// The proxy a request to `uri` goes through, from the environment; `None`: directly.
pub(super) fn proxy_for(uri: &http::Uri) -> Option<Intercept> {
    Matcher::from_env().intercept(uri)
}

/// The proxy as a warning names it: its scheme, host and port, never its credentials.
pub(super) fn shown(proxy: &Intercept) -> String {
    let uri = proxy.uri();
    let host = uri.host().unwrap_or_default();
    match uri.port_u16() {
        Some(port) => format!("{}://{host}:{port}", uri.scheme_str().unwrap_or("http")),
        None => format!("{}://{host}", uri.scheme_str().unwrap_or("http")),
    }
}

/// The connector to the server, or to the proxy: TLS for an https URL, plain TCP else.
fn connector<C>(inner: C) -> Result<HttpsConnector<C>, String> {
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no CA certificates on this machine: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(inner))
}

fn plain_tcp() -> HttpConnector {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp
}

/// The error's causes in our words: the client's own wrapper left out, a proxy's refusal
/// of the tunnel said as such (hyper-util's `TunnelError` is not exported: its text).
fn failed(e: impl std::error::Error + Send + Sync + 'static) -> String {
    let said: Vec<String> = crate::errors::causes(&e)
        .into_iter()
        .filter(|c| !c.starts_with("client error ("))
        .map(|c| match c.as_str() {
            "tunnel error: unsuccessful" => "the proxy refused the tunnel (CONNECT)".to_string(),
            "tunnel error: proxy authorization required" => {
                "the proxy asks for credentials (407): give them in its URL, http://USER:PASSWORD@HOST:PORT"
                    .to_string()
            }
            "tunnel error: failed to create underlying connection" => {
                "cannot reach the proxy".to_string()
            }
            _ => c,
        })
        .collect();
    said.join(": ")
}

/// Sends `request`: directly, tunnelled through `proxy` (an https URL), or to `proxy`
/// whole (an http URL).
pub(super) async fn send(
    request: http::Request<Body>,
    proxy: Option<&Intercept>,
) -> Result<Answer, String> {
    let Some(proxy) = proxy else {
        let client =
            Client::builder(TokioExecutor::new()).build::<_, Body>(connector(plain_tcp())?);
        return client.request(request).await.map_err(failed);
    };
    if !matches!(proxy.uri().scheme_str(), Some("http" | "https")) {
        return Err("only an http:// or https:// proxy carries a notice".to_string());
    }
    if request.uri().scheme_str() != Some("https") {
        return forwarded(request, proxy).await;
    }
    let mut tunnel = Tunnel::new(proxy.uri().clone(), connector(plain_tcp())?);
    if let Some(auth) = proxy.basic_auth() {
        tunnel = tunnel.with_auth(auth.clone());
    }
    let client = Client::builder(TokioExecutor::new()).build::<_, Body>(connector(tunnel)?);
    client.request(request).await.map_err(failed)
}

/// An http URL through a proxy: the request, its URL whole (absolute form, RFC 9112
/// 3.2.2), sent on a connection to the proxy.
async fn forwarded(mut request: http::Request<Body>, proxy: &Intercept) -> Result<Answer, String> {
    let target = request.uri().authority().cloned();
    let headers = request.headers_mut();
    if let Some(host) = target.and_then(|a| http::HeaderValue::from_str(a.as_str()).ok()) {
        headers.insert(http::header::HOST, host);
    }
    if let Some(auth) = proxy.basic_auth() {
        headers.insert(http::header::PROXY_AUTHORIZATION, auth.clone());
    }
    let mut to_proxy = connector(plain_tcp())?;
    poll_fn(|cx| to_proxy.poll_ready(cx))
        .await
        .map_err(|e| e.to_string())?;
    let io = to_proxy
        .call(proxy.uri().clone())
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(failed)?;
    tokio::spawn(connection);
    sender.send_request(request).await.map_err(failed)
}
