"""A tiny Keras fit for tf-spawner's progress fixtures: 2 epochs of 5 steps, each step
slowed to 60 ms so that the progress bar redraws at every step."""
import sys
import time

verbose = sys.argv[1] if len(sys.argv) > 1 else "auto"
verbose = verbose if verbose == "auto" else int(verbose)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

keras = tf.keras


class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.06)


x = np.random.RandomState(0).rand(160, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
model = keras.Sequential([keras.layers.Input(shape=(8,)),
                          keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=2, verbose=verbose, callbacks=[Slow()])
