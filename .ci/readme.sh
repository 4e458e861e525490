#!/bin/bash
# readme.sh KUBECONFIG - the README's "Quick start" and "From CI" run as written: every fenced
# sh block of those two sections, extracted from README.md and run unchanged (bash -euo
# pipefail, in order, in a scratch directory), with the freshly built tf-spawner first on PATH.
#
# What the README leaves to the reader's machine and cluster is given here the way a reader
# gives it, never by editing the text:
#   - `train.py` (the reader's script) imports the project's own helpers.py and takes --epochs
#     (it runs examples/wiring_check.py, copied beside it), a .gitignore keeps the scratch
#     files home, and examples/ is a copy of the repository's;
#   - step 2's pip installs from the wheels tools/tensorflow/setup.sh keeps
#     (PIP_FIND_LINKS=that directory, PIP_NO_INDEX=1: the same pinned files PyPI serves, without
#     downloading 280 MB each run); README_PIP_INDEX=1 lets pip use PyPI instead;
#   - step 2's `tf-spawner init exp` writes a project whose train.py needs no download
#     (synthetic data); its tf-spawner.yaml is in exp/, so the later blocks (run in the
#     scratch directory above it) do not read it;
#   - step 3 and "From CI" run on the cluster of KUBECONFIG (the one-node v1.36 cluster) in a
#     namespace of their own, through a defaults file (TF_SPAWNER_CONFIG) naming it and the
#     one-node pod template (tools/one-node/pod-tensorflow.yaml: the TensorFlow image built
#     there, never pulled, and small requests), as a researcher's config.yaml names their
#     cluster's image and template.
# Then it checks what the README promises: step 2's train.py trained and saved its model, exp42 succeeded and was deleted, the CI run saved
# its 4 logs and its verdict document, and left nothing behind; then "From CI" again, cancelled as
# GitHub Actions and GitLab cancel a job (logs, a Cancelled verdict, nothing left, before the
# SIGKILL), and with its script missing (the spawn's exit code 2 and its error line). Prints each
# block's time and the total.
#
# Environment: TF_SPAWNER_TENSORFLOW (the TensorFlow cache, default ~/.cache/tf-spawner-tensorflow),
# README_PIP_INDEX=1 (pip from PyPI), README_KEEP=1 (keep the scratch directory).
set -euo pipefail

KUBECONFIG_FILE=${1:?usage: readme.sh KUBECONFIG}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBECTL=$(dirname "$KUBECONFIG_FILE")/bin/kubectl
[ -x "$KUBECTL" ] || KUBECTL=kubectl
TF_CACHE=${TF_SPAWNER_TENSORFLOW:-$HOME/.cache/tf-spawner-tensorflow}
NAMESPACE=tf-spawner-readme
START=$SECONDS

log() { echo "[readme +$((SECONDS - START))s] $*"; }
die() { echo "[readme] ERROR: $*" >&2; exit 1; }

