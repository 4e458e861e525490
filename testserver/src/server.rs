//! Connection handling: TLS, HTTP/1.1, authentication, faults, latency and the
//! request log around the routes.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use crate::context::{Ctx, Identity, Reply, Shared};
use crate::faults::{self, FaultAction};
use crate::objects;
use crate::options::RecordedRequest;
use crate::routes;
use crate::status::ApiError;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub enum RespBody {
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<Bytes>),
}

impl Body for RespBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            RespBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RespBody::Channel(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, RespBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            RespBody::Full(None) => SizeHint::with_exact(0),
            RespBody::Channel(_) => SizeHint::default(),
        }
    }
}

/// Returned by the service to make hyper close the connection without answering.
#[derive(Debug)]
pub struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by an injected fault")
    }
}

impl std::error::Error for Dropped {}

/// Serves until the process ends; while the server is down (`Shared::up` false) the
/// port is closed and every connection cut, then the port is bound again.
pub async fn serve(mut listener: TcpListener, shared: Arc<Shared>, tls: Option<TlsAcceptor>) {
    let addr = listener.local_addr().expect("local addr");
    let mut up = shared.up.subscribe();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            _ = up.wait_for(|up| !*up) => None,
        };
        let Some(accepted) = accepted else {
            drop(listener);
            shared.listening.store(false, Ordering::SeqCst);
            let _ = up.wait_for(|up| *up).await;
            listener = rebind(addr).await;
            shared.listening.store(true, Ordering::SeqCst);
            continue;
        };
        let Ok((tcp, _)) = accepted else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let shared = shared.clone();
        let tls = tls.clone();
        let mut cut = shared.up.subscribe();
        shared.connections.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let counted = shared.clone();
            let svc = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            let mut builder = hyper::server::conn::http1::Builder::new();
            // Idle keep-alive connections of a long benchmark must not be cut.
            builder.timer(TokioTimer::new()).header_read_timeout(None);
            let conn = async {
                match tls {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                }
            };
            // Dropping the connection closes its socket, mid-answer or mid-stream.
            tokio::select! {
                () = conn => {}
                _ = cut.wait_for(|up| !*up) => {}
            }
            counted.connections.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The listener again on the same address (retried while the old socket lingers).
async fn rebind(addr: std::net::SocketAddr) -> TcpListener {
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

fn authenticate(sh: &Shared, req: &Request<Incoming>) -> Option<Identity> {
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = header.strip_prefix("Bearer ")?.trim();
    if token == sh.admin_token {
        return Some(Identity {
            name: "admin".into(),
            namespace: None,
            denied: vec![],
        });
    }
    sh.opts
        .users
        .iter()
        .find(|u| u.token == token)
        .map(|u| Identity {
            name: u.name.clone(),
            namespace: u.namespace.clone(),
            denied: u.denied_resources.clone(),
        })
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| Some(hex(*bytes.get(i + 1)?)? * 16 + hex(*bytes.get(i + 2)?)?))
            .flatten();
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

async fn handle(sh: Arc<Shared>, req: Request<Incoming>) -> Result<Response<RespBody>, Dropped> {
    let start = Instant::now();
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let idx = record(&sh, &method, &path, &raw_query);
    let identity = authenticate(&sh, &req);
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let metadata_only = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=PartialObjectMetadataList"));
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(Dropped),
    };
    let body_bytes = body.len();
    let user_name = identity
        .as_ref()
        .map(|i| i.name.clone())
        .unwrap_or_default();
    let finish = |status: u16| {
        let mut log = lock(&sh.requests);
        if let Some(r) = log.get_mut(idx) {
            r.body_bytes = body_bytes;
            r.status = status;
            r.user = user_name.clone();
            r.duration = start.elapsed();
        }
    };

    let call = Call {
        method: &method,
        path: &path,
        raw_query: &raw_query,
        body: &body,
        content_type: &content_type,
    };
    let result = match &identity {
        None => Err(ApiError::unauthorized()),
        Some(user) => match answer(&sh, &call, user).await {
            Some(result) => result,
            None => {
                finish(0);
                return Err(Dropped);
            }
        },
    };
    let resp = match result {
        Ok(Reply::Json(code, list)) if metadata_only => {
            reply_response(Reply::Json(code, objects::partial_metadata_list(list)))
        }
        Ok(reply) => reply_response(reply),
        Err(e) => error_response(&e),
    };
    finish(resp.status().as_u16());
    Ok(resp)
}

