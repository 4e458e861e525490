//! A script's sibling modules: the top-level `import`/`from` lines of a training script
//! that name a module found beside it (`foo.py`, or a package `foo/`). Without `--dir`
//! only the script is shipped, so such an import fails in every pod (and in `--local`'s
//! temporary directory) with `ModuleNotFoundError`; spawn says so at once instead.
//!
//! Cheap and conservative: only lines at the top level (no indentation, outside a
//! triple-quoted string), only absolute imports, and only names with a file or package
//! beside the script count, so a standard-library or installed module never warns.

use std::path::Path;

/// The modules a script imports at its top level (the first part of each dotted name),
/// in order, without repeats. `import a.b as c, d` → `a`, `d`; `from e.f import g` →
/// `e`; relative imports (`from . import x`) are left out. Linear in the script's size
/// (the names seen are a set: a list searched per import took 13 s for 70,000 imports).
pub fn top_level(script: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut in_string = false;
    for line in script.lines() {
        let quotes = line
            .matches("\"\"\"")
            .count()
            .saturating_add(line.matches("'''").count());
        let was_in_string = in_string;
        if quotes % 2 == 1 {
            in_string = !in_string;
        }
        if was_in_string {
            continue;
        }
        let code = line.split(['#', ';']).next().unwrap_or_default();
        let found: Vec<&str> = if let Some(rest) = code.strip_prefix("import ") {
            rest.split(',')
                .filter_map(|part| part.split_whitespace().next())
                .collect()
        } else if let Some(rest) = code.strip_prefix("from ") {
            rest.split_whitespace().next().into_iter().collect()
        } else {
            Vec::new()
        };
        for dotted in found {
            let name = dotted.split('.').next().unwrap_or_default();
            let identifier = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_alphanumeric() || c == '_');
            if identifier && seen.insert(name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// The modules of `imports` found beside `script_path`, as shown: `helpers.py`, `data/`.
/// A package counts when it has an `__init__.py` or any `.py` file (a namespace package).
pub fn beside(script_path: &Path, imports: &[String]) -> Vec<String> {
    let dir = match script_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let own = script_path.file_stem().and_then(|s| s.to_str());
    imports
        .iter()
        .filter(|name| Some(name.as_str()) != own)
        .filter_map(|name| {
            if dir.join(format!("{name}.py")).is_file() {
                return Some(format!("{name}.py"));
            }
            let package = dir.join(name);
            let has_python = std::fs::read_dir(&package).ok()?.flatten().any(|e| {
                e.path().extension().is_some_and(|x| x == "py")
                    && e.file_type().is_ok_and(|t| t.is_file())
            });
            has_python.then(|| format!("{name}/"))
        })
        .collect()
}

/// The one line that says a script imports modules beside it that `--dir` would ship,
/// or nothing.
pub fn warning(script_path: &Path, script: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(script);
    let found = beside(script_path, &top_level(&text));
    if found.is_empty() {
        return None;
    }
    let dir = match script_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
        _ => ".".to_string(),
    };
    let script_name = script_path.file_name().map_or_else(
        || script_path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let names: Vec<&str> = found
        .iter()
        .map(|f| f.trim_end_matches('/').trim_end_matches(".py"))
        .collect();
    Some(format!(
        "{script_name} imports {} from beside it ({}), but only the script is shipped: add --dir {dir} to ship its directory",
        names.join(", "),
        found.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_absolute_imports_outside_strings_count() {
        let script = r#""""A docstring
import not_code
"""
import os, helpers as h  # a comment
import pkg.sub
from data_utils import load
from . import relative
from .local import thing
    import indented
x = 1; import after_semicolon
from models.resnet import ResNet
import os
'''
from also_not_code import x
'''
"#;
        assert_eq!(
            top_level(script),
            ["os", "helpers", "pkg", "data_utils", "models"]
        );
    }

    /// 70,000 imports, each once and then again: every name once, in order. (The scan
    /// is linear; measured, not asserted: docs/development.md.)
    #[test]
    fn many_imports_are_each_named_once_in_order() {
        let script: String = (0..70_000)
            .chain(0..70_000)
            .map(|i| format!("import m{i}\n"))
            .collect();
        let names = top_level(&script);
        assert_eq!(names.len(), 70_000);
        assert_eq!(
            (names[0].as_str(), names[69_999].as_str()),
            ("m0", "m69999")
        );
    }

    #[test]
    fn a_module_or_package_beside_the_script_is_named_once_with_dir() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("train.py");
        std::fs::write(
            &script,
            "import os\nimport helpers\nfrom models import net\nimport data\nimport train\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("helpers.py"), "").unwrap();
        std::fs::create_dir(dir.path().join("models")).unwrap();
        std::fs::write(dir.path().join("models/net.py"), "").unwrap();
        // A directory without Python files is no package; `os` is not beside it.
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/x.csv"), "").unwrap();
        let text = std::fs::read(&script).unwrap();
        let line = warning(&script, &text).unwrap();
        let shown = dir.path().display();
        assert_eq!(
            line,
            format!(
                "train.py imports helpers, models from beside it (helpers.py, models/), but only the script is shipped: add --dir {shown} to ship its directory"
            )
        );
        assert_eq!(warning(&script, b"import os\nimport numpy\n"), None);
    }
}
