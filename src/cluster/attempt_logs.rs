//! Every attempt readable until `-d`: before a restart (`ops/restart/mod.rs`) deletes the
//! pods of the attempt it replaces, each pod's TF container log is kept whole in a
//! ConfigMap of the run, `POD-aN-log` (gzip'd in `binaryData`; past [`MAX_STORED`]
//! compressed bytes only its end is kept, and how much was dropped is said). It carries
//! the run's label, so `-d` deletes it with the run; the attempt's label; and why the
//! attempt ended ([`ENDED_ANNOTATION`]). `logs --attempt N`, `--save-logs` and `status`
//! read them back. Why logs and not the pods themselves: docs/reference.md, "Every
//! attempt's log".
//!
//! A pod on a node that stopped reporting has no kubelet to serve its log, and a pod that
//! never started has none: neither is kept, and the restart says so.
//!
//! Read back, they are as trustworthy as anyone who may edit the namespace's ConfigMaps,
//! so the reading is bounded as the writing is: at most [`MAX_LOGS`] kept logs are
//! listed (metadata only), each is fetched and unpacked alone, its text cut at
//! [`MAX_TEXT`] (tf-spawner keeps no longer one), all of them together at [`MAX_TOTAL`];
//! each cut is one line. One log's text is held at a time.

use std::collections::BTreeSet;
use std::io::{Read, Write};

use futures::{StreamExt, stream};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use kube::Api;
use kube::api::ListParams;

use super::Cluster;
use super::pod_logs;
use super::retry::{Plain, retry};
use crate::labels::{
    ATTEMPT_LABEL, INDEX_LABEL, MANAGED_BY, MANAGED_BY_LABEL, ROLE_LABEL, RUN_LABEL, TF_CONTAINER,
    run_selector,
};

/// On a kept log's ConfigMap: the label that says what it is.
pub const LOG_LABEL: &str = "tf-spawner/attempt-log";
/// On a kept log's ConfigMap: why its attempt ended (the failure its restart was for).
pub const ENDED_ANNOTATION: &str = "tf-spawner/attempt-ended";
/// On a kept log's ConfigMap: the pod it is the log of.
pub const POD_ANNOTATION: &str = "tf-spawner/pod";
/// On a kept log's ConfigMap: bytes dropped from the log's start to fit (absent: none).
pub const DROPPED_ANNOTATION: &str = "tf-spawner/log-dropped-bytes";
/// The `binaryData` key of the gzip'd log.
const LOG_KEY: &str = "log.gz";
/// The most compressed bytes kept per pod: a ConfigMap holds at most 1 MiB.
pub const MAX_STORED: usize = 900 * 1024;
/// The most text kept of a log, and read back of one (a gzip bomb planted by an editor
/// is cut there): a kubelet rotates a container's log at 10 MiB by default.
pub const MAX_TEXT: usize = 16 << 20;
/// The most kept logs one command reads: a run's tasks times its restarts.
pub const MAX_LOGS: usize = 4096;
/// The most text of kept logs one command reads, all of them together.
pub const MAX_TOTAL: u64 = 256 << 20;

/// The name of the ConfigMap keeping `pod`'s log of `attempt`.
pub fn name(pod: &str, attempt: u32) -> String {
    format!("{pod}-a{attempt}-log")
}

/// A kept log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub pod: String,
    pub attempt: u32,
    /// Why the attempt ended.
    pub ended: String,
    /// Bytes dropped from the start to fit.
    pub dropped: u64,
    /// The log (empty when only the metadata was read).
    pub text: String,
}

