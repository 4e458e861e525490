//! YAML parse errors in our words: where (line and column) and what, on one line,
//! without the parser's advice to its programmer ("set DuplicateKeyPolicy in Options",
//! "use from_str_multiple") or its internals ("budget breached: Nodes { … }").

use serde_saphyr::{MessageFormatter, UserMessageFormatter};

/// Parses one YAML document into a JSON value (what every file tf-spawner reads as YAML
/// becomes), or says what is wrong, in one line.
pub fn to_value(text: &str) -> Result<serde_json::Value, String> {
    serde_saphyr::from_str(text).map_err(|e| describe(&e))
}

/// `line 3 column 5: duplicate key `image``, in one line.
pub fn describe(err: &serde_saphyr::Error) -> String {
    let raw = UserMessageFormatter.format_message(err).into_owned();
    let message = match raw.as_str() {
        m if m.starts_with("YAML document too large or too complex") => {
            "too large or too complex (too many values, aliases or levels)".to_string()
        }
        m if m.starts_with("only single YAML document expected") => {
            "more than one YAML document (---); one is expected".to_string()
        }
        m => m
            .lines()
            .next()
            .unwrap_or_default()
            .split("; use ")
            .next()
            .unwrap_or_default()
            .split(", set ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
    };
    match err.location() {
        Some(at) if at.line() > 0 => {
            format!("line {} column {}: {message}", at.line(), at.column())
        }
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        to_value(text).unwrap_err()
    }

    #[test]
    fn library_advice_is_left_out() {
        let dup = err("a: 1\na: 2\n");
        assert!(dup.starts_with("line 2 column 1: duplicate"), "{dup}");
        assert!(!dup.contains("DuplicateKeyPolicy"), "{dup}");
        let many = err("a: 1\n---\nb: 2\n");
        assert!(!many.contains("from_str_multiple"), "{many}");
        assert!(many.contains("more than one YAML document"), "{many}");
        let deep = format!("{}1{}", "[".repeat(2000), "]".repeat(2000));
        let e = err(&deep);
        assert!(!e.contains("{"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn too_many_nodes_is_said_plainly() {
        let big = "[".to_string() + &"1,".repeat(300_000) + "1]";
        let e = err(&big);
        assert!(!e.contains("budget") && !e.contains("Nodes"), "{e}");
    }
}
