//! `--dir DIR`: the training code's directory, packed as a gzip'd tar for the run's
//! ConfigMap (and unpacked again for `--local`). What `DIR/.gitignore` and
//! `DIR/.tfspawnerignore` exclude is left out (the `ignore` crate, git's rules), as are
//! hidden files and directories (`.git`, `.env`) and what `--local` runs wrote
//! (`tf-spawner-output/`: models and checkpoints, never code). Bounded: the archive must
//! fit in the ConfigMap, and at most [`MAX_INPUT_BYTES`] are read.

#![deny(clippy::arithmetic_side_effects)]

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::errors::UsageError;
use crate::output::shown_path;

/// The exclude file read in every directory of DIR, besides `.gitignore`.
pub const IGNORE_FILE: &str = ".tfspawnerignore";
/// The most bytes of files read before compression: more is not code.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// `--dir`: the ConfigMap key of the packed directory, and where a pod unpacks it (an
/// emptyDir, writable whatever the image's file system).
pub const DIR_KEY: &str = "dir.tar.gz";
pub const WORK_DIR: &str = "/tf-spawner-work";
pub const WORK_VOLUME: &str = "tf-spawner-work";
/// With `--dir`, the TF container's program before the script: unpacks the directory
/// with python's `tarfile` (the image runs python anyway; `tar` may be missing from a
/// slim one), makes it the working directory and the head of PYTHONPATH, then execs
/// its arguments (the script or the entrypoint, then the arguments after `--`), so the
/// script is the container's process, as without `--dir`.
pub const UNPACK_AND_EXEC: &str = "import os, sys, tarfile\n\
d = os.environ['TF_SPAWNER_WORK_DIR']\n\
with tarfile.open(os.path.join(os.environ['TF_SPAWNER_SCRIPT_DIR'], 'dir.tar.gz')) as t:\n    \
t.extractall(d, **({'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}))\n\
os.chdir(d)\n\
os.environ['PYTHONPATH'] = os.pathsep.join(p for p in (d, os.environ.get('PYTHONPATH')) if p)\n\
os.execvp(sys.argv[1], sys.argv[1:])\n";
/// DIR packed, and where the script is inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// gzip'd tar of DIR's files, paths relative to DIR.
    pub archive: Vec<u8>,
    /// The training script's path inside DIR, `/`-separated.
    pub script: String,
    /// How many files it holds.
    pub files: usize,
}

/// Packs `dir` (at most `limit` bytes compressed); `script` must be a file inside it.
pub async fn pack(dir: &Path, script: &Path, limit: usize) -> Result<Bundle> {
    let (dir, script) = (dir.to_path_buf(), script.to_path_buf());
    tokio::task::spawn_blocking(move || pack_blocking(&dir, &script, limit))
        .await
        .context("packing --dir")?
}

fn pack_blocking(dir: &Path, script: &Path, limit: usize) -> Result<Bundle> {
    let shown = shown_path(dir);
    let root = std::fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| UsageError::new(format!("--dir {shown} is not a directory")))?;
    let script_rel = std::fs::canonicalize(script)
        .ok()
        .and_then(|s| s.strip_prefix(&root).ok().map(Path::to_path_buf))
        .ok_or_else(|| {
            UsageError::new(format!(
                "the training script {} is not inside --dir {shown}; name it by a path in it (--dir {shown} {shown}/train.py)",
                shown_path(script)
            ))
        })?;
    let script_rel = slash_path(&script_rel);
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let (mut read, mut files, mut biggest) = (0u64, 0usize, (0u64, PathBuf::new()));
    let mut shipped_script = false;
    let walk = ignore::WalkBuilder::new(&root)
        .add_custom_ignore_filename(IGNORE_FILE)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .sort_by_file_name(std::ffi::OsStr::cmp)
        .filter_entry(|e| e.file_name() != crate::labels::LOCAL_OUTPUT_ROOT)
        .build();
    for entry in walk {
        let entry = entry.map_err(|e| UsageError::new(format!("--dir {shown}: {e}")))?;
        if !entry.file_type().is_some_and(|k| k.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        read = read.saturating_add(len);
        if len > biggest.0 {
            biggest = (len, rel.to_path_buf());
        }
        let over = |what: String| too_big(&shown, what, &biggest.1, biggest.0, limit);
        if read > MAX_INPUT_BYTES {
            return Err(over(format!("more than {MAX_INPUT_BYTES} bytes of files")).into());
        }
        tar.append_path_with_name(entry.path(), rel)
            .with_context(|| format!("packing {}", entry.path().display()))?;
        files = files.saturating_add(1);
        shipped_script |= slash_path(rel) == script_rel;
        if tar.get_ref().get_ref().len() > limit {
            return Err(over(format!("more than {limit} bytes compressed")).into());
        }
    }
    if !shipped_script {
        return Err(UsageError::new(format!(
            "the training script {} is excluded from --dir {shown} (hidden, or in .gitignore or {IGNORE_FILE})",
            shown_path(script)
        ))
        .into());
    }
    let mut gz = tar.into_inner().context("packing --dir")?;
    gz.flush().context("packing --dir")?;
    let archive = gz.finish().context("packing --dir")?;
    if archive.len() > limit {
        return Err(too_big(
            &shown,
            format!("{} bytes compressed", archive.len()),
            &biggest.1,
            biggest.0,
            limit,
        )
        .into());
    }
    Ok(Bundle {
        archive,
        script: script_rel,
        files,
    })
}