/// `text` gzip'd, its start dropped as needed to fit in `max` bytes and to keep at most
/// [`MAX_TEXT`] bytes of text: (bytes, dropped).
pub fn bounded(text: &str, max: usize) -> (Vec<u8>, u64) {
    let mut from = line_start_after(text, text.len().saturating_sub(MAX_TEXT));
    loop {
        let kept = &text.as_bytes()[from..];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing to a Vec cannot fail.
        let bytes = gz
            .write_all(kept)
            .and_then(|()| gz.finish())
            .unwrap_or_default();
        if bytes.len() <= max || kept.is_empty() {
            return (bytes, from as u64);
        }
        // Keep the end, cut at a line start.
        from = line_start_after(text, from + kept.len() / 2 + 1);
    }
}

/// The first line start of `text` at `at` or after (its length if none); 0 at 0.
fn line_start_after(text: &str, at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    let mut at = at.min(text.len());
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    if text[..at].ends_with('\n') {
        return at;
    }
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

/// Keeps the logs of the pods `names` of run `tag` (those there, started, on a node
/// that reports), each as the log of its own attempt (its label), `ended` saying why.
/// Returns one line per pod whose log could not be kept; never fails the caller.
pub async fn keep(
    cluster: &Cluster,
    tag: &str,
    names: &BTreeSet<String>,
    lost: &BTreeSet<String>,
    ended: &str,
    max_in_flight: usize,
) -> Vec<String> {
    let pods = match cluster.list::<Pod>(&run_selector(tag)).await {
        Ok(pods) => pods,
        Err(e) => return vec![format!("the replaced pods' logs were not kept: {e}")],
    };
    // A pod being deleted (the one whose removal called for the restart) still has its
    // log on its node until it is gone.
    let chosen = pods
        .into_iter()
        .filter(|p| p.metadata.name.as_ref().is_some_and(|n| names.contains(n)));
    let results: Vec<Option<String>> = stream::iter(chosen)
        .map(|pod| async move { keep_one(cluster, tag, &pod, lost, ended).await.err() })
        .buffer_unordered(max_in_flight.max(1))
        .collect()
        .await;
    results.into_iter().flatten().collect()
}

/// Keeps one pod's log; `Err`: why not, in words.
async fn keep_one(
    cluster: &Cluster,
    tag: &str,
    pod: &Pod,
    lost: &BTreeSet<String>,
    ended: &str,
) -> Result<(), String> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    if lost.contains(&name) {
        return Err(format!(
            "pod {name}'s log was not kept: its node stopped reporting, no kubelet serves it"
        ));
    }
    let started = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.state
                    .as_ref()
                    .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
            })
        });
    if !started {
        return Ok(());
    }
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == TF_CONTAINER))
        .map(|c| c.name.as_str());
    let params = pod_logs::LogOptions::default().params(container);
    let text = pod_logs::fetch(cluster, &name, &params)
        .await
        .map_err(|e| format!("pod {name}'s log was not kept: {e}"))?;
    if text.lines().next().is_some_and(pod_logs::kubelet_notice) {
        return Err(format!(
            "pod {name}'s log was not kept: the kubelet no longer has it ({})",
            text.lines().next().unwrap_or_default()
        ));
    }
    let attempt = super::recreate::attempt_of(pod);
    let config_map = config_map(tag, pod, attempt, ended, &text);
    match cluster.create_once(&config_map).await {
        Ok(_) => Ok(()),
        // Kept already (a restart taken up again).
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("pod {name}'s log was not kept: {e}")),
    }
}

