//! `tensorboard`: the run's TensorBoard pod (reading the run's volume), started unless
//! it runs already, waited for until it serves, and forwarded to a local port until
//! Ctrl-C, then deleted unless another session still uses it or `--keep` asked it to
//! stay; or, for a `--local` run, `tensorboard` from PATH on its directory.
//!
//! Sessions share the pod: each one writes its id and a heartbeat into the pod's
//! [`SESSIONS_ANNOTATION`] (merge patches carrying the resourceVersion read, so two
//! sessions never overwrite each other's word), and the last one to leave deletes it
//! (with the uid and resourceVersion as preconditions: a session that joined meanwhile
//! makes the delete fail, and the leaving one looks again). A session killed by SIGKILL
//! stops beating and counts as gone after [`crate::plan::helper_pod::SESSION_STALE_SECONDS`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::Pod;
use tokio::net::TcpListener;

use crate::cluster::Cluster;
use crate::labels::{KEEP_ANNOTATION, SESSIONS_ANNOTATION, helper_pod_name};
use crate::output;
use crate::plan::OutputVolume;
use crate::plan::helper_pod::{HEARTBEAT_SECONDS, Helper, Sessions, TENSORBOARD_PORT};
use crate::signals;
use crate::verdict::{Phase, PodView};

/// What `tensorboard` was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Board {
    pub tag: String,
    /// The local port; `None`: a free one.
    pub port: Option<u16>,
    /// `None`: the run's image (as `cp`'s), else tf-spawner's default image.
    pub image: Option<String>,
    /// Keep the pod when this session ends (`--keep`).
    pub keep: bool,
    /// How long the pod may take to serve.
    pub timeout: Duration,
    /// `--whole-volume`: the claim's root, not the run's folder.
    pub whole_volume: bool,
    /// `tensorboard NAME…`: an experiment's runs, or runs by tag, in one TensorBoard
    /// (then `tag` is unused).
    pub names: Vec<String>,
}

/// The runs `names` name (an experiment's, or by tag), each with its folder on their one
/// claim; the first run's volume (mounted by the pod). One list of the runs' records, and
/// one GET of each run's ConfigMap's metadata.
async fn runs_of(
    cluster: &Cluster,
    names: &[String],
) -> Result<(Vec<(String, String)>, OutputVolume)> {
    let mut tags: Vec<String> = super::compare::runs(cluster, names)
        .await?
        .into_iter()
        .map(|r| r.tag)
        .collect();
    tags.sort();
    let mut first: Option<OutputVolume> = None;
    let mut runs = Vec::new();
    for tag in tags {
        let v = super::helper::run_volume(cluster, &tag).await?;
        let mount = first.get_or_insert_with(|| v.clone());
        if v.claim != mount.claim {
            bail!(
                "runs '{}' and '{tag}' keep their output on different claims ('{}', '{}'): one TensorBoard pod mounts one; name the runs of one claim",
                runs.first()
                    .map_or(tag.as_str(), |(t, _): &(String, String)| t.as_str()),
                mount.claim,
                v.claim
            );
        }
        let dir = OutputVolume {
            path: mount.path.clone(),
            ..v
        }
        .dir();
        runs.push((tag, dir));
    }
    let volume = first.ok_or_else(|| anyhow::anyhow!("no runs named"))?;
    Ok((runs, volume))
}

