//! Resource quantities as the API server reads and writes them, exactly: held in
//! nano-units (10⁻⁹) in an `i128`, with the format (`Gi` or decimal) they were written in,
//! and written back in the canonical form of apimachinery's `Quantity.String()`
//! (`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go::CanonicalizeBytes`):
//! `2`, `1500m`, `1k`, `3Gi`. Written for the quota model (`quota.rs`), apart from
//! tf-spawner's own reading of quantities, so that the two are not wrong together.

const NANO: i128 = 1_000_000_000;

/// A quantity: its value in nano-units, and whether it was written with a binary suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Qty {
    pub nanos: i128,
    pub binary: bool,
}

impl Qty {
    pub const ONE: Qty = Qty {
        nanos: NANO,
        binary: false,
    };

    /// A JSON value as the API server reads it (a string, or a bare number).
    pub fn of(v: &serde_json::Value) -> Option<Qty> {
        match v {
            serde_json::Value::String(s) => parse(s),
            serde_json::Value::Number(n) => parse(&n.to_string()),
            _ => None,
        }
    }

    /// `self + other`, keeping the format of the first non-zero operand, as `Quantity.Add`.
    pub fn add(self, other: Qty) -> Qty {
        Qty {
            nanos: self.nanos + other.nanos,
            binary: if self.nanos == 0 {
                other.binary
            } else {
                self.binary
            },
        }
    }

    pub fn max(self, other: Qty) -> Qty {
        if other.nanos > self.nanos {
            other
        } else {
            self
        }
    }
}

impl std::fmt::Display for Qty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format(*self))
    }
}

/// A quantity's text (`500m`, `1.5Gi`, `2`, `1e3`); `None` when it does not parse.
pub fn parse(text: &str) -> Option<Qty> {
    let text = text.trim();
    let at = text
        .char_indices()
        .find(|(i, c)| c.is_ascii_alphabetic() && !(*i == 0 && matches!(c, 'e' | 'E')))
        .map_or(text.len(), |(i, _)| i);
    let (number, suffix) = text.split_at(at);
    let (bits, exp): (u32, i32) = match suffix {
        "" => (0, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        e if e.starts_with(['e', 'E']) => (0, e[1..].parse().ok()?),
        _ => return None,
    };
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
    let power = exp - i32::try_from(fraction.len()).ok()? + 9;
    let scaled = mantissa.checked_mul(1i128 << bits)?;
    let nanos = if power >= 0 {
        scaled.checked_mul(10i128.checked_pow(power as u32)?)?
    } else {
        // Finer than a nano-unit: rounded up, as the API server rounds.
        let d = 10i128.checked_pow((-power) as u32)?;
        (scaled + d - 1) / d
    };
    Some(Qty {
        nanos: if negative { -nanos } else { nanos },
        binary: bits > 0,
    })
}

/// The canonical text: a binary quantity of whole units, at least 1024 in size, with the
/// largest exact binary suffix; everything else in decimal, with the largest exponent
/// (a multiple of 3) that leaves a whole mantissa.
pub fn format(q: Qty) -> String {
    let n = q.nanos;
    if q.binary && n % NANO == 0 && (n / NANO).abs() >= 1024 {
        let whole = n / NANO;
        for (suffix, bits) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            if whole % (1i128 << bits) == 0 {
                return format!("{}{suffix}", whole >> bits);
            }
        }
        return whole.to_string();
    }
    if n == 0 {
        return "0".to_string();
    }
    for (suffix, exp) in [
        ("E", 27),
        ("P", 24),
        ("T", 21),
        ("G", 18),
        ("M", 15),
        ("k", 12),
        ("", 9),
        ("m", 6),
        ("u", 3),
    ] {
        let unit = 10i128.pow(exp);
        if n % unit == 0 {
            return format!("{}{suffix}", n / unit);
        }
    }
    format!("{n}n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        format(parse(text).unwrap())
    }

    #[test]
    fn quantities_are_written_as_the_api_server_writes_them() {
        assert_eq!(canonical("2"), "2");
        assert_eq!(canonical("1500m"), "1500m");
        assert_eq!(canonical("1.5"), "1500m");
        assert_eq!(canonical("1000"), "1k");
        assert_eq!(canonical("2000m"), "2");
        assert_eq!(canonical("1Gi"), "1Gi");
        assert_eq!(canonical("1.5Gi"), "1536Mi");
        assert_eq!(canonical("1G"), "1G");
        assert_eq!(canonical("0"), "0");
        assert_eq!(canonical("512"), "512");
        assert!(parse("1Xi").is_none() && parse("").is_none());
        let sum = parse("0").unwrap().add(parse("2Gi").unwrap());
        assert_eq!(
            format(sum),
            "2Gi",
            "a zero takes the format of what is added"
        );
    }
}
