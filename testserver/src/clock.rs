//! The server's clock, as the API writes times (a leaf: it uses none).

/// Now, as `creationTimestamp` and a condition's `lastTransitionTime` are written.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
