//! What the TF container runs before the script, each step a small program that then
//! `exec`s the next: the wait for every task's name in DNS (`wait_for_names.rs`, a file
//! of the run's ConfigMap), with `--volume` the run's folder made, with `--dir` the directory
//! unpacked; then the script (`python`) or the entrypoint (`bash`). An entrypoint's steps
//! are in bash: its image may have no python.

use super::config_map::{ENTRYPOINT_KEY, SCRIPT_KEY};
use super::mounts::SCRIPT_DIR;
use super::request::SpawnRequest;
use super::wait_for_names;
use crate::bundle::{UNPACK_AND_EXEC, WORK_DIR};

/// `python -c` of this, then the command: the run's folder made, then the command run
/// (`exec`). The folder is made by the task itself, as the run's user (`--run-as-user`),
/// so the task may write in it: a `subPath` mount's folder would be made by the kubelet,
/// as root, with the mode of the claim's root (`kubelet_pods.go::makeMounts`).
const MAKE_OUTPUT_DIR_PY: &str = "import os, sys; os.makedirs(os.environ['TF_SPAWNER_OUTPUT_DIR'], exist_ok=True); os.execvp(sys.argv[1], sys.argv[1:])";

/// The same in bash, for an entrypoint (its image may have no python).
const MAKE_OUTPUT_DIR_SH: &str = "mkdir -p -- \"$TF_SPAWNER_OUTPUT_DIR\" && exec \"$@\"";

/// The TF container's command (the arguments after `--` are its `args`), every step.
pub(super) fn tf_command(req: &SpawnRequest) -> Vec<String> {
    let interpreter = if req.entrypoint.is_some() {
        "bash"
    } else {
        "python"
    };
    let (key, _) = wait_for_names::file(req);
    let mut command = vec![interpreter.to_string(), format!("{SCRIPT_DIR}/{key}")];
    if req.volume.is_some() {
        command.extend(
            match req.entrypoint {
                Some(_) => ["bash", "-c", MAKE_OUTPUT_DIR_SH, "tf-spawner"].as_slice(),
                None => ["python", "-c", MAKE_OUTPUT_DIR_PY].as_slice(),
            }
            .iter()
            .map(|w| w.to_string()),
        );
    }
    command.extend(run(req));
    command
}

/// The script, or the entrypoint; with `--dir`, the script inside the unpacked
/// directory, after the unpacking.
fn run(req: &SpawnRequest) -> Vec<String> {
    let run = match (&req.entrypoint, &req.bundle) {
        (Some(_), _) => vec!["bash".into(), format!("{SCRIPT_DIR}/{ENTRYPOINT_KEY}")],
        (None, Some(b)) => vec!["python".into(), format!("{WORK_DIR}/{}", b.script)],
        (None, None) => vec!["python".into(), format!("{SCRIPT_DIR}/{SCRIPT_KEY}")],
    };
    if req.bundle.is_none() {
        return run;
    }
    let mut command = vec!["python".into(), "-c".into(), UNPACK_AND_EXEC.into()];
    command.extend(run);
    command
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
