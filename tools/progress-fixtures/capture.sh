#!/usr/bin/env bash
# Captures the Keras output that src/trainlog's tests parse: fit.py (2 epochs of 5 steps)
# under tf-keras (TF_USE_LEGACY_KERAS=1) and Keras 3 (TensorFlow's own, the variable unset),
# with verbose "auto" into a pipe and under a pseudo-terminal (script -qec), and with
# verbose=2 into a pipe (the examples' form). Usage: capture.sh PYTHON [OUT_DIR]
# PYTHON: the pinned venv's python (tools/tensorflow/setup.sh; CI's $TF_PYTHON).
set -euo pipefail
py=${1:?usage: capture.sh PYTHON [OUT_DIR]}
out=${2:-$(dirname "$0")/../../src/trainlog/fixtures}
fit=$(cd "$(dirname "$0")" && pwd)/fit.py
export TF_CPP_MIN_LOG_LEVEL=3
version() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
tfk=tf-keras-$(version tf_keras | cut -d. -f1-2)
k3=keras-$(version keras | cut -d. -f1)
for legacy in 1 0; do
  name=$([ $legacy = 1 ] && echo "$tfk" || echo "$k3")
  run() { if [ $legacy = 1 ]; then TF_USE_LEGACY_KERAS=1 "$@"; else env -u TF_USE_LEGACY_KERAS "$@"; fi; }
  run "$py" "$fit" auto > "$out/$name-pipe.txt" 2>/dev/null
  run env COLUMNS=80 LINES=24 script -qec "'$py' '$fit' auto" /dev/null > "$out/$name-pty.txt" 2>/dev/null < /dev/null
  run "$py" "$fit" 2 > "$out/$name-verbose2.txt" 2>/dev/null
done
ls -l "$out"
