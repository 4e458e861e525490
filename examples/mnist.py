#!/usr/bin/env python3
"""Keras MNIST with MultiWorkerMirroredStrategy, for tf-spawner.

    tf-spawner -w 4 examples/mnist.py
    tf-spawner sweep -w 2 examples/mnist.py --param lr=1e-2,1e-3 -- --lr {lr}

Arguments: --lr RATE, Adam's learning rate (default 1e-3; a sweep's parameter).

Every worker runs this same script; tf-spawner gives each one TF_CONFIG. The chief
(the `chief` task if there is one, else worker 0) saves the trained model to
MODEL_DIR; the other workers must save too (saving is a collective step) but write to
a temporary directory that is deleted afterwards.

Keras: Model.fit under MultiWorkerMirroredStrategy needs Keras 2. TensorFlow up to 2.15
has it built in; from 2.16 on, tf.keras is Keras 3, whose Model.fit fails under this strategy
("Attempt to convert a value (PerReplica:{...}) ... to a Tensor", keras-team/keras#20585).
The recipe of TensorFlow's 2.16 release notes brings Keras 2 back: install tf_keras matching
TensorFlow (`pip install tf-keras~=2.<minor>`) and set TF_USE_LEGACY_KERAS=1 before TensorFlow
is imported. This script sets it when tf_keras is installed (not otherwise: TF 2.15 reads it
too, and its tf.keras would then fail to import without tf_keras), and exits 1 with one line
saying what to install when it finds TF >= 2.16 without tf_keras.

Environment:
  TF_SPAWNER_OUTPUT_DIR set by tf-spawner --volume (and --local): the chief saves the
                        model in its model/ and TensorBoard summaries in its logs/
                        (tf-spawner cp -t TAG model .; tf-spawner tensorboard -t TAG)
  MODEL_DIR             where the chief saves the model (default
                        $TF_SPAWNER_OUTPUT_DIR/model, else /tmp/model)
  MNIST_NPZ             a local copy of mnist.npz (keys x_train, y_train, x_test, y_test);
                        without it the dataset is downloaded (see load_mnist)
  EPOCHS                number of epochs (default 3)
  BATCH_PER_REPLICA     batch size per replica (default 64)
  STEPS_PER_EPOCH       steps per epoch (default: one pass over the training set)
  BACKUP_DIR            where Keras' BackupAndRestore keeps the training state (default
                        $TF_SPAWNER_OUTPUT_DIR/backup; with neither, no backup: a new run
                        starts over). Every task must see the same directory, so on pods it
                        is on the run's volume (see Resuming below); each start of the
                        training backs up in a folder of its own there, gen-K
  BACKUP_EVERY_STEPS    about how many steps apart the backups are (default 100): every K
                        steps, K the largest divisor of the steps per epoch up to it (so every
                        epoch ends on a backup), or it exactly when no divisor is at least half
                        of it; "epoch" backs up at the end of every epoch only
  TF_USE_LEGACY_KERAS   set to 1 if unset and tf_keras is installed (see Keras above)
  TF_SPAWNER_FAIL_TASK  e.g. worker-1: that task raises once it has trained
                        TF_SPAWNER_FAIL_AFTER epochs (default 1) in this process, to see how a
                        failed task is reported and how a run resumes; it then exits with
                        TF_SPAWNER_FAIL_CODE (default 1)

Resuming: a run that stops before its last epoch (a task failed, a pod was deleted,
preempted or evicted) leaves its backup in BACKUP_DIR; the next run with the same
BACKUP_DIR (the same run restarted by `tf-spawner --restarts N`, or the same command
again) restores the model and the optimizer and continues from the step after the last
backup: it prints "worker-0: resuming from epoch K of N (backup in DIR)" (with ", after
step S of M" when the backup was made inside epoch K) and Keras' lines start at "Epoch
K/N". What a loss costs is the steps since the last backup: at most BACKUP_EVERY_STEPS.
When training completes, the backups are deleted, so the next run starts over. To start
over after a failure, delete BACKUP_DIR (tf-spawner cannot: the volume is yours) or point
BACKUP_DIR elsewhere.

A folder per start: each start of the training (a run, a restarted attempt, the same
command again) backs up in BACKUP_DIR/gen-K, K one above the highest there, seeded with a
copy of the newest earlier folder's last complete backup ("worker-0: backup gen-1 seeded
from gen-0's last complete backup (ckpt-41)"). Every task stops, writing nothing more, once
a newer folder appears (checked before each backup, before the end and before saving the
model). So tasks cut off from the cluster (their node partitioned, its containers alive)
that train on while a restarted attempt runs elsewhere cannot change or delete the backup
it restores from, nor save the model over its (see docs/preemption.md, "A partitioned
node").

SIGTERM: a deleted, preempted or evicted pod gets SIGTERM, then SIGKILL after its grace
period (30 s by default). MultiWorkerMirroredStrategy installs a SIGTERM handler of its own
(TensorFlow's preemption notifier: "SIGTERM caught" in the log) that only records the signal
for PreemptionCheckpointHandler, so a TensorFlow script trains on until the SIGKILL. This
script puts the default action back: on SIGTERM it prints one line and ends at once, killed
by the signal (exit code 143). What it loses is the steps since the last backup (at most
BACKUP_EVERY_STEPS). It does not save on SIGTERM: under MultiWorkerMirroredStrategy every
worker must save at the same step, and only PreemptionCheckpointHandler agrees on one (it
saves on SIGTERM and then exits, with code 42 off Google Cloud), which needs a custom
training loop, not Model.fit; Keras' save_before_preemption is only active on Google Cloud.
A lost node sends no SIGTERM at all, so backups every few steps are what bound the loss.
"""

