# shellcheck shell=bash disable=SC2034  # variables for the scripts that source this file
# Shared by setup.sh, start.sh and stop.sh (sourced; needs ROOT, CACHE and log/die set).
#
# The one cluster of each Kubernetes version: TF_SPAWNER_ONE_NODE_VERSION=1.36 (the default)
# or 1.20. Everything that differs between the two is in the `case` below (and, for the
# kubelet and the scheduler, in start.sh's one `case`). Each version has its own state,
# ports, bridge, subnet, node address and cgroup root, so both clusters can run at once.

ONE_NODE_VERSION=${TF_SPAWNER_ONE_NODE_VERSION:-1.36}

# The shared tools' directory NAME: ../shared/tools/NAME beside the repository, or, from a git
# worktree kept elsewhere (/work/wt/BRANCH), beside the repository the worktree belongs to.
shared_tools() {
  local common
  if [ ! -d "$ROOT/../shared/tools/$1" ] \
    && common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) \
    && [ -d "$(dirname "$common")/../shared/tools/$1" ]; then
    echo "$(dirname "$common")/../shared/tools/$1"
  else
    echo "$ROOT/../shared/tools/$1"
  fi
}

case "$ONE_NODE_VERSION" in
  1.20)
    # The control plane and node binaries are built from Debian's v1.20 source by the shared
    # kube-apiserver tools (with kube-scheduler and kubelet); ~12 min once.
    TOOLS=${TF_SPAWNER_KUBE_TOOLS:-$(shared_tools kube-apiserver)}
    STATE=$CACHE                           # as before the switch: the v1.20 cluster's paths are kept
    NODE=tf-spawner-node
    APISERVER_PORT=16443
    ETCD_PORTS=(12379 12380 12381)         # client, peer, metrics
    KCM_PORT=20257
    BRIDGE=tfsp0
    BRIDGE_MAC=02:74:66:73:70:00           # fixed: see start.sh's pod network
    NET=10.244.0                           # pods: $NET.10 and up; the bridge (and the DNS): $NET.1
    NODE_IP=10.244.1.1                     # on lo: the kubelet refuses 127.0.0.1; pods have no route to it
    KUBELET_HEALTHZ_PORT=10248
    CGROUP_ROOT=/                          # pods under /sys/fs/cgroup/*/kubepods
    ;;
  1.36)
    # Prebuilt, sha256-checked binaries from the shared kube-1.36 tools (install.sh, ~15 s).
    TOOLS=${TF_SPAWNER_KUBE_136_TOOLS:-$(shared_tools kube-1.36)}
    STATE=$CACHE/v1.36
    NODE=tf-spawner-node-136
    APISERVER_PORT=17443
    ETCD_PORTS=(13379 13380 13381)
    KCM_PORT=20357
    BRIDGE=tfsp1
    BRIDGE_MAC=02:74:66:73:70:01
    NET=10.244.2
    NODE_IP=10.244.3.1
    KUBELET_HEALTHZ_PORT=10268
    CGROUP_ROOT=/tf-spawner-136            # pods under /sys/fs/cgroup/*/tf-spawner-136/kubepods
    ;;
  *) die "TF_SPAWNER_ONE_NODE_VERSION must be 1.20 or 1.36, not '$ONE_NODE_VERSION'" ;;
esac

# The shared tools' --service-cluster-ip-range, and the `kubernetes` Service's address in it
# (the API server's certificate names it).
SERVICE_CIDR=10.96.0.0/12
KUBERNETES_SERVICE_IP=10.96.0.1
# The API server as pods reach it (api_route), like kube-proxy on users' clusters.
api_rule() {
  iptables -t nat "$1" PREROUTING -i "$BRIDGE" -d "$KUBERNETES_SERVICE_IP/32" -p tcp --dport 443 \
    -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT" -m comment --comment "tf-spawner one-node $BRIDGE"
}

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
POD_RANGE_END=$NET.127                 # the first node's pods; the second node's (second-node.sh) above
PAUSE_IMAGE=tf-spawner.local/pause:1
PYTHON_IMAGE=tf-spawner.local/python:3.11
TENSORFLOW_IMAGE=tf-spawner.local/tensorflow:2.21  # optional: tensorflow-image.sh (tools/tensorflow's pins)

