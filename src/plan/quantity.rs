//! Resource quantities (`500m`, `1.5Gi`, `2`, `1e3`) as exact sums: a Volcano
//! PodGroup's `minResources` (`podgroup::min_resources`), what a run needs of a
//! namespace's quota and of a node (`preflight/`), `--memory` plus `/dev/shm`.
//!
//! Values are held in nano-units (10⁻⁹) in an `i128`: every suffix Kubernetes accepts
//! (`n` to `E`, `Ki` to `Ei`) fits, and a sum is exact. A fraction finer than a
//! nano-unit is rounded up, as the API server rounds a quantity up to its precision.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NANO: i128 = 1_000_000_000;

/// A quantity in nano-units; `None` when it does not parse (the API server refuses such
/// a pod anyway, so it adds nothing to the sum).
pub fn parse(text: &str) -> Option<i128> {
    let text = text.trim();
    let (number, suffix) = split_suffix(text);
    let (binary, decimal): (u32, i32) = match suffix {
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
        exp if exp.starts_with(['e', 'E']) => (0, exp[1..].parse().ok()?),
        _ => return None,
    };
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
    let fraction_len = i32::try_from(fraction.len()).ok()?;
    // value = mantissa × 10^(decimal - fraction_len) × 2^binary, in units of 10⁻⁹.
    let power = decimal - fraction_len + 9;
    let scaled = mantissa.checked_mul(1i128 << binary)?;
    let value = if power >= 0 {
        scaled.checked_mul(10i128.checked_pow(u32::try_from(power).ok()?)?)?
    } else {
        let divisor = 10i128.checked_pow(u32::try_from(-power).ok()?)?;
        (scaled + divisor - 1) / divisor
    };
    Some(if negative { -value } else { value })
}

/// The number and the suffix of a quantity (`1.5` and `Gi`; `1` and `e3`).
fn split_suffix(text: &str) -> (&str, &str) {
    let at = text
        .char_indices()
        .find(|(i, c)| c.is_ascii_alphabetic() && !(*i == 0 && (*c == 'e' || *c == 'E')))
        .map_or(text.len(), |(i, _)| i);
    text.split_at(at)
}

/// A nano-unit value written as a quantity: whole units when it has no fraction
/// (`3`), with the largest binary suffix that is exact when `binary` (bytes: `3Gi`,
/// `1536Mi`), else milli-, micro- or nano-units (`1500m`).
pub fn format(nanos: i128, binary: bool) -> Quantity {
    let whole = nanos / NANO;
    let suffix = ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]
        .iter()
        .zip([60, 50, 40, 30, 20, 10])
        .find(|(_, bits)| whole != 0 && whole % (1i128 << bits) == 0);
    let text = if nanos % NANO == 0
        && binary
        && let Some((suffix, bits)) = suffix
    {
        format!("{}{suffix}", whole >> bits)
    } else if nanos % NANO == 0 {
        whole.to_string()
    } else if nanos % 1_000_000 == 0 {
        format!("{}m", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!("{}u", nanos / 1_000)
    } else {
        format!("{nanos}n")
    };
    Quantity(text)
}

/// What one pod asks of the scheduler, by resource, as Kubernetes counts it (and
/// Volcano with it, `pkg/controllers/util/util.go::GetPodQuotaUsage`, Kubernetes'
/// pod quota evaluator and scheduler: `component-helpers/resource/helpers.go::
/// PodRequests`): for each resource the larger of the containers' sum and each init
/// container (a restartable one, a sidecar, adds to the sum and to every later init
/// container), plus the pod's overhead. A container's limit stands for a request it does
/// not set, as the API server's defaulting makes it.
pub fn pod_requests(spec: &PodSpec) -> BTreeMap<String, i128> {
    let mut total = aggregate(spec, container_requests);
    for (name, q) in spec.overhead.iter().flatten() {
        *total.entry(name.clone()).or_default() += parse(&q.0).unwrap_or(0);
    }
    total
}

/// A pod's limits as the quota evaluator counts them (`PodLimits`): aggregated like
/// [`pod_requests`], the overhead added only to what has a limit.
pub fn pod_limits(spec: &PodSpec) -> BTreeMap<String, i128> {
    let mut total = aggregate(spec, container_limits);
    for (name, q) in spec.overhead.iter().flatten() {
        if let Some(v) = total.get_mut(name) {
            *v += parse(&q.0).unwrap_or(0);
        }
    }
    total
}

