"""A custom training loop on several workers, made by `tf-spawner init --custom-loop`.

    tf-spawner --local -w 2 train.py    # two workers on this machine
    tf-spawner -w 4 train.py            # four pods on the cluster (tf-spawner.yaml)
    tf-spawner -w 4 train.py -- --epochs 10 --lr 0.01   # its own arguments after --

On SIGTERM (a deleted or preempted pod) every worker saves a checkpoint at the same step
and exits 42, which `--restarts` retries; the new run goes on from that step.
Arguments: --epochs, --steps-per-epoch (default: the environment's EPOCHS and
STEPS_PER_EPOCH, else 3 and 20), --lr (Adam's learning rate, 0.001; a sweep fills it in).
Environment: DATA (an .npz with arrays x and y; without it, synthetic data),
TF_SPAWNER_OUTPUT_DIR (the run's volume; set by tf-spawner).
"""
import argparse
import importlib.util
import os
import shutil
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

# Keras 2 (tf-keras) where installed, set before TensorFlow is imported (Keras 3 works too).
if importlib.util.find_spec("tf_keras"):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# First of all: the strategy starts this task's server at its TF_CONFIG address.
strategy = tf.distribute.MultiWorkerMirroredStrategy()

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
    return strategy.experimental_distribute_dataset(data.batch(GLOBAL_BATCH).with_options(options))


with strategy.scope():  # the model's and the optimizer's variables, mirrored
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=(20,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(2)])
    optimizer = tf.keras.optimizers.Adam(LEARNING_RATE)

# The handler restores the last checkpoint, and on SIGTERM every worker saves one at the
# same step (the chief in OUTPUT/checkpoint/chief, the others a temporary copy) and exits 42
# at once (os._exit: TensorFlow's own shutdown can outlast a pod's grace period).
checkpoint_dir = os.path.join(OUTPUT, "checkpoint", "chief")
handler = tf.distribute.experimental.PreemptionCheckpointHandler(
    strategy.cluster_resolver, tf.train.Checkpoint(model=model, optimizer=optimizer),
    checkpoint_dir, tf.distribute.experimental.TerminationConfig(
        exit_fn=lambda: (sys.stdout.flush(), os._exit(42))))


@tf.function
def train_step(iterator):
    def step(x, y):
        with tf.GradientTape() as tape:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(losses, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return strategy.reduce("SUM", strategy.run(step, args=next(iterator)), axis=None)


done = int(handler.total_run_calls)  # the steps of earlier runs, restored
if done:
    print("train.py: resuming at step %d of %d (checkpoint in %s)"
          % (done, EPOCHS * STEPS_PER_EPOCH, checkpoint_dir), flush=True)
iterator = iter(dataset())
while handler.total_run_calls < EPOCHS * STEPS_PER_EPOCH:
    loss = handler.run(train_step, iterator)  # one step; on SIGTERM: checkpoint, exit 42
    epoch, step = divmod(int(handler.total_run_calls) - 1, STEPS_PER_EPOCH)
    if (step + 1) % 5 == 0:  # the line tf-spawner reads (docs/progress.md)
        print("tf-spawner: epoch=%d/%d step=%d/%d loss=%.4f"
              % (epoch + 1, EPOCHS, step + 1, STEPS_PER_EPOCH, loss), flush=True)

# Saving is a collective step: every worker saves, only the chief's copy is kept.
target = os.path.join(OUTPUT, "model") if CHIEF else tempfile.mkdtemp()
os.makedirs(target, exist_ok=True)
model.save(os.path.join(target, "model.keras"))
if CHIEF:
    print("train.py: model saved to %s" % os.path.join(target, "model.keras"), flush=True)
    shutil.rmtree(os.path.dirname(checkpoint_dir), ignore_errors=True)  # done: next run starts over
else:
    shutil.rmtree(target)
