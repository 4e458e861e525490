//! Times and durations as tf-spawner prints them: ages in tables (`3m12s`), clock times
//! (`09:35:01 UTC`) and RFC 3339 for JSON. Durations on the command line are
//! `cli::parse::parse_duration`.

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

/// `HH:MM:SS UTC`, or the date too when it is not today's (UTC).
pub fn clock(secs: i64) -> String {
    let Ok(at) = k8s_openapi::jiff::Timestamp::from_second(secs) else {
        return secs.to_string();
    };
    let today = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%d")
        .to_string();
    let day = at.strftime("%Y-%m-%d").to_string();
    if day == today {
        at.strftime("%H:%M:%S UTC").to_string()
    } else {
        at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
    }
}

/// RFC 3339, for JSON.
pub fn rfc3339(secs: i64) -> Option<String> {
    k8s_openapi::jiff::Timestamp::from_second(secs)
        .ok()
        .map(|t| t.to_string())
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