import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback

# Before TensorFlow is imported, and only if tf_keras is there: TF 2.15 reads the variable
# too, and without tf_keras its tf.keras would then fail to import.
if importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def keras_2_or_exit(script, what):
    """Exits 1 with one line unless tf.keras is Keras 2 (see the module docstring)."""
    version = tf.__version__
    major, minor = (int(part) for part in version.split(".")[:2])
    fix = "pip install tf-keras~=%d.%d" % (major, minor)
    setting = os.environ.get("TF_USE_LEGACY_KERAS")
    if setting in ("1", "true", "True"):
        if importlib.util.find_spec("tf_keras") is None:
            problem = "TF_USE_LEGACY_KERAS=%s asks for tf_keras, which is not installed" % setting
        else:
            try:
                have = importlib.metadata.version("tf_keras")
            except importlib.metadata.PackageNotFoundError:
                return  # installed under another name (tf-keras-nightly): trust it
            if have.split(".")[:2] == [str(major), str(minor)]:
                return
            problem = "tf_keras %s does not match it" % have
    elif (major, minor) < (2, 16):
        return  # Keras 2 is built in
    elif setting is not None:
        problem = "TF_USE_LEGACY_KERAS=%s selects Keras 3" % setting
        fix = "leave TF_USE_LEGACY_KERAS unset or 1, with " + fix
    else:
        problem = "its tf.keras is Keras 3 and tf_keras is not installed"
    print("%s: TensorFlow %s: %s needs Keras 2, but %s: %s"
          % (script, version, what, problem, fix), file=sys.stderr, flush=True)
    sys.exit(1)


keras_2_or_exit("mnist.py", "Model.fit under MultiWorkerMirroredStrategy")

# The strategy must be built before anything else touches TensorFlow: building it
# starts this task's gRPC server on its TF_CONFIG address, which must happen before
# TensorFlow's runtime is initialised. Training then waits until every peer is up.
strategy = tf.distribute.MultiWorkerMirroredStrategy()


def end_on_sigterm():
    """SIGTERM ends this task at once, as without TensorFlow (see SIGTERM above).

    Installed after the strategy, whose coordination service installs TensorFlow's own
    handler: the last handler installed is the one that runs. Python runs it in the main
    thread between two steps of Model.fit.
    """
    def end(signum, frame):
        print("mnist.py: SIGTERM: stopping now; a new run resumes from the last backup",
              flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, end)


end_on_sigterm()


def read_tf_config():
    """(task type, task index, cluster) from TF_CONFIG; a lone process is worker 0."""
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = tf_config.get("task") or {}
    return task.get("type", "worker"), int(task.get("index", 0)), tf_config.get("cluster", {})


def is_chief(task_type, task_index, cluster):
    if task_type == "chief":
        return True
    return task_type == "worker" and task_index == 0 and "chief" not in cluster


