//! One follower at a time: the run's ConfigMap names who follows the run and acts for it
//! ([`FOLLOWER_ANNOTATION`]) and when it last checked in
//! ([`FOLLOWER_CHECKED_IN_ANNOTATION`]). A `wait` takes the run ([`take`]) unless a live
//! follower holds it, checks in every [`CHECK_IN`] while it follows ([`Lease`]) and lets
//! go at its end, leaving its exit code ([`FOLLOWER_EXIT_ANNOTATION`]) beside the verdict
//! it recorded. A second `wait` then only shows the run (`ops/wait/attached.rs`): no run
//! is restarted twice for one failure.
//!
//! Every change is a compare-and-swap: a merge patch that carries the resourceVersion it
//! was read at, which the API server refuses (409 Conflict) once anyone else wrote the
//! ConfigMap since; the loser reads again. The same rule as Kubernetes' own leader
//! election (client-go's resource locks), on the object the run already
//! has, so it needs no right beyond the ConfigMap rights every verb needs.
//!
//! The names are data anyone who may edit the namespace may write: a follower named
//! beyond [`MAX_WHO`] characters or on several lines, or checked in far in the future,
//! is no follower ([`holder`]).

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::watch;

use super::Cluster;
use crate::labels::{
    EXPERIMENT_LABEL, FOLLOWER_ANNOTATION, FOLLOWER_CHECKED_IN_ANNOTATION,
    FOLLOWER_EXIT_ANNOTATION, config_map_name, experiment_record_name, run_selector,
};

/// What a follower follows, by the ConfigMap that records who does: a run (`wait`, a
/// run's supervisor) or an experiment (a `sweep`, a detached sweep's supervisor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    Run(String),
    Experiment(String),
}

impl Followed {
    /// `run 'T'`, `experiment 'N'`.
    pub fn what(&self) -> String {
        match self {
            Followed::Run(tag) => format!("run '{tag}'"),
            Followed::Experiment(name) => format!("experiment '{name}'"),
        }
    }

    /// The ConfigMap that records who follows: the run's, the experiment's record.
    fn config_map(&self) -> String {
        match self {
            Followed::Run(tag) => config_map_name(tag),
            Followed::Experiment(name) => experiment_record_name(name),
        }
    }

    fn selector(&self) -> String {
        match self {
            Followed::Run(tag) => run_selector(tag),
            Followed::Experiment(name) => format!("{EXPERIMENT_LABEL}={name}"),
        }
    }
}

/// How long a follower that stopped checking in still holds the run.
pub const HOLD: Duration = Duration::from_secs(60);
/// How often a follower checks in.
pub const CHECK_IN: Duration = Duration::from_secs(20);
/// The longest follower name believed.
const MAX_WHO: usize = 200;
/// Compare-and-swap tries before giving up (each loss means someone else wrote).
const TRIES: usize = 8;

/// Who follows a run, as its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub who: String,
    /// When it last checked in (seconds since the epoch).
    pub checked_in: i64,
}

impl Holder {
    /// It checked in within [`HOLD`] of `now`.
    pub fn is_live(&self, now: i64) -> bool {
        now.saturating_sub(self.checked_in) < HOLD.as_secs() as i64
    }

    /// It acts for what it follows, for `me` at `now`: another follower, checking in,
    /// not gone from this machine.
    pub fn acts_against(&self, me: &str, now: i64) -> bool {
        self.who != me && self.is_live(now) && !self.gone_here()
    }

    /// It ran on this machine as a process that is gone: a wait or a sweep killed
    /// outright (SIGKILL, a crash) never lets go, and its own machine need not wait out
    /// [`HOLD`] to take over. A pid taken again by another process reads as alive: the
    /// hold is then waited out, as for a follower elsewhere.
    pub fn gone_here(&self) -> bool {
        let Some((host, pid)) = self
            .who
            .split_once(" on ")
            .and_then(|(_, at)| at.rsplit_once(", pid "))
        else {
            return false;
        };
        let uname = rustix::system::uname();
        let pid = pid.parse().ok().and_then(rustix::process::Pid::from_raw);
        host == uname.nodename().to_string_lossy()
            && pid.is_some_and(|p| {
                rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH)
            })
    }

    /// What `status -o json` and `list -o json` say of it at `now`.
    pub fn json(&self, now: i64) -> FollowerJson {
        FollowerJson {
            who: self.who.clone(),
            checked_in: crate::duration::rfc3339(self.checked_in),
            checking_in: self.is_live(now),
        }
    }

    /// `mn-supervisor-x7k2p (checked in 12s ago)`, `laptop, pid 4242 (silent for 3m0s)`:
    /// where it runs (its name without the program's), and whether it still checks in.
    pub fn cell(&self, now: i64) -> String {
        let at = self
            .who
            .split_once(" on ")
            .map_or(self.who.as_str(), |(_, at)| at);
        let ago = crate::duration::age(now.saturating_sub(self.checked_in).max(0) as u64);
        if self.is_live(now) {
            format!("{at} (checked in {ago} ago)")
        } else {
            format!("{at} (silent for {ago})")
        }
    }
}

