//! `--dir DIR`: the training code's directory, packed as a gzip'd tar for the run's
//! ConfigMap (and unpacked again for `--local`). Left out (the `ignore` crate, git's
//! rules): what git would not commit — every `.gitignore` from the repository's root
//! down to DIR and below it, the repository's `.git/info/exclude`, the user's global
//! excludes (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`) — what a
//! `.tfspawnerignore` names (in DIR, below it, and inside a repository above it too),
//! hidden files and directories (`.git`, `.env`) and what `--local` runs wrote
//! (`tf-spawner-output/`: models and checkpoints, never code). Outside a git
//! repository DIR's own `.gitignore` files still count. A `.ignore` file (ripgrep's and
//! fd's "do not search") is not read: it says what to search, not what to ship, and git
//! ships what it names. Bounded: the archive must fit in the ConfigMap, and at most
//! [`MAX_INPUT_BYTES`] are read.
//!
//! Here: the pack and the unpack; `bundle/walk.rs` which files of DIR ship and what was
//! left out; `bundle/exact.rs` each file read as the walk saw it, exactly its size.

#![deny(clippy::arithmetic_side_effects)]

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::errors::UsageError;
use crate::output::shown_path;

mod exact;
mod walk;

use exact::{append_exactly, open_walked};
pub use walk::IGNORE_FILE;
use walk::{left_out, walk};

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bundle {
    /// gzip'd tar of DIR's files, paths relative to DIR.
    #[serde(with = "crate::plan::bytes")]
    pub archive: Vec<u8>,
    /// The training script's path inside DIR, `/`-separated.
    pub script: String,
    /// How many files it holds.
    pub files: usize,
    /// What was left out (ignored, hidden, `--local`'s output, links), relative to DIR,
    /// a directory with a trailing `/` (its files not listed one by one).
    pub left_out: Vec<String>,
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
    let (root, script_rel) = root_and_script(dir, script, &shown)?;
    let root_dir =
        std::fs::File::open(&root).with_context(|| format!("--dir {shown}: cannot be read"))?;
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let (mut read, mut shipped, mut biggest) = (0u64, Vec::new(), (0u64, PathBuf::new()));
    let mut shipped_script = false;
    for entry in walk(&root) {
        let entry = entry.map_err(|e| UsageError::new(format!("--dir {shown}: {e}")))?;
        if !entry.file_type().is_some_and(|k| k.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        let unshipped = |why| {
            anyhow!(
                "--dir {shown}: {} {why}; nothing was shipped",
                rel.display()
            )
        };
        let file = open_walked(&root_dir, rel, entry.ino()).map_err(unshipped)?;
        let len = file.len;
        read = read.saturating_add(len);
        if len > biggest.0 {
            biggest = (len, rel.to_path_buf());
        }
        let over = |what: String| too_big(&shown, what, &biggest.1, biggest.0, limit);
        if read > MAX_INPUT_BYTES {
            return Err(over(format!("more than {MAX_INPUT_BYTES} bytes of files")).into());
        }
        append_exactly(&mut tar, rel, file).map_err(unshipped)?;
        shipped.push(rel.to_path_buf());
        shipped_script |= slash_path(rel).is_some_and(|p| p == script_rel);
        if tar.get_ref().get_ref().len() > limit {
            return Err(over(format!("more than {limit} bytes compressed")).into());
        }
    }
    if !shipped_script {
        return Err(UsageError::new(format!(
            "the training script {} is excluded from --dir {shown} (hidden, ignored by git, or in {IGNORE_FILE})",
            shown_path(script)
        ))
        .into());
    }
    let archive = finish(tar)?;
    if archive.len() > limit {
        let size = format!("{} bytes compressed", archive.len());
        return Err(too_big(&shown, size, &biggest.1, biggest.0, limit).into());
    }
    Ok(Bundle {
        archive,
        script: script_rel,
        files: shipped.len(),
        left_out: left_out(&root, &shipped),
    })
}

/// The archive's bytes, its gzip stream ended.
fn finish(tar: tar::Builder<GzEncoder<Vec<u8>>>) -> Result<Vec<u8>> {
    let mut gz = tar.into_inner().context("packing --dir")?;
    gz.flush().context("packing --dir")?;
    gz.finish().context("packing --dir")
}

/// DIR's canonical path, and the script's path in it (with `/`), or the line saying why
/// the script cannot be shipped from there.
fn root_and_script(dir: &Path, script: &Path, shown: &str) -> Result<(PathBuf, String)> {
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
    let script_rel = slash_path(&script_rel).ok_or_else(|| {
        UsageError::new(format!(
            "the training script's path in --dir {shown} is not valid UTF-8; rename it (a pod's command is text)"
        ))
    })?;
    Ok((root, script_rel))
}

fn too_big(shown: &str, size: String, biggest: &Path, len: u64, limit: usize) -> UsageError {
    UsageError::new(format!(
        "--dir {shown} packs to {size} (its largest file: {} with {len} bytes); the run's ConfigMap holds at most {limit}: exclude data and checkpoints in {shown}/{IGNORE_FILE} (.gitignore rules), or bake the code into an image (-i) or put it on a volume",
        biggest.display()
    ))
}

/// `path` with `/` between its components; `None` when it is not UTF-8 (a lossy
/// conversion would name another file).
fn slash_path(path: &Path) -> Option<String> {
    path.components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<Vec<_>>>()
        .map(|parts| parts.join("/"))
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
        assert_eq!(b.left_out, [".env", "ckpt/", "data/"]);
    }

    /// Shipping a repository's subdirectory: git's rules from the repository's root
    /// (its `.gitignore`, `.git/info/exclude`) apply below it; `.ignore` is not read.
    #[tokio::test]
    async fn a_repositorys_ignore_rules_apply_to_its_subdirectory() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, c: &[u8]| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        };
        w(".git/HEAD", b"ref: refs/heads/main\n");
        w(".git/info/exclude", b"*.key\n");
        w(".gitignore", b"secrets.json\n/proj/data/\n");
        w("proj/train.py", b"print(1)\n");
        w("proj/secrets.json", b"{}");
        w("proj/deploy.key", b"KEY");
        w("proj/data/x.csv", b"1,2");
        w("proj/.ignore", b"notes.txt\n");
        w("proj/notes.txt", b"shipped: git commits it");
        let proj = d.path().join("proj");
        let b = pack(&proj, &proj.join("train.py"), 1 << 20).await.unwrap();
        assert_eq!(listing(&b.archive), ["notes.txt", "train.py"]);
        assert_eq!(
            b.left_out,
            [".ignore", "data/", "deploy.key", "secrets.json"]
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

    /// whose name is not UTF-8 is refused, not renamed lossily.
    #[tokio::test]
    async fn symlinks_are_not_shipped_and_a_non_utf8_script_name_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let secret = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(secret.path(), b"hunter2").unwrap();
        std::fs::write(d.path().join("train.py"), b"pass\n").unwrap();
        std::os::unix::fs::symlink(secret.path(), d.path().join("key.txt")).unwrap();
        let b = pack(d.path(), &d.path().join("train.py"), 1 << 20)
            .await
            .unwrap();
        assert_eq!(listing(&b.archive), ["train.py"]);
        let odd = d.path().join(std::ffi::OsStr::from_bytes(b"tr\xffin.py"));
        std::fs::write(&odd, b"pass\n").unwrap();
        let e = pack(d.path(), &odd, 1 << 20).await.unwrap_err().to_string();
        assert!(e.contains("is not valid UTF-8; rename it"), "{e}");
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
            left_out: vec![],
        };
        let mut req = SpawnRequest {
            tag: "demo".into(),
            namespace: "ns".into(),
            port: 1999,
            image: None,
            roles: crate::roles::Roles::workers(1).unwrap(),
            framework: crate::framework::Framework::Tensorflow,
            templates: Templates {
                worker: crate::inputs::template::parse(
                    "t",
                    crate::inputs::template::DEFAULT_TEMPLATE.as_bytes(),
                )
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
            hardening: Default::default(),
            experiment: None,
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
        // After the wait for the cluster's names (plan/start.rs).
        assert_eq!(command[..2], ["python", "/script/wait-for-names.py"]);
        assert_eq!(command[2..5], ["python", "-c", UNPACK_AND_EXEC]);
        assert_eq!(command[5..], ["python", "/tf-spawner-work/src/train.py"]);
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
