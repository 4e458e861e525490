//! What the TF container runs before the script, each step a small program that then
//! `exec`s the next: the wait for every task's name in DNS (a file of the run's
//! ConfigMap), with `--volume` the run's folder made, with `--dir` the directory
//! unpacked; then the script (`python`) or the entrypoint (`bash`). An entrypoint's steps
//! are in bash: its image may have no python.

use super::config_map::{ENTRYPOINT_KEY, SCRIPT_KEY};
use super::mounts::SCRIPT_DIR;
use super::request::SpawnRequest;
use crate::bundle::{UNPACK_AND_EXEC, WORK_DIR};

/// The ConfigMap's key (so the file in `/script`) of the wait for the names, in python
/// and, for an entrypoint, in bash.
pub const WAIT_FOR_NAMES_KEYS: [&str; 2] = ["wait-for-names.py", "wait-for-names.sh"];

/// `python` of this, then the command: waits until every name of the cluster
/// (`TF_SPAWNER_CLUSTER`, the tasks' Services) resolves, at most `TF_SPAWNER_WAIT_FOR_NAMES`
/// seconds (300 by default), then runs the command (`exec`). A task's Service answers
/// only once its pod has an address, and the endpoints controller and the cluster's DNS
/// publish it a moment later: a TensorFlow task that looks up a peer (or itself) before
/// then gets "Name or service not known" or "Temporary failure in name resolution", and
/// its collectives abort the run (kubeflow/trainer#1458 meets the same with TFJob).
/// Once each name has resolved, it stays: the Services publish not-ready addresses.
/// It says what it waits for after 10 s, then each minute; at the bound it says so and
/// runs the command anyway, which then meets TensorFlow's own errors. A lookup takes
/// what the resolver takes (a slow one, seconds): each line says the seconds waited.
const WAIT_FOR_NAMES_PY: &str = "import json, os, socket, sys, time
def say(line): print('tf-spawner: ' + line, file=sys.stderr, flush=True)
def known(name):
    try: return bool(socket.getaddrinfo(name, None))
    except Exception: return False
names = sorted({a.rsplit(':', 1)[0] for t in json.loads(os.environ['TF_SPAWNER_CLUSTER']).values() for a in t})
limit, start, told = float(os.environ.get('TF_SPAWNER_WAIT_FOR_NAMES') or 300), time.monotonic(), 10
while limit > 0:
    names = [n for n in names if not known(n)]
    waited = time.monotonic() - start
    if not names: break
    if waited >= told:
        say(f'waiting {waited:.0f} s so far for DNS to find {\" \".join(names)}'); told += 60
    if waited >= limit:
        say(f'{\" \".join(names)} not found in DNS after {waited:.0f} s; starting anyway'); break
    time.sleep(0.5)
os.execvp(sys.argv[1], sys.argv[1:])
";

/// [`WAIT_FOR_NAMES_PY`] in bash, for an entrypoint, with `getent ahosts` (glibc's
/// `getaddrinfo`, as TensorFlow's); an image without `getent` does not wait.
const WAIT_FOR_NAMES_SH: &str = r#"names=() rest=$TF_SPAWNER_CLUSTER
while [[ $rest =~ \"([^\"]+):[0-9]+\" ]]; do names+=("${BASH_REMATCH[1]}"); rest=${rest#*"${BASH_REMATCH[0]}"}; done
limit=${TF_SPAWNER_WAIT_FOR_NAMES:-300} told=10
command -v getent >/dev/null || limit=0
while ((limit > 0 && ${#names[@]})); do
  left=(); for n in "${names[@]}"; do getent ahosts "$n" >/dev/null 2>&1 || left+=("$n"); done
  names=("${left[@]}")
  ((${#names[@]})) || break
  if ((SECONDS >= told)); then echo "tf-spawner: waiting $SECONDS s so far for DNS to find ${names[*]}" >&2; told=$((told + 60)); fi
  if ((SECONDS >= limit)); then echo "tf-spawner: ${names[*]} not found in DNS after $SECONDS s; starting anyway" >&2; break; fi
  sleep 1
done
exec "$@"
"#;

/// `python -c` of this, then the command: the run's folder made, then the command run
/// (`exec`). The folder is made by the task itself, as the run's user (`--run-as-user`),
/// so the task may write in it: a `subPath` mount's folder would be made by the kubelet,
/// as root, with the mode of the claim's root (`kubelet_pods.go::makeMounts`).
const MAKE_OUTPUT_DIR_PY: &str = "import os, sys; os.makedirs(os.environ['TF_SPAWNER_OUTPUT_DIR'], exist_ok=True); os.execvp(sys.argv[1], sys.argv[1:])";

/// The same in bash, for an entrypoint (its image may have no python).
const MAKE_OUTPUT_DIR_SH: &str = "mkdir -p -- \"$TF_SPAWNER_OUTPUT_DIR\" && exec \"$@\"";

/// The wait for the names, as the ConfigMap's file the task runs: `(key, text)`.
pub(super) fn wait_for_names_file(req: &SpawnRequest) -> (&'static str, &'static str) {
    match req.entrypoint {
        Some(_) => (WAIT_FOR_NAMES_KEYS[1], WAIT_FOR_NAMES_SH),
        None => (WAIT_FOR_NAMES_KEYS[0], WAIT_FOR_NAMES_PY),
    }
}

/// The TF container's command (the arguments after `--` are its `args`), every step.
pub(super) fn tf_command(req: &SpawnRequest) -> Vec<String> {
    let interpreter = if req.entrypoint.is_some() {
        "bash"
    } else {
        "python"
    };
    let (key, _) = wait_for_names_file(req);
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
