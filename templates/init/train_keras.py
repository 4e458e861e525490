"""Keras 3 on JAX, data-parallel on several workers, made by `tf-spawner init --framework keras`.

    tf-spawner --local -w 2 train.py    # two workers on this machine
    tf-spawner -w 4 train.py            # four pods on the cluster (tf-spawner.yaml)
    tf-spawner -w 4 train.py -- --epochs 10 --lr 0.01   # its own arguments after --

Arguments: --epochs, --steps-per-epoch (default: the environment's EPOCHS and
STEPS_PER_EPOCH, else 3 and 20), --lr (Adam's learning rate, 0.001; a sweep fills it in).
Environment: DATA (an .npz with arrays x and y; without it, synthetic data),
TF_SPAWNER_OUTPUT_DIR (the run's volume), KERAS_DISTRIBUTION_* (set by tf-spawner).
"""
import argparse
import os
import shutil
import signal
import tempfile

# The script's own arguments, read before JAX starts: a typo ends every task at once.
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", "3")))
parser.add_argument("--steps-per-epoch", type=int,
                    default=int(os.environ.get("STEPS_PER_EPOCH", "20")))
parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
ARGS = parser.parse_args()

os.environ.setdefault("KERAS_BACKEND", "jax")  # keras.distribution trains processes on JAX
import keras  # noqa: E402
import numpy as np  # noqa: E402

# First of all, before any model is built: the processes meet at worker 0 (the coordinator).
keras.distribution.initialize()


def on_sigterm(signum, frame):
    # JAX catches SIGTERM (a deleted or preempted pod) and trains on: end now, the backup
    # resumes. Installed after initialize(), so that it replaces JAX's handler.
    print("train.py: SIGTERM: stopping; a new run resumes from the backup", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


signal.signal(signal.SIGTERM, on_sigterm)
WORKERS = int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1"))
ME = int(os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "0"))
# The model is replicated; each worker feeds its own slice of every batch.
keras.distribution.set_distribution(keras.distribution.DataParallel(auto_shard_dataset=False))

OUTPUT = os.environ.get("TF_SPAWNER_OUTPUT_DIR") or os.path.join(tempfile.gettempdir(), "train")
BATCH = 32  # per worker


def dataset():
    if os.environ.get("DATA"):
        with np.load(os.environ["DATA"]) as data:
            x, y = data["x"].astype("float32"), data["y"].astype("int64")
    else:  # the same synthetic data on every worker: a seeded generator
        x = np.random.default_rng(0).normal(size=(2048, 20)).astype("float32")
        y = (x[:, :10].sum(axis=1) > 0).astype("int64")
    # This worker's share, cut to whole batches: every worker must run the same number of
    # steps (one step fewer and its peers wait for it for ever).
    x, y = x[ME::WORKERS], y[ME::WORKERS]
    steps = min(len(x) // BATCH, ARGS.steps_per_epoch)
    return x[: steps * BATCH], y[: steps * BATCH], steps


x, y, steps = dataset()
keras.utils.set_random_seed(0)  # the same initial weights on every worker
model = keras.Sequential([keras.Input(shape=(x.shape[1],)),
                          keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adam(ARGS.lr), metrics=["accuracy"],
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

# Each worker keeps its own backup (they hold the same weights; Keras deletes it when
# training completes). A restarted run restores worker 0's on every worker: a worker lost
# mid-epoch may have kept another epoch, and workers at different epochs wait for ever.
backups = os.path.join(OUTPUT, "backup")
mine, first = os.path.join(backups, "worker-%d" % ME), os.path.join(backups, "worker-0")
if ME != 0 and os.path.isdir(first):  # worker 0 writes it only once all are training
    shutil.rmtree(mine, ignore_errors=True)
    shutil.copytree(first, mine)
backup = keras.callbacks.BackupAndRestore(mine, double_checkpoint=True)
model.fit(x, y, batch_size=BATCH, epochs=ARGS.epochs, shuffle=False, callbacks=[backup],
          verbose=2)

# Saving is a collective step (the weights are gathered from every process): every worker
# saves, only worker 0's copy is kept.
target = os.path.join(OUTPUT, "model") if ME == 0 else tempfile.mkdtemp()
os.makedirs(target, exist_ok=True)
model.save(os.path.join(target, "model.keras"))
if ME == 0:
    print("train.py: model saved to %s" % os.path.join(target, "model.keras"), flush=True)
else:
    shutil.rmtree(target)