# The second node (second-node.sh): on the same bridge and subnet (its pods reach the first
# node's on layer 2; the first node's DNS serves them), its own address range, containerd, kubelet
# state, cgroup root, node address and ports. It carries a NoSchedule taint: only pods that
# tolerate it (the node-failure tests) land there, never those of a test that does not expect
# its node to die.
NODE2=$NODE-2
NODE2_IP=${NODE_IP%.1}.2
NODE2_STATE=$STATE/node-2              # its containerd's images (kept: the cache)
NODE2_RUN=$RUN/node-2                  # everything of the running second node; emptied by its stop
NODE2_POD_RANGE_START=$NET.130
NODE2_POD_RANGE_END=$NET.250
NODE2_HEALTHZ_PORT=$((KUBELET_HEALTHZ_PORT + 1))
NODE2_CGROUP_ROOT=/tf-spawner-$ONE_NODE_VERSION-node-2
NODE2_TAINT_KEY=tf-spawner.test/second-node  # =true:NoSchedule
NODE2_LABEL=tf-spawner.test/second-node=true

# The controller manager's controllers: the shared tools' defaults, with the node-lifecycle
# controller on (nodes go NotReady when their kubelet stops reporting, their pods lose Ready, the
# node is tainted not-ready/unreachable and the taint manager evicts the pods that do not tolerate
# that), as on any real cluster. Off still: node IPAM, routes, cloud nodes, load balancers, volume
# attachment (no cloud, one bridge, no attachable volumes).
case "$ONE_NODE_VERSION" in
  1.20) KCM_CONTROLLERS='*,-nodeipam,-cloud-node-lifecycle,-route,-service,-attachdetach' ;;
  1.36) KCM_CONTROLLERS='*,-node-ipam-controller,-cloud-node-lifecycle-controller' ;; # the tool adds the rest
esac

# The shared tools' start.sh / stop.sh for this cluster's prefix and ports.
cp_env() {
  K8S_KCM_CONTROLLERS=$KCM_CONTROLLERS K8S_KCM_CONTROLLERS_HEAD=$KCM_CONTROLLERS TF_SPAWNER_K8S=$CP TF_SPAWNER_K8S_136=$CP K8S_APISERVER_PORT=$APISERVER_PORT \
    K8S_ETCD_PORT=${ETCD_PORTS[0]} K8S_ETCD_PEER_PORT=${ETCD_PORTS[1]} \
    K8S_ETCD_METRICS_PORT=${ETCD_PORTS[2]} K8S_KCM_PORT=$KCM_PORT "$@"
}
kubectl_admin() { env -u KUBECONFIG "$CP/bin/kubectl" --kubeconfig "$CP/kubeconfig" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }
# remove_containers: kill and remove every task and container of $CONTAINERD_SOCK's containerd
# (best effort: a task that already ended refuses the kill); prints how many containers it removed.
remove_containers() {
  local tasks containers t c
  [ -S "$CONTAINERD_SOCK" ] && ctr_k8s version >/dev/null 2>&1 || { echo 0; return 0; }
  tasks=$(ctr_k8s tasks ls -q 2>/dev/null || true)
  for t in $tasks; do ctr_k8s tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
  for t in $tasks; do ctr_k8s tasks delete -f "$t" >/dev/null 2>&1 || true; done
  containers=$(ctr_k8s containers ls -q 2>/dev/null || true)
  for c in $containers; do ctr_k8s containers rm "$c" >/dev/null 2>&1 || true; done
  echo "$containers" | wc -w
}

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

