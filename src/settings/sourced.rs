//! A setting's value and where it came from ([`Sourced`], [`Source`]), and the row
//! `config` shows of one ([`Row`]: each type's value as JSON through [`Shown`]).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::metrics::notice::Target;
use crate::plan::podgroup::Gang;
use crate::verdict::retryable::RestartOn;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Flag,
    /// The project file (`tf-spawner.yaml` here or above, `project.rs`).
    Project,
    /// The defaults file.
    File,
    /// The kubeconfig context's namespace (the context's name).
    Kubeconfig(String),
    InCluster,
    Default,
}

impl Source {
    /// The name `config -o json` shows.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Project => "project",
            Source::File => "file",
            Source::Kubeconfig(_) => "kubeconfig",
            Source::InCluster => "in-cluster",
            Source::Default => "default",
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// A built-in default.
pub(super) fn built_in<T>(value: T) -> Sourced<T> {
    Sourced {
        value,
        source: Source::Default,
    }
}

/// One row of `config`: the key, its value (`None`: the built-in default, described by
/// `default_text`), and its source.
pub(crate) struct Row {
    pub key: &'static str,
    pub value: Option<Value>,
    pub default_text: &'static str,
    pub source: Source,
}

impl Row {
    pub(super) fn new<T: Shown>(
        key: &'static str,
        setting: &Sourced<T>,
        default_text: &'static str,
    ) -> Row {
        Row {
            key,
            value: setting.value.shown(),
            default_text,
            source: setting.source.clone(),
        }
    }
}

/// How `config` shows a value (`None`: it has none).
pub(super) trait Shown {
    fn shown(&self) -> Option<Value>;
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> Option<Value> {
        self.as_ref().and_then(Shown::shown)
    }
}

impl Shown for String {
    fn shown(&self) -> Option<Value> {
        Some(self.clone().into())
    }
}

impl Shown for PathBuf {
    fn shown(&self) -> Option<Value> {
        Some(self.display().to_string().into())
    }
}

impl Shown for u16 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for u32 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for i64 {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for bool {
    fn shown(&self) -> Option<Value> {
        Some((*self).into())
    }
}

impl Shown for Target {
    fn shown(&self) -> Option<Value> {
        Some(self.to_string().into())
    }
}

impl Shown for Duration {
    fn shown(&self) -> Option<Value> {
        Some(humantime::format_duration(*self).to_string().into())
    }
}

impl Shown for crate::framework::Framework {
    fn shown(&self) -> Option<Value> {
        Some(self.as_str().into())
    }
}

impl Shown for Gang {
    fn shown(&self) -> Option<Value> {
        Some(self.as_str().into())
    }
}

impl Shown for crate::metrics::early::Rule {
    fn shown(&self) -> Option<Value> {
        Some(self.name().into())
    }
}

impl Shown for crate::ops::wait::OnCancel {
    fn shown(&self) -> Option<Value> {
        Some(self.name().into())
    }
}

impl Shown for RestartOn {
    fn shown(&self) -> Option<Value> {
        Some(self.to_string().into())
    }
}
