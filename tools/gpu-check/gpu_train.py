# One task of a local run on a GPU machine: say which GPUs it was given, then train a small
# Keras 3 model (torch backend: this machine has no TensorFlow) on synthetic MNIST-shaped data.
import json, os, time
cfg = json.loads(os.environ["TF_CONFIG"])
me = "%s-%s" % (cfg["task"]["type"], cfg["task"]["index"])
import torch
import keras
import numpy as np
print("%s: CUDA_VISIBLE_DEVICES=%s TF_FORCE_GPU_ALLOW_GROWTH=%s torch sees %d GPU(s) %s" % (
    me, os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
    os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "unset"), torch.cuda.device_count(),
    [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]), flush=True)
rng = np.random.default_rng(int(cfg["task"]["index"]))
x = rng.random((60000, 784), dtype=np.float32)
y = (x[:, :10].argmax(axis=1)).astype("int64")
model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(10)])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
began = time.time()
model.fit(x, y, batch_size=256, epochs=int(os.environ.get("EPOCHS", "3")), verbose=2)
print("%s: trained in %.1f s, backend %s, on %s; peak GPU memory %.0f MiB" % (
    me, time.time() - began, keras.backend.backend(),
    "cuda" if torch.cuda.is_available() else "cpu",
    torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0), flush=True)
