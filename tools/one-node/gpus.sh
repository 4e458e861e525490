#!/bin/bash
# gpus.sh COUNT [RESOURCE] - make the one-node cluster's node advertise COUNT GPUs (default
# resource nvidia.com/gpu; amd.com/gpu, nvidia.com/mig-1g.10gb… work alike), or, with COUNT 0,
# remove the resource again. As the Kubernetes docs advertise an extended resource: a merge
# patch of the node's status.capacity and status.allocatable; the scheduler and the kubelet
# then count it (no device is behind it: a container asking for one starts as any other).
# To try `tf-spawner --gpus 1` by hand (docs/resources.md); tests/pods/gpus.rs does the same
# through the API and puts the node back as it found it.
#
# The node is the cluster's first: the Ready node not labelled tf-spawner.test/second-node
# (a second node, second-node.sh, is left alone). The cluster is the one KUBECONFIG names
# (what start.sh prints); kubectl is $KUBECTL, else the one on PATH, v1.24 or later
# (`patch --subresource=status`; the v1.36 one serves the v1.20 cluster too).
set -euo pipefail

die() { echo "[one-node gpus] ERROR: $*" >&2; exit 1; }
[ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]] || die "usage: gpus.sh COUNT [RESOURCE]  (COUNT 0 removes it)"
COUNT=$1
RESOURCE=${2:-nvidia.com/gpu}
[[ $RESOURCE =~ ^[a-z0-9.-]+\.[a-z]+/[A-Za-z0-9._-]+$ ]] || die "$RESOURCE is not an extended resource name (DOMAIN/NAME)"
[ -n "${KUBECONFIG:-}" ] || die "set KUBECONFIG to the cluster's admin kubeconfig (start.sh prints it)"
KUBECTL=${KUBECTL:-kubectl}

"$KUBECTL" patch --help | grep -q -- --subresource ||
  die "$KUBECTL has no patch --subresource (v1.24+): set KUBECTL to a newer one (the v1.36 kubectl works with the v1.20 cluster too)"
NODE=$("$KUBECTL" get nodes -l '!tf-spawner.test/second-node' \
  -o 'jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
  awk '$2 == "True" { print $1 }' | sort | head -1)
[ -n "$NODE" ] || die "no Ready node (other than a second node) in $KUBECONFIG"

if [ "$COUNT" = 0 ]; then VALUE=null; else VALUE="\"$COUNT\""; fi
PATCH="{\"status\":{\"capacity\":{\"$RESOURCE\":$VALUE},\"allocatable\":{\"$RESOURCE\":$VALUE}}}"
"$KUBECTL" patch node "$NODE" --subresource=status --type=merge -p "$PATCH" >/dev/null
SHOWN=$("$KUBECTL" get node "$NODE" -o "jsonpath={.status.allocatable.${RESOURCE//./\\.}}")
echo "node $NODE: $RESOURCE allocatable ${SHOWN:-none}"
