#!/bin/bash
# The Python wheel (pyproject.toml): build it, then prove it on this machine.
#
#   1. tools: maturin and ziglang, pinned, from PyPI with pip, in a cached venv;
#   2. build: `maturin build --release --locked --zig`, linking against glibc 2.17 with zig,
#      in a cargo target dir of its own (in the cache) so the normal build is not disturbed;
#   3. the wheel: its file name and WHEEL tags are manylinux2014_x86_64 /
#      manylinux_2_17_x86_64 and nothing else, its METADATA version is the crate's;
#   4. a new venv: `pip install --no-index` of the wheel; `tf-spawner` on its PATH is the
#      venv's, `tf-spawner --version` prints the crate's version, and
#      `tf-spawner --local -w 2 examples/wiring_check.py` succeeds (both workers agree);
#   5. glibc: the installed binary (and the one in the wheel) needs no GLIBC_ symbol version
#      above 2.17 (tools/max-glibc.py).
#
# Run from anywhere as `bash .ci/wheel.sh`; x86-64 Linux only. The wheel is left in
# target/wheels/. Fails on the first failing step.
# Environment:
#   TF_SPAWNER_WHEEL_CACHE  tools venv, cargo target dir and zig's cache
#                           (default ~/.cache/tf-spawner-wheel; cache it between CI runs)
set -euo pipefail

MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.15.2
GLIBC_MAX=2.17
TARGET=x86_64-unknown-linux-gnu

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE=${TF_SPAWNER_WHEEL_CACHE:-$HOME/.cache/tf-spawner-wheel}
TOOLS=$CACHE/tools-venv
OUT=$ROOT/target/wheels

START=$SECONDS
step_start=$SECONDS
step() {
  echo
  echo "--- [wheel] $*"
  step_start=$SECONDS
}
step_done() {
  echo "--- [wheel] ok ($((SECONDS - step_start)) s)"
}
fail() {
  echo "error: $*" >&2
  exit 1
}

[ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] ||
  fail "the wheel is built and checked on x86-64 Linux; this is $(uname -s)/$(uname -m)"

