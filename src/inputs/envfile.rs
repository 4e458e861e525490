//! The `-e` env file: `KEY=VALUE` lines, parsed strictly so a typo is an error, not a
//! silently wrong environment.
//!
//! The format is that of docker compose's `.env` files (dotenv), strictly: blank lines
//! and `#` comment lines are skipped, `export ` is allowed before a key, spaces around
//! `=` are dropped; an unquoted value ends at a `#` that follows a space or a tab (an
//! inline comment; `a#b` keeps its `#`); a value in matching single or double quotes is
//! taken as it is between them (a `#` too), and only a comment may follow the closing
//! quote. No escapes, no `${VAR}` expansion. A value cannot hold a NUL byte (no process
//! environment can). A line ends at `\n`, `\r\n` or a lone `\r` (so a lone `\r` never
//! joins the next line to a value). A line that is a pasted token (`TOKEN==`: a name
//! then only `=` signs, base64's padding) is refused. An error names the file, the
//! line and the kind of mistake, never a key or a value (a key may be a pasted secret).

#![deny(clippy::arithmetic_side_effects)]

use std::collections::BTreeMap;

/// Whether tf-spawner sets variable `name` itself (`TF_CONFIG`…, every framework's
/// process variables); an env file may not override it.
pub fn is_reserved(name: &str) -> bool {
    crate::roles::TF_VARS.contains(&name)
        || crate::framework::Framework::process_vars().any(|v| v == name)
}

/// The env file's variables, later lines overriding earlier ones.
pub type EnvVars = BTreeMap<String, String>;

/// Parses `bytes` read from `file` (the name is only used in error messages).
pub fn parse(file: &str, bytes: &[u8]) -> Result<EnvVars, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            .saturating_add(1);
        format!("{file}:{line}: not valid UTF-8 (save the env file as UTF-8)")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut vars = EnvVars::new();
    for (i, raw) in lines(text).enumerate() {
        let at = format!("{file}:{}", i.saturating_add(1));
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        // The line's text is never shown: a pasted token is a typical mistake here.
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{at}: expected KEY=VALUE, found a line without '=' (its text is not shown: it may be a secret)"
            ));
        };
        let key = key.trim();
        if let Some(problem) = env_name_problem(key) {
            return Err(format!(
                "{at}: the variable name {problem} (letters, digits, '_', '-' and '.', not starting with a digit, not '.' or '..'; the name is not shown)"
            ));
        }
        if is_reserved(key) {
            return Err(format!(
                "{at}: {key} is set by tf-spawner for every task and cannot be overridden"
            ));
        }
        if !value.is_empty() && value.trim().chars().all(|c| c == '=') {
            return Err(format!(
                "{at}: expected KEY=VALUE, found a pasted token (text ending in '=' signs); its text is not shown"
            ));
        }
        let value = value_of(value.trim()).map_err(|problem| format!("{at}: {problem}"))?;
        if value.contains('\0') {
            return Err(format!(
                "{at}: the value holds a NUL byte, which no environment variable can (the name and value are not shown)"
            ));
        }
        vars.insert(key.to_string(), value.to_string());
    }
    Ok(vars)
}

/// The lines of `text`, each ended by `\n`, `\r\n` or a lone `\r`.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .flat_map(|l| l.split('\r'))
        .filter(|_| !text.is_empty())
}

/// Kubernetes' (strict) rule for environment variable names, as the API server checks
/// them (`IsEnvVarName` in apimachinery's `util/validation`): `[-._a-zA-Z][-._a-zA-Z0-9]*`,
/// and not `.`, `..` nor starting with `..` (`hasChDirPrefix`, which the Secret's keys of
/// an env file obey too).
pub fn is_env_name(name: &str) -> bool {
    env_name_problem(name).is_none()
}

/// What is wrong with `name` as an environment variable name, in words that do not
/// repeat it (it may be part of a secret).
fn env_name_problem(name: &str) -> Option<String> {
    let Some(first) = name.chars().next() else {
        return Some("is empty".to_string());
    };
    if name == "." || name == ".." || name.starts_with("..") {
        return Some("is '.' or '..' or starts with '..'".to_string());
    }
    if first.is_ascii_digit() {
        return Some("starts with a digit".to_string());
    }
    name.chars()
        .position(|c| !(c.is_ascii_alphanumeric() || "-._".contains(c)))
        .map(|at| {
            format!(
                "has a character that is not allowed (character {})",
                at.saturating_add(1)
            )
        })
}

