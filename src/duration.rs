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

/// `HH:MM:SS UTC`, or the date too when it is not the day (UTC) of `now` (seconds since
/// the epoch: the caller's now, so that what is printed follows from what was read).
pub fn clock(secs: i64, now: i64) -> String {
    use k8s_openapi::jiff::Timestamp;
    let Ok(at) = Timestamp::from_second(secs) else {
        return secs.to_string();
    };
    let day = |t: Timestamp| t.strftime("%Y-%m-%d").to_string();
    if Timestamp::from_second(now).is_ok_and(|n| day(n) == day(at)) {
        at.strftime("%H:%M:%S UTC").to_string()
    } else {
        at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
    }
}

/// Seconds since the epoch, now. This module is the one place the wall clock is read
/// ([`now`], [`now_ms`], [`timestamp`]); the rest of the program reads the time through
/// them, once per decision, and passes it on as data.
pub fn now() -> i64 {
    timestamp().as_second()
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    timestamp().as_millisecond()
}

/// Now, as a timestamp (for arithmetic on the API's times).
pub fn timestamp() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
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

    /// Whether the date is shown follows from the `now` given, never from the clock of
    /// the machine running it (a test pinned one day failed the next).
    #[test]
    fn a_clock_time_has_its_date_when_it_is_not_on_nows_day() {
        let at = 1_795_703_493; // 2026-11-26 14:31:33 UTC
        assert_eq!(clock(at, at + 60), "14:31:33 UTC");
        assert_eq!(clock(at, at + 86_400), "2026-11-26 14:31:33 UTC");
    }
}
