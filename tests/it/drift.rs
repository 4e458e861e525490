//! Drift that cannot come back: every file or folder of this repository a comment or a
//! doc names exists (with the item it names after `::`), and `lib.rs` names the layers
//! ARCHITECTURE.md draws. Files only: no binary, no server.
//!
//! A mention is a run of `[A-Za-z0-9_./-]` (a sentence's last `.` or `-` dropped) that
//! is not a URL's, an absolute path, `$VAR/…`, `~/…`, nor after `:`, `@` or `<`. It is
//! this repository's when it ends in `.rs` (a Rust file is ours wherever it is named:
//! name another crate's by URL or module path), when it is a bare `.md` name
//! (`reference.md`; a bare `entry.sh` may be one a test makes), or when it holds a `/`
//! and its first folder after any `../` is one of [`ROOTS`] (then any file, or a
//! folder: `tests/it/`, `tools/one-node`). Other projects' files are written from their
//! own root, so are not ours: `pkg/kubelet/kubelet_pods.go`, `tensorflow/python/…`,
//! `k8s.io/client-go/…`; a Python file under `src/` is a user's (`src/train.py`).
//! It exists when it resolves from the root, from `src/`, or from the naming file's
//! folder or one above; a bare `labels.rs` or `reference.md` when some file has that
//! name. `examples/rbac*.yaml` needs a file whose name begins so;
//! `plan/config_map.rs::script_config_map` needs that word in the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What is read for mentions (below the repository's root).
const WALKED: &[&str] = &[
    "src",
    "tests",
    "docs",
    "tools",
    "benches",
    "examples",
    "testserver",
    "ARCHITECTURE.md",
    "README.md",
];

/// The files read: text that may name a file.
const READ: &[&str] = &["rs", "md", "py", "sh", "toml", "yaml"];

/// Where a mention that is not a Rust file must begin, after any `../`, to be one of
/// this repository's files or folders (a doc's `exp/train.py` or `../proj/pod.yaml` is
/// the user's, `../shared/tools/…` the machine's).
const ROOTS: &[&str] = &[
    "src",
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

/// A file's ending (`rs` of `ops/wait/fold.rs`); none for a folder (`tests/it/`,
/// `tools/one-node`).
fn ending(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next()?;
    let (stem, ending) = name.rsplit_once('.')?;
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!stem.is_empty() && stem.chars().all(plain)).then_some(ending)
}

/// One mention of this repository's file or folder.
#[derive(Debug)]
struct Mention<'a> {
    /// As written: `src/ops/wait/fold.rs`, `ops/restart/state.rs`, `tests/it/`, `labels.rs`.
    path: &'a str,
    /// The item after `::` (`plan/config_map.rs::script_config_map`).
    item: Option<&'a str>,
    /// Followed by `*` (`examples/rbac*.yaml`): a name's beginning.
    glob: bool,
}

/// Whether `token` names this repository's file or folder (the module's doc).
fn ours(token: &str) -> bool {
    let first = token.split('/').find(|c| *c != "..").unwrap_or_default();
    match ending(token) {
        Some("rs") => true,
        Some("md") if !token.contains('/') => true,
        Some("py") if first == "src" => false,
        _ => token.contains('/') && ROOTS.contains(&first),
    }
}

/// The item named right after a mention (`::script_config_map`), if any.
fn item(rest: &str) -> Option<&str> {
    let rest = rest.strip_prefix("::")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The mentions of this repository's files and folders in a line (the module's doc).
fn mentions(line: &str) -> Vec<Mention<'_>> {
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
                if token.starts_with('/') || token.contains("//") || !ours(token) {
                    continue;
                }
                let rest = &line[from + token.len()..];
                let (item, glob) = (item(rest), rest.starts_with('*'));
                found.push(Mention {
                    path: token,
                    item,
                    glob,
                });
            }
            _ => {}
        }
    }
    found
}

/// Every file's name, with the files that bear it.
type Names = BTreeMap<String, Vec<PathBuf>>;

/// Whether `text` holds `word` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !ident(text[..at].chars().next_back()) && !ident(text[at + word.len()..].chars().next())
    })
}

/// Whether `mention`, named in `file`, is there (the module's doc): the files it may
/// be, and if it names an item, one of them holds it.
fn exists(root: &Path, file: &Path, mention: &Mention, names: &Names) -> bool {
    let path = mention.path;
    let candidates: Vec<PathBuf> = if !path.contains('/') {
        names.get(path).cloned().unwrap_or_default()
    } else {
        let mut bases = vec![root.to_path_buf(), root.join("src")];
        bases.extend(
            (file.ancestors().skip(1))
                .take_while(|a| a.starts_with(root))
                .map(Path::to_path_buf),
        );
        bases.iter().map(|base| base.join(path)).collect()
    };
    let folder = path.ends_with('/') || ending(path).is_none();
    let there = |at: &PathBuf| match () {
        () if mention.glob => begins_a_name(at),
        () if folder => at.exists(),
        () => at.is_file(),
    };
    let mut there = candidates.iter().filter(|at| there(at));
    match mention.item {
        None => there.next().is_some(),
        Some(item) => there.any(|at| {
            let text = std::fs::read_to_string(at).unwrap_or_default();
            has_word(&text, item)
        }),
    }
}

