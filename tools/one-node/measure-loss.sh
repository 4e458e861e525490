#!/bin/bash
# measure-loss.sh - what a lost node costs a training run, phase by phase (docs/preemption.md).
#
# On a running one-node cluster with its second node (second-node.sh start): examples/mnist.py
# on 2 workers of the TensorFlow image, both on the second node, a backup every
# BACKUP_EVERY_STEPS steps on a hostPath volume, `--node-lost-after 5s`, followed by
# `tf-spawner wait --restarts 1`; in its third epoch the second node is killed (kubelet
# SIGKILLed, pods frozen: a machine that lost power). It then prints the time of each phase
# until training goes on from the backup, from the pods' conditions and timestamps as the API
# server stored them (whole seconds), the logs' timestamps (the kubelet's, to the
# nanosecond) and wait's own lines (stamped as they came), and the work lost (steps since the
# last backup). Everything is kept in a directory it names; the namespace is deleted.
#
#   tools/one-node/measure-loss.sh            # v1.36; TF_SPAWNER_ONE_NODE_VERSION=1.20 too
#
# Environment: TF_SPAWNER (the binary, default target/debug/tf-spawner), TF_IMAGE (default
# tf-spawner.local/tensorflow:2.21), NODE_LOST_AFTER (5s), BACKUP_EVERY_STEPS (10),
# STEPS_PER_EPOCH (40), EPOCHS (8).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
log() { echo "[measure-loss +$((SECONDS))s] $*" >&2; }
die() { echo "[measure-loss] ERROR: $*" >&2; exit 1; }
source "$HERE/common.sh"

TFS=${TF_SPAWNER:-$ROOT/target/debug/tf-spawner}
IMAGE=${TF_IMAGE:-tf-spawner.local/tensorflow:2.21}
KUBECTL=$CP/bin/kubectl
export KUBECONFIG=$CP/kubeconfig
[ -x "$TFS" ] || die "no tf-spawner binary at $TFS (cargo build, or set TF_SPAWNER)"
"$KUBECTL" get node "$NODE2" >/dev/null 2>&1 || die "no second node: tools/one-node/second-node.sh start"

NS=tf-spawner-loss-$$
OUT=$(mktemp -d /tmp/tf-spawner-loss-XXXXXX)
VOLUME=$OUT/volume
mkdir -m 777 "$VOLUME"
KILLED=
cleanup() {
  [ -n "$KILLED" ] && bash "$HERE/second-node.sh" start >&2 || true
  [ -n "${WATCH_PID:-}" ] && kill "$WATCH_PID" 2>/dev/null || true
  "$KUBECTL" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  "$KUBECTL" delete pv "$NS-out" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "namespace $NS, kept in $OUT"
"$KUBECTL" create namespace "$NS" >/dev/null
"$KUBECTL" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: $NS-out}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: $VOLUME, type: Directory}
  claimRef: {namespace: $NS, name: out}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: out, namespace: $NS}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: $NS-out
  resources: {requests: {storage: 1Gi}}
EOF
cat >"$OUT/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: worker}
spec:
  restartPolicy: Never
  tolerations:
    - {key: $NODE2_TAINT_KEY, operator: Exists, effect: NoSchedule}
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference: {matchExpressions: [{key: $NODE2_TAINT_KEY, operator: In, values: ["true"]}]}
  containers:
    - name: tensorflow
      image: $IMAGE
      imagePullPolicy: IfNotPresent
      resources: {requests: {cpu: 10m, memory: 32Mi}}
EOF
cat >"$OUT/entrypoint.sh" <<EOF
set -e
python -c "
import numpy as np
r = np.random.default_rng(0)
x = lambda n: r.integers(0, 255, (n, 28, 28), dtype=np.uint8)
y = lambda n: r.integers(0, 10, n, dtype=np.int64)
np.savez('/tmp/mnist.npz', x_train=x(2560), y_train=y(2560), x_test=x(128), y_test=y(128))
"
export MNIST_NPZ=/tmp/mnist.npz TF_USE_LEGACY_KERAS=1 EPOCHS=${EPOCHS:-8}
export STEPS_PER_EPOCH=${STEPS_PER_EPOCH:-40} BACKUP_EVERY_STEPS=${BACKUP_EVERY_STEPS:-10}
exec python /script/training-script.py
EOF

tfs() { "$TFS" -n "$NS" "$@"; }
# Every change of the run's pods, whole, as the API server sent it.
"$KUBECTL" -n "$NS" get pods --watch --output-watch-events -o json >"$OUT/watch.json" 2>/dev/null &
WATCH_PID=$!
tfs -t loss -w 2 --pod-file "$OUT/pod.yaml" --volume out -c "$OUT/entrypoint.sh" \
  --node-lost-after "${NODE_LOST_AFTER:-5s}" "$ROOT/examples/mnist.py" >"$OUT/spawn.txt"
# wait's lines, each stamped when it came.
(tfs wait -t loss --restarts 1 --restart-backoff 1s --timeout 900s 2>&1; echo "exit $?") \
  | while IFS= read -r line; do printf '%s %s\n' "$(date -u +%s.%N)" "$line"; done >"$OUT/wait.txt" &
WAIT_PID=$!

log "waiting for the third epoch"
until tfs logs -t loss --task worker-0 2>/dev/null | grep -q "Epoch 3/"; do sleep 1; done
sleep 3  # inside the epoch, between two backups
bash "$HERE/second-node.sh" kill >&2
KILLED=1
date -u +%s.%N >"$OUT/killed"
# What the old attempt left: its backup (frozen, so final) and its logs, before the kubelet
# comes back and removes them with its pods.
find "$VOLUME" -type f -printf '%T@ %P\n' | sort -n >"$OUT/backup-files"
for f in "$NODE2_RUN"/kubelet/pod-logs/"${NS}"_loss-worker-*/tensorflow/0.log; do
  cp "$f" "$OUT/old-$(basename "$(dirname "$(dirname "$f")")" | sed 's/.*_\(loss-worker-[0-9]*\)_.*/\1/').log"
done
log "node killed; waiting for the run to end"
wait "$WAIT_PID" || true
kill "$WATCH_PID" 2>/dev/null || true
for w in 0 1; do
  "$KUBECTL" -n "$NS" logs --timestamps "loss-worker-$w" >"$OUT/new-loss-worker-$w.log"
done
"$KUBECTL" -n "$NS" get pods -o json >"$OUT/new-pods.json"
python3 "$HERE/measure-loss.py" "$OUT"