# --- what start.sh (the first node) and second-node.sh (the second) write alike -----------------

# client_cert NAME SUBJECT: a client certificate $PKI/NAME.crt signed by the cluster's CA (kept).
client_cert() {
  [ -f "$PKI/$1.crt" ] && return 0
  (
    umask 077
    openssl genrsa -out "$PKI/$1.key" 2048 2>/dev/null
    openssl req -new -key "$PKI/$1.key" -subj "$2" -out "$PKI/$1.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$PKI/$1.ext"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$CP/run/pki/ca.crt" -CAkey "$CP/run/pki/ca.key" -CAcreateserial \
      -days 3650 -sha256 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" 2>/dev/null
  )
}
# cert_kubeconfig NAME FILE: a kubeconfig for the API server with client_cert NAME's certificate.
cert_kubeconfig() {
  (
    umask 077
    cat >"$2.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: one-node
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$CP/run/pki/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$1.crt")
    client-key-data: $(base64 -w0 "$PKI/$1.key")
contexts:
- name: $1@one-node
  context: {cluster: one-node, user: $1}
current-context: $1@one-node
EOF
    mv "$2.tmp" "$2"
  )
}

# write_cni_conf DIR RANGE_START RANGE_END IPAM_DIR: a node's CNI configuration, on the bridge.
# isGateway false: the plugin neither routes nor turns on IP forwarding; the bridge already has
# the subnet's first address. No routes: a pod can reach its subnet (peers on either node, DNS)
# and nothing else. Each node allocates from its own range (its own IPAM directory).
write_cni_conf() {
  cat >"$1/cni.conflist.tmp" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "tf-spawner-one-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET", "rangeStart": "$2", "rangeEnd": "$3", "gateway": "$BRIDGE_IP"}]],
        "routes": [{"dst": "$SERVICE_CIDR", "gw": "$BRIDGE_IP"}],
        "dataDir": "$4"
      }
    }
  ]
}
EOF
  # Written whole, then moved: containerd reloads the directory on every write.
  mv "$1/cni.conflist.tmp" "$1/10-tf-spawner.conflist"
}

# write_containerd_conf FILE ROOT STATE SOCKET CNI_DIR: a node's containerd configuration.
write_containerd_conf() {
  cat >"$1" <<EOF
version = 2
root = "$2"
state = "$3"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$4"
[ttrpc]
  address = "$4.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  disable_apparmor = true
  # This machine withholds CAP_SYS_RESOURCE even from root: a process may not lower its
  # oom_score_adj. The kubelet asks for -998 for sandboxes; clamp to containerd's own value.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "${ONE_NODE_RUNC:-$(command -v runc)}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$5"
    max_conf_num = 1
EOF
}

# import_images: containerd ($CONTAINERD_SOCK) gets the image archives it lacks, or whose image
# differs from its own of that name (by config digest: a rebuilt archive, e.g. after
# tools/tensorflow's pins changed, is imported again under its name, so a cached containerd never
# runs a stale image). The TensorFlow image is optional: imported when tensorflow-image.sh wrote it.
import_images() {
  local image ref want have
  for image in pause python tensorflow; do
    ref=$PAUSE_IMAGE; [ $image = python ] && ref=$PYTHON_IMAGE
    [ $image = tensorflow ] && { ref=$TENSORFLOW_IMAGE; [ -f "$IMAGES/tensorflow.tar" ] || continue; }
    want=$(archive_config "$IMAGES/$image.tar")
    have=$(containerd_config "$ref")
    if [ "$have" != "$want" ]; then
      log "importing $ref ($want) into containerd $CONTAINERD_SOCK (namespace k8s.io)${have:+, replacing $have}"
      ctr_k8s images import --no-unpack=false "$IMAGES/$image.tar" >"$LOGS/import-$image.log" 2>&1 \
        || { cat "$LOGS/import-$image.log" >&2; die "could not import $IMAGES/$image.tar"; }
      [ "$(containerd_config "$ref")" = "$want" ] || die "$ref in containerd is not $IMAGES/$image.tar's image after importing it"
    fi
  done
}

