//! TensorFlow in the test loop: the examples train for real, through `tf-spawner --local`,
//! with the interpreter named by `TF_SPAWNER_TF_PYTHON` (a venv with the pinned
//! tensorflow-cpu and tf-keras of `tools/tensorflow/`, which `tools/tensorflow/setup.sh`
//! makes and `.ci/run` passes). Without it every test prints `SKIPPED` and passes, so
//! `cargo test` needs no TensorFlow. The cases expect TensorFlow 2.16 or newer (Keras 3
//! bundled, Keras 2 from tf_keras), as pinned.
//!
//! The assertions are on what TensorFlow printed (Keras' epoch lines, the examples' own
//! lines) and the files the chief wrote, not only on exit codes.

mod local;
mod lost;
mod starter;
mod support;
mod tensorboard;
