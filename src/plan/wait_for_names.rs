//! The wait for every name of the run's cluster in DNS, before the script: a file of
//! the run's ConfigMap (in `/script`), in python, or in bash for an entrypoint (its image
//! may have no python); `start.rs` puts it first in the command.

use super::request::SpawnRequest;

/// The ConfigMap's key (so the file in `/script`) of the wait for the names, in python
/// and, for an entrypoint, in bash.
pub const KEYS: [&str; 2] = ["wait-for-names.py", "wait-for-names.sh"];

/// `python` of this, then the command: waits until every name of the cluster
/// (`TF_SPAWNER_CLUSTER`, the tasks' Services) resolves, at most `TF_SPAWNER_WAIT_FOR_NAMES`
/// seconds (none by default: opt in, see below), then runs the command (`exec`). A task's Service answers
/// only once its pod has an address, and the endpoints controller and the cluster's DNS
/// publish it a moment later: a TensorFlow task that looks up a peer (or itself) before
/// then gets "Name or service not known" or "Temporary failure in name resolution", and
/// its collectives abort the run (kubeflow/trainer#1458 meets the same with TFJob).
/// Once each name has resolved, it stays: the Services publish not-ready addresses.
/// It says what it waits for after 10 s, then each minute; at the bound it says so and
/// runs the command anyway, which then meets TensorFlow's own errors. Nothing here stops
/// the command: a cluster it cannot read is not waited for, a bound that is not a number
/// is none (said once). A lookup takes what the resolver takes (a slow one, seconds):
/// each line says the seconds waited.
///
/// Off unless `TF_SPAWNER_WAIT_FOR_NAMES` is set: in this project's CI the one-node
/// cluster's DNS stalled for 40 s under disk load, and every task then waited for it (a
/// run's first seconds are also its --deadline's); the default goes on once that is
/// understood on clusters people have (the session note of 2026-12-05).
pub(super) const PY: &str = "import json, os, socket, sys, time
def say(line): print('tf-spawner: ' + line, file=sys.stderr, flush=True)
def known(name):
    try: return bool(socket.getaddrinfo(name, None))
    except Exception: return False
try: names = sorted({a.rsplit(':', 1)[0] for t in json.loads(os.environ['TF_SPAWNER_CLUSTER']).values() for a in t})
except Exception: names = []
try: limit = float(os.environ.get('TF_SPAWNER_WAIT_FOR_NAMES') or 0)
except ValueError:
    say('TF_SPAWNER_WAIT_FOR_NAMES is not a number of seconds; not waiting'); limit = 0
start, told = time.monotonic(), 10
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

/// [`PY`] in bash, for an entrypoint, with `getent ahosts` (glibc's
/// `getaddrinfo`, as TensorFlow's); an image without `getent` does not wait.
pub(super) const SH: &str = r#"names=() rest=$TF_SPAWNER_CLUSTER
while [[ $rest =~ \"([^\"]+):[0-9]+\" ]]; do names+=("${BASH_REMATCH[1]}"); rest=${rest#*"${BASH_REMATCH[0]}"}; done
limit=${TF_SPAWNER_WAIT_FOR_NAMES:-0} told=10
[[ $limit =~ ^[0-9]+$ ]] || { echo "tf-spawner: TF_SPAWNER_WAIT_FOR_NAMES is not a whole number of seconds; not waiting" >&2; limit=0; }
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

/// The wait for the names, as the ConfigMap's file the task runs: `(key, text)`.
pub(super) fn file(req: &SpawnRequest) -> (&'static str, &'static str) {
    match req.entrypoint {
        Some(_) => (KEYS[1], SH),
        None => (KEYS[0], PY),
    }
}
