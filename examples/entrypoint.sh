#!/usr/bin/env bash
# Example entrypoint for `tf-spawner -c examples/entrypoint.sh ...`.
#
# tf-spawner mounts this file at /script/entrypoint.sh and runs it with bash in every
# pod, instead of `python /script/training-script.py`. Use it to prepare the container
# before training: install packages, fetch data, print diagnostics. It must end by
# starting the training script, and its exit code is the pod's. With
# `tf-spawner --local`, both files are in a temp dir named by TF_SPAWNER_SCRIPT_DIR
# instead of /script: hence "${TF_SPAWNER_SCRIPT_DIR:-/script}" below.
#
# Environment it uses (all optional):
#   REQUIREMENTS_FILE  pip requirements installed first if the file exists
#                      (default /script/requirements.txt; put it in the image or a volume)
#   TF_SPAWNER_SCRIPT_DIR  the script's directory with --local (unset in pods: /script)
#   TF_CONFIG          set by tf-spawner; its "task" part is printed below

set -euo pipefail

script_dir="${TF_SPAWNER_SCRIPT_DIR:-/script}"
# The image's `python`; a machine of a --local run may only have `python3`.
python="$(command -v python || command -v python3 || echo python)"

requirements="${REQUIREMENTS_FILE:-$script_dir/requirements.txt}"
if [[ -f "$requirements" ]]; then
    echo "entrypoint: installing packages from $requirements"
    "$python" -m pip install --no-cache-dir --quiet -r "$requirements"
else
    echo "entrypoint: no $requirements, installing nothing"
fi

# Print who this pod is, from TF_CONFIG (tf-spawner always sets it).
if [[ -n "${TF_CONFIG:-}" ]]; then
    task="$("$python" -c 'import json, os; t = json.loads(os.environ["TF_CONFIG"]).get("task", {}); print("%s-%s" % (t.get("type"), t.get("index")))')"
    echo "entrypoint: task ${task}, ${TOT_WORKERS:-?} workers in total"
else
    echo "entrypoint: TF_CONFIG is not set (not run by tf-spawner?)" >&2
fi

# Replace this shell with the training script, so it gets signals and sets the exit code.
exec "$python" "$script_dir/training-script.py" "$@"
