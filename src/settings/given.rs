//! Where the settings' values come from and how one is picked ([`Given`]): its flag
//! given on the command line, else the project file's value, else the defaults file's
//! (each through the flag's parser, a path anchored at its file), an untrusted project
//! file's program or outside path left out ([`Untrusted`]); else the kubeconfig's
//! namespace for the entry marked so.

use std::path::PathBuf;

use clap::ArgMatches;
use clap::parser::ValueSource;
use serde_json::Value;

use super::sourced::{Source, Sourced};
use crate::cli::flag_defs::flag_name;
use crate::cli::parse::Parse;
use crate::cluster::connect::ConfigNamespace;
use crate::errors::UsageError;
use crate::settings::defaults::Defaults;

/// Where the settings' values come from: the command line, the project file, the
/// defaults file and the kubeconfig's namespace.
pub(super) struct Given<'a> {
    pub matches: &'a ArgMatches,
    pub file: &'a Defaults,
    /// The project file, and whether its user trusts it (`project.rs`).
    pub project: Option<(&'a Defaults, bool)>,
    /// The kubeconfig context's namespace (or the in-cluster one), if any.
    pub kubeconfig: Option<(String, ConfigNamespace)>,
    /// What an untrusted project file set that it may set only once trusted: each key
    /// and why (filled by [`Table::load`]).
    pub untrusted: std::cell::RefCell<Vec<Untrusted>>,
}

/// A key of an untrusted project file that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Untrusted {
    pub key: &'static str,
    /// `None`: the key runs a program; `Some(path)`: its path is outside the project.
    pub outside: Option<PathBuf>,
}

/// An entry's marks (see `settings!`).
#[derive(Clone, Copy)]
pub(super) struct Marks {
    pub anchored: bool,
    /// Run by this machine (a `program` or a `command`): refused from an untrusted
    /// project file.
    pub program: bool,
    /// A command line or URL: never anchored.
    pub command: bool,
}

impl Given<'_> {
    /// `key`'s value from its flag, else the project file, else the defaults file (each
    /// through the same parser), else `None`. A path a file gives is `anchored` at the
    /// file's directory; a project file's program, or its path outside the project, is
    /// left for [`Given::untrusted`] unless the user trusts the file.
    pub(super) fn pick<T, V: From<T>>(
        &self,
        key: &'static str,
        parse: Parse<T>,
        marks: Marks,
    ) -> Result<Option<Sourced<V>>, UsageError> {
        if let Some(text) = flag_text(self.matches, key) {
            let value = text
                .to_str()
                .ok_or_else(|| format!("{text:?} is not valid UTF-8"))
                .and_then(parse)
                .map_err(|problem| UsageError::new(format!("--{} {problem}", flag_name(key))))?;
            return Ok(Some(Sourced {
                value: V::from(value),
                source: Source::Flag,
            }));
        }
        let files = self
            .project
            .map(|(file, trusted)| (file, Source::Project, trusted))
            .into_iter()
            .chain([(self.file, Source::File, true)]);
        for (file, source, trusted) in files {
            let Some(value) = file.values.get(key) else {
                continue;
            };
            let said = |problem: String| file_problem(file, &source, key, &problem);
            let text = file_text(file, value, marks).map_err(said)?;
            if !trusted {
                let outside = project_outside(file, &text, marks);
                if marks.program || outside.is_some() {
                    self.untrusted.borrow_mut().push(Untrusted { key, outside });
                    continue;
                }
            }
            let value = parse(&text).map_err(said)?;
            return Ok(Some(Sourced {
                value: V::from(value),
                source,
            }));
        }
        Ok(None)
    }

    /// The kubeconfig context's namespace (or the in-cluster service account's), else
    /// `default`.
    pub(super) fn kubeconfig_namespace(&self) -> Sourced<String> {
        let (value, source) = match &self.kubeconfig {
            Some((ns, ConfigNamespace::Context(name))) => {
                (ns.clone(), Source::Kubeconfig(name.clone()))
            }
            Some((ns, ConfigNamespace::InCluster)) => (ns.clone(), Source::InCluster),
            None => ("default".to_string(), Source::Default),
        };
        Sourced { value, source }
    }
}

