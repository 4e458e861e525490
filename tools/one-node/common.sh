# shellcheck shell=bash disable=SC2034  # variables for the scripts that source this file
# Shared by setup.sh, start.sh and stop.sh (sourced; needs ROOT, CACHE and log/die set).
#
# The one cluster of each Kubernetes version: TF_SPAWNER_ONE_NODE_VERSION=1.36 (the default)
# or 1.20. Everything that differs between the two is in the `case` below (and, for the
# kubelet and the scheduler, in start.sh's one `case`). Each version has its own state,
# ports, bridge, subnet, node address and cgroup root, so both clusters can run at once.

ONE_NODE_VERSION=${TF_SPAWNER_ONE_NODE_VERSION:-1.36}
case "$ONE_NODE_VERSION" in
  1.20)
    # The control plane and node binaries are built from Debian's v1.20 source by the shared
    # kube-apiserver tools (with kube-scheduler and kubelet); ~12 min once.
    TOOLS=${TF_SPAWNER_KUBE_TOOLS:-$ROOT/../shared/tools/kube-apiserver}
    STATE=$CACHE                           # as before the switch: the v1.20 cluster's paths are kept
    NODE=tf-spawner-node
    APISERVER_PORT=16443
    ETCD_PORTS=(12379 12380 12381)         # client, peer, metrics
    KCM_PORT=20257
    BRIDGE=tfsp0
    NET=10.244.0                           # pods: $NET.10 and up; the bridge (and the DNS): $NET.1
    NODE_IP=10.244.1.1                     # on lo: the kubelet refuses 127.0.0.1; pods have no route to it
    KUBELET_HEALTHZ_PORT=10248
    CGROUP_ROOT=/                          # pods under /sys/fs/cgroup/*/kubepods
    ;;
  1.36)
    # Prebuilt, sha256-checked binaries from the shared kube-1.36 tools (install.sh, ~15 s).
    TOOLS=${TF_SPAWNER_KUBE_136_TOOLS:-$ROOT/../shared/tools/kube-1.36}
    STATE=$CACHE/v1.36
    NODE=tf-spawner-node-136
    APISERVER_PORT=17443
    ETCD_PORTS=(13379 13380 13381)
    KCM_PORT=20357
    BRIDGE=tfsp1
    NET=10.244.2
    NODE_IP=10.244.3.1
    KUBELET_HEALTHZ_PORT=10268
    CGROUP_ROOT=/tf-spawner-136            # pods under /sys/fs/cgroup/*/tf-spawner-136/kubepods
    ;;
  *) die "TF_SPAWNER_ONE_NODE_VERSION must be 1.20 or 1.36, not '$ONE_NODE_VERSION'" ;;
esac

CP=$STATE/control-plane                # the shared tools' prefix for this cluster's control plane
RUN=$STATE/run                         # everything of a running cluster; stop.sh empties it
PIDS=$RUN/pids
LOGS=$RUN/logs
PKI=$RUN/pki
CNI_CONF=$RUN/cni
IPAM_DIR=$RUN/ipam
CONTAINERD_ROOT=$STATE/containerd      # images (kept: the cache), snapshots, metadata
CONTAINERD_STATE=$RUN/containerd
CONTAINERD_SOCK=$RUN/containerd.sock
KUBELET_ROOT=$RUN/kubelet
IMAGES=$CACHE/images                   # the image archives setup.sh writes, for both versions

APISERVER_URL=https://127.0.0.1:$APISERVER_PORT
HOSTS_MARK="# tf-spawner one-node $ONE_NODE_VERSION" # the /etc/hosts line naming the node
KUBELET_PORT=10250                     # on $NODE_IP only
CLUSTER_DOMAIN=cluster.local
BRIDGE_IP=$NET.1
POD_SUBNET=$NET.0/24
POD_RANGE_START=$NET.10
PAUSE_IMAGE=tf-spawner.local/pause:1
PYTHON_IMAGE=tf-spawner.local/python:3.11
TENSORFLOW_IMAGE=tf-spawner.local/tensorflow:2.21  # optional: tensorflow-image.sh (tools/tensorflow's pins)

# The shared tools' start.sh / stop.sh for this cluster's prefix and ports.
cp_env() {
  TF_SPAWNER_K8S=$CP TF_SPAWNER_K8S_136=$CP K8S_APISERVER_PORT=$APISERVER_PORT \
    K8S_ETCD_PORT=${ETCD_PORTS[0]} K8S_ETCD_PEER_PORT=${ETCD_PORTS[1]} \
    K8S_ETCD_METRICS_PORT=${ETCD_PORTS[2]} K8S_KCM_PORT=$KCM_PORT "$@"
}
kubectl_admin() { env -u KUBECONFIG "$CP/bin/kubectl" --kubeconfig "$CP/kubeconfig" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# archive_config ARCHIVE: the config digest (the image ID) of a `docker save`-format archive
# image.sh wrote (its manifest.json comes first: read without reading the layers).
archive_config() {
  tar --occurrence=1 -xOf "$1" manifest.json \
    | python3 -c 'import json, sys; print("sha256:" + json.load(sys.stdin)[0]["Config"][:-len(".json")])'
}
# containerd_config REF: the config digest of containerd's image REF; nothing if there is none.
containerd_config() {
  local digest
  digest=$(ctr_k8s images ls "name==$1" | awk 'NR > 1 { print $3 }')
  [ -n "$digest" ] || return 0
  ctr_k8s content get "$digest" | python3 -c 'import json, sys; print(json.load(sys.stdin)["config"]["digest"])'
}

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

# our_netns: the pod network namespaces (containerd's cni-<uuid>) holding an address of this
# cluster's pod subnet; the other version's cluster has its own subnet.
our_netns() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-'); do
    ip -n "$ns" -4 -o addr show 2>/dev/null | grep -F " inet $NET." >/dev/null && echo "$ns"
  done
}
