#!/bin/bash
# stop.sh - stop the one-node cluster that start.sh started and leave nothing behind: no process
# (kubelet, kube-scheduler, dns.py, containerd, its shims and containers, the control plane),
# no mount under its directories, no network namespace of its pods, no veth, no bridge, no
# cgroup of its pods, and no cluster state (the etcd data is purged: the next start is a new
# cluster). Kept: the images (containerd's content store), certificates and logs.
# Stops the cluster of TF_SPAWNER_ONE_NODE_VERSION (1.36 by default, or 1.20) and leaves the
# other version's alone.
# Exit status 1 if something could not be removed (it is listed).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS
log() { echo "[one-node stop +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node stop] ERROR: $*" >&2; exit 1; }
[ -d "$CACHE" ] || { log "$CACHE does not exist; nothing to stop"; exit 0; }
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"
[ -d "$STATE" ] || { log "$STATE does not exist; nothing to stop"; exit 0; }
mkdir -p "$LOGS"
rc=0

# kill_tree PID SIGNAL: the process and all its descendants.
kill_tree() {
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do kill_tree "$child" "$2"; done
  kill "-$2" "$1" 2>/dev/null
}

stop_daemon() { # name pattern
  local pid i
  pid=$(pid_of "$1" "$2") || { rm -f "$PIDS/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 40); do [ -e "/proc/$pid" ] || break; sleep 0.25; done
  if [ -e "/proc/$pid" ]; then kill_tree "$pid" KILL; sleep 0.3; log "$1 (pid $pid) killed after 10 s"; else log "$1 (pid $pid) stopped"; fi
  rm -f "$PIDS/$1.pid"
}

# 0. The second node (second-node.sh), if one was started.
if [ -d "$RUN/node-2" ]; then
  TF_SPAWNER_ONE_NODE=$CACHE TF_SPAWNER_ONE_NODE_VERSION=$ONE_NODE_VERSION bash "$HERE/second-node.sh" stop || rc=1
fi
# 1. Nothing may start new containers: the kubelet and the scheduler go first.
stop_daemon kubelet "$CP/bin/kubelet "
stop_daemon kube-scheduler "$CP/bin/kube-scheduler "
stop_daemon dns "/dns.py --listen $BRIDGE_IP:53 "

# 2. Every container and sandbox, through containerd while it runs.
removed=$(remove_containers)
[ "$removed" -gt 0 ] && log "removed $removed containers"
# Shims left over (e.g. containerd already dead): they name our socket on their command line.
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do
  log "killing shim $pid and its containers"
  kill_tree "$pid" KILL
done
stop_daemon containerd "--config $RUN/containerd.toml"

# 3. The control plane, and its data.
if [ -d "$CP/run" ] && [ -f "$TOOLS/stop.sh" ]; then
  cp_env bash "$TOOLS/stop.sh" --purge 2>"$LOGS/control-plane-stop.log" || { rc=1; cat "$LOGS/control-plane-stop.log" >&2; }
fi

# 4. Mounts under our directories (rootfs overlays, sandbox shm, secret tmpfs), deepest first.
our_mounts() {
  awk '{print $5}' /proc/self/mountinfo | grep -E "^($RUN|$CONTAINERD_ROOT)/" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-
}
for m in $(our_mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done

# 5. Pod network namespaces (containerd names them cni-<uuid> under /run/netns), veths, bridge.
for ns in $(our_netns); do ip netns del "$ns" 2>/dev/null; done
for v in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$v" 2>/dev/null; done
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE"
while api_rule -D 2>/dev/null; do :; done
ip addr show dev lo | grep "inet $NODE_IP/" >/dev/null && ip addr del "$NODE_IP/32" dev lo
if grep -qF "$HOSTS_MARK" /etc/hosts; then
  grep -vF "$HOSTS_MARK" /etc/hosts >/etc/hosts.tf-spawner-one-node && cat /etc/hosts.tf-spawner-one-node >/etc/hosts
  rm -f /etc/hosts.tf-spawner-one-node
fi

# 6. The pods' cgroups (empty now), deepest first.
root=${CGROUP_ROOT#/}
for top in /sys/fs/cgroup/*/${root:+$root/}kubepods /sys/fs/cgroup/${root:+$root/}kubepods; do
  [ -d "$top" ] && find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null
done
# v1.36's own cgroup root (start.sh made it in every hierarchy).
if [ -n "$root" ]; then
  for d in /sys/fs/cgroup/*/"$root"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
fi

# 7. Check, then remove the run's state (kept: pki, logs).
left=""
for pat in "$CP/bin/" "$RUN/" "-address $CONTAINERD_SOCK" "/dns.py --listen $BRIDGE_IP:53"; do
  p=$(pgrep -f -- "$pat" | grep -vx "$$" | tr '\n' ' ')
  [ -n "$p" ] && left="$left processes($pat): $p;"
done
m=$(our_mounts | tr '\n' ' ')
[ -n "$m" ] && left="$left mounts: $m;"
n=$(our_netns | tr '\n' ' ')
[ -n "$n" ] && left="$left netns: $n;"
ip link show "$BRIDGE" >/dev/null 2>&1 && left="$left bridge $BRIDGE;"
ip addr show dev lo | grep "inet $NODE_IP/" >/dev/null && left="$left address $NODE_IP on lo;"
if [ -n "$left" ]; then
  log "left behind:$left"
  rc=1
else
  for d in "$RUN"/*; do
    case "$d" in "$PKI" | "$LOGS") ;; *) rm -rf "$d" ;; esac
  done
  log "stopped; nothing left behind"
fi
exit $rc
