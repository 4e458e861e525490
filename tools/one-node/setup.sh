#!/bin/bash
# setup.sh - build (once) everything a one-node cluster needs:
#   - the control plane and node binaries (kube-apiserver, kube-controller-manager, kubectl,
#     kube-scheduler, kubelet) of TF_SPAWNER_ONE_NODE_VERSION: v1.36.2 (the default) from
#     ../shared/tools/kube-1.36/install.sh (prebuilt, sha256-checked, ~15 s), or v1.20.2 built
#     from Debian's source by ../shared/tools/kube-apiserver/setup.sh (~12 min once);
#   - containerd, runc, the CNI plugins and debootstrap from Debian's archive (apt-get);
#   (everything else from Debian's packages only)
#   - two images, written as image archives that start.sh imports into containerd:
#       tf-spawner.local/pause:1       the pod sandbox (pause.c, linked statically)
#       tf-spawner.local/python:3.11   Debian 12 minbase + python3 (+ `python`), by debootstrap
#
# Idempotent: what exists is kept (delete $TF_SPAWNER_ONE_NODE/images to rebuild the images).
# Prints progress on stderr and the cache directory on stdout (last line).
# Environment:
#   TF_SPAWNER_ONE_NODE_VERSION  1.36 (default) or 1.20: which cluster (see common.sh)
#   TF_SPAWNER_ONE_NODE   cache and state directory (default ~/.cache/tf-spawner-one-node; the
#                         images are shared by both versions, v1.36's state is in its v1.36/)
#   TF_SPAWNER_KUBE_TOOLS the shared kube-apiserver tools, for 1.20 (default: ../shared/tools/kube-apiserver
#                         beside the repository); TF_SPAWNER_K8S where they keep their binaries
#                         (their default: ~/.cache/tf-spawner-kube-apiserver)
#   TF_SPAWNER_KUBE_136_TOOLS the shared kube-1.36 tools, for 1.36 (default: ../shared/tools/kube-1.36);
#                         TF_SPAWNER_K8S_136 where they install (their default: ~/.cache/tf-spawner-kube-1.36)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TF_SPAWNER_ONE_NODE:-${HOME:?}/.cache/tf-spawner-one-node}
START=$SECONDS

log() { echo "[one-node setup +$((SECONDS - START))s] $*" >&2; }
die() { echo "[one-node setup] ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (containerd, runc and the pod network need it)"
mkdir -p "$CACHE/images"
CACHE=$(cd "$CACHE" && pwd)
source "$HERE/common.sh"
mkdir -p "$STATE"

# Debian packages: the container runtime, the pod network's plugins, and what builds the images.
PACKAGES="containerd runc containernetworking-plugins debootstrap iproute2 iptables gcc libc6-dev python3"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "apt-get install$missing (log: $CACHE/apt-install.log)"
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; } \
      >"$CACHE/apt-install.log" 2>&1; then
    tail -20 "$CACHE/apt-install.log" >&2
    die "apt-get install failed; see $CACHE/apt-install.log"
  fi
fi

# Control plane + node binaries of the chosen version.
if [ "$ONE_NODE_VERSION" = 1.20 ]; then
  # Only missing ones are built: ~7 min + ~4 min on a new machine.
  [ -f "$TOOLS/setup.sh" ] || die "$TOOLS/setup.sh not found: set TF_SPAWNER_KUBE_TOOLS to the shared kube-apiserver tools"
  log "kube binaries v1.20: $TOOLS/setup.sh with kube-scheduler and kubelet"
  K8S_PREFIX=$(K8S_EXTRA_COMPONENTS="kube-scheduler kubelet" bash "$TOOLS/setup.sh" | tail -1)
else
  [ -f "$TOOLS/install.sh" ] || die "$TOOLS/install.sh not found: set TF_SPAWNER_KUBE_136_TOOLS to the shared kube-1.36 tools"
  log "kube binaries v1.36: $TOOLS/install.sh"
  # Once more if it fails: on a new machine its get-etcd.sh ends with `etcd --version | head -1`
  # under pipefail, which exits 141 when head closes the pipe before etcd has written all its
  # lines (seen on a new machine, 2026-12-04); the second run finds everything installed.
  K8S_PREFIX=$(bash "$TOOLS/install.sh" | tail -1) || {
    log "install.sh failed (exit $?); running it once more (it is idempotent)"
    K8S_PREFIX=$(bash "$TOOLS/install.sh" | tail -1)
  }
fi
for b in kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet; do
  [ -x "$K8S_PREFIX/bin/$b" ] || die "$K8S_PREFIX/bin/$b missing after setting up v$ONE_NODE_VERSION"
done
echo "$K8S_PREFIX" > "$STATE/k8s-prefix"

# make_image: tools/one-node/image.sh
source "$HERE/image.sh"

# The pause image: one static binary.
if [ ! -f "$CACHE/images/pause.tar" ]; then
  log "building the pause image (gcc -static)"
  rootfs=$(mktemp -d "$CACHE/pause-rootfs.XXXXXX")
  gcc -static -O2 -Wall -Werror -o "$rootfs/pause" "$HERE/pause.c"
  make_image "$rootfs" tf-spawner.local/pause:1 "$CACHE/images/pause.tar" '["/pause"]' 'null'
  rm -rf "$rootfs"
fi

# The Python image: Debian 12 minbase with python3, from the mirror the machine's apt sources name.
if [ ! -f "$CACHE/images/python.tar" ]; then
  mirror=$(grep -rhoE '(URIs:|^deb) +[a-z]+://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | grep -oE '[a-z]+://[^ ]+' | grep -v security | head -1 || true)
  [ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*"
  rootfs=$CACHE/python-rootfs
  rm -rf "$rootfs"
  log "debootstrap --variant=minbase bookworm + python3 (log: $CACHE/debootstrap.log)"
  if ! debootstrap --variant=minbase --include=python3,python-is-python3 bookworm "$rootfs" "$mirror" \
      >"$CACHE/debootstrap.log" 2>&1; then
    tail -20 "$CACHE/debootstrap.log" >&2
    die "debootstrap failed; see $CACHE/debootstrap.log"
  fi
  # Smaller image: no package caches, lists or docs.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  # A container's /etc/resolv.conf and /etc/hosts are the kubelet's; start empty.
  : >"$rootfs/etc/resolv.conf"
  log "writing the python image archive"
  make_image "$rootfs" tf-spawner.local/python:3.11 "$CACHE/images/python.tar" 'null' '["python3"]'
  rm -rf "$rootfs"
fi

log "ready: v$ONE_NODE_VERSION, images in $CACHE/images, kube binaries in $K8S_PREFIX/bin"
echo "$CACHE"
