#!/bin/bash
# build.sh - the image a detached run's supervisor runs (spawn --detach --supervisor-image):
# the tf-spawner binary at /usr/local/bin/tf-spawner, the shared libraries it links (glibc's,
# found by ldd), the CA certificates of this machine (for --notify https:// URLs) and a
# non-root user (65532, as the Job's pod runs), nothing else: no shell, no package manager.
# Written as a `docker save` archive (tools/one-node/image.sh's make_image), which
# `docker load -i`, `podman load -i`, `ctr images import` and
# `skopeo copy docker-archive:OUT.tar docker://REGISTRY/tf-spawner-supervisor:TAG` read;
# push it to a registry your cluster pulls from, then name it with --supervisor-image (or
# supervisor_image in the config file).
#
# Usage: tools/supervisor-image/build.sh [BINARY] [OUT.tar] [NAME:TAG]
#   BINARY   a Linux x86-64 tf-spawner (default: target/release/tf-spawner, built if missing)
#   OUT.tar  where the archive goes (default: target/tf-spawner-supervisor.tar)
#   NAME:TAG the name inside the archive (default: tf-spawner-supervisor:VERSION)
# The image's name is printed on stdout (last line), progress on stderr.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
log() { echo "[supervisor image] $*" >&2; }
die() { echo "[supervisor image] ERROR: $*" >&2; exit 1; }

BIN=${1:-$ROOT/target/release/tf-spawner}
OUT=${2:-$ROOT/target/tf-spawner-supervisor.tar}
if [ ! -x "$BIN" ] && [ -z "${1:-}" ]; then
  log "building $BIN (cargo build --release)"
  (cd "$ROOT" && cargo build --release --locked >&2)
fi
[ -x "$BIN" ] || die "$BIN is not an executable"
version=$("$BIN" --version | awk '{print $2}')
NAME=${3:-tf-spawner-supervisor:$version}
file "$BIN" 2>/dev/null | grep -q 'x86-64' || [ "$(uname -m)" = x86_64 ] \
  || die "$BIN is not a Linux x86-64 binary (the pods' nodes run those)"

CACHE=$(mktemp -d "${TMPDIR:-/tmp}/tf-spawner-supervisor.XXXXXX")
trap 'rm -rf "$CACHE"' EXIT
# shellcheck source=tools/one-node/image.sh
source "$ROOT/tools/one-node/image.sh"

rootfs=$CACHE/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
cp "$BIN" "$rootfs/usr/local/bin/tf-spawner"
chmod 0755 "$rootfs/usr/local/bin/tf-spawner"
# Every library the loader would map, at the path it would map it from.
for lib in $(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  [ -f "$ca" ] && { cp -L "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"; break; }
done
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' \
  >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
# It runs, from the image's files alone.
chroot "$rootfs" /usr/local/bin/tf-spawner --version >/dev/null 2>&1 \
  || [ "$(id -u)" != 0 ] || die "the binary does not run in the image's files (a library missing?)"

mkdir -p "$(dirname "$OUT")"
make_image "$rootfs" "$NAME" "$OUT" '["tf-spawner"]' '[]'
log "$OUT: $NAME ($(du -h "$OUT" | cut -f1))"
echo "$NAME"