/// Records the request as it arrives; its status, user and duration come later.
fn record(sh: &Shared, method: &str, path: &str, query: &str) -> usize {
    let mut log = lock(&sh.requests);
    log.push(RecordedRequest {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        status: 0,
        user: String::new(),
        duration: Duration::ZERO,
        body_bytes: 0,
    });
    log.len() - 1
}

/// One request, as the routes see it.
struct Call<'a> {
    method: &'a str,
    path: &'a str,
    raw_query: &'a str,
    body: &'a [u8],
    content_type: &'a str,
}

/// The answer to an authenticated request, after the latency and any fault that
/// matches; `None` when the connection is to be dropped.
async fn answer(
    sh: &Arc<Shared>,
    call: &Call<'_>,
    user: &Identity,
) -> Option<Result<Reply, ApiError>> {
    let target = if call.raw_query.is_empty() {
        call.path.to_string()
    } else {
        format!("{}?{}", call.path, call.raw_query)
    };
    let fault = faults::check(&mut lock(&sh.faults), call.method, &target);
    let latency = Duration::from_nanos(sh.latency_ns.load(std::sync::atomic::Ordering::Relaxed));
    if !latency.is_zero() {
        sh.delays.sleep(latency).await;
    }
    match fault {
        Some(FaultAction::DropConnection) => None,
        Some(FaultAction::DropResponse) => {
            let _ = run_route(sh, call, user);
            None
        }
        Some(FaultAction::Status { code, retry_after }) => {
            Some(Err(ApiError::from_code(code, retry_after)))
        }
        Some(FaultAction::Hang(d)) => {
            tokio::time::sleep(d).await;
            Some(run_route(sh, call, user))
        }
        Some(FaultAction::Silent) => {
            let (tx, rx) = mpsc::channel(1);
            // Held until the client goes: the answer has begun and never goes on.
            tokio::spawn(async move { tx.closed().await });
            let content_type = if call.path.ends_with("/log") {
                "text/plain"
            } else {
                "application/json"
            };
            Some(Ok(Reply::Stream(200, content_type, rx)))
        }
        Some(FaultAction::Plant {
            resource,
            namespace,
            object,
        }) => {
            crate::seed::seed(sh, &resource, &namespace, object);
            Some(run_route(sh, call, user))
        }
        None => Some(run_route(sh, call, user)),
    }
}

fn run_route(sh: &Arc<Shared>, call: &Call<'_>, user: &Identity) -> Result<Reply, ApiError> {
    let ctx = Ctx {
        method: call.method,
        path: call.path,
        query: parse_query(call.raw_query),
        body: call.body,
        content_type: call.content_type,
        user,
    };
    routes::route(sh, &ctx)
}

fn response(code: u16, content_type: &str, body: RespBody) -> Response<RespBody> {
    Response::builder()
        .status(code)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .header("Cache-Control", "no-cache, private")
        .body(body)
        .expect("valid response")
}

fn reply_response(reply: Reply) -> Response<RespBody> {
    match reply {
        Reply::Json(code, v) => {
            let bytes = serde_json::to_vec(&v).unwrap_or_default();
            response(
                code,
                "application/json",
                RespBody::Full(Some(Bytes::from(bytes))),
            )
        }
        Reply::Stored(code, v) => {
            let bytes = serde_json::to_vec(&*v).unwrap_or_default();
            response(
                code,
                "application/json",
                RespBody::Full(Some(Bytes::from(bytes))),
            )
        }
        Reply::Text(code, t) => response(code, "text/plain", RespBody::Full(Some(Bytes::from(t)))),
        Reply::Stream(code, ct, rx) => response(code, ct, RespBody::Channel(rx)),
        Reply::NoContent => Response::builder()
            .status(204)
            .header("Cache-Control", "no-cache, private")
            .body(RespBody::Full(None))
            .expect("valid response"),
    }
}

fn error_response(e: &ApiError) -> Response<RespBody> {
    let bytes = serde_json::to_vec(&e.to_json()).unwrap_or_default();
    let mut resp = response(
        e.code,
        "application/json",
        RespBody::Full(Some(Bytes::from(bytes))),
    );
    if let Some(secs) = e.retry_after {
        resp.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            secs.to_string().parse().expect("header"),
        );
    }
    resp
}