/// The ConfigMap keeping `pod`'s log `text` of `attempt`.
fn config_map(tag: &str, pod: &Pod, attempt: u32, ended: &str, text: &str) -> ConfigMap {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let (bytes, dropped) = bounded(text, MAX_STORED);
    let mut labels = std::collections::BTreeMap::from([
        (RUN_LABEL.to_string(), tag.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (ATTEMPT_LABEL.to_string(), attempt.to_string()),
        (LOG_LABEL.to_string(), "true".to_string()),
    ]);
    let pod_labels = pod.metadata.labels.as_ref();
    for key in [ROLE_LABEL, INDEX_LABEL] {
        if let Some(v) = pod_labels.and_then(|l| l.get(key)) {
            labels.insert(key.to_string(), v.clone());
        }
    }
    let mut annotations = std::collections::BTreeMap::from([
        (POD_ANNOTATION.to_string(), name.clone()),
        (ENDED_ANNOTATION.to_string(), ended.to_string()),
    ]);
    if dropped > 0 {
        annotations.insert(DROPPED_ANNOTATION.to_string(), dropped.to_string());
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(self::name(&name, attempt)),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        binary_data: Some([(LOG_KEY.to_string(), ByteString(bytes))].into()),
        ..ConfigMap::default()
    }
}

/// The selector of run `tag`'s kept logs (of `attempt`, if given).
fn selector(tag: &str, attempt: Option<u32>) -> String {
    let mut s = format!("{RUN_LABEL}={tag},{LOG_LABEL}");
    if let Some(a) = attempt {
        s.push_str(&format!(",{ATTEMPT_LABEL}={a}"));
    }
    s
}

/// What a kept log's metadata says (`None`: not one of run `tag`'s).
fn kept_of(meta: &ObjectMeta) -> Option<Kept> {
    let annotation = |k: &str| meta.annotations.as_ref()?.get(k).cloned();
    let attempt = meta.labels.as_ref()?.get(ATTEMPT_LABEL)?.parse().ok()?;
    let pod = annotation(POD_ANNOTATION)?;
    // A file name of `--save-logs`: a DNS name, nothing else (an editor may write it).
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    (pod.chars().all(plain) && !pod.contains("..") && !pod.starts_with('.')).then_some(())?;
    (meta.name.as_deref() == Some(name(&pod, attempt).as_str())).then_some(())?;
    Some(Kept {
        pod,
        attempt,
        ended: annotation(ENDED_ANNOTATION).unwrap_or_default(),
        dropped: annotation(DROPPED_ANNOTATION)
            .and_then(|d| d.parse().ok())
            .unwrap_or(0),
        text: String::new(),
    })
}

/// Run `tag`'s kept logs (of `attempt`, if given), by attempt then pod, without their
/// text ([`text`] reads each); at most [`MAX_LOGS`], the second value saying when more
/// were there (forged: no run keeps that many).
pub async fn list(
    cluster: &Cluster,
    tag: &str,
    attempt: Option<u32>,
) -> anyhow::Result<(Vec<Kept>, bool)> {
    let api: Api<ConfigMap> = cluster.api();
    let params = ListParams::default()
        .labels(&selector(tag, attempt))
        .limit(MAX_LOGS as u32);
    let found = retry(&cluster.policy, || api.list_metadata(&params), Plain)
        .await
        .map_err(|e| cluster.explain("listing the run's kept logs", &e))?;
    let more = found
        .metadata
        .continue_
        .as_ref()
        .is_some_and(|c| !c.is_empty());
    let mut kept: Vec<Kept> = found
        .items
        .iter()
        .take(MAX_LOGS)
        .filter_map(|o| kept_of(&o.metadata))
        .collect();
    kept.sort_by(|a, b| (a.attempt, &a.pod).cmp(&(b.attempt, &b.pod)));
    Ok((kept, more))
}

/// The line that says a listing stopped at [`MAX_LOGS`].
pub fn too_many(tag: &str) -> String {
    format!(
        "run {tag}: more than {MAX_LOGS} kept logs (tf-spawner keeps one per task and restart): only {MAX_LOGS} are read; someone who may edit the namespace's configmaps made the others"
    )
}

/// What is left to read of [`MAX_TOTAL`] across one command's kept logs, and whether
/// its end was said.
#[derive(Debug)]
pub struct Budget {
    left: u64,
    said: bool,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            left: MAX_TOTAL,
            said: false,
        }
    }
}

/// A kept log as read.
#[derive(Debug)]
pub enum Got {
    /// Its text, and the one line that says what of it was not read.
    Text(String, Option<String>),
    /// Nothing: the budget is spent; the line that says so, the first time.
    Spent(Option<String>),
}

