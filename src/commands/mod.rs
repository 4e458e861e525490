//! One module per command: each turns parsed flags into library calls and prints.

pub mod delete;
pub mod spawn;

use crate::cli::SpawnArgs;
use crate::cluster::retry::RetryPolicy;

/// Retry bounds from the flags.
pub fn retry_policy(_args: &SpawnArgs) -> RetryPolicy {
    RetryPolicy::default()
}
