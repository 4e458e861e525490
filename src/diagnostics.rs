//! `-v`, `-vv` and `RUST_LOG`: tracing logs on stderr. Nothing is logged without them,
//! so a failing command still prints exactly one `error:` line.
//!
//! - `-v`: one line per API call (`cluster/apilog.rs`), with its attempt number;
//! - `-vv`: also tf-spawner's debug events (retries, broken watches) and the kube
//!   client's and hyper's debug logs;
//! - `-vvv`: the same at trace level;
//! - without `-v`, `RUST_LOG` (an `EnvFilter` directive such as `tf_spawner=debug`).
//!
//! Secrets are never printed: the API lines carry no headers or bodies, and env-file
//! values only ever travel in the Secret's request body.

use tracing_subscriber::EnvFilter;

/// The filter for a `-v` count; `None` for none.
pub fn filter_for(verbose: u8) -> Option<&'static str> {
    match verbose {
        0 => None,
        1 => Some("tf_spawner=info"),
        2 => Some("tf_spawner=debug,kube=debug,kube_client=debug,hyper=debug,hyper_util=debug"),
        _ => Some("tf_spawner=trace,kube=trace,kube_client=trace,hyper=trace,hyper_util=trace"),
    }
}

/// Installs the stderr subscriber, if `-v` or `RUST_LOG` asks for logs.
pub fn init(verbose: u8) {
    let directives = match filter_for(verbose) {
        Some(f) => f.to_string(),
        None => match std::env::var("RUST_LOG") {
            Ok(v) if !v.trim().is_empty() => v,
            _ => return,
        },
    };
    let filter = EnvFilter::builder().parse_lossy(directives);
    let ansi = crate::output::fancy_stderr();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
