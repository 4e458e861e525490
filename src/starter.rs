//! `tf-spawner init`: the files of a new training project, written into a directory.
//! They are files of this repository (`templates/init/`), built in, so the TensorFlow
//! suite trains them as Python too.

use std::path::{Path, PathBuf};

use crate::errors::UsageError;
use crate::framework::Framework;

/// The Keras script (`Model.fit`, `BackupAndRestore`).
pub const TRAIN: &str = include_str!("../templates/init/train.py");
/// The custom loop (`PreemptionCheckpointHandler`), with `--custom-loop`.
pub const TRAIN_CUSTOM_LOOP: &str = include_str!("../templates/init/train_custom_loop.py");
/// The project's settings (`settings/project.rs`).
pub const SETTINGS: &str = include_str!("../templates/init/tf-spawner.yaml");
/// What `--dir` leaves home (`bundle.rs`).
pub const IGNORE: &str = include_str!("../templates/init/tfspawnerignore");

/// The Keras 3 script on JAX (`keras.distribution`, `BackupAndRestore`), with
/// `--framework keras`.
pub const TRAIN_KERAS: &str = include_str!("../templates/init/train_keras.py");

/// What the settings file of a `--framework keras` project says instead of the
/// TensorFlow image's paragraph: its framework, and the image it needs.
const KERAS_SETTINGS: (&str, &str) = (
    "# The pods' image (-i). The default, tensorflow/tensorflow:2.15.0, has Keras 2 built in;\n# for TensorFlow 2.16 or later use an image with tf-keras (docs/tensorflow.md).\n# image: registry.example.org/team/tensorflow:2.21\n",
    "# train.py is Keras 3 on JAX (--framework): each worker is told the coordinator, the\n# number of workers and its own (docs/tensorflow.md, \"Frameworks\").\nframework: keras\n\n# The pods' image (-i): one with keras and jax (pip install keras jax; CPU or CUDA).\n# image: registry.example.org/team/keras-jax:3.15\n",
);

/// The project's files: each name and its text.
pub fn files(custom_loop: bool, framework: Framework) -> [(&'static str, String); 3] {
    let (train, settings) = match framework {
        Framework::Keras => (
            TRAIN_KERAS,
            SETTINGS.replacen(KERAS_SETTINGS.0, KERAS_SETTINGS.1, 1),
        ),
        _ if custom_loop => (TRAIN_CUSTOM_LOOP, SETTINGS.to_string()),
        _ => (TRAIN, SETTINGS.to_string()),
    };
    [
        ("train.py", train.to_string()),
        ("tf-spawner.yaml", settings),
        (crate::bundle::IGNORE_FILE, IGNORE.to_string()),
    ]
}

/// Writes the project's files into `dir` (made if missing). A file there already is
/// refused, naming every such file, unless `force`; nothing is written then.
pub fn write(
    dir: &Path,
    (custom_loop, framework): (bool, Framework),
    force: bool,
) -> Result<Vec<&'static str>, UsageError> {
    refuse(custom_loop, framework)?;
    let files = files(custom_loop, framework);
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

/// What `init` cannot write: a JAX project, a custom loop that is not `tf.distribute`'s.
fn refuse(custom_loop: bool, framework: Framework) -> Result<(), UsageError> {
    if framework == Framework::Jax {
        return Err(UsageError::new(
            "--framework jax: init writes a TensorFlow or a Keras 3 project (--framework keras, on JAX); a plain JAX script gets its variables from tf-spawner --framework jax (docs/tensorflow.md)",
        ));
    }
    if custom_loop && framework != Framework::Tensorflow {
        return Err(UsageError::new(format!(
            "--custom-loop is a tf.distribute loop; --framework {framework} writes its own script: leave one out"
        )));
    }
    Ok(())
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
    fn the_keras_script_initializes_first_and_its_settings_name_the_framework() {
        let script = TRAIN_KERAS;
        assert!(script.lines().count() <= 100, "{script}");
        let at = |what: &str| script.find(what).unwrap_or_else(|| panic!("{what}"));
        assert!(at("parse_args()") < at("import keras"));
        assert!(at("KERAS_BACKEND") < at("import keras"));
        assert!(at("keras.distribution.initialize()") < at("def dataset"));
        assert!(at("keras.distribution.initialize()") < at("signal.signal(signal.SIGTERM"));
        assert!(at("def dataset") < at("keras.Sequential"));
        for needle in [
            "auto_shard_dataset=False",
            "BackupAndRestore",
            "TF_SPAWNER_OUTPUT_DIR",
        ] {
            assert!(script.contains(needle), "{needle}");
        }
        let [(_, train), (_, settings), _] = files(false, Framework::Keras);
        assert_eq!(train, TRAIN_KERAS);
        let file = crate::settings::defaults::parse(
            &settings,
            Path::new("/p/tf-spawner.yaml"),
            crate::settings::table::KEYS,
        )
        .expect("the keras settings parse");
        assert!(settings.contains("\nframework: keras\n"), "{settings}");
        assert_eq!(file.values.len(), 3, "{:?}", file.values);
        assert!(!settings.contains("tf-keras"), "{settings}");
    }

    #[test]
    fn init_refuses_jax_and_a_custom_loop_for_keras_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        for (asked, needle) in [
            (
                (false, Framework::Jax),
                "--framework jax: init writes a TensorFlow or a Keras 3 project",
            ),
            (
                (true, Framework::Keras),
                "--custom-loop is a tf.distribute loop; --framework keras writes its own script: leave one out",
            ),
        ] {
            let e = write(&project, asked, false).unwrap_err().to_string();
            assert!(e.starts_with(needle), "{e}");
            assert!(!project.exists(), "{asked:?}: nothing is made");
        }
        assert_eq!(
            write(&project, (false, Framework::Keras), false).unwrap(),
            ["train.py", "tf-spawner.yaml", crate::bundle::IGNORE_FILE]
        );
        let train = std::fs::read_to_string(project.join("train.py")).unwrap();
        assert_eq!(train, TRAIN_KERAS);
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
