//! Mount paths compared as the container runtime resolves them: `//script`,
//! `/./script`, `/x/../script` and `/script/` are all `/script` ([`key`]). The mounts
//! tf-spawner adds to the TF container ([`OURS`]) replace a template's mount at the same
//! path, never one of each other's: two of ours at one path (`--volume CLAIM:/home/tf-spawner`
//! with `--run-as-user`, whose writable HOME is there) is a usage error naming both
//! ([`clash`]), not a claim silently dropped.

use k8s_openapi::api::core::v1::{Container, VolumeMount};

use crate::bundle::WORK_VOLUME;

/// The name of the script's volume (the run's ConfigMap) in every pod.
pub const SCRIPT_VOLUME: &str = "tf-spawner-script";
/// Where the script's volume is mounted in the TF container.
pub const SCRIPT_DIR: &str = "/script";
/// The name of `--volume`'s volume in every pod.
pub const OUTPUT_VOLUME: &str = "tf-spawner-output";
/// The name of the writable HOME's volume (`--run-as-user`, `security::HOME_DIR`).
pub const HOME_VOLUME: &str = "tf-spawner-home";
/// The name of the `/dev/shm` volume in every pod that has one.
pub const SHM_VOLUME: &str = "tf-spawner-shm";

/// The volumes tf-spawner mounts in the TF container, and what each holds.
pub const OURS: [(&str, &str); 5] = [
    (SCRIPT_VOLUME, "the script"),
    (WORK_VOLUME, "the --dir directory it unpacks"),
    (HOME_VOLUME, "the writable HOME of --run-as-user"),
    (SHM_VOLUME, "the memory-backed /dev/shm of a task with GPUs"),
    (OUTPUT_VOLUME, "the --volume claim"),
];

/// `path` as the runtime resolves it: absolute, no empty, `.` or `..` segment, no
/// trailing `/` (`..` above the root stays at the root, as in the kernel).
pub fn key(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `dir` or inside it, both resolved.
pub fn at_or_inside(path: &str, dir: &str) -> bool {
    let (path, dir) = (key(path), key(dir));
    path == dir || path.starts_with(&format!("{}/", dir.trim_end_matches('/')))
}

/// Whether a mount is one of ours.
fn ours(m: &VolumeMount) -> Option<&'static str> {
    OURS.iter()
        .find(|(name, _)| m.name == *name)
        .map(|(_, what)| *what)
}

/// Mounts `name` at `path` in `c`: a template's mount of that name or at that path
/// gives way; one of ours at that path stays, for [`clash`] to name.
pub fn replace(c: &mut Container, mount: VolumeMount) {
    let mounts = c.volume_mounts.get_or_insert_with(Vec::new);
    let at = key(&mount.mount_path);
    mounts.retain(|m| m.name != mount.name && (ours(m).is_some() || key(&m.mount_path) != at));
    mounts.push(mount);
}

/// Two of our mounts at one path in `c`, named: the one that would hide the other.
pub fn clash(c: &Container) -> Option<String> {
    let mounts: Vec<(&VolumeMount, &str)> = c
        .volume_mounts
        .iter()
        .flatten()
        .filter_map(|m| ours(m).map(|what| (m, what)))
        .collect();
    mounts.iter().enumerate().find_map(|(i, (a, what_a))| {
        let (b, what_b) = mounts[i + 1..]
            .iter()
            .find(|(b, _)| key(&b.mount_path) == key(&a.mount_path))?;
        let (claim, other) = if b.name == OUTPUT_VOLUME {
            ((b, what_b), (a, what_a))
        } else {
            ((a, what_a), (b, what_b))
        };
        Some(format!(
            "{} ({}) and {} ({}) would both be mounted at {}; choose another path",
            claim.1,
            claim.0.mount_path,
            other.1,
            other.0.mount_path,
            key(&a.mount_path)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_as_the_runtime_resolves_them() {
        for (path, resolved) in [
            ("/script", "/script"),
            ("//script", "/script"),
            ("/./script", "/script"),
            ("/script/", "/script"),
            ("/x/../script", "/script"),
            ("/../script", "/script"),
            ("//script//sub/.", "/script/sub"),
            ("/", "/"),
        ] {
            assert_eq!(key(path), resolved, "{path}");
        }
        assert!(at_or_inside("//script/sub", "/script"));
        assert!(at_or_inside("/./tf-spawner-work", "/tf-spawner-work"));
        assert!(!at_or_inside("/scripts", "/script"));
    }
}
