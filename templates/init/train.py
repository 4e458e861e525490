"""Keras training on several workers, made by `tf-spawner init` (docs/starting.md).

    tf-spawner --local -w 2 train.py    # two workers on this machine
    tf-spawner -w 4 train.py            # four pods on the cluster (tf-spawner.yaml)
    tf-spawner -w 4 train.py -- --epochs 10 --lr 0.01   # its own arguments after --

Arguments: --epochs, --steps-per-epoch (default: the environment's EPOCHS and
STEPS_PER_EPOCH, else 3 and 20), --lr (Adam's learning rate, 0.001; a sweep fills it in).
Environment: DATA (an .npz with arrays x and y; without it, synthetic data),
TF_SPAWNER_OUTPUT_DIR (the run's volume; set by tf-spawner).
"""
import argparse
import importlib.util
import os
import shutil
import signal
import sys
import tempfile

# The script's own arguments, read before TensorFlow is imported: a typo ends every task at
# once (exit 2, argparse's usage line) instead of after the workers have met.
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", "3")))
parser.add_argument("--steps-per-epoch", type=int,
                    default=int(os.environ.get("STEPS_PER_EPOCH", "20")))
parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
ARGS = parser.parse_args()

# Keras 2 (tf-keras): Keras 3's Model.fit fails under MultiWorkerMirroredStrategy. Set
# before TensorFlow is imported, and only with tf_keras there (TF 2.15 has Keras 2 built in).
if importlib.util.find_spec("tf_keras"):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if hasattr(tf.keras, "version"):  # Keras 3
    sys.exit("train.py: Model.fit needs Keras 2 here: pip install tf-keras~=%s"
             % ".".join(tf.__version__.split(".")[:2]))

# First of all: the strategy starts this task's server at its TF_CONFIG address.
strategy = tf.distribute.MultiWorkerMirroredStrategy()


def on_sigterm(signum, frame):
    # TensorFlow swallows SIGTERM (a deleted or preempted pod): end now, the backup resumes.
    print("train.py: SIGTERM: stopping; a new run resumes from the backup", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


signal.signal(signal.SIGTERM, on_sigterm)

EPOCHS, STEPS_PER_EPOCH, LEARNING_RATE = ARGS.epochs, ARGS.steps_per_epoch, ARGS.lr
GLOBAL_BATCH = 32 * strategy.num_replicas_in_sync  # split between the workers
OUTPUT = os.environ.get("TF_SPAWNER_OUTPUT_DIR") or os.path.join(tempfile.gettempdir(), "train")
CHIEF = strategy.extended.should_checkpoint  # the chief (else worker 0) keeps files


def dataset():
    if os.environ.get("DATA"):
        with np.load(os.environ["DATA"]) as data:
            x, y = data["x"].astype("float32"), data["y"].astype("int64")
    else:  # the same synthetic data on every worker: a seeded generator
        x = np.random.default_rng(0).normal(size=(2048, 20)).astype("float32")
        y = (x[:, :10].sum(axis=1) > 0).astype("int64")
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat()
    options = tf.data.Options()  # each worker keeps its share of every batch
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return data.batch(GLOBAL_BATCH).with_options(options).prefetch(tf.data.AUTOTUNE)


with strategy.scope():  # the model's variables are mirrored on every worker
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=(20,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(LEARNING_RATE), metrics=["accuracy"],
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

# Every worker names the same directory; a restarted run resumes inside its epoch.
backup = tf.keras.callbacks.BackupAndRestore(os.path.join(OUTPUT, "backup"), save_freq=5)
model.fit(dataset(), epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, callbacks=[backup],
          verbose=2)

# Saving is a collective step: every worker saves, only the chief's copy is kept.
target = os.path.join(OUTPUT, "model") if CHIEF else tempfile.mkdtemp()
os.makedirs(target, exist_ok=True)
model.save(os.path.join(target, "model.keras"))
if CHIEF:
    print("train.py: model saved to %s" % os.path.join(target, "model.keras"), flush=True)
else:
    shutil.rmtree(target)
