//! `--volume CLAIM[:PATH]`: the [`OutputVolume`] read and checked (from the flag, and
//! from the run's ConfigMap for `cp` and `tensorboard`), the directories it may not
//! mount over, and the pod volume and mount that carry it.

use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Volume, VolumeMount};

use super::mounts::{self, OUTPUT_VOLUME, SCRIPT_DIR};
use crate::bundle::WORK_DIR;

/// `--volume CLAIM[:PATH]`: an existing PersistentVolumeClaim mounted into every task's
/// TF container at `path`, which the script finds in
/// [`OUTPUT_DIR_VAR`](crate::labels::OUTPUT_DIR_VAR).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputVolume {
    pub claim: String,
    pub path: String,
    /// The run's own folder under `path` (its tag), where its
    /// [`OUTPUT_DIR_VAR`](crate::labels::OUTPUT_DIR_VAR) points; `None`: the whole claim
    /// (a run of an earlier version, or `cp` and `tensorboard` with `--whole-volume`). A
    /// spawn's request has none: the plan makes the folder the tag.
    pub folder: Option<String>,
}

/// The directories tf-spawner mounts in the TF container, and what: `--volume` may not
/// mount a claim at or inside one (it would hide the script, or the `--dir` unpacking
/// would write into the user's claim).
pub const OWNED_MOUNTS: [(&str, &str); 2] = [
    (SCRIPT_DIR, "the script"),
    (WORK_DIR, "the --dir directory it unpacks"),
];

/// The directories of an image's programs and the system's: a claim recorded as mounted
/// there is refused for the helper pods ([`OutputVolume::from_annotation`]).
const SYSTEM_DIRS: [&str; 13] = [
    "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc",
    "/sys", "/run", "/var/run",
];

/// Where `--volume` mounts the claim when no PATH is given.
pub const DEFAULT_OUTPUT_PATH: &str = "/output";

impl OutputVolume {
    /// `CLAIM:PATH`, as the run's ConfigMap records it
    /// ([`VOLUME_ANNOTATION`](crate::labels::VOLUME_ANNOTATION)).
    pub fn annotation(&self) -> String {
        format!("{}:{}", self.claim, self.path)
    }

    /// `--volume CLAIM[:PATH]` read and checked (the flag's parser, and the annotation
    /// read back).
    pub fn parse(text: &str) -> Result<OutputVolume, String> {
        let (claim, path) = match text.split_once(':') {
            Some((claim, path)) => (claim, path),
            None => (text, DEFAULT_OUTPUT_PATH),
        };
        if let Some(problem) = crate::labels::name_problem(claim, 253) {
            return Err(format!("{text:?}: the claim {claim:?} {problem}"));
        }
        let resolved = mounts::key(path);
        if !path.starts_with('/')
            || resolved == "/"
            || path.split('/').any(|p| p == "..")
            || path.contains(':')
        {
            return Err(format!(
                "{text:?}: the mount path {path:?} must be an absolute directory such as {DEFAULT_OUTPUT_PATH} (not /, no '..' or ':')"
            ));
        }
        if let Some((owned, what)) = OWNED_MOUNTS
            .into_iter()
            .find(|(owned, _)| mounts::at_or_inside(&resolved, owned))
        {
            return Err(format!(
                "{text:?}: {owned} is where tf-spawner mounts {what}, which the claim would hide or be overwritten by; choose another path such as {DEFAULT_OUTPUT_PATH}"
            ));
        }
        let path = resolved;
        Ok(OutputVolume {
            claim: claim.to_string(),
            path,
            folder: None,
        })
    }

    /// Reads [`Self::annotation`] back, checked as `--volume` checks its value and more: anyone
    /// who may edit the namespace may write it, and the helper pods of `cp` and
    /// `tensorboard` mount the claim at its path, so a path over the image's programs
    /// (`out:/usr/local/bin`) would have them run the claim's `tar`. `Err`: why not.
    pub fn from_annotation(text: &str) -> Result<OutputVolume, String> {
        let volume = OutputVolume::parse(text)
            .ok()
            .filter(|_| text.contains(':'))
            .ok_or_else(|| format!("{text:?} is not CLAIM:PATH as tf-spawner writes it"))?;
        if let Some(system) = SYSTEM_DIRS
            .iter()
            .find(|d| mounts::at_or_inside(&volume.path, d))
        {
            return Err(format!(
                "its mount path {} is in {system}, where the helper pod's programs are",
                volume.path
            ));
        }
        Ok(volume)
    }

    /// `folder` read back (the ConfigMap's `tf-spawner/volume-folder`): the run's tag as
    /// the plan writes it, a name with no `/`, `..`, `:` or `,` (which would add a run
    /// to TensorBoard's `--logdir_spec` or leave the claim). `Err`: why not.
    pub fn check_folder(folder: &str) -> Result<(), String> {
        match crate::labels::name_problem(folder, 253) {
            None if !folder.contains("..") => Ok(()),
            _ => Err(format!(
                "its folder {:?} is not a run's tag, which is all tf-spawner writes there",
                folder
            )),
        }
    }

    /// The directory the run writes in: its folder, else the mount path.
    pub fn dir(&self) -> String {
        match &self.folder {
            Some(f) => format!("{}/{f}", self.path.trim_end_matches('/')),
            None => self.path.clone(),
        }
    }

    /// The pod volume that mounts the claim.
    pub fn volume(&self, read_only: bool) -> Volume {
        Volume {
            name: OUTPUT_VOLUME.to_string(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: self.claim.clone(),
                read_only: read_only.then_some(true),
            }),
            ..Volume::default()
        }
    }

    /// The container's mount of [`Self::volume`] at the path.
    pub fn mount(&self, read_only: bool) -> VolumeMount {
        VolumeMount {
            name: OUTPUT_VOLUME.to_string(),
            mount_path: self.path.clone(),
            read_only: read_only.then_some(true),
            ..VolumeMount::default()
        }
    }
}
