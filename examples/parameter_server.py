#!/usr/bin/env python3
"""ParameterServerStrategy training for tf-spawner.

    tf-spawner --strategy parameter-server --ps 2 -w 4 examples/parameter_server.py

One script, three behaviours chosen by the task type in TF_CONFIG:

  worker, ps   start a TensorFlow server and serve until SIGTERM (exit 0); the
               coordinator sends them the work and holds the variables on the ps tasks.
  chief        the coordinator: builds the ParameterServerStrategy, trains a small Keras
               model on synthetic data with model.fit, then exits 0. Its exit decides the
               run; the worker and ps pods never end on their own.
  evaluator    optional side-car (tf-spawner --evaluator): evaluates the checkpoints the
               coordinator writes to CHECKPOINT_DIR. That needs a directory both pods can
               see (a shared volume in the pod templates); without one it just exits 0.

Model.fit with ParameterServerStrategy needs Keras 2: TensorFlow up to 2.15 has it built in;
from 2.16 on, tf.keras is Keras 3, which does not support this strategy. As in mnist.py: with
tf_keras installed (`pip install tf-keras~=2.<minor>`, matching TensorFlow) this script sets
TF_USE_LEGACY_KERAS=1 before importing TensorFlow, so tf.keras is Keras 2; on TF >= 2.16
without tf_keras it exits 1 with one line saying what to install.

Environment:
  EPOCHS            number of epochs (default 5)
  STEPS_PER_EPOCH   steps per epoch (default 50); required by this strategy
  GLOBAL_BATCH      global batch size (default 64)
  MODEL_DIR         where the coordinator saves the trained model (default
                    $TF_SPAWNER_OUTPUT_DIR/model, set by tf-spawner --volume and --local,
                    else /tmp/model), as mnist.py
  CHECKPOINT_DIR    shared directory for checkpoints (optional, see evaluator above)
  TF_USE_LEGACY_KERAS  set to 1 if unset and tf_keras is installed (see above)
"""

import importlib.metadata
import importlib.util
import os
import signal
import sys
import time
import traceback

# Before TensorFlow is imported, and only if tf_keras is there: TF 2.15 reads the variable
# too, and without tf_keras its tf.keras would then fail to import.
if importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

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


FEATURES = 10


def env_int(name, default):
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def build_model():
    """A small regression model, compiled. Used by the coordinator and the evaluator."""
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(32, activation="relu", input_shape=(FEATURES,)),
        tf.keras.layers.Dense(1),
    ])
    # Legacy optimizers are the ones documented with ParameterServerStrategy.
    optimizers = getattr(tf.keras.optimizers, "legacy", tf.keras.optimizers)
    model.compile(optimizer=optimizers.SGD(learning_rate=0.05), loss="mse", metrics=["mae"])
    return model


def synthetic_dataset(batch_size):
    """Endless batches of y = x . w + noise, with a fixed w so the loss can go down."""
    w = tf.reshape(tf.range(1.0, FEATURES + 1.0) / FEATURES, (FEATURES, 1))

    def make(_):
        x = tf.random.normal((batch_size, FEATURES))
        y = tf.matmul(x, w) + 0.01 * tf.random.normal((batch_size, 1))
        return x, y

    return tf.data.Dataset.from_tensors(0).repeat().map(make).prefetch(2)


