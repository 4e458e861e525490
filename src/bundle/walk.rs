//! Which files of `--dir` ship: the walk (git's ignore rules, the `.tfspawnerignore`
//! files, hidden files and `--local`'s output left out, links not followed) and what it
//! left out, as the spawn says it.

use std::path::{Path, PathBuf};

/// The exclude file read in every directory of DIR, besides `.gitignore`.
pub const IGNORE_FILE: &str = ".tfspawnerignore";

/// The walk of DIR: git's ignore rules (the `.gitignore` files above DIR up to its
/// repository's root, when it is in one; `.git/info/exclude`; the global excludes) and
/// the ignore file honoured, `.ignore` not read, hidden files and `--local`'s output
/// left out, links not followed, in name order.
pub(super) fn walk(root: &Path) -> ignore::Walk {
    let in_repository = root.ancestors().any(|d| d.join(".git").exists());
    ignore::WalkBuilder::new(root)
        .add_custom_ignore_filename(IGNORE_FILE)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(in_repository)
        .follow_links(false)
        .sort_by_file_name(std::ffi::OsStr::cmp)
        .filter_entry(|e| e.file_name() != crate::labels::LOCAL_OUTPUT_ROOT)
        .build()
}

/// Left out of every project and never worth a word: git's own directory, the files that
/// say what is left out, and what `--local` runs wrote.
const UNSAID: [&str; 4] = [
    ".git",
    ".gitignore",
    IGNORE_FILE,
    crate::labels::LOCAL_OUTPUT_ROOT,
];

/// What the walk left out of DIR: each entry not shipped, in name order; a directory
/// none of whose files was shipped once, as `dir/` (never walked into: an ignored
/// `data/` or `.venv/` may hold millions). Empty directories and [`UNSAID`] are not
/// counted.
pub(super) fn left_out(root: &Path, shipped: &[PathBuf]) -> Vec<String> {
    let files: std::collections::HashSet<&Path> = shipped.iter().map(PathBuf::as_path).collect();
    let dirs: std::collections::HashSet<&Path> =
        shipped.iter().flat_map(|p| p.ancestors().skip(1)).collect();
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(dir) = todo.pop() {
        let Ok(read) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries.into_iter().rev() {
            let rel = dir.join(entry.file_name());
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if UNSAID.iter().any(|n| entry.file_name() == *n) {
                continue;
            }
            if is_dir && dirs.contains(rel.as_path()) {
                todo.push(rel);
            } else if is_dir {
                let empty =
                    std::fs::read_dir(entry.path()).map_or(true, |mut d| d.next().is_none());
                if !empty {
                    out.push(format!("{}/", rel.display()));
                }
            } else if !files.contains(rel.as_path()) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}
