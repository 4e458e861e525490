#!/bin/bash
# start.sh - start a one-node Kubernetes cluster (v1.36 by default, or v1.20:
# TF_SPAWNER_ONE_NODE_VERSION) on this machine and print its admin kubeconfig (last line of
# stdout). Run setup.sh (of the same version) first. Idempotent: running parts are left alone.
# The addresses and ports below are v1.20's; v1.36's are in common.sh (both can run at once).
#
#   control plane  etcd, kube-apiserver, kube-controller-manager by the shared tools' start.sh
#                  (../shared/tools/kube-apiserver or ../shared/tools/kube-1.36), on their own
#                  prefix ($STATE/control-plane, binaries linked from setup.sh's) and ports (API
#                  server 127.0.0.1:16443, v1.36: 17443), so the node-less control planes of the
#                  real-server suite (6443, 7443) can run beside it
#   scheduler      kube-scheduler, client certificate CN=system:kube-scheduler
#   runtime        Debian's containerd + runc (cgroupfs), socket and state in $TF_SPAWNER_ONE_NODE/run
#   node           kubelet "tf-spawner-node" (client certificate CN=system:node:tf-spawner-node,
#                  O=system:nodes), serving on 10.244.1.1:10250 only (an address on lo that pods
#                  have no route to): the API server reaches it there
#                  for pods/log (anonymous, AlwaysAllow: start.sh of the shared tools gives the API
#                  server no kubelet client certificate)
#   pod network    bridge tfsp0 10.244.0.1/24 on this machine only; pods get 10.244.0.x from the CNI
#                  bridge + host-local plugins and no default route; IP forwarding stays off
#   cluster DNS    dns.py on 10.244.0.1:53 (watches Services and Endpoints; see its docstring)
#
# Environment: TF_SPAWNER_ONE_NODE_VERSION, TF_SPAWNER_ONE_NODE (default ~/.cache/tf-spawner-one-node),
# TF_SPAWNER_KUBE_TOOLS (1.20), TF_SPAWNER_KUBE_136_TOOLS (1.36): see setup.sh.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS

log() { echo "[one-node start +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node start] ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
[ -d "$CACHE" ] || die "run tools/one-node/setup.sh first"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"
[ -f "$STATE/k8s-prefix" ] && [ -f "$IMAGES/python.tar" ] \
  || die "run TF_SPAWNER_ONE_NODE_VERSION=$ONE_NODE_VERSION tools/one-node/setup.sh first"
[ -f "$TOOLS/start.sh" ] || die "$TOOLS/start.sh not found: set $([ "$ONE_NODE_VERSION" = 1.20 ] && echo TF_SPAWNER_KUBE_TOOLS || echo TF_SPAWNER_KUBE_136_TOOLS) to the shared tools' directory"
TOOLS=$(cd "$TOOLS" && pwd)
K8S_PREFIX=$(cat "$STATE/k8s-prefix")

# No kubelet running: whatever an earlier cluster left (its processes killed with a session,
# say) is cleared first, etcd data included, so that this is a new cluster and no old pod
# comes back. With a kubelet running, the parts that run are left alone.
if ! pid_of kubelet "$CP/bin/kubelet " >/dev/null 2>&1; then
  mkdir -p "$LOGS"
  log "no kubelet running: clearing what an earlier cluster may have left (log: $LOGS/stop.log)"
  TF_SPAWNER_ONE_NODE=$CACHE TF_SPAWNER_ONE_NODE_VERSION=$ONE_NODE_VERSION bash "$HERE/stop.sh" >"$LOGS/stop.log" 2>&1 \
    || { cat "$LOGS/stop.log" >&2; die "could not clear the earlier cluster's state (see above)"; }
fi
mkdir -p "$RUN" "$PIDS" "$LOGS" "$PKI" "$CNI_CONF" "$CONTAINERD_STATE" "$CONTAINERD_ROOT" "$KUBELET_ROOT"
chmod 700 "$RUN" "$PKI"

# --- control plane ----------------------------------------------------------------------------
mkdir -p "$CP"
[ -L "$CP/bin" ] || ln -sfn "$K8S_PREFIX/bin" "$CP/bin"
# A controller manager started before the node-lifecycle controller was on (its command line
# turns it off) is stopped, by its PID, and the shared start.sh starts it again with it on; the
# rest of the control plane keeps running.
kcm_pid=$(PIDS=$CP/run/pids pid_of kube-controller-manager "$CP/bin/kube-controller-manager " || true)
if [ -n "$kcm_pid" ] && tr '\0' ' ' <"/proc/$kcm_pid/cmdline" | grep -E -- '[=,]-node-?lifecycle(-controller)?,' >/dev/null; then
  log "restarting kube-controller-manager (pid $kcm_pid) with the node-lifecycle controller on"
  kill -TERM "$kcm_pid"
  while [ -e "/proc/$kcm_pid" ]; do sleep 0.2; done
fi
log "control plane: $TOOLS/start.sh on 127.0.0.1:$APISERVER_PORT (logs: $CP/run/logs)"
if ! ADMIN_KUBECONFIG=$(cp_env bash "$TOOLS/start.sh" 2>"$LOGS/control-plane-start.log" | tail -1); then
  tail -20 "$LOGS/control-plane-start.log" >&2
  die "the control plane did not start; see $LOGS/control-plane-start.log"
fi
[ "$ADMIN_KUBECONFIG" = "$CP/kubeconfig" ] || die "unexpected kubeconfig from start.sh: $ADMIN_KUBECONFIG"

# --- certificates and kubeconfigs for the scheduler and the node -----------------------------
client_cert scheduler "/CN=system:kube-scheduler"
client_cert node "/O=system:nodes/CN=system:node:$NODE"
cert_kubeconfig scheduler "$RUN/kubeconfig-scheduler"
cert_kubeconfig node "$RUN/kubeconfig-node"

# The node's rights: the built-in system:node role (not bound to the group by default since 1.8),
# plus list/watch of the config maps and secrets its pods mount (the Node authorizer, which
# grants those on a real cluster, is not enabled by the shared start.sh).
kubectl_admin apply -f - >"$LOGS/node-rbac.log" 2>&1 <<'EOF' || { cat "$LOGS/node-rbac.log" >&2; die "could not apply the node's RBAC"; }
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tf-spawner-one-node:system:node
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:node
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: tf-spawner-one-node:pod-volumes
rules:
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tf-spawner-one-node:pod-volumes
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: tf-spawner-one-node:pod-volumes
  apiGroup: rbac.authorization.k8s.io
EOF

# --- pod network: the bridge (the DNS answers on its address) and the CNI configuration -------
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  log "bridge $BRIDGE $BRIDGE_IP/24"
  ip link add "$BRIDGE" type bridge
fi
# A fixed MAC address. A bridge left to choose takes the lowest MAC of its ports, so deleting the
# pod whose veth had it changes the bridge's MAC: every running pod's ARP entry for the bridge
# (the DNS, the API server) then names a MAC nobody answers to, and its DNS queries vanish until
# that entry expires, 20 to 40 s (seen in CI: a worker's `Temporary failure in name resolution`
# for its peer while the previous test's pods were deleted; kubenet pins cbr0's MAC for the same
# reason). A MAC set by hand is kept (the kernel's br_stp_recalculate_bridge_id).
ip link set "$BRIDGE" address "$BRIDGE_MAC"
ip addr show dev "$BRIDGE" | grep "inet $BRIDGE_IP/" >/dev/null || ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
# The API server from the pods, as kube-proxy makes it reachable on users' clusters (a detached
# run's supervisor talks to it): the `kubernetes` Service's address, which the kubelet gives
# every pod as KUBERNETES_SERVICE_HOST:PORT (pods route the service range to the bridge),
# forwarded to the API server on this machine's loopback (route_localnet lets a DNAT to
# 127.0.0.1 through). Nothing else of the host is reachable from a pod.
sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
api_rule -C 2>/dev/null || api_rule -A
# The node's address: the kubelet serves there (the API server reaches it for pods/log) and it
# must not be a loopback address; pods cannot reach it (no route outside their subnet).
ip addr show dev lo | grep "inet $NODE_IP/" >/dev/null || ip addr add "$NODE_IP/32" dev lo
# The node's Hostname address comes first in the API server's --kubelet-preferred-address-types:
# make the node's name resolve on this machine (one marked line, removed by stop.sh).
grep -qxF "$NODE_IP $NODE $HOSTS_MARK" /etc/hosts || echo "$NODE_IP $NODE $HOSTS_MARK" >>/etc/hosts
write_cni_conf "$CNI_CONF" "$POD_RANGE_START" "$POD_RANGE_END" "$IPAM_DIR"

# --- containerd --------------------------------------------------------------------------------
write_containerd_conf "$RUN/containerd.toml" "$CONTAINERD_ROOT" "$CONTAINERD_STATE" "$CONTAINERD_SOCK" "$CNI_CONF"
if pid_of containerd "--config $RUN/containerd.toml" >/dev/null; then
  log "containerd already running"
else
  log "starting containerd (log: $LOGS/containerd.log)"
  start_daemon containerd "$(command -v containerd)" --config "$RUN/containerd.toml" --log-level info
fi
wait_for "containerd" 30 containerd ctr_k8s version
import_images

# --- cluster DNS -------------------------------------------------------------------------------
if pid_of dns "/dns.py --listen $BRIDGE_IP:53 " >/dev/null; then
  log "dns.py already running"
else
  rm -f "$RUN/dns.ready"
  log "starting dns.py on $BRIDGE_IP:53 (log: $LOGS/dns.log)"
  start_daemon dns python3 "$HERE/dns.py" --listen "$BRIDGE_IP:53" --server "$APISERVER_URL" \
    --ca "$CP/run/pki/ca.crt" --token-file "$CP/run/pki/admin.token" --domain "$CLUSTER_DOMAIN" \
    --ready-file "$RUN/dns.ready"
fi
wait_for "dns.py" 30 dns test -f "$RUN/dns.ready"

# --- what differs between the versions: the scheduler's flags (the kubelet's: common.sh) --------
case "$ONE_NODE_VERSION" in
  1.20) SCHEDULER_FLAGS=(--port=0 --secure-port=0) ;;
  # --port is gone; the secure port stays off.
  1.36) SCHEDULER_FLAGS=(--secure-port=0 --authentication-kubeconfig="$RUN/kubeconfig-scheduler"
      --authorization-kubeconfig="$RUN/kubeconfig-scheduler") ;;