def env_int(name, default):
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def load_mnist():
    """MNIST as float32 images in [0, 1] with a channel axis, and int64 labels.

    tf.keras.datasets.mnist.load_data() DOWNLOADS the dataset (about 11 MB, from
    storage.googleapis.com) into ~/.keras/datasets on every pod. Offline clusters should
    put a copy of mnist.npz somewhere the pods can read (a volume in the pod template,
    or baked into the image) and set MNIST_NPZ=/data/mnist.npz, e.g. in the -e env file.
    """
    path = os.environ.get("MNIST_NPZ", "").strip()
    if path:
        with np.load(path) as data:
            (x_train, y_train) = data["x_train"], data["y_train"]
            (x_test, y_test) = data["x_test"], data["y_test"]
    else:
        try:
            (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
        except Exception as e:  # noqa: BLE001 - one line instead of three tracebacks
            print("mnist.py: cannot download MNIST (%s); put a copy of mnist.npz where the "
                  "tasks can read it and set MNIST_NPZ to its path" % (e,), file=sys.stderr, flush=True)
            sys.exit(1)

    def prepare(x, y):
        return (x.astype("float32") / 255.0)[..., np.newaxis], y.astype("int64")

    return prepare(x_train, y_train), prepare(x_test, y_test)


def make_dataset(x, y, global_batch, training):
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        # Same seed on every worker: with DATA sharding each worker runs the whole
        # pipeline and keeps its own share of every batch, so the order must agree.
        dataset = dataset.shuffle(10000, seed=42).repeat()
    # The batch is the GLOBAL batch; the strategy splits it between the workers.
    dataset = dataset.batch(global_batch)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def learning_rate():
    """`--lr RATE` among the arguments (a sweep fills it in), else 1e-3."""
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg == "--lr" and i + 1 < len(args):
            return float(args[i + 1])
        if arg.startswith("--lr="):
            return float(arg.split("=", 1)[1])
    return 1e-3


def build_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate()),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class RequestedFailure(RuntimeError):
    """The failure TF_SPAWNER_FAIL_TASK asks for, with the exit code to end with."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class FailAfterEpochs(tf.keras.callbacks.Callback):
    """Raises once this process has trained `count` epochs: a task failing mid-training.

    Counted in this process, not from the run's start, so a run that resumes trains
    `count` more epochs before failing again: every attempt makes progress.
    """

    def __init__(self, name, count, code):
        super().__init__()
        self.name, self.count, self.code = name, count, code
        self.trained = 0

    def on_epoch_begin(self, epoch, logs=None):
        # At the start of the next epoch, once Keras has printed the last one's line (and
        # BackupAndRestore has saved it).
        if self.trained >= self.count:
            raise RequestedFailure("%s: failing after epoch %d, as TF_SPAWNER_FAIL_TASK asks"
                                   % (self.name, epoch), self.code)

    def on_epoch_end(self, epoch, logs=None):
        self.trained += 1


def fail_on_request(name):
    """The callbacks of model.fit: one that fails, if TF_SPAWNER_FAIL_TASK names this task."""
    if os.environ.get("TF_SPAWNER_FAIL_TASK") != name:
        return []
    return [FailAfterEpochs(name, env_int("TF_SPAWNER_FAIL_AFTER", 1),
                            env_int("TF_SPAWNER_FAIL_CODE", 1))]


class ResumeNote(tf.keras.callbacks.Callback):
    """Prints one line when fit starts later than its first step (restored by
    BackupAndRestore): Keras starts the epochs and their steps from the restored ones."""

    def __init__(self, name, epochs, steps, backup_dir):
        super().__init__()
        self.name, self.epochs, self.steps, self.backup_dir = name, epochs, steps, backup_dir
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.epoch is None:
            self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.epoch is None or self.epoch < 0:
            return
        epoch, self.epoch = self.epoch, -1
        if batch > 0:
            print("%s: resuming from epoch %d of %d, after step %d of %d (backup in %s)"
                  % (self.name, epoch + 1, self.epochs, batch, self.steps, self.backup_dir),
                  flush=True)
        elif epoch > 0:
            print("%s: resuming from epoch %d of %d (backup in %s)"
                  % (self.name, epoch + 1, self.epochs, self.backup_dir), flush=True)


def backup_every(steps_per_epoch):
    """BackupAndRestore's save_freq from BACKUP_EVERY_STEPS (see the module docstring)."""
    raw = os.environ.get("BACKUP_EVERY_STEPS", "").strip()
    if raw == "epoch":
        return "epoch"
    target = int(raw) if raw.isdigit() else 100 if not raw else 0
    if target < 1:
        print("mnist.py: BACKUP_EVERY_STEPS must be a number of steps or epoch, not %r" % raw,
              file=sys.stderr, flush=True)
        sys.exit(1)
    divisor = max(k for k in range(1, min(target, steps_per_epoch) + 1)
                  if steps_per_epoch % k == 0)
    return divisor if 2 * divisor >= min(target, steps_per_epoch) else target


GENERATION = "gen-"