/// Who follows a run (`status -o json`'s and `list -o json`'s `follower`).
#[derive(Debug, serde::Serialize)]
pub struct FollowerJson {
    pub who: String,
    /// RFC 3339.
    pub checked_in: Option<String>,
    /// It checked in within the last minute: it still follows the run.
    pub checking_in: bool,
}

/// This process as a follower: `wait on HOST, pid N` (in a pod, HOST is the pod's name).
pub fn me() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    format!(
        "{} on {host}, pid {}",
        crate::output::name(),
        std::process::id()
    )
}

/// The follower the record names, if it is believable ([`MAX_WHO`], one line, not
/// checked in more than [`HOLD`] after `now`).
pub fn holder(meta: &ObjectMeta, now: i64) -> Option<Holder> {
    let annotations = meta.annotations.as_ref()?;
    let who = annotations.get(FOLLOWER_ANNOTATION)?;
    let checked_in: i64 = annotations
        .get(FOLLOWER_CHECKED_IN_ANNOTATION)?
        .parse()
        .ok()?;
    let believable = !who.is_empty()
        && who.chars().count() <= MAX_WHO
        && !who.chars().any(char::is_control)
        && checked_in <= now + HOLD.as_secs() as i64;
    believable.then(|| Holder {
        who: who.clone(),
        checked_in,
    })
}

/// The exit code the last follower ended with, when it ended with a verdict.
pub fn exit_code(meta: &ObjectMeta) -> Option<u8> {
    meta.annotations
        .as_ref()?
        .get(FOLLOWER_EXIT_ANNOTATION)?
        .parse()
        .ok()
}

/// What [`take`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The run is this process's to follow now.
    Ours,
    /// A live follower holds it.
    Held(Holder),
    /// The run has no record (gone, or never made): nobody to take it from.
    NoRecord,
}

/// Takes `what` for `me`, unless a live follower other than `me` holds it.
pub async fn take(cluster: &Cluster, what: &Followed, me: &str) -> Result<Taken> {
    for _ in 0..TRIES {
        let Some(meta) = read(cluster, what).await? else {
            return Ok(Taken::NoRecord);
        };
        let now = crate::duration::now();
        if let Some(h) = holder(&meta, now).filter(|h| h.acts_against(me, now)) {
            return Ok(Taken::Held(h));
        }
        let stamp = serde_json::json!({
            FOLLOWER_ANNOTATION: me,
            FOLLOWER_CHECKED_IN_ANNOTATION: now.to_string(),
            FOLLOWER_EXIT_ANNOTATION: null,
        });
        match swap(cluster, what, &meta, stamp).await? {
            Swap::Done => return Ok(Taken::Ours),
            Swap::Gone => return Ok(Taken::NoRecord),
            Swap::Lost => continue,
        }
    }
    anyhow::bail!(
        "{}: its record changed {TRIES} times while this follower took it over; run it again",
        what.what()
    )
}

/// Lets go of `what` if `me` still holds it, recording `exit` (the code of a wait
/// that ended with the verdict) for a wait that shows it. Best effort: a follower that
/// could not let go is free again [`HOLD`] later.
pub async fn release(cluster: &Cluster, what: &Followed, me: &str, exit: Option<u8>) {
    for _ in 0..TRIES {
        let Ok(Some(meta)) = read(cluster, what).await else {
            return;
        };
        let now = crate::duration::now();
        if holder(&meta, now).is_none_or(|h| h.who != me) {
            return;
        }
        let end = serde_json::json!({
            FOLLOWER_ANNOTATION: null,
            FOLLOWER_CHECKED_IN_ANNOTATION: null,
            FOLLOWER_EXIT_ANNOTATION: exit.map(|c| c.to_string()),
        });
        if !matches!(swap(cluster, what, &meta, end).await, Ok(Swap::Lost)) {
            return;
        }
    }
}

/// What checking in found.
enum CheckIn {
    Ours,
    /// Another follower took the run while this one did not check in.
    Lost(Holder),
}

/// Checks in for `me` on `what` (taking it back if nobody live holds it).
async fn check_in(cluster: &Cluster, what: &Followed, me: &str) -> Result<CheckIn> {
    match take(cluster, what, me).await? {
        Taken::Held(h) => Ok(CheckIn::Lost(h)),
        Taken::Ours | Taken::NoRecord => Ok(CheckIn::Ours),
    }
}

/// The run held by this process while it follows: checked in every [`CHECK_IN`] by a
/// task of its own; [`Lease::lost`] resolves if another follower took the run meanwhile.
pub struct Lease {
    task: tokio::task::JoinHandle<()>,
    lost: watch::Receiver<Option<Holder>>,
}

