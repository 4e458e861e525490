#!/bin/bash
# apiserver.sh stop|start - stop (SIGKILL, as a crash would) or start again the kube-apiserver of
# the running one-node cluster of TF_SPAWNER_ONE_NODE_VERSION (1.36 by default, or 1.20), and
# nothing else: for tests of what users see when their control plane restarts. `start` waits
# until the server is ready (the shared tools' start.sh starts only what is not running).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS
log() { echo "[one-node apiserver +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node apiserver] ERROR: $*" >&2; exit 1; }
[ -d "$CACHE" ] || die "$CACHE does not exist: no one-node cluster"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"

PIDFILE=$CP/run/pids/kube-apiserver.pid
case "${1:-}" in
  stop)
    [ -f "$PIDFILE" ] || die "no $PIDFILE: is the v$ONE_NODE_VERSION one-node cluster running?"
    pid=$(cat "$PIDFILE")
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "$CP/bin/kube-apiserver " >/dev/null \
      || die "pid $pid in $PIDFILE is not this cluster's kube-apiserver"
    kill -KILL "$pid"
    while [ -e "/proc/$pid" ]; do sleep 0.1; done
    log "killed kube-apiserver (pid $pid)"
    ;;
  start)
    cp_env bash "$TOOLS/start.sh" >/dev/null 2>"$LOGS/apiserver-restart.log" \
      || { tail -20 "$LOGS/apiserver-restart.log" >&2; die "the control plane did not start again"; }
    log "kube-apiserver ready again (pid $(cat "$PIDFILE"))"
    ;;
  *) die "usage: $0 stop|start" ;;
esac
