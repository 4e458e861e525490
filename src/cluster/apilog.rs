//! `-v`: one log line per API call — method, path with query, status (or the transport
//! error), time to the response's headers — as a tower layer on the kube client. It is
//! the outermost layer, so it sees requests before authentication adds its header;
//! it never logs headers or bodies. The attempt number comes from the `api` span that
//! `retry.rs` opens around each attempt.

use std::fmt::Display;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use tower_layer::Layer;
use tower_service::Service;

/// The target of the API call lines (`RUST_LOG=tf_spawner::api=info` selects them alone).
pub const TARGET: &str = "tf_spawner::api";

#[derive(Debug, Clone, Copy, Default)]
pub struct ApiLogLayer;

impl<S> Layer<S> for ApiLogLayer {
    type Service = ApiLog<S>;

    fn layer(&self, inner: S) -> ApiLog<S> {
        ApiLog { inner }
    }
}

#[derive(Debug, Clone)]
pub struct ApiLog<S> {
    inner: S,
}

impl<S, B, RB> Service<Request<B>> for ApiLog<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
    S::Error: Display + Send + 'static,
    RB: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<RB>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if !tracing::enabled!(target: TARGET, tracing::Level::INFO) {
            return Box::pin(self.inner.call(req));
        }
        let mut call = Call {
            method: req.method().clone(),
            path: req
                .uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string()),
            start: Instant::now(),
            done: false,
        };
        let response = self.inner.call(req);
        Box::pin(async move {
            let result = response.await;
            call.done = true;
            match &result {
                Ok(res) => tracing::info!(
                    target: TARGET,
                    method = %call.method,
                    path = %call.path,
                    status = res.status().as_u16(),
                    elapsed = ?call.elapsed(),
                ),
                Err(e) => tracing::info!(
                    target: TARGET,
                    method = %call.method,
                    path = %call.path,
                    error = %e,
                    elapsed = ?call.elapsed(),
                ),
            }
            result
        })
    }
}

/// One request in flight; logs on drop if it never got an answer (a timeout, Ctrl-C).
struct Call {
    method: Method,
    path: String,
    start: Instant,
    done: bool,
}

impl Call {
    fn elapsed(&self) -> Duration {
        // Microseconds are plenty, and read better than nanoseconds.
        Duration::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.done {
            tracing::info!(
                target: TARGET,
                method = %self.method,
                path = %self.path,
                error = "abandoned without an answer",
                elapsed = ?self.elapsed(),
            );
        }
    }
}
