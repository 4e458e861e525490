//! Errors that decide the exit code. Everything else is a runtime error (exit 1).

use std::fmt;

pub const EXIT_RUNTIME: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
/// The training ran and failed (a replica failed, or the deciding task exited non-zero).
pub const EXIT_TRAINING_FAILED: u8 = 3;
/// A wait ran out of time (`--timeout`).
pub const EXIT_TIMEOUT: u8 = 4;
/// The run did not start in time (`--start-timeout`): a task still not running.
pub const EXIT_START_TIMEOUT: u8 = 5;
/// The run could not start: a task's image cannot be pulled (past `--pull-grace`), its
/// configuration names what is not there (CreateContainerConfigError: an unknown
/// ConfigMap, Secret or key), its container cannot be created: the run's set-up, not
/// the training, failed (a pipeline retries or fixes its image, not its script).
pub const EXIT_CANNOT_START: u8 = 6;
/// The tag is taken: a run of that tag is in the namespace (a spawn creates nothing).
pub const EXIT_TAG_TAKEN: u8 = 7;
pub const EXIT_INTERRUPTED: u8 = 130;
pub const EXIT_TERMINATED: u8 = 143;

/// A problem with the command line or an input file, found before any API call: exit 2.
#[derive(Debug)]
pub struct UsageError(String);

impl UsageError {
    pub fn new(message: impl Into<String>) -> Self {
        UsageError(message.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An error that ends the program with a specific exit code (a verdict, a signal).
#[derive(Debug)]
pub struct ExitError {
    pub code: u8,
    pub message: String,
}

impl ExitError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        ExitError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ExitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// The exit code for an error that reached `main`.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if let Some(e) = err.downcast_ref::<ExitError>() {
        e.code
    } else if err.downcast_ref::<UsageError>().is_some() {
        EXIT_USAGE
    } else {
        EXIT_RUNTIME
    }
}

/// One line: the error and its causes, joined with ": ".
pub fn one_line(err: &anyhow::Error) -> String {
    causes(err.as_ref()).join(": ").replace('\n', " ")
}

/// The error and its sources, outermost first, leaving out any a previous one already
/// says (wrappers often repeat their cause's text).
pub fn causes(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts
}