/// Whether some file in `at`'s folder has a name that begins with `at`'s name.
fn begins_a_name(at: &Path) -> bool {
    let (Some(folder), Some(start)) = (at.parent(), at.file_name()) else {
        return false;
    };
    let start = start.to_string_lossy();
    (std::fs::read_dir(folder).into_iter().flatten().flatten())
        .any(|entry| entry.file_name().to_string_lossy().starts_with(&*start))
}

/// The lines of `text` (read from `file`) that name a file that is not there, as
/// `LINE: `MENTION``.
fn stale(root: &Path, file: &Path, text: &str, names: &Names) -> Vec<String> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        for mention in mentions(line) {
            if PLANNED.contains(&mention.path) || exists(root, file, &mention, names) {
                continue;
            }
            let item = mention.item.map(|i| format!("::{i}")).unwrap_or_default();
            out.push(format!("{}: `{}{item}`", number + 1, mention.path));
        }
    }
    out
}

fn names(root: &Path) -> Names {
    let mut all = Vec::new();
    files(root, &mut all);
    let mut names = Names::new();
    for file in all {
        if let Some(name) = file.file_name().and_then(|n| n.to_str()) {
            names.entry(name.to_string()).or_default().push(file);
        }
    }
    names
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
    // Each planted mention as written, and as the test names it.
    let planted = [
        (format!("`ops/{gone}.rs`"), format!("ops/{gone}.rs")),
        (
            format!("(`src/{gone}/parse.rs`)"),
            format!("src/{gone}/parse.rs"),
        ),
        (format!("{gone}.rs"), format!("{gone}.rs")),
        (format!("tools/{gone}.py."), format!("tools/{gone}.py")),
        (format!("../docs/{gone}.md"), format!("../docs/{gone}.md")),
        (format!("{gone}.md"), format!("{gone}.md")),
        (format!("tests/{gone}/"), format!("tests/{gone}/")),
        (
            format!("`tools/one-node/{gone}`"),
            format!("tools/one-node/{gone}"),
        ),
        (
            format!("examples/{gone}.example"),
            format!("examples/{gone}.example"),
        ),
        (
            format!("`examples/{gone}*.yaml`"),
            format!("examples/{gone}"),
        ),
        (
            format!("plan/config_map.rs::{gone}"),
            format!("plan/config_map.rs::{gone}"),
        ),
        (format!("lib.rs::{gone}()"), format!("lib.rs::{gone}")),
    ];
    let written: Vec<&str> = planted.iter().map(|(w, _)| w.as_str()).collect();
    let text = format!(
        "//! {}\n\
         //! but `ops/wait/fold.rs`, src/lib.rs, ../README.md, labels.rs, exp/train.py,\n\
         //! tests/it/, `tools/one-node`, `examples/rbac*.yaml`, lib.rs::main, tests/.\n\
         //! `plan/config_map.rs::script_config_map`, ops/wait/mod.rs::settle, reference.md\n\
         //! https://example.com/src/{gone}.rs, $HOME/{gone}.rs, src/{gone}.py,\n\
         //! ../proj/{gone}.yaml, ~/{gone}/x.rs\n\
         //! pkg/kubelet/{gone}.go, tensorflow/python/{gone}.py, k8s.io/client-go/tools/{gone}\n\
         //! {gone}.sh, {gone}.py\n",
        written.join(", ")
    );
    let from = root.join("src/ops/spawn.rs");
    let named: Vec<String> = planted.iter().map(|(_, n)| format!("1: `{n}`")).collect();
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

/// The wall clock is read in one place, `src/duration.rs` (`now`, `now_ms`,
/// `timestamp`): every other file reads the time through it, so a test or a reader finds
/// every reading of the clock by one name (issue 61, item 3). The monotonic clock
/// (`Instant::now`, for how long something took) is not the wall clock.
#[test]
fn the_wall_clock_is_read_in_src_duration_rs_alone() {
    let mut all = Vec::new();
    files(&repo().join("src"), &mut all);
    let reads = ["Timestamp::now()", "SystemTime::now()", "Utc::now()"];
    let found: Vec<String> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !p.ends_with("src/duration.rs"))
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let at = p.strip_prefix(repo()).unwrap_or(p).display().to_string();
            text.lines()
                .enumerate()
                .filter(|(_, line)| reads.iter().any(|r| line.contains(r)))
                .map(|(n, line)| format!("{at}:{}: {}", n + 1, line.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "the wall clock read outside src/duration.rs (use crate::duration::now, now_ms or timestamp):\n{}",
        found.join("\n")
    );
}
