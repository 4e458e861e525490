//! Kubernetes' expansion of container env values, as the kubelet does it, for tests that
//! must know what a process will see from what the API server stored (pods refer to the
//! run's cluster as `$(TF_SPAWNER_CLUSTER)` in `TF_CONFIG`). Shared by the three suites.

#![allow(dead_code)]

/// `$(NAME)` of a variable defined before it (the last definition wins) is replaced, `$$`
/// is a literal `$`, anything else stays as written.
pub fn expand(value: &str, defined: &[(String, String)]) -> String {
    let lookup = |name: &str| {
        defined
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    };
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some(v) = lookup(&inner[..end])
        {
            out.push_str(v);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn expands_like_the_kubelet() {
    let defined = vec![
        ("A".to_string(), "1".to_string()),
        ("B".to_string(), "{x}".to_string()),
    ];
    assert_eq!(expand("$(A)-$(B)", &defined), "1-{x}");
    assert_eq!(expand("$$(A) $(C) $ $(", &defined), "$(A) $(C) $ $(");
}
