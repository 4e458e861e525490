#!/bin/bash
# second-node.sh start|kill|cut|stop|status - a second node for the running one-node cluster of
# TF_SPAWNER_ONE_NODE_VERSION (1.36 by default, or 1.20), so that a node can fail under a run
# while another one is there to take it (tests/pods/nodes.rs).
#
#   start   its own containerd (root $STATE/node-2/containerd: the imported images are kept
#           between starts; state, socket, CNI configuration and IPAM in $RUN/node-2), the
#           first node's image archives imported into it once, and its own kubelet "$NODE-2"
#           (root directory, pod logs, cgroup root, client certificate, address $NODE2_IP on lo,
#           healthz port). Its pods are on the first node's bridge and subnet, from their own
#           address range (.130-.250; the first node's: .10-.127): they reach the first node's
#           pods on layer 2 and its DNS. The node is registered with the taint
#           tf-spawner.test/second-node=true:NoSchedule and the label
#           tf-spawner.test/second-node=true: only pods that tolerate the taint land there.
#           Waits until the node is Ready and the node-lifecycle controller untainted it.
#   kill    the node dies: its kubelet is SIGKILLed and its pods' processes are frozen (the
#           cgroup v1 freezer on its cgroup root): nothing of it runs or writes any more, as on
#           a machine that lost power; the node stops reporting and the node-lifecycle
#           controller marks it Unknown after its grace period. `start` thaws and restarts.
#   cut     the node is cut off: its kubelet is SIGKILLed, its containers keep running (and
#           reach the other node's pods: the bridge is shared), as in a network partition that
#           leaves the pods' own network alone.
#   stop    everything of the second node (thawed first): its kubelet, its containers, containerd, mounts,
#           network namespaces, cgroups, its Node object (with its pods) and /etc/hosts line.
#   status  the PIDs of its kubelet and containerd, and the node's Ready condition.
# Needs the first node running (start.sh). Progress on stderr.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS
log() { echo "[one-node second node +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node second node] ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
[ -d "$CACHE" ] || die "$CACHE does not exist: no one-node cluster"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"

# From here on the daemons, logs and runtime are the second node's (pid_of, start_daemon,
# wait_for, ctr_k8s and import_images read these).
PIDS=$NODE2_RUN/pids
LOGS=$NODE2_RUN/logs
CONTAINERD_ROOT=$NODE2_STATE/containerd
CONTAINERD_STATE=$NODE2_RUN/containerd
CONTAINERD_SOCK=$NODE2_RUN/containerd.sock
KUBELET_ROOT=$NODE2_RUN/kubelet
CNI_CONF=$NODE2_RUN/cni
IPAM_DIR=$NODE2_RUN/ipam
HOSTS_MARK="$HOSTS_MARK node 2"
KUBELET_PAT="--hostname-override=$NODE2 "
CONTAINERD_PAT="--config $NODE2_RUN/containerd.toml"

kill_tree() { # PID SIGNAL: the process and all its descendants
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do kill_tree "$child" "$2"; done
  kill "-$2" "$1" 2>/dev/null || true
}
stop_daemon() { # NAME PATTERN SIGNAL
  local pid
  pid=$(pid_of "$1" "$2") || { rm -f "$PIDS/$1.pid"; return 0; }
  kill "-$3" "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do [ -e "/proc/$pid" ] || break; sleep 0.25; done
  [ -e "/proc/$pid" ] && { kill_tree "$pid" KILL; sleep 0.3; }
  log "$1 (pid $pid) stopped (SIG$3)"
  rm -f "$PIDS/$1.pid"
}

FREEZER=/sys/fs/cgroup/freezer/${NODE2_CGROUP_ROOT#/}
freeze() { # FROZEN|THAWED: the second node's pods' processes, all at once
  [ -f "$FREEZER/freezer.state" ] || return 0
  echo "$1" >"$FREEZER/freezer.state"
  for _ in $(seq 1 50); do [ "$(cat "$FREEZER/freezer.state")" = "$1" ] && return 0; sleep 0.1; done
  die "$FREEZER/freezer.state did not become $1"
}
kill_kubelet() {
  local pid
  pid=$(pid_of kubelet "$KUBELET_PAT") || die "the second node's kubelet is not running"
  kill -KILL "$pid"
  while [ -e "/proc/$pid" ]; do sleep 0.1; done
  rm -f "$PIDS/kubelet.pid"
  echo "$pid"
}

# The second node's own /var/log/pods (and /var/log/containers). A v1.20 kubelet has no
# podLogsDir: it writes its pods' logs under /var/log/pods, and its garbage collector removes
# there every pod log directory of a pod it does not run, so two v1.20 kubelets on one machine
# delete each other's logs (seen: `logs` of both workers of a run spread over the two nodes
# failed with "lstat /var/log/pods/...: no such file or directory"). On v1.20 the second node's
# containerd and kubelet therefore run in a mount namespace of their own (mounts of the host
# propagate into it, none out of it) where those two directories are its own, under
# $KUBELET_ROOT as a v1.36 node's podLogsDir. The namespace is kept in a file ($MNTNS) until stop.
MNTNS_DIR=$NODE2_RUN/ns
MNTNS=$MNTNS_DIR/mnt
IN_NS=()
if [ "$ONE_NODE_VERSION" = 1.20 ]; then IN_NS=(nsenter "--mount=$MNTNS" --); fi
own_log_dirs() {
  [ "$ONE_NODE_VERSION" = 1.20 ] || return 0
  nsenter --mount="$MNTNS" true 2>/dev/null && return 0
  mkdir -p "$KUBELET_ROOT/pod-logs" "$KUBELET_ROOT/container-logs" "$MNTNS_DIR" /var/log/pods /var/log/containers
  # The file a namespace is kept in must be on a private mount.
  if ! mountpoint -q "$MNTNS_DIR"; then
    mount --bind "$MNTNS_DIR" "$MNTNS_DIR" && mount --make-private "$MNTNS_DIR"
  fi
  touch "$MNTNS"
  unshare --mount="$MNTNS" --propagation slave sh -c \
    "mount --bind '$KUBELET_ROOT/pod-logs' /var/log/pods && mount --bind '$KUBELET_ROOT/container-logs' /var/log/containers" \
    || die "could not make the second node's mount namespace"
  log "v1.20: its containerd and kubelet run in a mount namespace ($MNTNS) with their own /var/log/pods"
}

start() {
  freeze THAWED
  PIDS=$RUN/pids pid_of kubelet "$CP/bin/kubelet " >/dev/null \
    || die "the v$ONE_NODE_VERSION one-node cluster is not running: start it first (tools/one-node/start.sh)"
  mkdir -p "$PIDS" "$LOGS" "$CNI_CONF" "$IPAM_DIR" "$CONTAINERD_STATE" "$CONTAINERD_ROOT" "$KUBELET_ROOT"
  chmod 700 "$NODE2_RUN"
  client_cert node-2 "/O=system:nodes/CN=system:node:$NODE2"
  cert_kubeconfig node-2 "$NODE2_RUN/kubeconfig-node"
  ip addr show dev lo | grep "inet $NODE2_IP/" >/dev/null || ip addr add "$NODE2_IP/32" dev lo
  grep -qxF "$NODE2_IP $NODE2 $HOSTS_MARK" /etc/hosts || echo "$NODE2_IP $NODE2 $HOSTS_MARK" >>/etc/hosts
  write_cni_conf "$CNI_CONF" "$NODE2_POD_RANGE_START" "$NODE2_POD_RANGE_END" "$IPAM_DIR"

  own_log_dirs
  write_containerd_conf "$NODE2_RUN/containerd.toml" "$CONTAINERD_ROOT" "$CONTAINERD_STATE" "$CONTAINERD_SOCK" "$CNI_CONF"
  if pid_of containerd "$CONTAINERD_PAT" >/dev/null; then
    log "containerd already running"
  else
    log "starting containerd (log: $LOGS/containerd.log)"
    start_daemon containerd "${IN_NS[@]}" "$(command -v containerd)" --config "$NODE2_RUN/containerd.toml" --log-level info
  fi
  wait_for "containerd" 30 containerd ctr_k8s version
  import_images

  kubelet_setup "$CONTAINERD_SOCK" "$NODE2_CGROUP_ROOT" "$KUBELET_ROOT"
  write_kubelet_conf "$NODE2_RUN/kubelet-config.yaml" "$NODE2_IP" "$NODE2_HEALTHZ_PORT" "registerWithTaints:
- {key: $NODE2_TAINT_KEY, value: \"true\", effect: NoSchedule}"
  if pid_of kubelet "$KUBELET_PAT" >/dev/null; then
    log "kubelet already running"
  else
    log "starting kubelet $NODE2 (log: $LOGS/kubelet.log)"
    start_daemon kubelet "${IN_NS[@]}" "$CP/bin/kubelet" --config="$NODE2_RUN/kubelet-config.yaml" \
      --kubeconfig="$NODE2_RUN/kubeconfig-node" --root-dir="$KUBELET_ROOT" --cert-dir="$KUBELET_ROOT/pki" \
      --hostname-override="$NODE2" --node-ip="$NODE2_IP" --node-labels="$NODE2_LABEL" "${KUBELET_FLAGS[@]}" --v=1
  fi
  wait_for "node $NODE2 Ready" 120 kubelet node_ready "$NODE2"
  wait_for "the node-lifecycle controller to untaint $NODE2" 60 kubelet node_untainted "$NODE2"
  wait_for "the scheduler to place a pod on $NODE2" 120 kubelet node_schedulable "$NODE2"
  log "ready in $((SECONDS - START)) s: node $NODE2 ($NODE2_IP), pods on $NET.${NODE2_POD_RANGE_START##*.}-${NODE2_POD_RANGE_END##*.}, taint $NODE2_TAINT_KEY=true:NoSchedule"
}

stop() {
  local ns m top
  # Best effort, as stop.sh: a teardown that stops at its first refusal leaves the rest behind
  # (seen in CI: a task that had already ended refused its kill, and containerd ran on).
  set +e
  freeze THAWED
  stop_daemon kubelet "$KUBELET_PAT" TERM
  remove_containers >/dev/null
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do kill_tree "$pid" KILL; done
  stop_daemon containerd "$CONTAINERD_PAT" TERM
  # v1.20: the mount namespace (its mounts go with it once nothing runs in it).
  mountpoint -q "$MNTNS" 2>/dev/null && umount "$MNTNS"
  mountpoint -q "$MNTNS_DIR" 2>/dev/null && umount "$MNTNS_DIR"
  # Mounts, then the network namespaces holding an address of this node's range, their veths.
  for m in $(awk '{print $5}' /proc/self/mountinfo | grep -E "^($NODE2_RUN|$CONTAINERD_ROOT)/" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  for ns in $(our_netns); do
    ip -n "$ns" -4 -o addr show 2>/dev/null | grep -oE "inet $NET\.[0-9]+" | cut -d. -f4 | {
      read -r last && [ "$last" -ge "${NODE2_POD_RANGE_START##*.}" ] && [ "$last" -le "${NODE2_POD_RANGE_END##*.}" ]
    } && ip netns del "$ns" 2>/dev/null   # its veth pair goes with it
  done
  for top in /sys/fs/cgroup/*/"${NODE2_CGROUP_ROOT#/}"; do
    [ -d "$top" ] && find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  ip addr show dev lo | grep "inet $NODE2_IP/" >/dev/null && ip addr del "$NODE2_IP/32" dev lo
  if grep -qF "$HOSTS_MARK" /etc/hosts; then
    grep -vF "$HOSTS_MARK" /etc/hosts >/etc/hosts.tf-spawner-one-node && cat /etc/hosts.tf-spawner-one-node >/etc/hosts
    rm -f /etc/hosts.tf-spawner-one-node
  fi
  # The Node object: without it its pods are garbage-collected (the pod GC controller deletes
  # the pods of a node that no longer exists).
  kubectl_admin delete node "$NODE2" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  [ -d "$NODE2_RUN" ] && find "$NODE2_RUN" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  kill)
    pid=$(kill_kubelet)
    freeze FROZEN
    log "killed the kubelet of $NODE2 (pid $pid) and froze its pods' processes"
    ;;
  cut)
    pid=$(kill_kubelet)
    log "killed the kubelet of $NODE2 (pid $pid); its containers keep running"
    ;;
  status)
    echo "kubelet: $(pid_of kubelet "$KUBELET_PAT" || echo none), containerd: $(pid_of containerd "$CONTAINERD_PAT" || echo none)," \
      "node $NODE2 Ready: $(kubectl_admin get node "$NODE2" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || echo absent)"
    ;;
  *) die "usage: $0 start|kill|cut|stop|status" ;;
esac
