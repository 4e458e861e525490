#!/bin/bash
# tensorflow-image.sh - build (once) the image tf-spawner.local/tensorflow:2.21 for the one-node
# cluster, without a registry: the Python image setup.sh made (Debian 12, python3.11) plus one
# layer holding the pinned wheels of tools/tensorflow (tensorflow-cpu, tensorboard, jax and what
# they need, then tf-keras with --no-deps), installed into /usr/local/lib/python3.11/dist-packages
# with pip --target, and /usr/local/bin/tensorboard (what `tf-spawner tensorboard` runs). The
# wheels are tools/tensorflow/setup.sh's (its cache's wheels/, downloaded once); only cp311
# wheels missing there are downloaded. Before writing the archive, the image's own python
# imports TensorFlow and tf_keras, and its `tensorboard` runs, in a chroot. start.sh imports the
# archive into containerd when it is there and containerd's image of that name differs.
#
# Idempotent: an archive whose stamp (the hashes of the pins, of the Python image and of this
# script and image.sh) matches is kept; any change rebuilds it, and the next start.sh
# re-imports it.
# Run as root, after setup.sh. Progress on stderr; the image's name on stdout (last line).
# Environment: TF_SPAWNER_ONE_NODE (see setup.sh), TF_SPAWNER_TENSORFLOW (see
# tools/tensorflow/setup.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS

