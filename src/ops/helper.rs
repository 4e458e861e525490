//! Helper pods of a run (`cp`, `tensorboard`): found from the run's tag, started,
//! waited for, deleted.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Cluster;
use crate::labels::helper_pod_name;
use crate::plan::OutputVolume;
use crate::plan::helper_pod::{self, Helper, HelperSpec};

/// The run's volume, or an error saying the run has none.
pub(crate) async fn run_volume(cluster: &Cluster, tag: &str) -> Result<OutputVolume> {
    cluster.run_volume(tag).await?.ok_or_else(|| {
        anyhow!(
            "run '{tag}' has no volume: spawn it with --volume CLAIM[:PATH] to keep what it writes"
        )
    })
}

/// A helper pod for run `tag`, built (not created): the run's image unless `image`
/// names one, pinned to the run's node when the claim allows one node only.
pub(crate) async fn plan(
    cluster: &Cluster,
    tag: &str,
    kind: Helper,
    volume: &OutputVolume,
    image: Option<String>,
) -> Result<Pod> {
    let Some(claim) = cluster.claim(&volume.claim).await? else {
        bail!(
            "the volume of run '{tag}', persistentvolumeclaim '{}', no longer exists in namespace '{}'",
            volume.claim,
            cluster.namespace()
        );
    };
    let modes = claim.spec.and_then(|s| s.access_modes).unwrap_or_default();
    let placement = cluster.run_placement(tag).await?;
    let image = image
        .or(placement.image)
        .unwrap_or_else(|| crate::plan::DEFAULT_IMAGE.to_string());
    Ok(helper_pod::pod(&HelperSpec {
        helper: kind,
        name: helper_pod_name(tag, kind.as_str(), kind == Helper::Cp),
        tag,
        namespace: cluster.namespace(),
        image,
        volume,
        node: placement.node.filter(|_| helper_pod::one_node_only(&modes)),
        security: placement.security,
    }))
}

/// The helper pod `name` of run `tag`, if there is one; a pod of that name that is not
/// (its labels do not say run `tag` and this helper) is refused, never used or deleted.
pub(crate) async fn found(
    cluster: &Cluster,
    name: &str,
    tag: &str,
    kind: Helper,
) -> Result<Option<Pod>> {
    let Some(pod) = cluster.pod(name).await? else {
        return Ok(None);
    };
    if !helper_pod::is_ours(&pod, tag, kind) {
        bail!(
            "pod/{name} exists in namespace '{}' but is not the {} pod of run '{tag}' (it lacks the labels {}={tag} and {}={}); tf-spawner leaves it alone: rename or delete it yourself",
            cluster.namespace(),
            kind.as_str(),
            crate::labels::RUN_LABEL,
            crate::labels::HELPER_LABEL,
            kind.as_str()
        );
    }
    Ok(Some(pod))
}

/// Polls until pod `name` runs (and, with `ready`, its containers are ready); fails
/// when it ended, cannot start (an image that cannot be pulled), or `timeout` passed.
/// `image_flag` is the flag that chooses the pod's image, named when the image is why.
pub(crate) async fn wait_running(
    cluster: &Cluster,
    name: &str,
    timeout: Duration,
    ready: bool,
    image_flag: Option<&str>,
) -> Result<Pod> {
    let start = tokio::time::Instant::now();
    loop {
        let pod = cluster
            .pod(name)
            .await?
            .ok_or_else(|| anyhow!("pod/{name} was deleted while starting"))?;
        let view = crate::verdict::PodView::from_pod(&pod);
        if view.phase == crate::verdict::Phase::Running && (!ready || view.ready.0 == view.ready.1)
        {
            return Ok(pod);
        }
        if let Some(line) = never_usable(name, &view, image_flag) {
            bail!("{line}");
        }
        if start.elapsed() > timeout {
            let why = match view.waiting {
                Some(w) => w.to_string(),
                None if view.phase == crate::verdict::Phase::Running => "not ready".to_string(),
                None => "still Pending".to_string(),
            };
            bail!(
                "pod/{name} did not start within {}: {why}",
                humantime::format_duration(timeout)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Why pod `name` will never be of use, if it will not: it ended (its exit), or it cannot
/// start (an image that cannot be pulled, a container that cannot be made).
fn never_usable(
    name: &str,
    view: &crate::verdict::PodView,
    image_flag: Option<&str>,
) -> Option<String> {
    if matches!(
        view.phase,
        crate::verdict::Phase::Succeeded | crate::verdict::Phase::Failed
    ) {
        let why = match &view.last_exit {
            Some(e) => format!(
                ": exit code {}{}{}",
                e.code,
                e.reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(", {r}")),
                e.message.as_ref().map_or(String::new(), |m| format!(
                    ": {}",
                    crate::verdict::one_line(m)
                ))
            ),
            None => String::new(),
        };
        let hint = image_flag.map_or(String::new(), |f| {
            format!(" (is the image right? choose another with {f})")
        });
        return Some(format!(
            "pod/{name} ended before it could be used{why}{hint}"
        ));
    }
    let waiting = view.waiting.as_ref().filter(|w| {
        matches!(
            w.reason.as_str(),
            "ErrImagePull"
                | "ImagePullBackOff"
                | "ErrImageNeverPull"
                | "InvalidImageName"
                | "CreateContainerError"
                | "CreateContainerConfigError"
                | "RunContainerError"
        )
    })?;
    Some(match image_flag {
        Some(flag) if waiting.reason.contains("Image") => {
            format!("pod/{name} cannot start: {waiting}; choose another image with {flag}")
        }
        _ => format!("pod/{name} cannot start: {waiting}"),
    })
}
