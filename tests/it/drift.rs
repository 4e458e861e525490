//! Drift that cannot come back: every file of this repository a comment or a doc
//! names exists, and `lib.rs` names the layers ARCHITECTURE.md draws. Files only: no
//! binary, no server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What is read for mentions (below the repository's root).
const WALKED: &[&str] = &[
    "src",
    "tests",
    "docs",
    "tools",
    "benches",
    "examples",
    "testserver/src",
    "testserver/tests",
    "ARCHITECTURE.md",
    "README.md",
];

/// The files read: text that may name a file.
const READ: &[&str] = &["rs", "md", "py", "sh", "toml", "yaml"];

/// The endings of a mention that is checked.
const CHECKED: &[&str] = &["rs", "md", "py", "sh", "toml", "yaml"];

/// Where a mention that is not Rust must begin, after any `../`, to be one of this
/// repository's files (a doc's `exp/train.py`, `src/train.py` or `../proj/pod.yaml` is
/// the user's, `../shared/tools/…` the machine's).
const ROOTS: &[&str] = &[
    "tests",
    "docs",
    "tools",
    "benches",
    "examples",
    "templates",
    "testserver",
    "README.md",
    "ARCHITECTURE.md",
];

/// Files a recipe of ARCHITECTURE.md makes ("A new verb", say `describe`): named there,
/// and not (yet) here.
const PLANNED: &[&str] = &["commands/describe.rs", "ops/describe.rs"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files below `at` (a file: itself), build outputs and git's own left out.
fn files(at: &Path, out: &mut Vec<PathBuf>) {
    if at.is_file() {
        out.push(at.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(at) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        files(&path, out);
    }
}

fn ending(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next()?;
    let (stem, ending) = name.rsplit_once('.')?;
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!stem.is_empty() && stem.chars().all(plain)).then_some(ending)
}

/// The paths of this repository's files a line names: `src/ops/wait/fold.rs`,
/// `ops/restart/mod.rs` (below `src/`), `../README.md`, a bare `labels.rs`; not a URL's,
/// an absolute path, `$HOME/…`, nor a path of the user's (`exp/train.py`).
fn mentions(line: &str) -> Vec<&str> {
    let in_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut found = Vec::new();
    let mut start = None;
    for (at, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (in_path(c), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                start = None;
                let before = line[..from].chars().next_back();
                if matches!(before, Some(':' | '$' | '~' | '@' | '<')) {
                    continue;
                }
                let token = line[from..at].trim_end_matches(['.', '-']);
                if token.starts_with('/') || token.contains("//") {
                    continue;
                }
                let Some(ending) = ending(token).filter(|e| CHECKED.contains(e)) else {
                    continue;
                };
                let first = token.split('/').find(|c| *c != "..").unwrap_or_default();
                if ending == "rs" || (token.contains('/') && ROOTS.contains(&first)) {
                    found.push(token);
                }
            }
            _ => {}
        }
    }
    found
}

/// Whether `mention`, named in `file`, is a file: a bare Rust file's name anywhere in
/// `names`; a path from the root, from `src/`, or from the file's folder or one above.
fn exists(root: &Path, file: &Path, mention: &str, names: &BTreeSet<String>) -> bool {
    if !mention.contains('/') {
        return names.contains(mention);
    }
    let mut bases = vec![root.to_path_buf(), root.join("src")];
    bases.extend(
        file.ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(root))
            .map(Path::to_path_buf),
    );
    bases.iter().any(|base| base.join(mention).is_file())
}

/// The lines of `text` (read from `file`) that name a file that is not there, as
/// `LINE: `MENTION``.
fn stale(root: &Path, file: &Path, text: &str, names: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        for mention in mentions(line) {
            if PLANNED.contains(&mention) || exists(root, file, mention, names) {
                continue;
            }
            out.push(format!("{}: `{mention}`", number + 1));
        }
    }
    out
}

fn names(root: &Path) -> BTreeSet<String> {
    let mut all = Vec::new();
    files(root, &mut all);
    all.iter()
        .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
        .collect()
}