esac

# --- kube-scheduler ----------------------------------------------------------------------------
if pid_of kube-scheduler "$CP/bin/kube-scheduler " >/dev/null; then
  log "kube-scheduler already running"
else
  log "starting kube-scheduler (log: $LOGS/kube-scheduler.log)"
  start_daemon kube-scheduler "$CP/bin/kube-scheduler" --kubeconfig="$RUN/kubeconfig-scheduler" \
    --leader-elect=false "${SCHEDULER_FLAGS[@]}" --v=1
fi

# --- kubelet -------------------------------------------------------------------------------------
kubelet_setup "$CONTAINERD_SOCK" "$CGROUP_ROOT" "$KUBELET_ROOT"
write_kubelet_conf "$RUN/kubelet-config.yaml" "$NODE_IP" "$KUBELET_HEALTHZ_PORT" ""
if pid_of kubelet "$CP/bin/kubelet " >/dev/null; then
  log "kubelet already running"
else
  log "starting kubelet (log: $LOGS/kubelet.log)"
  start_daemon kubelet "$CP/bin/kubelet" --config="$RUN/kubelet-config.yaml" \
    --kubeconfig="$RUN/kubeconfig-node" --root-dir="$KUBELET_ROOT" --cert-dir="$KUBELET_ROOT/pki" \
    --hostname-override="$NODE" --node-ip="$NODE_IP" "${KUBELET_FLAGS[@]}" --v=1
fi
wait_for "node $NODE Ready" 120 kubelet node_ready "$NODE"
# A new node carries node.kubernetes.io/not-ready:NoSchedule until the node-lifecycle controller
# sees it Ready and removes the taint (within its 5 s node monitor period).
wait_for "the node-lifecycle controller to untaint $NODE" 60 kubelet node_untainted "$NODE"

log "ready in $((SECONDS - START)) s: v$ONE_NODE_VERSION, node $NODE, pods on $POD_SUBNET, DNS $BRIDGE_IP; kubectl: $CP/bin/kubectl --kubeconfig $ADMIN_KUBECONFIG"
echo "$ADMIN_KUBECONFIG"