def run_server(resolver):
    """A worker or ps task: serve the coordinator until the pod is deleted."""
    # Let the coordinator, not this task, decide what to do when a peer fails.
    os.environ["GRPC_FAIL_FAST"] = "use_caller"
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    name = "%s-%d" % (resolver.task_type, resolver.task_id)
    print("%s: serving the coordinator at %s" % (name, server.target), flush=True)

    # Exit 0 at once on SIGTERM (tf-spawner -d, or --local once the chief is done), saying so,
    # also where this process is PID 1 (a pod template with shareProcessNamespace: false), for
    # which SIGTERM does nothing without a handler: the pod would linger for its whole grace
    # period. Python runs the handler between bytecodes, so wait in Python rather than in
    # server.join(); the server runs in its own threads.
    def stop(signum, frame):
        print("%s: stopping on SIGTERM" % name, flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    while True:
        time.sleep(3600)


def run_coordinator(resolver):
    num_ps = len(resolver.cluster_spec().as_dict().get("ps", []))
    # Shard big variables over the parameter servers (small ones stay whole).
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=max(1, num_ps))
    strategy_class = getattr(tf.distribute, "ParameterServerStrategy", None) \
        or tf.distribute.experimental.ParameterServerStrategy
    strategy = strategy_class(resolver, variable_partitioner=partitioner)

    epochs = env_int("EPOCHS", 5)
    steps_per_epoch = env_int("STEPS_PER_EPOCH", 50)
    global_batch = env_int("GLOBAL_BATCH", 64)

    def dataset_fn(input_context):
        # Called on every worker: each builds its own input pipeline.
        batch = input_context.get_per_replica_batch_size(global_batch)
        return synthetic_dataset(batch)

    with strategy.scope():
        model = build_model()
    # Where the variables live: on the parameter servers, not on the coordinator.
    print("chief: variables on %s" % ", ".join(sorted({v.device for v in model.variables})),
          flush=True)

    callbacks = []
    checkpoint_dir = os.environ.get("CHECKPOINT_DIR", "").strip()
    if checkpoint_dir:
        callbacks.append(tf.keras.callbacks.ModelCheckpoint(
            filepath=os.path.join(checkpoint_dir, "ckpt-{epoch}"), save_weights_only=True))

    history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn),
                        epochs=epochs, steps_per_epoch=steps_per_epoch,
                        callbacks=callbacks, verbose=2)
    losses = history.history.get("loss", [])
    print("chief: trained %d epochs of %d steps with %d ps; loss %s"
          % (epochs, steps_per_epoch, num_ps, " -> ".join("%.4f" % l for l in losses)),
          flush=True)

    output_dir = os.environ.get("TF_SPAWNER_OUTPUT_DIR", "").strip()
    model_dir = (os.environ.get("MODEL_DIR", "").strip()
                 or (os.path.join(output_dir, "model") if output_dir else "/tmp/model"))
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, "parameter_server.keras")
    model.save(path)
    print("chief: model saved to %s" % path, flush=True)


def run_evaluator():
    checkpoint_dir = os.environ.get("CHECKPOINT_DIR", "").strip()
    sidecar = getattr(tf.keras.utils, "SidecarEvaluator", None)
    if not checkpoint_dir or sidecar is None:
        print("evaluator-0: nothing to do (set CHECKPOINT_DIR to a directory shared with "
              "the chief, with Keras 2, to evaluate its checkpoints); exiting 0", flush=True)
        return
    model = build_model()
    # Evaluates each new checkpoint as it appears; stops after EPOCHS evaluations, or
    # when no new checkpoint has shown up for a while.
    sidecar(model=model, data=synthetic_dataset(64), checkpoint_dir=checkpoint_dir,
            steps=10, max_evaluations=env_int("EPOCHS", 5)).start()
    print("evaluator-0: done", flush=True)


def main():
    keras_2_or_exit("parameter_server.py", "Model.fit under ParameterServerStrategy")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    task_type = resolver.task_type
    if task_type in ("worker", "ps"):
        run_server(resolver)
    elif task_type == "chief":
        run_coordinator(resolver)
    elif task_type == "evaluator":
        run_evaluator()
    else:
        raise RuntimeError("unexpected task type %r: run this under tf-spawner "
                           "--strategy parameter-server (TF_CONFIG with chief, ps, worker)"
                           % (task_type,))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 - any failure must make the pod fail
        traceback.print_exc()
        sys.exit(1)
