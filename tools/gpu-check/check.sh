#!/bin/bash
# The GPU check of `--local` (docs/development.md, "On a GPU machine"): run from the
# repository root of a machine with an NVIDIA GPU and no TensorFlow, with a tf-spawner binary
# (TF_SPAWNER) and the wheels of keras, namex and optree (WHEELS), since nothing can be
# fetched there. Each task trains a small Keras 3 model on the torch backend.
set -x
nvidia-smi -L; ls /proc/driver/nvidia/gpus/; echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
python3 -c "import tensorflow" 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ${WHEELS:-.dev-gpu/whl}/*.whl && export PYTHONPATH=/tmp/site
R=$PWD; B=${TF_SPAWNER:-$R/.dev-gpu/tf-spawner}
$B --version
cd /tmp && mkdir -p run && cd run
timeout 120 $B --local -w 3 $R/examples/wiring_check.py; echo "exit $?"
KERAS_BACKEND=torch timeout 240 $B --local -w 2 -t gpu2 $R/tools/gpu-check/gpu_train.py; echo "exit $?"
KERAS_BACKEND=torch CUDA_VISIBLE_DEVICES= EPOCHS=1 timeout 240 $B --local -w 2 -t cpu2 $R/tools/gpu-check/gpu_train.py; echo "exit $?"
KERAS_BACKEND=torch EPOCHS=3 timeout 120 $B --local -w 1 -t gpu1 $R/tools/gpu-check/gpu_train.py; echo "exit $?"
find tf-spawner-output -type f | head; cp -r tf-spawner-output/gpu2/metrics.json $OUT/ 2>/dev/null
nvidia-smi --query-gpu=name,memory.total --format=csv
