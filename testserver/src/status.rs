//! `Status` objects, the way a kube-apiserver reports failures.

use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
}

/// One entry of `details.causes` of a 422 answer.
#[derive(Debug, Clone)]
pub struct Cause {
    pub reason: &'static str,
    pub field: String,
    /// Message without the field, e.g. `Invalid value: "X": must be ...`.
    pub message: String,
}

impl Cause {
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Cause {
        Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {}: {detail}", render(value)),
        }
    }
    pub fn required(field: impl Into<String>, detail: &str) -> Cause {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause {
            reason: "FieldValueRequired",
            field: field.into(),
            message,
        }
    }
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Cause {
        Cause {
            reason: "FieldValueDuplicate",
            field: field.into(),
            message: format!("Duplicate value: {}", render(value)),
        }
    }
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Cause {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                render(value),
                list.join(", ")
            ),
        }
    }
    pub fn not_found(field: impl Into<String>, value: &Value) -> Cause {
        Cause {
            reason: "FieldValueNotFound",
            field: field.into(),
            message: format!("Not found: {}", render(value)),
        }
    }
    pub fn too_long(field: impl Into<String>, max: usize) -> Cause {
        Cause {
            reason: "FieldValueTooLong",
            field: field.into(),
            message: format!("Too long: must have at most {max} bytes"),
        }
    }
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
        Cause {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }
    fn full_message(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// Values are shown the way Go's `%#v` would: strings quoted, numbers bare.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

pub fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub(crate) fn with_details(mut self, name: &str, kind: &str) -> ApiError {
        let mut d = json!({ "kind": kind });
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        self.details = Some(d);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("{resource} {name:?} not found"))
            .with_details(name, resource)
    }

    pub fn no_such_path() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details("", "")
    }

    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details("", "")
    }

    pub fn already_exists(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{resource} {name:?} already exists"),
        )
        .with_details(name, resource)
    }

    pub fn conflict(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified; please apply your changes to the latest version and try again"
            ),
        )
        .with_details(name, resource)
    }

    /// What a real server says when a delete's uid precondition does not hold.
    pub fn uid_precondition(kind: &str, name: &str, want: &str, have: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {kind} {name:?}: the UID in the precondition ({want}) does not match the UID in record ({have}). The object might have been deleted and then recreated"
            ),
        )
        .with_details(name, kind)
    }

    pub fn forbidden(
        user: &str,
        verb: &str,
        resource: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> ApiError {
        let base = resource.split('/').next().unwrap_or(resource);
        let subject = match name {
            Some(n) => format!("{base} {n:?}"),
            None => base.to_string(),
        };
        // A store key `plural.group` is RBAC's resource `plural` in API group `group`.
        let (resource, group) = match resource.split_once('.') {
            Some((plural, rest)) => {
                let (group, sub) = rest
                    .split_once('/')
                    .map_or((rest, None), |(g, s)| (g, Some(s)));
                (
                    sub.map_or(plural.to_string(), |s| format!("{plural}/{s}")),
                    group,
                )
            }
            None => (resource.to_string(), ""),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace {ns:?}"),
            None => "at the cluster scope".to_string(),
        };
        ApiError::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User {user:?} cannot {verb} resource {resource:?} in API group {group:?} {scope}"
            ),
        )
        .with_details(name.unwrap_or(""), base)
    }

    pub fn invalid(kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let summary = if causes.len() == 1 {
            causes[0].full_message()
        } else {
            let all: Vec<String> = causes.iter().map(Cause::full_message).collect();
            format!("[{}]", all.join(", "))
        };
        let json_causes: Vec<Value> = causes
            .iter()
            .map(|c| json!({ "reason": c.reason, "message": c.full_message(), "field": c.field }))
            .collect();
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!("{kind} {name:?} is invalid: {summary}"),
        );
        e.details = Some(json!({ "name": name, "kind": kind, "causes": json_causes }));
        e
    }

    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// An error for an injected fault of the given code.
    pub fn from_code(code: u16, retry_after: Option<u64>) -> ApiError {
        let reason = match code {
            409 => "AlreadyExists",
            c => reason_for(c),
        };
        let message = match code {
            429 => "Too many requests, please try again later.".to_string(),
            500 => "Internal error occurred: injected fault".to_string(),
            503 => "the server is currently unable to handle the request".to_string(),
            403 => "forbidden: injected fault".to_string(),
            404 => "the server could not find the requested resource".to_string(),
            409 => "object already exists (injected fault)".to_string(),
            422 => "object is invalid (injected fault)".to_string(),
            c => format!("injected fault {c}"),
        };
        let mut e = ApiError::new(code, reason, message);
        if let Some(secs) = retry_after {
            e.details = Some(json!({ "retryAfterSeconds": secs }));
        }
        e.retry_after = retry_after.or(if code == 429 { Some(1) } else { None });
        e
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

pub fn success_status(resource: &str, name: &str, uid: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": { "name": name, "kind": resource, "uid": uid },
    })
}