fn too_big(shown: &str, size: String, biggest: &Path, len: u64, limit: usize) -> UsageError {
    UsageError::new(format!(
        "--dir {shown} packs to {size} (its largest file: {} with {len} bytes); the run's ConfigMap holds at most {limit}: exclude data and checkpoints in {shown}/{IGNORE_FILE} (.gitignore rules), or bake the code into an image (-i) or put it on a volume",
        biggest.display()
    ))
}

fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Unpacks a bundle into `into` (for `--local`: the same files a pod gets).
pub fn unpack(archive: &[u8], into: &Path) -> Result<()> {
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    tar::Archive::new(flate2::read::GzDecoder::new(archive))
        .unpack(into)
        .with_context(|| format!("unpacking --dir into {}", into.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(archive: &[u8]) -> Vec<String> {
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(archive));
        let mut names: Vec<String> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn excludes_what_the_ignore_files_name_hidden_files_and_local_output() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, c: &[u8]| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        };
        w("train.py", b"import helpers\n");
        w("helpers.py", b"X = 1\n");
        w("pkg/mod.py", b"Y = 2\n");
        w("data/big.bin", &[7u8; 4096]);
        w("ckpt/model.h5", b"weights");
        w(".env", b"SECRET=1");
        w(".gitignore", b"ckpt/\n");
        w(IGNORE_FILE, b"data/\n");
        w(
            "tf-spawner-output/t/model/mnist.keras",
            b"a --local run's model",
        );
        let b = pack(d.path(), &d.path().join("train.py"), 1 << 20)
            .await
            .unwrap();
        assert_eq!(
            listing(&b.archive),
            ["helpers.py", "pkg/mod.py", "train.py"]
        );
        assert_eq!((b.script.as_str(), b.files), ("train.py", 3));
        let out = tempfile::tempdir().unwrap();
        unpack(&b.archive, out.path()).unwrap();
        assert_eq!(
            std::fs::read(out.path().join("pkg/mod.py")).unwrap(),
            b"Y = 2\n"
        );
    }

    #[tokio::test]
    async fn too_big_and_outside_are_usage_errors() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("train.py"), b"pass\n").unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        std::fs::write(d.path().join("weights.bin"), noise).unwrap();
        let e = pack(d.path(), &d.path().join("train.py"), 100_000)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("weights.bin") && e.contains(IGNORE_FILE), "{e}");
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("x.py"), b"").unwrap();
        let e = pack(d.path(), &other.path().join("x.py"), 100_000)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not inside --dir"), "{e}");
    }

    /// The plan with `--dir` and arguments: the archive in `binaryData`, counted; one
    /// work volume and mount; the unpacking program, then the script and its `args`.
    #[test]
    fn the_plan_ships_and_unpacks_the_bundle() {
        use crate::plan::{MAX_CONFIG_MAP_BYTES, SpawnRequest, Templates, build};
        let bundle = Bundle {
            archive: vec![0x1f, 0x8b, 0],
            script: "src/train.py".into(),
            files: 2,
        };
        let mut req = SpawnRequest {
            tag: "demo".into(),
            namespace: "ns".into(),
            port: 1999,
            image: None,
            roles: crate::roles::Roles::workers(1).unwrap(),
            templates: Templates {
                worker: crate::template::parse("t", crate::template::DEFAULT_TEMPLATE.as_bytes())
                    .unwrap(),
                by_role: Default::default(),
            },
            script: b"import helpers\n".to_vec(),
            entrypoint: None,
            script_args: vec!["--epochs".into(), "3".into()],
            bundle: Some(bundle),
            env: Default::default(),
            invocation: "0123456789abcdef".into(),
            scheduling: Default::default(),
            volume: None,
            resources: Default::default(),
        };
        let plan = build(&req).unwrap();
        let binary = plan.config_map.binary_data.as_ref().unwrap();
        assert_eq!(binary[DIR_KEY].0, [0x1f, 0x8b, 0]);
        let pod = plan.pods.iter().next().unwrap();
        let spec = pod.spec.unwrap();
        let works = |n: &str| n == WORK_VOLUME;
        assert_eq!(
            spec.volumes
                .unwrap()
                .iter()
                .filter(|v| works(&v.name))
                .count(),
            1
        );
        let c = &spec.containers[0];
        let command = c.command.clone().unwrap();
        assert_eq!(command[..3], ["python", "-c", UNPACK_AND_EXEC]);
        assert_eq!(command[3..], ["python", "/tf-spawner-work/src/train.py"]);
        assert_eq!(c.args.clone().unwrap(), ["--epochs", "3"]);
        let mounts = c.volume_mounts.as_ref().unwrap();
        assert_eq!(mounts.iter().filter(|m| works(&m.name)).count(), 1);

        req.bundle.as_mut().unwrap().archive = vec![0; MAX_CONFIG_MAP_BYTES];
        let e = build(&req).unwrap_err().to_string();
        assert!(
            e.contains("--dir") && e.contains("at most 1048576 bytes"),
            "{e}"
        );
    }
}