log() { echo "[one-node tensorflow image +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node tensorflow image] ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (the chroot check)"
[ -d "$CACHE" ] || die "run tools/one-node/setup.sh first"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"
source "$HERE/image.sh"
[ -f "$IMAGES/python.tar" ] || die "no $IMAGES/python.tar: run tools/one-node/setup.sh first"

REQUIREMENTS=$ROOT/tools/tensorflow/requirements.txt
NO_DEPS=$ROOT/tools/tensorflow/requirements-no-deps.txt
OUT=$IMAGES/tensorflow.tar
version=$(sed -n 's/^tensorflow-cpu==\([0-9]*\.[0-9]*\)\..*/\1/p' "$REQUIREMENTS")
[ "$TENSORFLOW_IMAGE" = "tf-spawner.local/tensorflow:$version" ] \
  || die "requirements.txt pins TensorFlow $version but common.sh names $TENSORFLOW_IMAGE: change TENSORFLOW_IMAGE (and the pod templates)"

stamp="$(cat "$REQUIREMENTS" "$NO_DEPS" | sha256sum | cut -d' ' -f1) $(sha256sum "$IMAGES/python.tar" | cut -d' ' -f1) $(cat "$HERE/tensorflow-image.sh" "$HERE/image.sh" | sha256sum | cut -d' ' -f1)"
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$stamp" ]; then
  log "cached: $OUT ($TENSORFLOW_IMAGE)"
  echo "$TENSORFLOW_IMAGE"
  exit 0
fi

# The venv (and its wheels) first: its pip installs the layer.
python=$(bash "$ROOT/tools/tensorflow/setup.sh" | tail -1)
WHEELS=$(cd "$(dirname "$python")/../../wheels" && pwd)
# The image's interpreter, whatever the host's: Debian 12's CPython 3.11 and glibc 2.36, so
# every manylinux tag up to 2.36 (pip does not expand manylinux_2_36 to the older ones itself).
TARGET_FLAGS=(--only-binary=:all: --implementation cp --python-version 3.11 --abi cp311
  --platform manylinux2014_x86_64)
for glibc in $(seq 17 36); do TARGET_FLAGS+=(--platform "manylinux_2_${glibc}_x86_64"); done
pip() { "$python" -m pip --disable-pip-version-check "$@"; }

work=$(mktemp -d "$CACHE/tensorflow-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
site=$work/layer/usr/local/lib/python3.11/dist-packages
install_layer() {
  rm -rf "$work/layer" && mkdir -p "$site"
  pip install --no-cache-dir --no-index --find-links "$WHEELS" "${TARGET_FLAGS[@]}" --target "$site" \
      -r "$REQUIREMENTS" &&
    pip install --no-cache-dir --no-index --find-links "$WHEELS" "${TARGET_FLAGS[@]}" --target "$site" \
      --no-deps -r "$NO_DEPS"
}
log "pip install --target $site, from $WHEELS only (log: $CACHE/tensorflow-image-pip.log)"
if ! install_layer >"$CACHE/tensorflow-image-pip.log" 2>&1; then
  # Wheels of another Python than the venv's: download the image's (cp311) ones once.
  log "not every cp311 wheel is in $WHEELS: pip download them (log: $CACHE/tensorflow-image-download.log)"
  pip download --no-cache-dir --no-deps "${TARGET_FLAGS[@]}" -d "$WHEELS" -r "$REQUIREMENTS" -r "$NO_DEPS" \
    >"$CACHE/tensorflow-image-download.log" 2>&1 \
    || { tail -20 "$CACHE/tensorflow-image-download.log" >&2; die "pip download failed"; }
  install_layer >"$CACHE/tensorflow-image-pip.log" 2>&1 \
    || { tail -20 "$CACHE/tensorflow-image-pip.log" >&2; die "pip install --target failed"; }
fi
# Not needed to run: console scripts written for the host's python, and TensorFlow's C++ headers
# (287 MB, for building custom ops).
rm -rf "$site/bin" "$site/tensorflow/include"
# `tensorboard` on PATH, as in TensorFlow's own images, for the image's python.
mkdir -p "$work/layer/usr/local/bin"
cat >"$work/layer/usr/local/bin/tensorboard" <<'PY'
#!/usr/bin/python3
import sys
from tensorboard.main import run_main
sys.exit(run_main())
PY
chmod 755 "$work/layer/usr/local/bin/tensorboard"

# The check: the Python image's rootfs with the layer on top, its python importing TensorFlow.
log "checking: the image's python3 imports tensorflow and tf_keras, its tensorboard runs (chroot)"
mkdir "$work/rootfs"
layer=$(tar -xOf "$IMAGES/python.tar" manifest.json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Layers"][0])')
tar -xOf "$IMAGES/python.tar" "$layer" | tar -C "$work/rootfs" -xf -
cp -al "$work/layer/." "$work/rootfs/"   # hard links: no copy of 1.3 GB
check=$(TF_USE_LEGACY_KERAS=1 unshare --mount --pid --fork --mount-proc="$work/rootfs/proc" \
  chroot "$work/rootfs" python3 -c '
import sys, tensorflow as tf, tf_keras
print("python %s, tensorflow %s, tf.keras from %s" % (sys.version.split()[0], tf.__version__,
      tf.keras.Sequential.__module__.split(".")[0]))' 2>"$CACHE/tensorflow-image-check.log") \
  || { tail -20 "$CACHE/tensorflow-image-check.log" >&2; die "import tensorflow failed in the image"; }
log "$check"
case $check in *"tensorflow $version."*"tf.keras from tf_keras") ;; *) die "unexpected: $check" ;; esac
board=$(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  unshare --mount --pid --fork --mount-proc="$work/rootfs/proc" chroot "$work/rootfs" \
  tensorboard --version_tb 2>>"$CACHE/tensorflow-image-check.log") \
  || { tail -20 "$CACHE/tensorflow-image-check.log" >&2; die "tensorboard does not run in the image"; }
log "tensorboard $board"

log "writing $OUT ($TENSORFLOW_IMAGE: the Python image's layer + $(du -sh "$work/layer" | cut -f1))"
make_image "$work/layer" "$TENSORFLOW_IMAGE" "$OUT" 'null' '["python3"]' "$IMAGES/python.tar"
echo "$stamp" >"$OUT.stamp"
log "ready: $OUT ($(du -sh "$OUT" | cut -f1)); start.sh imports it"
echo "$TENSORFLOW_IMAGE"