/// `kept`'s text, read alone: its ConfigMap fetched, unpacked to at most [`MAX_TEXT`]
/// bytes and what is left of `budget`; once it is spent the caller stops (the line
/// saying so comes once, with the log it cut or with [`Got::Spent`]). A ConfigMap gone
/// reads as an empty text.
pub async fn text(cluster: &Cluster, kept: &Kept, budget: &mut Budget) -> anyhow::Result<Got> {
    if budget.left == 0 {
        let first = !std::mem::replace(&mut budget.said, true);
        return Ok(Got::Spent(first.then(spent)));
    }
    let api: Api<ConfigMap> = cluster.api();
    let name = name(&kept.pod, kept.attempt);
    let checked = super::checked(&name).map_err(|e| cluster.explain("reading a kept log", &e))?;
    let found = retry(&cluster.policy, || api.get_opt(checked), Plain)
        .await
        .map_err(|e| cluster.explain(&format!("reading the kept log {name}"), &e))?;
    let Some(bytes) = found
        .as_ref()
        .and_then(|cm| cm.binary_data.as_ref()?.get(LOG_KEY))
    else {
        return Ok(Got::Text(String::new(), None));
    };
    let (text, note) = within(&bytes.0, kept, budget);
    Ok(Got::Text(text, note))
}

/// A kept log's gzip'd bytes unpacked within [`MAX_TEXT`] and `budget` (charged), and
/// the line saying what was not read.
fn within(gz: &[u8], kept: &Kept, budget: &mut Budget) -> (String, Option<String>) {
    let cap = (MAX_TEXT as u64).min(budget.left);
    let (raw, cut) = unpack(gz, cap);
    budget.left -= raw.len() as u64;
    let who = "someone who may edit the namespace's configmaps made it";
    let note = match cut {
        Cut::Whole => None,
        Cut::NotGzip => Some(format!(
            "pod {}: attempt {}'s kept log is not gzip'd text as tf-spawner keeps it: shown up to where it breaks ({who})",
            kept.pod, kept.attempt
        )),
        Cut::Longer if cap < MAX_TEXT as u64 => {
            budget.said = true;
            Some(format!(
                "pod {}: attempt {}'s log cut: {}",
                kept.pod,
                kept.attempt,
                spent()
            ))
        }
        Cut::Longer => Some(format!(
            "pod {}: attempt {}'s log cut at {} MiB: tf-spawner keeps none longer ({who})",
            kept.pod,
            kept.attempt,
            MAX_TEXT >> 20
        )),
    };
    (String::from_utf8_lossy(&raw).into_owned(), note)
}

/// The line that says [`MAX_TOTAL`] was reached.
fn spent() -> String {
    format!(
        "the kept logs read reached {} MiB in all, the most one command reads: the rest are not read (no run keeps that much; someone who may edit the namespace's configmaps made them)",
        MAX_TOTAL >> 20
    )
}

/// How a kept log's unpacking ended.
#[derive(Debug, PartialEq, Eq)]
enum Cut {
    Whole,
    /// More than the bound.
    Longer,
    /// Not gzip, or broken.
    NotGzip,
}

/// `gz` unpacked to at most `cap` bytes, and how that ended.
fn unpack(gz: &[u8], cap: u64) -> (Vec<u8>, Cut) {
    let mut raw = Vec::new();
    let mut reader = flate2::read::GzDecoder::new(gz).take(cap.saturating_add(1));
    let broken = reader.read_to_end(&mut raw).is_err();
    let over = raw.len() as u64 > cap;
    raw.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    let cut = match (over, broken) {
        (true, _) => Cut::Longer,
        (false, true) => Cut::NotGzip,
        (false, false) => Cut::Whole,
    };
    (raw, cut)
}