step "tools: maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION (venv $TOOLS)"
mkdir -p "$CACHE"
stamp="maturin==$MATURIN_VERSION ziglang==$ZIGLANG_VERSION $(python3 -c 'import sys; print(sys.version.split()[0])')"
if [ -x "$TOOLS/bin/python" ] && [ "$(cat "$TOOLS/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "cached: $stamp"
else
  rm -rf "$TOOLS"
  python3 -m venv "$TOOLS"
  # Binary wheels only: a missing one fails here instead of compiling maturin from source.
  "$TOOLS/bin/python" -m pip install --disable-pip-version-check --quiet --only-binary=:all: \
    "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION"
  echo "$stamp" >"$TOOLS/stamp"
fi
# maturin finds zig as `python3 -m ziglang`: the tools venv's python3 must come first.
export PATH=$TOOLS/bin:$PATH
maturin --version
python3 -m ziglang version | sed 's/^/zig /'
step_done

VERSION=$(cargo metadata --no-deps --locked --format-version 1 | python3 -c '
import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tf-spawner"))')
echo "crate version: $VERSION"

step "build: maturin build --release --locked --zig --target $TARGET"
# A target dir of its own: zig's linker and glibc 2.17 would otherwise rebuild target/release.
export CARGO_TARGET_DIR=$CACHE/target
export ZIG_GLOBAL_CACHE_DIR=$CACHE/zig
mkdir -p "$OUT"
rm -f "$OUT"/tf_spawner-*.whl
maturin build --release --locked --zig --target "$TARGET" --out "$OUT"
step_done

step "the wheel: name, tags, version"
shopt -s nullglob
wheels=("$OUT"/tf_spawner-*.whl)
shopt -u nullglob
[ "${#wheels[@]}" = 1 ] || fail "expected one wheel in $OUT, found ${#wheels[@]}: ${wheels[*]:-none}"
WHEEL=${wheels[0]}
echo "$WHEEL"
python3 - "$WHEEL" "$VERSION" <<'EOF'
import email.parser, os, sys, zipfile

path, version = sys.argv[1], sys.argv[2]
allowed = {"manylinux2014_x86_64", "manylinux_2_17_x86_64"}
errors = []
# name-version-pythontag-abitag-platformtag.whl, each tag possibly a dotted set
name, file_version, python_tag, abi_tag, platform_tag = os.path.basename(path)[: -len(".whl")].split("-")
if name != "tf_spawner":
    errors.append("file name: distribution %r, expected tf_spawner" % name)
if file_version != version:
    errors.append("file name: version %s, the crate's is %s" % (file_version, version))
file_platforms = set(platform_tag.split("."))
if not file_platforms or not file_platforms <= allowed:
    errors.append("file name: platform tag %s, expected only %s" % (platform_tag, " or ".join(sorted(allowed))))
with zipfile.ZipFile(path) as wheel:
    names = wheel.namelist()
    dist_infos = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")})
    if dist_infos != ["tf_spawner-%s.dist-info" % version]:
        sys.exit("error: %s: .dist-info %s, expected tf_spawner-%s.dist-info" % (path, dist_infos, version))
    meta = email.parser.Parser().parsestr(wheel.read(dist_infos[0] + "/WHEEL").decode())
    metadata = email.parser.Parser().parsestr(wheel.read(dist_infos[0] + "/METADATA").decode())
tags = meta.get_all("Tag") or []
tag_platforms = {tag.split("-")[2] for tag in tags}
if not tag_platforms or not tag_platforms <= allowed:
    errors.append("WHEEL: tags %s, expected only %s" % (", ".join(tags) or "none", " or ".join(sorted(allowed))))
if tag_platforms != file_platforms:
    errors.append("WHEEL tags %s do not match the file name's %s" % (sorted(tag_platforms), sorted(file_platforms)))
if meta.get("Root-Is-Purelib", "").lower() != "false":
    errors.append("WHEEL: Root-Is-Purelib is %r, expected false" % meta.get("Root-Is-Purelib"))
if metadata.get("Name") != "tf-spawner" or metadata.get("Version") != version:
    errors.append("METADATA: %s %s, expected tf-spawner %s" % (metadata.get("Name"), metadata.get("Version"), version))
script = "tf_spawner-%s.data/scripts/tf-spawner" % version
if script not in names:
    errors.append("no %s in the wheel" % script)
if errors:
    sys.exit("error: %s:\n  %s" % (path, "\n  ".join(errors)))
print("tags: %s" % ", ".join(tags))
print("metadata: %s %s" % (metadata["Name"], metadata["Version"]))
EOF
step_done

step "a new venv: pip install --no-index, tf-spawner --version, --local -w 2 examples/wiring_check.py"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --disable-pip-version-check --quiet --no-index "$WHEEL"
(
  # The venv as its activate script sets it up, without the tools venv.
  export PATH=$WORK/venv/bin:${PATH#"$TOOLS/bin:"}
  export VIRTUAL_ENV=$WORK/venv
  found=$(command -v tf-spawner) || fail "tf-spawner is not on the venv's PATH"
  [ "$found" = "$WORK/venv/bin/tf-spawner" ] || fail "tf-spawner on PATH is $found, not the venv's"
  version_line=$(tf-spawner --version)
  echo "$version_line"
  [ "$version_line" = "tf-spawner $VERSION" ] ||
    fail "tf-spawner --version printed '$version_line', expected 'tf-spawner $VERSION' (Cargo.toml)"
  tf-spawner --local -w 2 --timeout 2m examples/wiring_check.py | tee "$WORK/local.log"
  agreed=$(grep -c 'cluster of 2 tasks agrees on' "$WORK/local.log" || true)
  [ "$agreed" = 2 ] || fail "expected both workers to agree, $agreed did"
)
step_done

step "glibc: no GLIBC_ symbol version above $GLIBC_MAX"
python3 tools/max-glibc.py --max "$GLIBC_MAX" "$WORK/venv/bin/tf-spawner" "$WHEEL"
step_done

echo
echo "--- [wheel] $(basename "$WHEEL"): built and checked in $((SECONDS - START)) s"
