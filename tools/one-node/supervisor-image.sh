#!/bin/bash
# supervisor-image.sh BINARY - the image of a detached run's supervisor
# (tools/supervisor-image/build.sh) made from BINARY (the tests' build) and imported into the
# one-node cluster's containerd as tf-spawner.local/supervisor:dev, in place of a registry.
# Run as root, on a running one-node cluster. The image's name on stdout (last line).
# Environment: TF_SPAWNER_ONE_NODE, TF_SPAWNER_ONE_NODE_VERSION (see setup.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
log() { echo "[one-node supervisor image] $*" >&2; }
die() { echo "[one-node supervisor image] ERROR: $*" >&2; exit 1; }
[ -d "$CACHE" ] || die "$CACHE does not exist: no one-node cluster"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"
BIN=${1:?usage: supervisor-image.sh BINARY}

NAME=tf-spawner.local/supervisor:dev
OUT=$IMAGES/supervisor.tar
bash "$ROOT/tools/supervisor-image/build.sh" "$BIN" "$OUT" "$NAME" >/dev/null
ctr_k8s images import --no-unpack=false "$OUT" >"$LOGS/import-supervisor.log" 2>&1 \
  || { cat "$LOGS/import-supervisor.log" >&2; die "could not import $OUT"; }
log "imported $NAME"
echo "$NAME"
