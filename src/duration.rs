//! Ages in tables (`3m12s`). Durations on the command line are `cli::parse_duration`.

/// A short age as kubectl prints it: `45s`, `3m12s`, `42m`, `5h`, `3d`.
pub fn age(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs}s"),
        120..600 => format!("{}m{}s", secs / 60, secs % 60),
        600..10_800 => format!("{}m", secs / 60),
        10_800..172_800 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(192), "3m12s");
        assert_eq!(age(2520), "42m");
        assert_eq!(age(5 * 3600), "5h");
        assert_eq!(age(3 * 86_400), "3d");
    }
}
