"""Keras 3 on JAX, data-parallel over the workers of a run: tf-spawner --framework keras.

    tf-spawner --local --framework keras -w 2 examples/keras_jax.py
    tf-spawner --framework keras -w 2 -i IMAGE_WITH_KERAS_AND_JAX examples/keras_jax.py

tf-spawner gives each worker KERAS_DISTRIBUTION_JOB_ADDRESSES (worker 0, the coordinator),
KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID and KERAS_BACKEND=jax;
keras.distribution.initialize() reads them. It must run before any model is built. Each
worker trains on its own slice of the data with the same number of steps (a worker with
one step fewer waits for its peers for ever), and all print the same losses: the
gradients are averaged across the workers at every step. Synthetic data, so that it needs
nothing but keras and jax (docs/tensorflow.md, "Frameworks").
"""

import argparse
import os

import keras
import numpy as np

keras.distribution.initialize()

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batch-size", type=int, default=32, help="per worker")
args = parser.parse_args()

workers = int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1"))
me = int(os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "0"))
# The batch is split across the processes by hand (auto_shard_dataset works on tf.data).
keras.distribution.set_distribution(keras.distribution.DataParallel(auto_shard_dataset=False))

rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1))).astype("float32")
x, y = x[me::workers], y[me::workers]

keras.utils.set_random_seed(1)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer="adam", loss="mse")
history = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, verbose=2)
print(f"keras_jax.py: worker {me} of {workers}: losses {['%.6f' % v for v in history.history['loss']]}")
