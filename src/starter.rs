//! `tf-spawner init`: the files of a new training project, written into a directory.
//! They are files of this repository (`templates/init/`), built in, so the TensorFlow
//! suite trains them as Python too.

use std::path::{Path, PathBuf};

use crate::errors::UsageError;

/// The Keras script (`Model.fit`, `BackupAndRestore`).
pub const TRAIN: &str = include_str!("../templates/init/train.py");
/// The custom loop (`PreemptionCheckpointHandler`), with `--custom-loop`.
pub const TRAIN_CUSTOM_LOOP: &str = include_str!("../templates/init/train_custom_loop.py");
/// The project's settings (`settings/project.rs`).
pub const SETTINGS: &str = include_str!("../templates/init/tf-spawner.yaml");
/// What `--dir` leaves home (`bundle.rs`).
pub const IGNORE: &str = include_str!("../templates/init/tfspawnerignore");

/// The project's files: each name and its text.
pub fn files(custom_loop: bool) -> [(&'static str, &'static str); 3] {
    let train = if custom_loop {
        TRAIN_CUSTOM_LOOP
    } else {
        TRAIN
    };
    [
        ("train.py", train),
        ("tf-spawner.yaml", SETTINGS),
        (crate::bundle::IGNORE_FILE, IGNORE),
    ]
}

/// Writes the project's files into `dir` (made if missing). A file there already is
/// refused, naming every such file, unless `force`; nothing is written then.
pub fn write(dir: &Path, custom_loop: bool, force: bool) -> Result<Vec<&'static str>, UsageError> {
    let files = files(custom_loop);
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError::new(format!(
            "{} is a file, not a directory: name a directory for the project",
            dir.display()
        )));
    }
    let existing: Vec<&str> = files
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| dir.join(name).symlink_metadata().is_ok())
        .collect();
    if !force && !existing.is_empty() {
        let paths: Vec<String> = existing
            .iter()
            .map(|n| dir.join(n).display().to_string())
            .collect();
        let (verb, them) = if existing.len() == 1 {
            ("exists", "it")
        } else {
            ("exist", "them")
        };
        return Err(UsageError::new(format!(
            "{} {verb}: tf-spawner init leaves {them} alone (--force overwrites {them})",
            paths.join(", ")
        )));
    }
    let made = !dir.exists();
    let mut written: Vec<PathBuf> = Vec::new();
    let result = std::fs::create_dir_all(dir).and_then(|()| {
        files.iter().try_for_each(|(name, text)| {
            let path = dir.join(name);
            replace(dir, name, text)?;
            written.push(path);
            Ok(())
        })
    });
    if let Err(e) = result {
        // Nothing half-made: what this call wrote goes (a file it overwrote is lost).
        for path in &written {
            let _ = std::fs::remove_file(path);
        }
        if made {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(UsageError::new(format!(
            "cannot write the project into {}: {e}",
            dir.display()
        )));
    }
    Ok(files.iter().map(|(name, _)| *name).collect())
}

/// Writes `text` as `dir/name` without following what is there: a new file (made, never
/// opened through a link) renamed over it, so `--force` replaces a symlink
/// (`train.py -> ~/.bashrc`) rather than writing into its target.
fn replace(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let temp = dir.join(format!(".{name}.tf-spawner-init"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| std::fs::rename(&temp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_are_short_and_set_up_tensorflow_in_order() {
        for script in [TRAIN, TRAIN_CUSTOM_LOOP] {
            // A page or two: the custom loop is 106 lines with its arguments read.
            assert!(script.lines().count() <= 110, "{script}");
            let at = |what: &str| script.find(what).unwrap_or_else(|| panic!("{what}"));
            assert!(at("parse_args()") < at("import tensorflow"));
            assert!(at("TF_USE_LEGACY_KERAS") < at("import tensorflow"));
            assert!(at("import tensorflow") < at("MultiWorkerMirroredStrategy()"));
            assert!(at("MultiWorkerMirroredStrategy()") < at("def dataset"));
            assert!(script.contains("AutoShardPolicy.DATA"));
            assert!(script.contains("TF_SPAWNER_OUTPUT_DIR"));
        }
        assert!(TRAIN.contains("BackupAndRestore") && TRAIN.contains("signal.SIGTERM"));
        assert!(TRAIN_CUSTOM_LOOP.contains("PreemptionCheckpointHandler"));
        assert!(TRAIN_CUSTOM_LOOP.contains("tf-spawner: epoch="));
    }

    #[test]
    fn the_settings_file_has_only_known_keys() {
        let keys = crate::settings::table::KEYS;
        let file =
            crate::settings::defaults::parse(SETTINGS, Path::new("/p/tf-spawner.yaml"), keys)
                .expect("the template parses");
        assert_eq!(file.values.len(), 2, "{:?}", file.values);
        // Each commented-out key is a key too, once uncommented.
        let key_line = |l: &str| {
            l.split_once(": ")
                .is_some_and(|(k, _)| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        };
        let uncommented: String = SETTINGS
            .lines()
            .map(|l| l.strip_prefix("# ").filter(|l| key_line(l)).unwrap_or(l))
            .map(|l| format!("{l}\n"))
            .collect();
        let all =
            crate::settings::defaults::parse(&uncommented, Path::new("/p/tf-spawner.yaml"), keys)
                .expect("uncommented, the template parses");
        assert!(all.values.len() >= 9, "{:?}", all.values);
    }
}