/// The TensorBoard pod of several runs: the first's tag, and a suffix of what it serves,
/// so sessions over the same runs share one pod.
fn pod_name_of(runs: &[(String, String)]) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for (tag, dir) in runs {
        for b in tag.bytes().chain([0]).chain(dir.bytes()).chain([0]) {
            hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    let first = runs.first().map_or("runs", |(t, _)| t.as_str());
    format!(
        "{}-{:06x}",
        helper_pod_name(first, Helper::Tensorboard.as_str(), false),
        hash & 0xff_ffff
    )
}

/// How many times a read-then-write on the pod is tried when others change it between.
const TRIES: usize = 10;

/// Starts (or joins) the run's TensorBoard pod and forwards `board.port` to it until
/// Ctrl-C; then leaves it (deleting it when no other session uses it and no `--keep`).
pub(crate) async fn run(cluster: &Cluster, board: &Board) -> Result<()> {
    let mut stop = signals::Stop::listen();
    let (board, runs, volume, name) = if board.names.is_empty() {
        let mut volume = super::helper::run_volume(cluster, &board.tag).await?;
        if board.whole_volume {
            volume.folder = None;
        }
        let name = helper_pod_name(&board.tag, Helper::Tensorboard.as_str(), false);
        (board.clone(), Vec::new(), volume, name)
    } else {
        let (runs, volume) = runs_of(cluster, &board.names).await?;
        let board = Board {
            tag: runs[0].0.clone(),
            ..board.clone()
        };
        let name = pod_name_of(&runs);
        (board, runs, volume, name)
    };
    let board = &board;
    let listener = bind(board.port).await?;
    let me = format!("{:016x}", rand::random::<u64>());
    let pod = join(cluster, board, &name, (&volume, &runs), &me).await?;
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let served = tokio::select! {
        r = serve(cluster, &name, listener, board.timeout) => r,
        r = heartbeat(cluster, &name, &uid, &me) => r,
        // The way a session ends, as Ctrl-C ends `kubectl port-forward`: exit 0.
        code = stop.requested() => {
            output::note(&format!("tensorboard ended by {}", signals::asked_by(code)));
            Ok(())
        }
    };
    // A pod that could not serve is of no use: it goes unless others use it.
    let keep = board.keep && served.is_ok();
    let left = leave(cluster, &name, &uid, &me, keep).await;
    served?;
    match left? {
        Left::Deleted => output::note(&format!("deleted pod/{name} (tensorboard --keep keeps it)")),
        Left::Kept => output::note(&format!(
            "pod/{name} stays (--keep); it goes with: tf-spawner -d -t {}",
            board.tag
        )),
        Left::InUse(n) => output::note(&format!(
            "pod/{name} stays: {n} other tensorboard session{} use{} it; the last to end deletes it",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" }
        )),
        Left::Gone => {}
    }
    Ok(())
}

fn unix_now() -> u64 {
    u64::try_from(crate::duration::now()).unwrap_or(0)
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether a pod of ours is of no more use: it ended, or it is being deleted.
fn finished(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        || matches!(
            PodView::from_pod(pod).phase,
            Phase::Succeeded | Phase::Failed
        )
}

/// This session's pod: the run's TensorBoard pod joined (its id in the sessions), or
/// created with it. A pod that ended (a wrong image, an eviction) is replaced; a pod of
/// the name that is not ours is refused ([`super::helper::found`]).
async fn join(
    cluster: &Cluster,
    board: &Board,
    name: &str,
    (volume, runs): (&OutputVolume, &[(String, String)]),
    me: &str,
) -> Result<Pod> {
    for _ in 0..TRIES {
        let mut sessions = Sessions::default();
        let found = super::helper::found(cluster, name, &board.tag, Helper::Tensorboard).await?;
        if let Some(pod) = &found
            && finished(pod)
        {
            if pod.metadata.deletion_timestamp.is_none() {
                let uid = pod.metadata.uid.as_deref().unwrap_or_default();
                let version = pod.metadata.resource_version.as_deref();
                cluster.delete_helper(name, uid, version).await?;
            }
            wait_gone(cluster, name).await?;
            continue;
        }
        if let Some(pod) = &found {
            sessions = Sessions::parse(annotation(pod, SESSIONS_ANNOTATION));
        }
        sessions.beat(me, unix_now());
        let mut changes = vec![(SESSIONS_ANNOTATION, Some(sessions.to_annotation()))];
        if board.keep {
            changes.push((KEEP_ANNOTATION, Some("true".to_string())));
        }
        let Some(pod) = found else {
            match create(cluster, board, name, (volume, runs), changes).await? {
                Some(created) => return Ok(created),
                None => continue,
            }
        };
        let version = pod.metadata.resource_version.as_deref().unwrap_or_default();
        if let Some(joined) = cluster.annotate_pod(name, version, &changes).await? {
            return Ok(joined);
        }
    }
    bail!("pod/{name} kept changing while tensorboard tried to use it; try again")
}

/// The run's TensorBoard pod created with this session's annotations (`changes`);
/// `None` if one of the name was created meanwhile (join it then).
async fn create(
    cluster: &Cluster,
    board: &Board,
    name: &str,
    (volume, runs): (&OutputVolume, &[(String, String)]),
    changes: Vec<(&str, Option<String>)>,
) -> Result<Option<Pod>> {
    let mut pod = super::helper::plan(
        cluster,
        &board.tag,
        Helper::Tensorboard,
        volume,
        board.image.clone(),
    )
    .await?;
    if !runs.is_empty() {
        pod.metadata.name = Some(name.to_string());
        crate::plan::helper_pod::serve_runs(&mut pod, runs);
    }
    let annotations = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.extend(
        changes
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?))),
    );
    let created = cluster.create_helper(&pod).await?;
    if created.is_some() {
        let reading = if runs.is_empty() {
            volume.dir()
        } else {
            let tags: Vec<&str> = runs.iter().map(|(t, _)| t.as_str()).collect();
            format!("the folders of {}", tags.join(", "))
        };
        output::print(&format!(
            "started pod/{name}, reading {reading} of claim '{}'\n",
            volume.claim
        ))?;
    }
    Ok(created)
}