/// The attempts whose logs are kept among a run's ConfigMaps (`metas`), each with why
/// it ended, by attempt.
pub fn ended(metas: &[ObjectMeta]) -> Vec<(u32, String)> {
    let mut out: std::collections::BTreeMap<u32, String> = Default::default();
    let logs = metas
        .iter()
        .filter(|m| m.labels.as_ref().is_some_and(|l| l.contains_key(LOG_LABEL)));
    for k in logs.filter_map(kept_of) {
        out.entry(k.attempt).or_insert(k.ended);
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_too_large_keeps_its_end_from_a_line_start() {
        let small = "epoch 1\nepoch 2\n";
        let (bytes, dropped) = bounded(small, MAX_STORED);
        assert_eq!(dropped, 0);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, small);
        // Incompressible lines: only the end fits.
        let big: String = (0..4000u64)
            .map(|i| format!("{i} {:x}\n", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        let (bytes, dropped) = bounded(&big, 8 * 1024);
        assert!(bytes.len() <= 8 * 1024 && dropped > 0, "{}", bytes.len());
        let mut back = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut back)
            .unwrap();
        assert!(big.ends_with(&back) && back.contains("\n3999 "), "{back}");
        assert_eq!(big.len() as u64 - dropped, back.len() as u64);
        assert!(big[..dropped as usize].ends_with('\n'));
    }

    #[test]
    fn a_kept_log_is_named_after_its_pod_and_attempt() {
        assert_eq!(name("t-worker-1", 0), "t-worker-1-a0-log");
        assert_eq!(
            selector("t", Some(2)),
            "training_attempt=t,tf-spawner/attempt-log,tf-spawner/attempt=2"
        );
    }

    fn gz(text: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        gz.finish().unwrap()
    }

    /// A forged kept log is cut at MAX_TEXT, and all read together at MAX_TOTAL, each
    /// cut said in one line; what is not gzip is said too.
    #[test]
    fn kept_logs_are_read_within_their_bounds() {
        let kept = Kept {
            pod: "t-worker-0".into(),
            attempt: 0,
            ended: String::new(),
            dropped: 0,
            text: String::new(),
        };
        let mut budget = Budget::default();
        let (text, note) = within(&gz(b"epoch 1\n"), &kept, &mut budget);
        assert_eq!((text.as_str(), note), ("epoch 1\n", None));
        let bomb = gz(&vec![b'a'; MAX_TEXT + 1]);
        let (text, note) = within(&bomb, &kept, &mut budget);
        assert_eq!(text.len(), MAX_TEXT);
        assert_eq!(
            note.unwrap(),
            "pod t-worker-0: attempt 0's log cut at 16 MiB: tf-spawner keeps none longer (someone who may edit the namespace's configmaps made it)"
        );
        let mut read = (MAX_TEXT + 8) as u64;
        for _ in 0..20 {
            let (text, note) = within(&bomb, &kept, &mut budget);
            read += text.len() as u64;
            if budget.said {
                assert!(note.unwrap().ends_with("the rest are not read (no run keeps that much; someone who may edit the namespace's configmaps made them)"));
                break;
            }
        }
        assert_eq!((read, budget.left), (MAX_TOTAL, 0));
        let (text, note) = within(b"not gzip", &kept, &mut Budget::default());
        assert_eq!(text, "");
        assert!(note.unwrap().contains("is not gzip'd text"));
    }

    /// The writer keeps at most MAX_TEXT of text, its end, from a line start.
    #[test]
    fn a_kept_log_holds_at_most_max_text() {
        let line = "x".repeat(99) + "\n";
        let big = line.repeat(MAX_TEXT / 100 + 10);
        let (bytes, dropped) = bounded(&big, MAX_STORED);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut back)
            .unwrap();
        assert!(
            back.len() <= MAX_TEXT && big.ends_with(&back),
            "{}",
            back.len()
        );
        assert_eq!(big.len() as u64 - dropped, back.len() as u64);
        assert!(back.starts_with('x'));
    }
}
