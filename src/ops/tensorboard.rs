//! `tensorboard`: the run's TensorBoard pod (reading the run's volume), started unless
//! it runs already, waited for until it serves, and forwarded to a local port until
//! Ctrl-C; or, for a `--local` run, `tensorboard` from PATH on its directory.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use tokio::net::TcpListener;

use crate::cluster::Cluster;
use crate::helper::{Helper, TENSORBOARD_PORT};
use crate::labels::helper_pod_name;
use crate::output;
use crate::signals;
use crate::verdict::{Phase, PodView};

/// What `tensorboard` was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Board {
    pub tag: String,
    /// The local port; `None`: a free one.
    pub port: Option<u16>,
    /// `None`: the built-in TensorBoard image.
    pub image: Option<String>,
    /// Delete the pod at exit.
    pub remove: bool,
    /// How long the pod may take to serve.
    pub timeout: Duration,
}

/// Starts (or reuses) the run's TensorBoard pod and forwards `board.port` to it until
/// Ctrl-C.
pub(crate) async fn run(cluster: &Cluster, board: &Board) -> Result<()> {
    let volume = super::helper::run_volume(cluster, &board.tag).await?;
    let name = helper_pod_name(&board.tag, Helper::Tensorboard.as_str(), false);
    let listener = bind(board.port).await?;
    // A pod that ended (a wrong image, an eviction) is replaced; a live one reused.
    let existing = cluster
        .pod(&name)
        .await?
        .map(|p| PodView::from_pod(&p).phase);
    if matches!(existing, Some(Phase::Succeeded | Phase::Failed)) {
        cluster.delete_helper(&name).await?;
        wait_gone(cluster, &name).await?;
    }
    if !matches!(
        existing,
        Some(Phase::Pending | Phase::Running | Phase::Unknown)
    ) {
        let image = board
            .image
            .clone()
            .unwrap_or_else(|| crate::helper::TENSORBOARD_IMAGE.to_string());
        let pod = super::helper::plan(
            cluster,
            &board.tag,
            Helper::Tensorboard,
            &volume,
            Some(image),
        )
        .await?;
        cluster.create_helper(&pod).await?;
        output::print(&format!(
            "started pod/{name}, reading {} of claim '{}'\n",
            volume.path, volume.claim
        ))?;
    }
    let served = tokio::select! {
        r = serve(cluster, &name, listener, board.timeout) => r,
        code = signals::stop_requested() => {
            output::note(&format!("stopped (signal, exit code {code})"));
            Ok(())
        }
    };
    // A pod that could not serve is of no use: it goes, and the error is the one line.
    if let Err(e) = served {
        let _ = cluster.delete_helper(&name).await;
        return Err(e);
    }
    if board.remove {
        cluster.delete_helper(&name).await?;
    } else {
        output::note(&format!(
            "pod/{name} stays; it goes with: tf-spawner -d -t {}",
            board.tag
        ));
    }
    Ok(())
}

/// Waits until TensorBoard is ready, prints its URL, then forwards every connection.
async fn serve(
    cluster: &Cluster,
    pod: &str,
    listener: TcpListener,
    timeout: Duration,
) -> Result<()> {
    super::helper::wait_running(cluster, pod, timeout, true).await?;
    let addr = listener.local_addr()?;
    output::print(&format!(
        "TensorBoard: http://{addr}/ (forwarded to pod/{pod}; Ctrl-C to stop)\n"
    ))?;
    loop {
        let (mut conn, _) = listener
            .accept()
            .await
            .context("accepting a local connection")?;
        let cluster = cluster.clone();
        let pod = pod.to_string();
        tokio::spawn(async move {
            if let Err(e) = cluster.forward(&pod, TENSORBOARD_PORT, &mut conn).await {
                output::note(&format!("{e}"));
            }
        });
    }
}

/// Waits until pod `name` is gone (a deleted pod lingers while the kubelet stops it).
async fn wait_gone(cluster: &Cluster, name: &str) -> Result<()> {
    for _ in 0..120 {
        if cluster.pod(name).await?.is_none() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(anyhow!("pod/{name} is still being deleted after 60s"))
}

async fn bind(port: Option<u16>) -> Result<TcpListener> {
    let port = port.unwrap_or(0);
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{port}: {e} (choose another with --port)"))
}

/// `tensorboard --local`: `tensorboard --logdir DIR` from PATH, until it ends or Ctrl-C.
pub(crate) async fn local(dir: PathBuf, port: Option<u16>) -> Result<()> {
    if !dir.is_dir() {
        anyhow::bail!(
            "{} does not exist: a --local run writes it (in $TF_SPAWNER_OUTPUT_DIR)",
            dir.display()
        );
    }
    let port = match port {
        Some(p) => p,
        None => bind(None).await?.local_addr()?.port(),
    };
    let mut child = tokio::process::Command::new("tensorboard")
        .arg("--logdir")
        .arg(&dir)
        .arg("--port")
        .arg(port.to_string())
        .arg("--host")
        .arg("127.0.0.1")
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            anyhow!("cannot run tensorboard: {e} (install it: pip install tensorboard)")
        })?;
    output::print(&format!(
        "TensorBoard: http://127.0.0.1:{port}/ (reading {}; Ctrl-C to stop)\n",
        dir.display()
    ))?;
    tokio::select! {
        status = child.wait() => {
            let status = status?;
            if !status.success() {
                anyhow::bail!("tensorboard exited with {status}");
            }
        }
        _ = signals::stop_requested() => {
            let _ = child.kill().await;
        }
    }
    Ok(())
}