#[test]
fn every_file_a_comment_or_doc_names_exists() {
    let root = repo();
    let names = names(&root);
    let mut read = Vec::new();
    for at in WALKED {
        files(&root.join(at), &mut read);
    }
    read.retain(|f| {
        f.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| READ.contains(&e))
    });
    assert!(
        read.len() > 100,
        "read {} files from {}",
        read.len(),
        root.display()
    );
    let mut missing = Vec::new();
    for file in &read {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        missing.extend(
            stale(&root, file, &text, &names)
                .into_iter()
                .map(|s| format!("{shown}:{s}")),
        );
    }
    assert!(
        missing.is_empty(),
        "names of files that are not there (rename the mention, or the file):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_planned_files_are_not_there_yet() {
    // Once one is made, its exemption goes.
    for planned in PLANNED {
        assert!(
            !repo().join("src").join(planned).exists(),
            "{planned} exists: drop it from PLANNED"
        );
    }
}

#[test]
fn a_stale_mention_is_named_and_a_good_one_is_not() {
    let root = repo();
    let names = names(&root);
    // Made at run time, so that this file names no missing file itself.
    let gone = "nowhere";
    let planted = [
        format!("ops/{gone}.rs"),
        format!("src/{gone}/parse.rs"),
        format!("{gone}.rs"),
        format!("tools/{gone}.py"),
        format!("../docs/{gone}.md"),
    ];
    let text = format!(
        "//! `{}`, (`{}`), {} and {}; {}\n\
         //! but `ops/wait/fold.rs`, src/lib.rs, ../README.md, labels.rs, exp/train.py,\n\
         //! https://example.com/src/{gone}.rs, $HOME/{gone}.rs, src/{gone}.py, ../proj/{gone}.yaml\n",
        planted[0], planted[1], planted[2], planted[3], planted[4]
    );
    let from = root.join("src/ops/spawn.rs");
    let named: Vec<String> = planted.iter().map(|p| format!("1: `{p}`")).collect();
    assert_eq!(stale(&root, &from, &text, &names), named);
}

/// The layers as `lib.rs`'s doc chains them (`entry (`main`, …) → commands (…) → …`):
/// each name with the modules it holds.
fn lib_layers(lib: &str) -> Vec<(String, BTreeSet<String>)> {
    let doc: Vec<&str> = (lib.lines())
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let chain = doc.join(" ");
    let chain = chain
        .split_once("): ")
        .map_or(chain.as_str(), |(_, rest)| rest);
    let chain = chain.split_once(").").map_or(chain, |(chain, _)| chain);
    (chain.split('→'))
        .filter_map(|layer| {
            let (name, modules) = layer.trim().split_once(" (")?;
            let modules = modules.trim_end_matches(')').split(", ");
            let modules = modules.map(|m| m.trim_matches('`').to_string()).collect();
            Some((name.to_string(), modules))
        })
        .collect()
}

/// The layers ARCHITECTURE.md's diagram draws: each name (the left column) with the
/// modules of `src/` its rows name (`src/commands/help.rs` → `commands/help`).
fn drawn_layers(architecture: &str) -> Vec<(String, BTreeSet<String>)> {
    let diagram = architecture
        .split_once("## Layers")
        .and_then(|(_, rest)| rest.split("```").nth(1))
        .unwrap_or_default();
    let mut layers: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in diagram.lines() {
        let name = line.get(1..13).unwrap_or_default().trim();
        if !name.is_empty() && !name.starts_with('│') {
            layers.push((name.to_string(), BTreeSet::new()));
        }
        let Some((_, modules)) = layers.last_mut() else {
            continue;
        };
        for word in line.split(['(', ')', ',', ' ', ':', '`', ';']) {
            let Some(path) = word.strip_prefix("src/") else {
                continue;
            };
            let module = path.trim_end_matches("/*.rs").trim_end_matches('/');
            modules.insert(module.trim_end_matches(".rs").to_string());
        }
    }
    layers
}

#[test]
fn lib_rs_names_the_layers_architecture_md_draws() {
    let read = |name: &str| std::fs::read_to_string(repo().join(name)).unwrap();
    let lib = lib_layers(&read("src/lib.rs"));
    let drawn = drawn_layers(&read("ARCHITECTURE.md"));
    assert_eq!(drawn.len(), 6, "ARCHITECTURE.md's layers: {drawn:?}");
    assert_eq!(
        lib, drawn,
        "src/lib.rs's doc (left) and ARCHITECTURE.md's diagram (right)"
    );
}
