//! The suite against a real kube-apiserver (v1.20, no nodes), named by the admin
//! kubeconfig in `TF_SPAWNER_TEST_KUBECONFIG`; every test is skipped, with a notice,
//! without it. `.ci/run` builds, starts and stops the server
//! (`../shared/tools/kube-apiserver/`) around `cargo test --test real_server`.

mod after;
mod compare;
mod complete;
mod credentials;
mod delete;
mod detach;
mod dry_run;
mod follow;
mod gang;
mod hardened;
mod limited;
mod outage;
mod queues;
mod rbac;
mod resources;
mod resume;
mod roles;
mod shared;
mod spawn;
mod started;
mod support;
mod sweep;
