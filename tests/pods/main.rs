//! The suite against running pods: a one-node Kubernetes cluster (v1.36 or v1.20) built on this
//! machine by `tools/one-node/` (kubelet, scheduler, containerd, a pod network and
//! cluster DNS), named by its admin kubeconfig in `TF_SPAWNER_PODS_KUBECONFIG`; every
//! test is skipped, with a notice, without it. Here nothing writes a pod's status but
//! the kubelet, and every log line comes from a container. `.ci/run` sets it up, runs
//! `cargo test --test pods`, and stops it. The TensorFlow cases (`tensorflow.rs`) also
//! need the one-node TensorFlow image (`tools/one-node/tensorflow-image.sh`).

mod after;
mod detach;
mod env;
mod failures;
mod firsthour;
mod gpus;
mod lifecycle;
mod nodes;
mod notify;
mod outage;
mod reading;
mod restart;
mod run;
mod sidecar;
mod stop;
mod streams;
mod support;
mod sweep;
mod tensorflow;
mod waiting;
