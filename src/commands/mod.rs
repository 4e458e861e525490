//! One module per command: each turns parsed flags into library calls and prints.

pub mod completions;
pub mod config;
pub mod delete;
pub mod list;
pub mod local;
pub mod logs;
pub mod spawn;
pub mod status;
pub mod summary;
pub mod wait;