# kubelet_setup SOCKET CGROUP_ROOT KUBELET_ROOT: what differs between the versions' kubelets,
# into KUBELET_FLAGS and KUBELET_CONFIG (for write_kubelet_conf).
kubelet_setup() {
  local h
  case "$ONE_NODE_VERSION" in
    1.20)
      KUBELET_FLAGS=(--container-runtime=remote --container-runtime-endpoint="unix://$1"
        --runtime-request-timeout=5m --pod-infra-container-image="$PAUSE_IMAGE")
      KUBELET_CONFIG=""
      [ "$2" = / ] || KUBELET_CONFIG="cgroupRoot: $2"
      ;;
    1.36)
      # --container-runtime, --pod-infra-container-image are gone. 1.36 refuses cgroup v1 unless
      # told (this machine has v1); its own cgroup root and pod log directory keep it apart from
      # a v1.20 kubelet (and the second node's from the first's).
      KUBELET_FLAGS=()
      KUBELET_CONFIG="containerRuntimeEndpoint: unix://$1
runtimeRequestTimeout: 5m
failCgroupV1: false
podLogsDir: $3/pod-logs
cgroupRoot: $2"
      ;;
  esac
  # The cgroup root must exist in every (v1) hierarchy the kubelet uses.
  if [ "$2" != / ]; then
    for h in /sys/fs/cgroup/*/; do
      [ -f "$h/cgroup.procs" ] && mkdir -p "$h${2#/}"
    done
  fi
  return 0
}

# write_kubelet_conf FILE ADDRESS HEALTHZ_PORT EXTRA: a node's KubeletConfiguration (after
# kubelet_setup), serving on ADDRESS:$KUBELET_PORT; EXTRA: more YAML lines (e.g. its taints).
write_kubelet_conf() {
  cat >"$1" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $2
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $3
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: [$BRIDGE_IP]
resolvConf: ""
makeIPTablesUtilChains: false
serializeImagePulls: false
evictionHard: {"memory.available": "100Mi", "nodefs.available": "200Mi", "nodefs.inodesFree": "1%", "imagefs.available": "200Mi"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
$KUBELET_CONFIG
$4
EOF
}

# node_ready NAME: the node's Ready condition is True.
node_ready() {
  [ "$(kubectl_admin get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# node_schedulable NAME: the scheduler places a probe pod on the node, so it knows the node
# (after an API-server restart its node informer may still be relisting, and a pod that only
# prefers the node would go elsewhere). The probe needs only its binding; it is deleted at once.
node_schedulable() {
  local probe=tf-spawner-probe-$1 bound
  kubectl_admin get pod -n default "$probe" >/dev/null 2>&1 || kubectl_admin apply -f - >/dev/null <<PROBE || return 1
apiVersion: v1
kind: Pod
metadata: {name: $probe, namespace: default}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  tolerations: [{operator: Exists}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [$1]}]}]
  containers: [{name: probe, image: $PAUSE_IMAGE, imagePullPolicy: Never}]
PROBE
  bound=$(kubectl_admin get pod -n default "$probe" -o 'jsonpath={.spec.nodeName}' 2>/dev/null)
  [ "$bound" = "$1" ] || return 1
  kubectl_admin delete pod -n default "$probe" --grace-period=0 --force --wait=false >/dev/null 2>&1
  return 0
}
# node_untainted NAME: the node has no node.kubernetes.io/not-ready (or unreachable) taint left.
node_untainted() {
  local keys
  keys=$(kubectl_admin get node "$1" -o 'jsonpath={.spec.taints[*].key}') || return 1
  ! grep -E 'node.kubernetes.io/(not-ready|unreachable)' <<<"$keys" >/dev/null
}
