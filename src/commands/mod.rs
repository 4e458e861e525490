//! One module per command, each an `exec`: flags (and the [`Settings`]) → options →
//! one library call (`ops/`) → print. Only the entry and these modules know clap's
//! types (with `settings/`, which lowers the flags).
//!
//! [`Settings`]: crate::settings::Settings

pub mod compare;
pub mod complete;
pub mod completions;
pub mod config;
pub mod cp;
pub mod delete;
/// Help that fits a screen: `-h` the summary, `--help` every flag under headings.
pub mod help;
pub mod init;
pub mod list;
pub mod local;
pub mod logs;
pub mod spawn;
pub mod status;
pub mod supervise;
pub mod sweep;
pub mod tensorboard;
/// Before the verbs run: the explicit `spawn` verb, a run's tag given positionally or
/// before the verb, the short usage of a bare `tf-spawner`.
pub mod verbs;
pub mod wait;
