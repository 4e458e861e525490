//! Label and field selectors as accepted by list, watch and deletecollection.

use serde_json::Value;

use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<(String, Op)>,
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_err(s: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {s:?}"))
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_err(whole))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn check_key(k: &str, whole: &str) -> Result<String, ApiError> {
    let k = k.trim();
    if k.is_empty()
        || k.contains(char::is_whitespace)
        || !crate::validate::label_key_errors(k).is_empty()
    {
        return Err(parse_err(whole));
    }
    Ok(k.to_string())
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(parse_err(s));
            }
            if let Some(k) = p.strip_prefix('!') {
                reqs.push((check_key(k, p)?, Op::NotExists));
            } else if let Some((k, v)) = p.split_once("!=") {
                reqs.push((check_key(k, p)?, Op::NotEq(v.trim().to_string())));
            } else if let Some((k, v)) = p.split_once("==") {
                reqs.push((check_key(k, p)?, Op::Eq(v.trim().to_string())));
            } else if let Some((k, v)) = p.split_once('=') {
                reqs.push((check_key(k, p)?, Op::Eq(v.trim().to_string())));
            } else if let Some((k, rest)) = p.split_once(" notin ") {
                reqs.push((check_key(k, p)?, Op::NotIn(parse_set(rest, p)?)));
            } else if let Some((k, rest)) = p.split_once(" in ") {
                reqs.push((check_key(k, p)?, Op::In(parse_set(rest, p)?)));
            } else {
                reqs.push((check_key(p, p)?, Op::Exists));
            }
        }
        for (_, op) in &reqs {
            let values: Vec<&String> = match op {
                Op::Eq(v) | Op::NotEq(v) => vec![v],
                Op::In(vs) | Op::NotIn(vs) => vs.iter().collect(),
                _ => vec![],
            };
            if values
                .iter()
                .any(|v| !crate::validate::label_value_errors(v).is_empty())
            {
                return Err(parse_err(s));
            }
        }
        Ok(LabelSelector { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|(k, op)| match op {
            Op::Eq(v) => get(k) == Some(v.as_str()),
            Op::NotEq(v) => get(k) != Some(v.as_str()),
            Op::In(vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Op::NotIn(vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Op::Exists => get(k).is_some(),
            Op::NotExists => get(k).is_none(),
        })
    }
}

/// Field selectors: `path=value`, `path==value`, `path!=value`, comma = AND.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<FieldSelector, ApiError> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            reqs.push((k.trim().to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector { reqs })
    }

    /// Refuses a field the resource's objects cannot be selected by, with a real
    /// server's answer (400 `field label not supported: F`). Every resource has
    /// `metadata.name` and `metadata.namespace`; the others are the API server's
    /// field label conversions (pkg/apis/core/v1/conversion.go).
    pub fn check(&self, resource: &str) -> Result<(), ApiError> {
        let extra: &[&str] = match resource {
            "pods" => &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            "events" => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
            "secrets" => &["type"],
            "namespaces" => &["status.phase"],
            _ => &[],
        };
        match self.reqs.iter().find(|(path, _, _)| {
            !matches!(path.as_str(), "metadata.name" | "metadata.namespace")
                && !extra.contains(&path.as_str())
        }) {
            Some((path, _, _)) => Err(ApiError::bad_request(format!(
                "field label not supported: {path}"
            ))),
            None => Ok(()),
        }
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(path, eq, want)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let got = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (got == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({ "metadata": { "name": "p", "labels": labels } })
    }

    #[test]
    fn label_selector_operators() {
        let p = pod(json!({ "a": "1", "b": "x" }));
        for (sel, want) in [
            ("a=1", true),
            ("a==1", true),
            ("a!=1", false),
            ("c!=1", true),
            ("a", true),
            ("!a", false),
            ("!c", true),
            ("b in (x, y)", true),
            ("b notin (x,y)", false),
            ("c notin (x)", true),
            ("a=1,b=x", true),
            ("a=1,b=y", false),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&p),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("a in x").is_err());
        assert!(LabelSelector::parse("a=b=c").is_err());
        assert!(LabelSelector::parse(",").is_err());
    }

    #[test]
    fn field_selector() {
        let p = pod(json!({}));
        assert!(FieldSelector::parse("metadata.name=p").unwrap().matches(&p));
        assert!(
            !FieldSelector::parse("metadata.name!=p")
                .unwrap()
                .matches(&p)
        );
        let by_pod = FieldSelector::parse("involvedObject.kind=Pod,involvedObject.name=p").unwrap();
        assert!(by_pod.check("events").is_ok());
        assert!(by_pod.check("pods").is_err());
        assert!(
            FieldSelector::parse("spec.nodeName=n")
                .unwrap()
                .check("pods")
                .is_ok()
        );
    }
}