/// A file's problem with `key`'s value: `config file F: key 'k': …` (or `project file`).
fn file_problem(file: &Defaults, source: &Source, key: &str, problem: &str) -> UsageError {
    let what = match source {
        Source::Project => "project file",
        _ => "config file",
    };
    let path = file.path.as_deref().unwrap_or(std::path::Path::new(""));
    UsageError::new(format!("{what} {}: key '{key}': {problem}", path.display()))
}

/// A file's value as a flag's text, a path anchored at the file's directory (a
/// program's only when it names a path: `python3` is looked up on PATH). An empty path
/// stays empty, for the parser to refuse as it refuses `--dir ''`.
fn file_text(file: &Defaults, value: &Value, marks: Marks) -> Result<String, String> {
    let text = scalar(value)?;
    let anchored = marks.anchored || (marks.program && !marks.command && text.contains('/'));
    match &file.path {
        Some(path) if anchored && !text.is_empty() => Ok(crate::settings::defaults::resolve(
            std::path::Path::new(&text),
            path,
        )
        .display()
        .to_string()),
        _ => Ok(text),
    }
}

/// The path a project file's anchored value names, if it is outside the project's
/// directory (the file's): `..` and `/` lead out, judged on the text (no symlink is
/// followed), as a cloned repository must not point tf-spawner at the user's files.
fn project_outside(file: &Defaults, text: &str, marks: Marks) -> Option<PathBuf> {
    let project = file.path.as_deref()?.parent()?;
    let anchored = marks.anchored || (marks.program && !marks.command && text.contains('/'));
    let path = std::path::Path::new(text);
    (anchored && !text.is_empty() && !lexically_under(path, project)).then(|| path.to_path_buf())
}

/// Whether `path` (absolute) is `dir` or below it once `.` and `..` are taken away.
fn lexically_under(path: &std::path::Path, dir: &std::path::Path) -> bool {
    use std::path::Component;
    let mut normal: Vec<Component> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(normal.last(), Some(Component::Normal(_))) {
                    normal.pop();
                }
            }
            other => normal.push(other),
        }
    }
    normal.iter().collect::<PathBuf>().starts_with(dir)
}

/// A value of the file as the text a flag would take: a string (trimmed), a number, a
/// boolean; nothing (`key:`) is the empty text.
fn scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.trim().to_string()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok(String::new()),
        Value::Array(_) | Value::Object(_) => {
            let mut shown = value.to_string();
            if shown.chars().count() > 40 {
                shown = format!("{}…", shown.chars().take(40).collect::<String>());
            }
            Err(format!("expected one value, got {shown}"))
        }
    }
}

/// The text of flag `id` when it was given on the command line (at the top level, or
/// after the verb).
fn flag_text<'m>(matches: &'m ArgMatches, id: &str) -> Option<&'m std::ffi::OsStr> {
    let given = |m: &'m ArgMatches| {
        let source = m.try_get_raw(id).ok().flatten().map(|_| m.value_source(id));
        match source {
            Some(Some(ValueSource::CommandLine | ValueSource::EnvVariable)) => {
                m.get_raw(id).and_then(|mut raw| raw.next())
            }
            _ => None,
        }
    };
    given(matches).or_else(|| matches.subcommand().and_then(|(_, sub)| given(sub)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_under_the_project_once_dots_are_taken_away() {
        let p = std::path::Path::new("/home/u/exp");
        let under = |path: &str| lexically_under(std::path::Path::new(path), p);
        assert!(under("/home/u/exp/.") && under("/home/u/exp/a/../pods/x.yaml"));
        assert!(!under("/home/u/exp/../exp2/x") && !under("/home/u/exp2"));
        assert!(!under("/home/u/exp/a/../../x") && !under("/etc/passwd"));
    }
}