fn aggregate(
    spec: &PodSpec,
    of: fn(&Container) -> BTreeMap<String, i128>,
) -> BTreeMap<String, i128> {
    let add = |into: &mut BTreeMap<String, i128>, from: &BTreeMap<String, i128>| {
        for (name, value) in from {
            *into.entry(name.clone()).or_default() += value;
        }
    };
    let mut total: BTreeMap<String, i128> = BTreeMap::new();
    for c in &spec.containers {
        add(&mut total, &of(c));
    }
    let mut sidecars = BTreeMap::new();
    let mut init: BTreeMap<String, i128> = BTreeMap::new();
    for c in spec.init_containers.iter().flatten() {
        let mut during = of(c);
        if c.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &during);
            add(&mut sidecars, &during);
            during = sidecars.clone();
        } else {
            add(&mut during, &sidecars);
        }
        for (name, value) in during {
            let entry = init.entry(name).or_default();
            *entry = (*entry).max(value);
        }
    }
    for (name, value) in init {
        let entry = total.entry(name).or_default();
        *entry = (*entry).max(value);
    }
    total
}

/// A container's requests after the API server's defaulting: its limits stand for the
/// requests it does not set.
pub fn container_requests(c: &Container) -> BTreeMap<String, i128> {
    let mut out = container_limits(c);
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    for (name, q) in requests.into_iter().flatten() {
        out.insert(name.clone(), parse(&q.0).unwrap_or(0));
    }
    out
}

/// A container's limits.
pub fn container_limits(c: &Container) -> BTreeMap<String, i128> {
    let limits = c.resources.as_ref().and_then(|r| r.limits.as_ref());
    limits
        .into_iter()
        .flatten()
        .map(|(name, q)| (name.clone(), parse(&q.0).unwrap_or(0)))
        .collect()
}

/// Whether a resource counts bytes (written `3Gi`): memory, storage, huge pages.
pub fn is_bytes(name: &str) -> bool {
    let base = name
        .strip_prefix("requests.")
        .or_else(|| name.strip_prefix("limits."))
        .unwrap_or(name);
    base == "memory" || base.contains("storage") || base.starts_with("hugepages-")
}

/// A value of resource `name`, written as Kubernetes writes it (`3Gi`, `1500m`, `4`).
pub fn show(name: &str, nanos: i128) -> String {
    format(nanos, is_bytes(name)).0
}

/// A value of resource `name` for a reader: bytes in the largest binary unit it holds
/// one of, to a tenth when not whole (a node's `24629308Ki` is `23.5Gi`), else as
/// [`show`] writes it.
pub fn human(name: &str, nanos: i128) -> String {
    let bytes = nanos / NANO;
    if !is_bytes(name) || bytes <= 0 {
        return show(name, nanos);
    }
    for (unit, shift) in [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ] {
        let one = 1i128 << shift;
        if bytes >= one {
            let tenths = (bytes.saturating_mul(10).saturating_add(one / 2)) / one;
            return match tenths % 10 {
                0 => format!("{}{unit}", tenths / 10),
                t => format!("{}.{t}{unit}", tenths / 10),
            };
        }
    }
    show(name, nanos)
}

/// One whole unit, in nano-units.
pub const ONE: i128 = NANO;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_exactly() {
        assert_eq!(parse("2"), Some(2 * NANO));
        assert_eq!(parse("500m"), Some(NANO / 2));
        assert_eq!(parse("1.5"), Some(3 * NANO / 2));
        assert_eq!(parse("1Gi"), Some((1i128 << 30) * NANO));
        assert_eq!(parse("1.5Gi"), Some(3 * (1i128 << 29) * NANO));
        assert_eq!(parse("1e3"), Some(1000 * NANO));
        assert_eq!(parse("1k"), Some(1000 * NANO));
        assert_eq!(parse("100n"), Some(100));
        assert_eq!(parse("0.1n"), Some(1), "rounded up");
        assert_eq!(parse("-1"), Some(-NANO));
        assert_eq!(parse("1Xi"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("."), None);
    }

    #[test]
    fn a_reader_gets_bytes_in_a_unit_that_reads() {
        let q = |text: &str| parse(text).unwrap();
        assert_eq!(human("memory", q("24629308Ki")), "23.5Gi");
        assert_eq!(human("memory", q("4Gi")), "4Gi");
        assert_eq!(human("memory", q("1536Mi")), "1.5Gi");
        assert_eq!(human("ephemeral-storage", q("100")), "100");
        assert_eq!(human("cpu", q("3500m")), "3500m");
    }

    #[test]
    fn sums_are_written_in_the_coarsest_exact_unit() {
        assert_eq!(format(3 * NANO, false).0, "3");
        assert_eq!(format(3 * NANO / 2, false).0, "1500m");
        assert_eq!(format(1500, false).0, "1500n");
        assert_eq!(format(1_500_000, false).0, "1500u");
        assert_eq!(format(3 * (1i128 << 30) * NANO, true).0, "3Gi");
        assert_eq!(format(1536 * (1i128 << 20) * NANO, true).0, "1536Mi");
        assert_eq!(format(1000 * NANO, true).0, "1000");
        assert_eq!(format(1024 * NANO, false).0, "1024");
    }
}