/// The value of `KEY=VALUE` (trimmed): unquoted up to an inline comment, or quoted.
fn value_of(raw: &str) -> Result<&str, String> {
    for quote in ['"', '\''] {
        let Some(rest) = raw.strip_prefix(quote) else {
            continue;
        };
        let Some(end) = rest.find(quote) else {
            // No closing quote: the quote is part of the value.
            break;
        };
        let after = rest[end..]
            .strip_prefix(quote)
            .unwrap_or_default()
            .trim_start();
        if after.is_empty() || after.starts_with('#') {
            return Ok(&rest[..end]);
        }
        return Err(
            "text after the closing quote of the value (only a # comment may follow; the name and value are not shown)"
                .to_string(),
        );
    }
    let end = raw
        .char_indices()
        .find(|&(at, c)| c == '#' && raw[..at].ends_with([' ', '\t']))
        .map_or(raw.len(), |(at, _)| at);
    Ok(raw[..end].trim_end())
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
    fn inline_comments_follow_a_space_and_quotes_keep_a_hash() {
        let text = "export S3_ENDPOINT = https://s3.example.org   # where the data is\nB=a#b\nC='x # y' # c\nD=\"\" # empty\nE=v\t# tab\n";
        assert_eq!(
            ok(text),
            pairs(&[
                ("B", "a#b"),
                ("C", "x # y"),
                ("D", ""),
                ("E", "v"),
                ("S3_ENDPOINT", "https://s3.example.org"),
            ])
        );
        assert_eq!(
            err(b"A=\"x\" y\n"),
            "env:1: text after the closing quote of the value (only a # comment may follow; the name and value are not shown)"
        );
    }

    /// The reference's env-file example (docs/reference.md) says what each line gives: the parser agrees.
    #[test]
    fn the_readme_example_means_what_it_says() {
        let readme = include_str!("../../docs/reference.md");
        let start =
            readme.find("### The env file\n\n```\n").unwrap() + "### The env file\n\n```\n".len();
        let example = &readme[start..start + readme[start..].find("```").unwrap()];
        assert_eq!(
            ok(example),
            pairs(&[
                (
                    "S3_ACCESS_KEY",
                    "quoted values lose one pair of matching quotes, # and keep this"
                ),
                ("S3_ENDPOINT", "https://s3.example.org"),
                ("S3_REGION", "eu#1"),
            ])
        );
    }

    #[test]
    fn a_nul_byte_in_a_value_is_refused() {
        assert_eq!(
            err(b"A=x\0y\n"),
            "env:1: the value holds a NUL byte, which no environment variable can (the name and value are not shown)"
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        assert_eq!(
            err(b"A=1\nnot a pair\n"),
            "env:2: expected KEY=VALUE, found a line without '=' (its text is not shown: it may be a secret)"
        );
        assert!(err(b"1A=x").starts_with("env:1: the variable name starts with a digit"));
        assert!(err(b"A B=x").starts_with(
            "env:1: the variable name has a character that is not allowed (character 2)"
        ));
        assert!(err(b"=x").starts_with("env:1: the variable name is empty"));
        assert_eq!(
            err(b"\nTF_CONFIG={}"),
            "env:2: TF_CONFIG is set by tf-spawner for every task and cannot be overridden"
        );
        assert_eq!(
            err(b"A=1\nB=\xff\n"),
            "env:2: not valid UTF-8 (save the env file as UTF-8)"
        );
    }

    /// The API server refuses `.`, `..` and names starting with `..` (`hasChDirPrefix`):
    /// refused here, before anything is created. `.a` and `a..b` are fine.
    #[test]
    fn dot_and_dot_dot_are_refused_as_the_api_server_refuses_them() {
        for key in [".", "..", "..a"] {
            let e = err(format!("{key}=1\n").as_bytes());
            assert!(
                e.starts_with("env:1: the variable name is '.' or '..'"),
                "{e}"
            );
        }
        assert_eq!(ok(".a=1\na..b=2\n"), pairs(&[(".a", "1"), ("a..b", "2")]));
    }

    /// An error names the file, the line and the kind of mistake, never the line's text:
    /// a pasted token (a line without '=', a key with a space, text after a quote) stays
    /// out of CI logs.
    #[test]
    fn errors_never_echo_the_text() {
        let token = "ghp_SECRETTOKEN1234567890abcdef";
        for text in [
            token.to_string(),
            format!("{token} x=1"),
            format!("1{token}=1"),
            format!("A=\"x\" {token}"),
            format!("A={token}\n{token}"),
        ] {
            let e = err(text.as_bytes());
            assert!(e.starts_with("env:"), "{e}");
            assert!(!e.contains("SECRET") && !e.contains("ghp"), "{e}");
        }
    }

    /// A valid name whose value is bad is not shown either (it may be the secret: a
    /// 900 KB name once came back whole); nor is a pasted token ending in '='.
    #[test]
    fn a_bad_value_never_shows_its_name_and_a_pasted_token_is_refused() {
        let key = format!("K{}", "x".repeat(900_000));
        for text in [
            "TOKEN='x' y".to_string(),
            format!("{key}='x' y"),
            "TOKEN=a\0b".to_string(),
        ] {
            let e = err(text.as_bytes());
            assert!(
                e.starts_with("env:1: ") && !e.contains("TOKEN") && e.len() < 160,
                "{e}"
            );
        }
        for token in ["TOKEN==", "dG9rZW4==", "abc=", "abc = =", "ghp_abc=="] {
            if token == "abc=" {
                assert_eq!(ok(token), pairs(&[("abc", "")]));
                continue;
            }
            let e = err(token.as_bytes());
            assert!(
                e.starts_with("env:1: expected KEY=VALUE, found a pasted token"),
                "{e}"
            );
            assert!(!e.contains("TOKEN") && !e.contains("abc"), "{e}");
        }
        assert_eq!(ok("A==b"), pairs(&[("A", "=b")]));
    }

    /// A lone `\r` ends a line: it never joins the next line to a value.
    #[test]
    fn a_lone_carriage_return_ends_the_line() {
        assert_eq!(
            ok("A=1\rB=2\r\nC=3\n"),
            pairs(&[("A", "1"), ("B", "2"), ("C", "3")])
        );
        assert_eq!(
            err(b"A=1\rnot a pair\n"),
            "env:2: expected KEY=VALUE, found a line without '=' (its text is not shown: it may be a secret)"
        );
    }

    #[test]
    fn long_lines_give_short_errors() {
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
