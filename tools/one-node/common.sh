# shellcheck shell=bash disable=SC2034  # variables for the scripts that source this file
# Shared by start.sh and stop.sh (sourced; needs CACHE, TOOLS and log/die set).

NODE=tf-spawner-node
CP=$CACHE/control-plane                # the shared tools' prefix for this cluster's control plane
RUN=$CACHE/run                         # everything of a running cluster; stop.sh empties it
PIDS=$RUN/pids
LOGS=$RUN/logs
PKI=$RUN/pki
CNI_CONF=$RUN/cni
IPAM_DIR=$RUN/ipam
CONTAINERD_ROOT=$CACHE/containerd      # images (kept: the cache), snapshots, metadata
CONTAINERD_STATE=$RUN/containerd
CONTAINERD_SOCK=$RUN/containerd.sock
KUBELET_ROOT=$RUN/kubelet

APISERVER_PORT=16443
APISERVER_URL=https://127.0.0.1:$APISERVER_PORT
NODE_IP=10.244.1.1                     # on lo: the kubelet refuses 127.0.0.1; pods have no route to it
HOSTS_MARK="# tf-spawner one-node"       # the /etc/hosts line naming the node
KUBELET_PORT=10250
KUBELET_HEALTHZ_PORT=10248
CLUSTER_DOMAIN=cluster.local
BRIDGE=tfsp0
BRIDGE_IP=10.244.0.1
POD_SUBNET=10.244.0.0/24
POD_RANGE_START=10.244.0.10
PAUSE_IMAGE=tf-spawner.local/pause:1
PYTHON_IMAGE=tf-spawner.local/python:3.11

# The shared tools' start.sh / stop.sh for this cluster's prefix and ports.
cp_env() {
  TF_SPAWNER_K8S=$CP K8S_APISERVER_PORT=$APISERVER_PORT K8S_ETCD_PORT=12379 K8S_ETCD_PEER_PORT=12380 \
    K8S_ETCD_METRICS_PORT=12381 K8S_KCM_PORT=20257 "$@"
}
kubectl_admin() { env -u KUBECONFIG "$CP/bin/kubectl" --kubeconfig "$CP/kubeconfig" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# pid_of NAME PATTERN: the PID in $PIDS/NAME.pid if that process runs with PATTERN in its command line.
pid_of() {
  local f=$PIDS/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F -- "$2" >/dev/null || return 1
  echo "$pid"
}

# start_daemon NAME COMMAND...: in its own session, output to $LOGS/NAME.log, PID in $PIDS/NAME.pid.
start_daemon() {
  local name=$1
  shift
  env -u KUBECONFIG setsid nohup "$@" </dev/null >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$PIDS/$name.pid"
}

# wait_for WHAT SECONDS NAME CHECK...: until CHECK succeeds; fails early if daemon NAME died.
wait_for() {
  local what=$1 seconds=$2 name=$3 i pid
  shift 3
  pid=$(cat "$PIDS/$name.pid")
  for i in $(seq 1 $((seconds * 2))); do
    "$@" >/dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -30 "$LOGS/$name.log" >&2
      die "$name exited; see $LOGS/$name.log"
    fi
    sleep 0.5
  done
  tail -30 "$LOGS/$name.log" >&2
  die "$what not ready after ${seconds}s; see $LOGS/$name.log"
}
