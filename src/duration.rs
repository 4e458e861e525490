//! Durations on the command line (`90s`, `10m`, `1h30m`) and ages in tables (`3m12s`).

use std::time::Duration;

/// Parses `90s`, `10m`, `1h`, `2d`, compounds such as `1h30m`, and a bare number of
/// seconds. Used as a clap value parser for `--timeout` and `--since`.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration; write e.g. 90s, 10m or 1h".to_string());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => {
                return Err(format!(
                    "invalid duration '{text}': unknown unit '{c}' (use s, m, h or d, e.g. 90s, 10m, 1h30m)"
                ));
            }
        };
        let value: u64 = number.parse().map_err(|_| {
            format!(
                "invalid duration '{text}': a number must come before '{c}' (e.g. 90s, 10m, 1h)"
            )
        })?;
        number.clear();
        total = value
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("duration '{text}' is too long"))?;
    }
    if !number.is_empty() {
        return Err(format!(
            "invalid duration '{text}': '{number}' has no unit (use s, m, h or d, e.g. 90s)"
        ));
    }
    Ok(Duration::from_secs(total))
}

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
    fn parses_units_and_compounds() {
        assert_eq!(parse("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse(" 1s ").unwrap(), Duration::from_secs(1));
    }

    #[test]
    fn rejects_nonsense() {
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("10x").unwrap_err().contains("unknown unit 'x'"));
        assert!(
            parse("m")
                .unwrap_err()
                .contains("a number must come before")
        );
        assert!(parse("1h30").unwrap_err().contains("has no unit"));
        assert!(parse("-5s").is_err());
        assert!(parse("99999999999999999999d").is_err());
    }

    #[test]
    fn ages() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(192), "3m12s");
        assert_eq!(age(2520), "42m");
        assert_eq!(age(5 * 3600), "5h");
        assert_eq!(age(3 * 86_400), "3d");
    }
}