impl Lease {
    /// Starts checking in for `me` on `what` (taken by [`take`]).
    pub fn hold(cluster: &Cluster, what: &Followed, me: &str) -> Lease {
        let (tx, lost) = watch::channel(None);
        let (cluster, what, me) = (cluster.clone(), what.clone(), me.to_string());
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHECK_IN).await;
                // An API server that does not answer now is the follow's to judge; the
                // next check-in tries again.
                if let Ok(CheckIn::Lost(h)) = check_in(&cluster, &what, &me).await {
                    tx.send_replace(Some(h));
                    return;
                }
            }
        });
        Lease { task, lost }
    }

    /// Resolves with the follower that took the run, if one does.
    pub async fn lost(&mut self) -> Holder {
        loop {
            if let Some(h) = self.lost.borrow_and_update().clone() {
                return h;
            }
            if self.lost.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The metadata of the ConfigMap that records who follows `what`, if it is there.
pub async fn read(cluster: &Cluster, what: &Followed) -> Result<Option<ObjectMeta>> {
    let name = what.config_map();
    let found = cluster
        .list_metadata::<ConfigMap>(&what.selector())
        .await
        .map_err(|e| cluster.explain("reading who follows it", &e))?;
    Ok(found
        .into_iter()
        .find(|m| m.name.as_deref() == Some(name.as_str())))
}

enum Swap {
    Done,
    /// Someone wrote the ConfigMap since it was read.
    Lost,
    Gone,
}

/// Writes `annotations` on the ConfigMap read as `meta`, unless it changed since.
async fn swap(
    cluster: &Cluster,
    what: &Followed,
    meta: &ObjectMeta,
    annotations: serde_json::Value,
) -> Result<Swap> {
    let patch = serde_json::json!({ "metadata": {
        "resourceVersion": meta.resource_version,
        "annotations": annotations,
    }});
    match cluster
        .merge_patch::<ConfigMap>(&what.config_map(), &patch)
        .await
    {
        Ok(()) => Ok(Swap::Done),
        Err(e) if e.code() == Some(409) => Ok(Swap::Lost),
        Err(e) if e.code() == Some(404) => Ok(Swap::Gone),
        Err(e) => Err(cluster.explain("recording who follows it", &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meta(who: &str, at: &str) -> ObjectMeta {
        ObjectMeta {
            annotations: Some(BTreeMap::from([
                (FOLLOWER_ANNOTATION.to_string(), who.to_string()),
                (FOLLOWER_CHECKED_IN_ANNOTATION.to_string(), at.to_string()),
            ])),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_follower_holds_the_run_until_it_has_not_checked_in_for_the_hold() {
        let h = holder(&meta("wait on a, pid 1", "1000"), 1000).unwrap();
        assert_eq!(h.who, "wait on a, pid 1");
        assert!(h.is_live(1000));
        assert!(h.is_live(1059));
        assert!(!h.is_live(1060));
    }

    #[test]
    fn a_forged_follower_is_no_follower() {
        let now = 1000;
        // On two lines, too long, in the future, or without a time.
        assert_eq!(holder(&meta("a\nb", "1000"), now), None);
        assert_eq!(holder(&meta(&"x".repeat(201), "1000"), now), None);
        assert_eq!(holder(&meta("a", "999999999"), now), None);
        assert_eq!(holder(&meta("a", "soon"), now), None);
        assert_eq!(holder(&meta("", "1000"), now), None);
        // A clock a little ahead of ours is believed.
        assert!(holder(&meta("a", "1030"), now).is_some());
        // A check-in at the far past is believed, and long silent (no overflow).
        let old = holder(&meta("a on laptop, pid 1", &i64::MIN.to_string()), now).unwrap();
        assert!(!old.is_live(now));
        assert!(old.cell(now).starts_with("laptop, pid 1 (silent for "));
        assert!(!old.json(now).checking_in);
    }

    #[test]
    fn a_follower_gone_from_this_machine_is_gone_and_one_elsewhere_is_not_known() {
        let here = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        // Above any pid_max (2^22 at most): no such process, ever.
        let pid = i32::MAX;
        let gone = |who: String| Holder { who, checked_in: 0 }.gone_here();
        assert!(gone(format!("tf-spawner on {here}, pid {pid}")));
        assert!(!gone(format!(
            "tf-spawner on {here}, pid {}",
            std::process::id()
        )));
        assert!(!gone(format!("tf-spawner on not-{here}, pid {pid}")));
        assert!(!gone("someone".to_string()));
    }

    #[test]
    fn the_exit_code_is_read_when_it_is_a_code() {
        let mut m = ObjectMeta::default();
        assert_eq!(exit_code(&m), None);
        m.annotations = Some(BTreeMap::from([(
            FOLLOWER_EXIT_ANNOTATION.to_string(),
            "3".to_string(),
        )]));
        assert_eq!(exit_code(&m), Some(3));
    }
}