cd "$ROOT"
cargo build --quiet --bin tf-spawner
BIN_DIR=$ROOT/target/debug
WORK=$(mktemp -d /tmp/tf-spawner-readme.XXXXXX)
cleanup() {
  env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" delete namespace "$NAMESPACE" \
    --ignore-not-found --wait=false >/dev/null 2>&1 || true
  [ -n "${README_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

# The blocks: ```sh ... ``` inside "## Quick start" and "## From CI", in order.
python3 - "$ROOT/README.md" "$WORK" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
blocks = []
for section in ("Quick start", "From CI"):
    m = re.search(r"^## " + re.escape(section) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        sys.exit("README.md has no section '## %s'" % section)
    found = re.findall(r"^```sh\n(.*?)^```", m.group(1), re.M | re.S)
    if not found:
        sys.exit("README.md's '%s' has no sh block" % section)
    blocks += [(section, b) for b in found]
for i, (section, body) in enumerate(blocks, 1):
    with open("%s/block-%d.sh" % (sys.argv[2], i), "w") as f:
        f.write("# README.md, %s\n%s" % (section, body))
print(len(blocks))
EOF
BLOCKS=$(ls "$WORK"/block-*.sh | wc -l)
[ "$BLOCKS" -eq 4 ] || die "expected 4 sh blocks (quick start 1-3, from CI), found $BLOCKS; update this script with the README"

cp -r "$ROOT/examples" "$WORK/examples"
# The reader's project: train.py, which imports its own helpers.py and takes --epochs, and a
# .gitignore keeping data, logs and the copied examples home (a hidden .venv is never shipped).
cp "$ROOT/examples/wiring_check.py" "$WORK/wiring_check.py"
cat >"$WORK/helpers.py" <<'EOF'
"""The project's own module: train.py imports it (shipped by --dir)."""
import os
import runpy


def wiring_check():
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wiring_check.py"),
                   run_name="__main__")
EOF
cat >"$WORK/train.py" <<'EOF'
"""The README's train.py: a two-file project that takes --epochs."""
import argparse

import helpers

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
print("train.py: %d epochs, with the project's helpers.py" % args.epochs, flush=True)
helpers.wiring_check()
EOF
printf 'examples/\nexp/\n*.npz\n*.log\nlogs/\nblock-*.sh\nconfig.yaml\n' >"$WORK/.gitignore"

# Step 2's pip: the cached wheels, unless asked for PyPI.
if [ -z "${README_PIP_INDEX:-}" ] && [ -d "$TF_CACHE/wheels" ]; then
  export PIP_FIND_LINKS=$TF_CACHE/wheels PIP_NO_INDEX=1
  log "pip: from $PIP_FIND_LINKS (README_PIP_INDEX=1: from PyPI)"
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The cluster: its own namespace, named with the pod template in a defaults file.
env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" delete namespace "$NAMESPACE" --ignore-not-found --wait=true >/dev/null
env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" create namespace "$NAMESPACE" >/dev/null
cat >"$WORK/config.yaml" <<EOF
namespace: $NAMESPACE
pod_file: $ROOT/tools/one-node/pod-tensorflow.yaml
EOF
export KUBECONFIG=$KUBECONFIG_FILE TF_SPAWNER_CONFIG=$WORK/config.yaml
export PATH=$BIN_DIR:$PATH
[ "$(command -v tf-spawner)" = "$BIN_DIR/tf-spawner" ] || die "tf-spawner on PATH is $(command -v tf-spawner)"

cd "$WORK"
TIMES=()
for ((i = 1; i <= BLOCKS; i++)); do
  echo
  log "block $i of $BLOCKS, as written in README.md:"
  sed 's/^/    /' "block-$i.sh"
  began=$SECONDS
  if ! bash -euo pipefail "block-$i.sh" </dev/null >"block-$i.log" 2>&1; then
    tail -n 40 "block-$i.log" >&2
    die "README block $i failed (its output: above)"
  fi
  tail -n 12 "block-$i.log" | sed 's/^/    | /'
  TIMES+=("block $i: $((SECONDS - began)) s")
done

# What the README says happened.
grep -q "agrees on" block-1.log || die "block 1: no task said the cluster agrees"
grep -q "run tf-spawner (local): Succeeded" block-2.log || die "block 2: init's train.py did not succeed"
[ -f exp/tf-spawner-output/tf-spawner/model/model.keras ] || die "block 2: no model saved in exp/"
grep -q "run exp42: Succeeded" block-3.log || die "block 3: exp42 did not succeed"
grep -Eq "^exp42-worker-3 +worker-3 +Succeeded" block-3.log || die "block 3: status did not show worker-3 Succeeded"
[ "$(grep -c "train.py: 3 epochs, with the project's helpers.py" block-3.log)" -eq 4 ] ||
  die "block 3: not every task's train.py imported helpers.py and got --epochs 3"
[ "$(ls logs/*.log | wc -l)" -eq 4 ] || die "From CI: expected 4 logs in logs/, found: $(ls logs)"
grep -q '"verdict": "Succeeded"' verdict.json || die "From CI: verdict.json says no success: $(cat verdict.json)"

# --cleanup deletes the run; its pods may still be in their grace period.
objects_left() {
  env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" wait --for=delete \
    pods -l training_attempt --timeout=120s >/dev/null 2>&1 || true
  env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" \
    get pods,services,configmaps,secrets -l training_attempt -o name
}

left=$(objects_left)
[ -z "$left" ] || die "left behind in $NAMESPACE: $left"

# "From CI" cancelled as the runners cancel a job: the block again, unchanged, in a directory
# whose train.py trains until stopped; once every task says so, the runner's signals go to the
# block's shell (its pid; `exec` made it tf-spawner wait) at their times, SIGKILL last. The job must
# end before the SIGKILL, with the logs saved, the run deleted and verdict.json's verdict
# `Cancelled` with the exit code, 130 or 143.
# cancelled NAME EXIT SIGNAL@SECONDS...
cancelled() {
  local name=$1 expect=$2
  shift 2
  local dir=$WORK/$name
  mkdir -p "$dir"
  cp block-4.sh "$dir/"
  printf 'import time\nprint("train.py: training until stopped", flush=True)\nwhile True:\n    time.sleep(1)\n' >"$dir/train.py"
  (cd "$dir" && exec bash -euo pipefail block-4.sh </dev/null >block.log 2>&1) &
  local pid=$! began=$SECONDS training=0
  while [ "$training" -lt 4 ]; do
    [ $((SECONDS - began)) -lt 300 ] || { tail -n 20 "$dir/block.log" >&2; die "$name: the tasks did not train within 300 s"; }
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$dir/block.log" >&2; die "$name: the job ended before its cancel"; }
    sleep 1
    training=$(env -u KUBECONFIG "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" logs \
      -l training_attempt --tail=20 --max-log-requests=8 2>/dev/null | grep -c "training until stopped" || true)
  done
  local at=0 step signal when
  for step in "$@"; do
    signal=${step%@*} when=${step#*@}
    python3 -c "import time; time.sleep($when - $at)"
    at=$when
    kill -0 "$pid" 2>/dev/null || break
    log "$name: SIG$signal to the job's shell at +${when}s"
    kill -"$signal" "$pid"
  done
  local code=0
  wait "$pid" || code=$?
  tail -n 6 "$dir/block.log" | sed 's/^/    | /'
  [ "$code" -eq "$expect" ] || die "$name: the job exited $code, not $expect (137: killed before it was done)"
  [ "$(ls "$dir"/logs/*.log 2>/dev/null | wc -l)" -eq 4 ] || die "$name: expected 4 logs in logs/, found: $(ls "$dir/logs" 2>&1)"
  python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); sys.exit(v.get("exit_code") != int(sys.argv[2]) or v.get("verdict") != "Cancelled")' \
    "$dir/verdict.json" "$expect" || die "$name: verdict.json does not say the job was cancelled: $(cat "$dir/verdict.json")"
  left=$(objects_left)
  [ -z "$left" ] || die "$name: left behind in $NAMESPACE: $left"
  log "$name: exit $code, 4 logs, verdict.json: Cancelled ($(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["reason"])' "$dir/verdict.json")), nothing left"
}
# GitHub Actions: SIGINT to the shell, SIGTERM 7.5 s later, SIGKILL at 10 s. GitLab: SIGTERM,
# then SIGKILL (its runner waits a grace period; 10 s here).
cancelled cancel-github 130 INT@0 TERM@7.5 KILL@10
cancelled cancel-gitlab 143 TERM@0 KILL@10

# A spawn that fails: the job ends with the spawn's own code and its one error line, and
# nothing is made.
mkdir -p "$WORK/no-script"
cp block-4.sh "$WORK/no-script/"
code=0
(cd "$WORK/no-script" && bash -euo pipefail block-4.sh </dev/null >block.log 2>&1) || code=$?
[ "$code" -eq 2 ] || die "a spawn without its script: the job exited $code, not 2: $(cat "$WORK/no-script/block.log")"
grep -q "^error: cannot read training script train.py" "$WORK/no-script/block.log" ||
  die "a spawn without its script: no error line: $(cat "$WORK/no-script/block.log")"
left=$(objects_left)
[ -z "$left" ] || die "a spawn without its script: left behind in $NAMESPACE: $left"
log "a spawn without its script: exit 2, $(head -n 1 "$WORK/no-script/block.log")"

echo
log "README quick start and From CI ran as written, cancelled as GitHub and GitLab cancel: ${TIMES[*]}; total $((SECONDS - START)) s"
