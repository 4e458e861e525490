//! Run tags: the `training_attempt` label value and the prefix of every object name.

use std::fmt;
use std::str::FromStr;

use rand::Rng;

use crate::errors::UsageError;

/// A run's tag as `-t` gives it, checked when clap parses it (`value_parser`): a valid
/// DNS-1035 label. Whether the longest object name fits depends on the run's roles:
/// [`Tag::fits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag(String);

impl Tag {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A random tag (`-r`).
    pub fn random() -> Tag {
        Tag(random())
    }

    /// A random tag after `prefix` (`--tag-from TEXT -r`: made by [`from_text`]), else
    /// after `tf`.
    pub fn random_after(prefix: Option<&str>) -> Tag {
        match prefix {
            Some(prefix) => {
                let n: u32 = rand::rng().random();
                Tag(format!("{prefix}-{n:08x}"))
            }
            None => Tag::random(),
        }
    }

    /// Checks that every object name, up to `TAG` + `longest_suffix`, stays valid.
    pub fn fits(&self, longest_suffix: &str) -> Result<(), UsageError> {
        validate(&self.0, longest_suffix)
    }
}

impl FromStr for Tag {
    type Err = UsageError;

    fn from_str(text: &str) -> Result<Tag, UsageError> {
        validate(text, "")?;
        Ok(Tag(text.to_string()))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Kubernetes service names (DNS-1035 labels) and label values are at most 63 characters.
pub const MAX_NAME_LEN: usize = 63;

/// Checks that `tag` makes valid object names on a real API server, given the longest
/// name suffix the run will use (e.g. `-worker-99`).
fn validate(tag: &str, longest_suffix: &str) -> Result<(), UsageError> {
    let why = if tag.is_empty() {
        Some("it is empty".to_string())
    } else if !tag.starts_with(|c: char| c.is_ascii_lowercase()) {
        Some("it must start with a lowercase letter".to_string())
    } else if !tag.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        Some("it must end with a lowercase letter or a digit".to_string())
    } else if let Some(c) = tag
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        Some(format!(
            "{c:?} is not allowed (use lowercase letters, digits and '-')"
        ))
    } else if tag.len() + longest_suffix.len() > MAX_NAME_LEN {
        Some(format!(
            "the longest object name, '{tag}{longest_suffix}', would exceed {MAX_NAME_LEN} characters; use a tag of at most {} characters",
            MAX_NAME_LEN.saturating_sub(longest_suffix.len())
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(UsageError::new(format!("invalid tag '{tag}': {why}"))),
        None => Ok(()),
    }
}

/// The longest tag `--tag-from` makes (before `-r`'s 9 characters), leaving room for
/// the object names' suffixes (`-worker-99`, `-script`).
pub const FROM_TEXT_LEN: usize = 40;

/// `--tag-from TEXT`: a valid tag made from any text (a branch name, a commit SHA that
/// starts with a digit): lowercased, every run of characters other than `a-z0-9` one
/// `-`, `run-` before it unless it starts with a letter, cut to [`FROM_TEXT_LEN`]; text
/// with no letter or digit is refused.
pub fn from_text(text: &str) -> Result<String, UsageError> {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        return Err(UsageError::new(format!(
            "--tag-from {:?} has no letter or digit to make a tag of",
            crate::output::escape_controls(text)
        )));
    }
    let out = if out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.to_string()
    } else {
        format!("run-{out}")
    };
    let cut: String = out.chars().take(FROM_TEXT_LEN).collect();
    Ok(cut.trim_end_matches('-').to_string())
}

/// A random tag that is always a valid DNS-1035 label: `tf-` and 8 hex digits.
fn random() -> String {
    let n: u32 = rand::rng().random();
    format!("tf-{n:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_text_makes_a_valid_tag() {
        for (text, tag) in [
            ("1a2b3c4", "run-1a2b3c4"),
            ("feature/New_Thing", "feature-new-thing"),
            ("--Release 2.0--", "release-2-0"),
            ("9", "run-9"),
            ("ÄÖ-x", "x"),
        ] {
            assert_eq!(from_text(text).unwrap(), tag, "{text}");
            assert!(validate(tag, "-worker-99").is_ok(), "{tag}");
        }
        let long = from_text(&"ab-".repeat(30)).unwrap();
        assert!(
            long.len() <= FROM_TEXT_LEN && validate(&long, "").is_ok(),
            "{long}"
        );
        let random = Tag::random_after(Some(&from_text("0abc").unwrap()));
        assert!(random.as_str().starts_with("run-0abc-"), "{random}");
        assert!(validate(random.as_str(), "-worker-99").is_ok(), "{random}");
        assert!(from_text("/_/").is_err());
    }

    #[test]
    fn accepts_dns_labels() {
        assert!(validate("tf-spawner", "-worker-1").is_ok());
        assert!(validate("a", "-worker-1").is_ok());
        assert!(validate("run-2024-01", "-worker-1").is_ok());
    }

    #[test]
    fn rejects_bad_tags_with_the_reason() {
        for (tag, needle) in [
            ("", "empty"),
            ("1abc", "start with a lowercase letter"),
            ("Abc", "start with a lowercase letter"),
            ("abc-", "end with"),
            ("ab_c", "'_' is not allowed"),
            ("ab.c", "'.' is not allowed"),
        ] {
            let err = validate(tag, "-worker-1").unwrap_err().to_string();
            assert!(err.contains(needle), "{tag:?}: {err}");
        }
    }

    #[test]
    fn length_accounts_for_the_longest_name() {
        let tag = "a".repeat(54);
        assert!(validate(&tag, "-worker-9").is_ok()); // 54 + 9 = 63
        let err = validate(&tag, "-worker-10").unwrap_err().to_string();
        assert!(err.contains("at most 53 characters"), "{err}");
    }

    #[test]
    fn random_tags_are_valid_and_differ() {
        let a = random();
        let b = random();
        assert_ne!(a, b);
        assert!(validate(&a, "-worker-999").is_ok());
        assert_eq!(a.len(), 11);
    }
}
