#!/bin/bash
# prepare.sh LOGS - the background lane of .ci/run: everything the suites need that is mostly
# downloading, unpacking or building things other than our crate, run one after the other at a
# low priority while .ci/run's foreground lane lints, builds and tests (a new machine spends
# ~15 min here: the v1.20 Kubernetes build from Debian's source, the release build of the wheel;
# on idle CPU between the foreground's steps, and under the running-pods suite, whose time is
# mostly spent waiting on the kubelet, it costs the foreground little).
#
# Each task NAME writes LOGS/bg-NAME.log (stderr and stdout), LOGS/bg-NAME.out (its stdout's last
# line: a path or an image name), LOGS/bg-NAME.secs and, last, LOGS/bg-NAME.rc; .ci/run's
# `await_task NAME` waits for the .rc. A failed task fails the tasks that need it, each saying so.
# Tasks, in order: tensorflow (tools/tensorflow/setup.sh), node-1.36 (tools/one-node/setup.sh),
# tf-image (tools/one-node/tensorflow-image.sh), node-1.20 (tools/one-node/setup.sh, which builds
# v1.20), wheel (.ci/wheel.sh: built, installed into a new venv and run).
set -uo pipefail

LOGS=${1:?usage: prepare.sh LOGS}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# task NAME NEEDS COMMAND...: run COMMAND unless a task it needs (space-separated names) failed.
task() {
  local name=$1 needs=$2 need started=$SECONDS rc=0
  shift 2
  for need in $needs; do
    if [ "$(cat "$LOGS/bg-$need.rc" 2>/dev/null)" != 0 ]; then
      echo "not run: it needs '$need', which failed (see bg-$need.log)" >"$LOGS/bg-$name.log"
      echo 1 >"$LOGS/bg-$name.rc"
      return
    fi
  done
  "$@" >"$LOGS/bg-$name.stdout" 2>"$LOGS/bg-$name.log" || rc=$?
  cat "$LOGS/bg-$name.stdout" >>"$LOGS/bg-$name.log"
  tail -n 1 "$LOGS/bg-$name.stdout" >"$LOGS/bg-$name.out"
  echo $((SECONDS - started)) >"$LOGS/bg-$name.secs"
  echo "$rc" >"$LOGS/bg-$name.rc"
}

task tensorflow "" bash tools/tensorflow/setup.sh
task node-1.36 "" env TF_SPAWNER_ONE_NODE_VERSION=1.36 bash tools/one-node/setup.sh
task tf-image "tensorflow node-1.36" bash tools/one-node/tensorflow-image.sh
task node-1.20 "node-1.36" env TF_SPAWNER_ONE_NODE_VERSION=1.20 bash tools/one-node/setup.sh
task wheel "" bash .ci/wheel.sh