def generations(root):
    """The generation numbers of the backup folders in root (gen-0, gen-1, ...), ascending."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(int(n[len(GENERATION):]) for n in names
                  if n.startswith(GENERATION) and n[len(GENERATION):].isdigit())


def complete_backup(folder):
    """The checkpoint prefix (a name in folder/chief) of the last complete backup there, or None.

    TensorFlow writes a checkpoint's files under new names and only then names them in the
    `checkpoint` state file, so the files the state file names are complete (until the next
    backup deletes them).
    """
    chief = os.path.join(folder, "chief")
    try:
        with open(os.path.join(chief, "checkpoint")) as state:
            lines = state.read().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == "model_checkpoint_path":
            prefix = os.path.basename(value.strip().strip('"'))
            return prefix if os.path.isfile(os.path.join(chief, prefix + ".index")) else None
    return None


def copy_backup(source, target):
    """Copies the last complete backup of folder source into target/chief; its epoch name or None.

    Copied into a temporary folder renamed at the end, so target/chief is a whole backup or
    none; a file the source's writer deleted meanwhile (it wrote a newer backup) means reading
    the state file again.
    """
    for _ in range(5):
        prefix = complete_backup(source)
        if prefix is None:
            return None
        partial = os.path.join(target, "chief.partial")
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        chief = os.path.join(source, "chief")
        try:
            for name in os.listdir(chief):
                if name.startswith(prefix + "."):
                    shutil.copy2(os.path.join(chief, name), partial)
            if not os.path.isfile(os.path.join(partial, prefix + ".index")):
                continue
        except FileNotFoundError:
            continue
        with open(os.path.join(partial, "checkpoint"), "w") as state:
            state.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n'
                        % (prefix, prefix))
        os.rename(partial, os.path.join(target, "chief"))
        return prefix
    return None


def sum_over_workers(value):
    """The sum of value over every worker: an all-reduce, so also a barrier."""
    per_replica = strategy.run(lambda: tf.constant(float(value)))
    return int(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None).numpy())


def begin_generation(name, chief, root):
    """This start's generation: the chief makes root/gen-K (K one above the highest there) and
    seeds it with a copy of the newest earlier generation's last complete backup; the other
    workers learn K from it (and wait until the copy is made) through an all-reduce."""
    generation = 0
    if chief:
        os.makedirs(root, exist_ok=True)
        generation = (generations(root) or [-1])[-1] + 1
        while True:
            try:
                os.mkdir(os.path.join(root, GENERATION + str(generation)))
                break
            except FileExistsError:
                generation += 1
        folder = os.path.join(root, GENERATION + str(generation))
        for earlier in reversed(generations(root)):
            if earlier < generation:
                prefix = copy_backup(os.path.join(root, GENERATION + str(earlier)), folder)
                if prefix:
                    print("%s: backup %s%d seeded from %s%d's last complete backup (%s)"
                          % (name, GENERATION, generation, GENERATION, earlier, prefix),
                          flush=True)
                    break
    return sum_over_workers(generation if chief else 0)


class Superseded(RuntimeError):
    """A newer start of this training has begun on the same backup folder."""


class Fence(tf.keras.callbacks.Callback):
    """Stops this start of the training once a newer one has begun (a folder gen-J, J above
    its own K, in the backup root): before each backup, before Keras deletes the backup at
    the end, and (see save_model) before the model is saved. A start whose tasks were cut
    off from the cluster, still running while the restarted run trains, then writes nothing
    more: not a backup, not the model. Listed before BackupAndRestore, whose backup then
    does not happen. At the end, the chief removes the earlier generations' folders (the
    training they hold is complete now), so the next run starts over."""

    def __init__(self, name, chief, root, generation):
        super().__init__()
        self.name, self.chief, self.root, self.generation = name, chief, root, generation

    def check(self, when):
        newer = [g for g in generations(self.root) if g > self.generation]
        if newer:
            raise Superseded("%s: a newer start of this training (%s%d in %s) has begun: this "
                             "one (%s%d) stops %s, writing nothing more"
                             % (self.name, GENERATION, newer[-1], self.root, GENERATION,
                                self.generation, when))

    def on_train_batch_end(self, batch, logs=None):
        self.check("before its next backup")

    def on_epoch_end(self, epoch, logs=None):
        self.check("before its next backup")

    def on_train_end(self, logs=None):
        self.check("before the end of its training")
        if self.chief:
            for earlier in generations(self.root):
                if earlier < self.generation:
                    shutil.rmtree(os.path.join(self.root, GENERATION + str(earlier)),
                                  ignore_errors=True)


def backup_callbacks(name, chief, epochs, steps_per_epoch, output_dir):
    """The fence, BackupAndRestore in a generation of BACKUP_DIR (default OUTPUT_DIR/backup),
    and its resume note; the fence, or None without a backup folder.

    Each start of the training (a run, a restarted attempt, the same command again) backs
    up into a folder of its own, ROOT/gen-K, seeded from the newest earlier one (see
    begin_generation), so a start cut off from the cluster that trains on cannot touch the
    backup the new start restores from. Every task passes the same directory: the chief
    writes the backup in its chief/, the others a temporary copy they remove, and all of
    them restore from the chief's.
    """
    root = (os.environ.get("BACKUP_DIR", "").strip()
            or (os.path.join(output_dir, "backup") if output_dir else ""))
    if not root:
        print("%s: no TF_SPAWNER_OUTPUT_DIR or BACKUP_DIR, so no backup: a new run starts over"
              % name, flush=True)
        return None, []
    generation = begin_generation(name, chief, root)
    fence = Fence(name, chief, root, generation)
    backup_dir = os.path.join(root, GENERATION + str(generation))
    # Saved every few steps (every task at the same step: they train in lockstep), so a
    # resumed run repeats at most those steps; Keras resumes inside the epoch if need be.
    return fence, [fence,
                   tf.keras.callbacks.BackupAndRestore(backup_dir=backup_dir,
                                                       save_freq=backup_every(steps_per_epoch)),
                   ResumeNote(name, epochs, steps_per_epoch, root)]


def remove_generation(fence):
    """After the training: the chief removes its own (now empty) generation's folder."""
    if fence is not None and fence.chief:
        shutil.rmtree(os.path.join(fence.root, GENERATION + str(fence.generation)),
                      ignore_errors=True)


