//! The `-e` env file: `KEY=VALUE` lines, parsed strictly so a typo is an error, not a
//! silently wrong environment.
//!
//! Blank lines and `#` comments are skipped, `export ` is allowed before a key, spaces
//! around `=` are dropped, and one pair of matching quotes around a value is removed.

use std::collections::BTreeMap;

/// Variables that tf-spawner sets itself; an env file may not override them.
pub const RESERVED: [&str; 4] = crate::roles::TF_VARS;

/// The env file's variables, later lines overriding earlier ones.
pub type EnvVars = BTreeMap<String, String>;

/// Parses `bytes` read from `file` (the name is only used in error messages).
pub fn parse(file: &str, bytes: &[u8]) -> Result<EnvVars, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("{file}:{line}: not valid UTF-8 (save the env file as UTF-8)")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut vars = EnvVars::new();
    for (i, raw) in text.lines().enumerate() {
        let at = format!("{file}:{}", i + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("{at}: expected KEY=VALUE, found {:?}", clip(line)));
        };
        let key = key.trim();
        if !is_env_name(key) {
            return Err(format!(
                "{at}: {:?} is not a valid variable name (letters, digits, '_', '-' and '.', not starting with a digit)",
                clip(key)
            ));
        }
        if RESERVED.contains(&key) {
            return Err(format!(
                "{at}: {key} is set by tf-spawner for every task and cannot be overridden"
            ));
        }
        vars.insert(key.to_string(), unquote(value.trim()).to_string());
    }
    Ok(vars)
}

/// Kubernetes' (strict) rule for environment variable names: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || "-._".contains(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

/// Keeps error messages one readable line, whatever the input.
fn clip(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<(String, String)> {
        parse("env", text.as_bytes()).unwrap().into_iter().collect()
    }

    fn err(text: &[u8]) -> String {
        parse("env", text).unwrap_err()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plain_comments_blanks_export_quotes_and_spaces() {
        let text = "# S3 access\n\nS3_ENDPOINT=https://s3.example\nexport  AWS_LOG_LEVEL = 3 \r\nS3_KEY=\"a b=c\"\nS3_SECRET='x#y'\nEMPTY=\n";
        assert_eq!(
            ok(text),
            pairs(&[
                ("AWS_LOG_LEVEL", "3"),
                ("EMPTY", ""),
                ("S3_ENDPOINT", "https://s3.example"),
                ("S3_KEY", "a b=c"),
                ("S3_SECRET", "x#y"),
            ])
        );
    }

    #[test]
    fn later_lines_win_and_bom_is_ignored() {
        assert_eq!(ok("\u{feff}A=1\nA=2\n"), pairs(&[("A", "2")]));
    }

    #[test]
    fn mismatched_quotes_are_kept() {
        assert_eq!(ok("A=\"x'\n"), pairs(&[("A", "\"x'")]));
    }

    #[test]
    fn errors_name_file_and_line() {
        assert_eq!(
            err(b"A=1\nnot a pair\n"),
            "env:2: expected KEY=VALUE, found \"not a pair\""
        );
        assert!(err(b"1A=x").starts_with("env:1: \"1A\" is not a valid variable name"));
        assert!(err(b"A B=x").starts_with("env:1: \"A B\" is not a valid"));
        assert!(err(b"=x").starts_with("env:1: \"\" is not a valid"));
        assert_eq!(
            err(b"\nTF_CONFIG={}"),
            "env:2: TF_CONFIG is set by tf-spawner for every task and cannot be overridden"
        );
        assert_eq!(
            err(b"A=1\nB=\xff\n"),
            "env:2: not valid UTF-8 (save the env file as UTF-8)"
        );
    }

    #[test]
    fn long_lines_are_clipped_in_errors() {
        let line = "x".repeat(100_000);
        let e = err(line.as_bytes());
        assert!(e.len() < 120, "{e}");
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any bytes: a result or an error naming a line, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            if let Err(e) = super::parse("f", &bytes) {
                prop_assert!(e.starts_with("f:"), "{}", e);
                prop_assert!(!e.contains('\n'));
            }
        }

        /// Lines that look like env files: every accepted key is a valid name.
        #[test]
        fn accepted_keys_are_valid(text in "((export )?[ -~]{0,12}=[ -~]{0,20}\n|#[ -~]*\n|\n){0,20}") {
            if let Ok(vars) = super::parse("f", text.as_bytes()) {
                for key in vars.keys() {
                    prop_assert!(super::is_env_name(key));
                }
            }
        }
    }
}