/// Says every [`HEARTBEAT_SECONDS`] that this session still uses the pod; ends (with an
/// error) only when the pod is gone or replaced.
async fn heartbeat(cluster: &Cluster, name: &str, uid: &str, me: &str) -> Result<()> {
    loop {
        tokio::time::sleep(Duration::from_secs(HEARTBEAT_SECONDS)).await;
        for _ in 0..TRIES {
            let Some(pod) = cluster
                .pod(name)
                .await?
                .filter(|p| p.metadata.uid.as_deref() == Some(uid) && !finished(p))
            else {
                bail!(
                    "pod/{name} was deleted while tensorboard forwarded to it (tf-spawner -d, or by hand)"
                );
            };
            let mut sessions = Sessions::parse(annotation(&pod, SESSIONS_ANNOTATION));
            sessions.beat(me, unix_now());
            let version = pod.metadata.resource_version.as_deref().unwrap_or_default();
            let change = [(SESSIONS_ANNOTATION, Some(sessions.to_annotation()))];
            if cluster
                .annotate_pod(name, version, &change)
                .await?
                .is_some()
            {
                break;
            }
        }
    }
}

/// How a session left the pod.
enum Left {
    Deleted,
    Kept,
    InUse(usize),
    Gone,
}

/// Takes this session off the pod: deletes it when no other live session uses it and
/// nobody asked it to stay (`keep`: this session's `--keep`, or the pod's annotation).
async fn leave(cluster: &Cluster, name: &str, uid: &str, me: &str, keep: bool) -> Result<Left> {
    for _ in 0..TRIES {
        let Some(pod) = cluster
            .pod(name)
            .await?
            .filter(|p| p.metadata.uid.as_deref() == Some(uid))
        else {
            return Ok(Left::Gone);
        };
        let mut sessions = Sessions::parse(annotation(&pod, SESSIONS_ANNOTATION));
        let others = sessions.others_alive(me, unix_now());
        let kept = keep || annotation(&pod, KEEP_ANNOTATION) == Some("true");
        let version = pod.metadata.resource_version.as_deref();
        if others == 0 && !kept {
            if cluster.delete_helper(name, uid, version).await? {
                return Ok(Left::Deleted);
            }
            continue;
        }
        sessions.leave(me);
        let change = [(SESSIONS_ANNOTATION, Some(sessions.to_annotation()))];
        if cluster
            .annotate_pod(name, version.unwrap_or_default(), &change)
            .await?
            .is_some()
        {
            return Ok(if others > 0 {
                Left::InUse(others)
            } else {
                Left::Kept
            });
        }
    }
    Err(anyhow!(
        "pod/{name} kept changing while tensorboard left it; it goes with: tf-spawner -d"
    ))
}

/// Waits until TensorBoard is ready, prints its URL, then forwards every connection.
async fn serve(
    cluster: &Cluster,
    pod: &str,
    listener: TcpListener,
    timeout: Duration,
) -> Result<()> {
    super::helper::wait_running(cluster, pod, timeout, true, Some("--image")).await?;
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
        code = signals::stop_requested() => {
            let _ = child.kill().await;
            output::note(&format!("tensorboard ended by {}", signals::asked_by(code)));
        }
    }
    Ok(())
}