def main():
    task_type, task_index, cluster = read_tf_config()
    name = "%s-%d" % (task_type, task_index)
    chief = is_chief(task_type, task_index, cluster)
    replicas = strategy.num_replicas_in_sync
    global_batch = env_int("BATCH_PER_REPLICA", 64) * replicas
    epochs = env_int("EPOCHS", 3)
    print("%s: %d replicas in sync, global batch %d, chief=%s, cluster=%s"
          % (name, replicas, global_batch, chief, json.dumps(cluster)), flush=True)

    (x_train, y_train), (x_test, y_test) = load_mnist()
    steps_per_epoch = env_int("STEPS_PER_EPOCH", len(x_train) // global_batch)
    train = make_dataset(x_train, y_train, global_batch, training=True)
    test = make_dataset(x_test, y_test, global_batch, training=False)

    # Summaries: the chief's in the run's volume, the others' in a temporary directory
    # (the multi-worker guide's rule for checkpoints and summaries). Writing them needs
    # the tensorboard package, which a minimal TensorFlow image may lack.
    output_dir = os.environ.get("TF_SPAWNER_OUTPUT_DIR", "").strip()
    callbacks = []
    scratch_logs = None
    try:
        import tensorboard  # noqa: F401
        if chief and output_dir:
            log_dir = os.path.join(output_dir, "logs")
        else:
            log_dir = scratch_logs = tempfile.mkdtemp(prefix="mnist-logs-%s-" % name)
        callbacks.append(tf.keras.callbacks.TensorBoard(log_dir=log_dir))
    except ImportError:
        print("%s: no tensorboard package, so no summaries" % name, flush=True)

    with strategy.scope():
        model = build_model()
    fence, backups = backup_callbacks(name, chief, epochs, steps_per_epoch, output_dir)
    callbacks += backups
    model.fit(train, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=2,
              callbacks=callbacks + fail_on_request(name))
    if scratch_logs:
        shutil.rmtree(scratch_logs, ignore_errors=True)
    loss, accuracy = model.evaluate(test, verbose=0)
    print("%s: test loss %.4f, test accuracy %.4f" % (name, loss, accuracy), flush=True)

    # Every worker saves; only the chief's copy is kept.
    model_dir = (os.environ.get("MODEL_DIR", "").strip()
                 or (os.path.join(output_dir, "model") if output_dir else "/tmp/model"))
    if fence is not None:
        fence.check("before saving the model")
    target = model_dir if chief else tempfile.mkdtemp(prefix="mnist-%s-" % name)
    os.makedirs(target, exist_ok=True)
    # The .keras file format works with Keras 3 and with Keras 2 from TF 2.12 on.
    path = os.path.join(target, "mnist.keras")
    model.save(path)
    if chief:
        print("%s: model saved to %s" % (name, path), flush=True)
    else:
        shutil.rmtree(target, ignore_errors=True)
    remove_generation(fence)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RequestedFailure as e:
        traceback.print_exc()
        sys.exit(e.code)
    except Superseded as e:
        print(e, flush=True)
        sys.exit(1)
    except Exception:  # noqa: BLE001 - any failure must make the pod fail
        traceback.print_exc()
        sys.exit(1)
