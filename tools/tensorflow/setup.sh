#!/bin/bash
# setup.sh - a virtualenv with the pinned TensorFlow (requirements.txt: tensorflow-cpu,
# tensorboard, jax for Keras 3 on JAX, and what they need; requirements-no-deps.txt: tf-keras, with --no-deps), made once and
# cached; the wheels are kept beside it (WHEELS below) for tools/one-node/tensorflow-image.sh.
#
#   python=$(bash tools/tensorflow/setup.sh | tail -1)
#   tf-spawner --local -w 2 --python "$python" examples/mnist.py
#
# Idempotent: a venv whose stamp (the pins' hash and the interpreter's version) matches is
# kept as it is, without network. Otherwise the wheels are downloaded from PyPI into WHEELS
# (files already there are not downloaded again), the venv is made anew and installed from
# WHEELS only, and `import tensorflow` (with TF_USE_LEGACY_KERAS=1) and the venv's `tensorboard`
# command are checked. `tensorboard --local` finds that command with the venv's bin/ on PATH.
# Progress and times on stderr; the venv's python on stdout (last line).
# Environment:
#   TF_SPAWNER_TENSORFLOW         cache directory (default ~/.cache/tf-spawner-tensorflow): venv/,
#                                 wheels/; cache it between CI runs (about 1.3 GB)
#   TF_SPAWNER_TENSORFLOW_PYTHON  the interpreter the venv is made from (default python3; the
#                                 pins are for CPython 3.11, the image's Python)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${TF_SPAWNER_TENSORFLOW:-${HOME:?}/.cache/tf-spawner-tensorflow}
BASE_PYTHON=${TF_SPAWNER_TENSORFLOW_PYTHON:-python3}
REQUIREMENTS=$HERE/requirements.txt
NO_DEPS=$HERE/requirements-no-deps.txt
START=$SECONDS

log() { echo "[tensorflow setup +$((SECONDS - START))s] $*" >&2; }
die() { echo "[tensorflow setup] ERROR: $*" >&2; exit 1; }

command -v "$BASE_PYTHON" >/dev/null || die "$BASE_PYTHON not found (set TF_SPAWNER_TENSORFLOW_PYTHON)"
mkdir -p "$CACHE/wheels"
CACHE=$(cd "$CACHE" && pwd)
VENV=$CACHE/venv
WHEELS=$CACHE/wheels

version=$("$BASE_PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
stamp="$(cat "$REQUIREMENTS" "$NO_DEPS" | sha256sum | cut -d' ' -f1) python $version"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/tf-spawner-stamp" 2>/dev/null)" = "$stamp" ]; then
  log "cached: $VENV ($stamp)"
  echo "$VENV/bin/python"
  exit 0
fi
case $version in 3.11.*) ;; *) log "warning: Python $version; the pins were made for 3.11" ;; esac

log "new venv $VENV from $BASE_PYTHON ($version)"
rm -rf "$VENV"
"$BASE_PYTHON" -m venv "$VENV" || die "$BASE_PYTHON -m venv failed (Debian: apt-get install python3-venv)"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@"; }

# Every pin is listed, so nothing is resolved online: --no-deps for the download. No pip cache
# (the wheels are kept in WHEELS instead: one copy of 270 MB, not two). Wheels only.
log "pip download into $WHEELS (what is already there is reused; log: $CACHE/download.log)"
if ! pip download --no-cache-dir --only-binary=:all: --no-deps -d "$WHEELS" \
    -r "$REQUIREMENTS" -r "$NO_DEPS" >"$CACHE/download.log" 2>&1; then
  tail -20 "$CACHE/download.log" >&2
  die "pip download failed; see $CACHE/download.log"
fi
log "wheels: $(grep -c '^  Downloading ' "$CACHE/download.log" || true) downloaded, $(grep -c '^  File was already downloaded' "$CACHE/download.log" || true) already there; $(du -sh "$WHEELS" | cut -f1) in $WHEELS"

# Offline from here: the install resolves tensorflow-cpu's dependencies against WHEELS, so an
# incomplete requirements.txt fails here rather than fetching something unpinned.
log "pip install --no-index from $WHEELS (log: $CACHE/install.log)"
if ! { pip install --no-cache-dir --no-index --find-links "$WHEELS" -r "$REQUIREMENTS" &&
       pip install --no-cache-dir --no-index --find-links "$WHEELS" --no-deps -r "$NO_DEPS"; } \
    >"$CACHE/install.log" 2>&1; then
  tail -20 "$CACHE/install.log" >&2
  die "pip install failed; see $CACHE/install.log"
fi

log "checking: import tensorflow with TF_USE_LEGACY_KERAS=1, tensorboard (log: $CACHE/check.log)"
if ! check=$(TF_USE_LEGACY_KERAS=1 "$VENV/bin/python" -c '
import tensorflow as tf, tf_keras, tensorboard
print("tensorflow %s, tf.keras from %s (tf_keras %s), tensorboard %s"
      % (tf.__version__, tf.keras.Sequential.__module__.split(".")[0], tf_keras.__version__,
         tensorboard.__version__))
' 2>"$CACHE/check.log") || ! "$VENV/bin/tensorboard" --version_tb >>"$CACHE/check.log" 2>&1; then
  tail -20 "$CACHE/check.log" >&2
  die "import tensorflow or the tensorboard command failed in $VENV; see $CACHE/check.log"
fi
log "$check"
case $check in *"tf.keras from tf_keras "*"tensorboard "*) ;; *) die "tf.keras is not tf_keras with TF_USE_LEGACY_KERAS=1: $check" ;; esac

echo "$stamp" >"$VENV/tf-spawner-stamp"
log "ready: $VENV ($(du -sh "$VENV" | cut -f1))"
echo "$VENV/bin/python"
