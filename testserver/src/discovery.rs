//! Discovery of an API group and the answer in the version a URL asks for, as a real
//! kube-apiserver gives them for custom resources:
//!
//! - `GET /apis/GROUP`: an `APIGroup` listing the group's served versions, highest
//!   priority first, and that one as `preferredVersion`
//!   (apiextensions-apiserver `pkg/apiserver/customresource_discovery_controller.go`:
//!   versions sorted by `version.CompareKubeAwareVersionStrings`); a group nothing
//!   serves is 404.
//! - An object read or written at `/apis/GROUP/VERSION/…` comes back with that
//!   `apiVersion` whatever version stored it (a CRD without a conversion webhook changes
//!   nothing else).

use serde_json::{Value, json};

use crate::context::Reply;
use crate::objects::CUSTOM;

/// `GET /apis/GROUP`: the versions of `group` that `served` says are served (in the
/// order of [`CUSTOM`], newest first), or `None` (404) when there is none.
pub fn api_group(group: &str, served: impl Fn(&str) -> bool) -> Option<Value> {
    let mut versions: Vec<&str> = Vec::new();
    for (_, g, v, _) in CUSTOM {
        if *g == group && !versions.contains(v) && served(v) {
            versions.push(v);
        }
    }
    let entry = |v: &str| json!({ "groupVersion": format!("{group}/{v}"), "version": v });
    let preferred = entry(versions.first()?);
    Some(json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": group,
        "versions": versions.iter().map(|v| entry(v)).collect::<Vec<_>>(),
        "preferredVersion": preferred,
    }))
}

/// A reply of `/apis/GROUP/VERSION/…` in `api_version` (`GROUP/VERSION`): an object or
/// a list of the group stored in another version of it is answered in this one. A
/// `Status` (`v1`) and a stream are left alone.
pub fn in_version(reply: Reply, api_version: &str) -> Reply {
    let group = api_version.split('/').next().unwrap_or_default();
    let other = |v: &Value| {
        v.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|a| a != api_version && a.split('/').next() == Some(group))
    };
    match reply {
        Reply::Json(code, mut v) if other(&v) => {
            v["apiVersion"] = json!(api_version);
            Reply::Json(code, v)
        }
        Reply::Stored(code, obj) if other(&obj) => {
            let mut v = (*obj).clone();
            v["apiVersion"] = json!(api_version);
            Reply::Json(code, v)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_lists_its_served_versions_newest_first_and_prefers_the_newest() {
        let both = api_group("kueue.x-k8s.io", |_| true).unwrap();
        assert_eq!(
            both["versions"][0]["groupVersion"],
            "kueue.x-k8s.io/v1beta2"
        );
        assert_eq!(both["versions"][1]["version"], "v1beta1");
        assert_eq!(both["preferredVersion"]["version"], "v1beta2");
        let old = api_group("kueue.x-k8s.io", |v| v == "v1beta1").unwrap();
        assert_eq!(old["versions"].as_array().unwrap().len(), 1);
        assert_eq!(old["preferredVersion"]["version"], "v1beta1");
        assert!(api_group("kueue.x-k8s.io", |_| false).is_none());
        assert!(api_group("example.com", |_| true).is_none());
    }

    #[test]
    fn an_object_is_answered_in_the_asked_version_and_a_status_is_not() {
        let stored = json!({ "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue" });
        let Reply::Json(200, v) = in_version(Reply::Json(200, stored), "kueue.x-k8s.io/v1beta1")
        else {
            panic!("not json");
        };
        assert_eq!(v["apiVersion"], "kueue.x-k8s.io/v1beta1");
        let status = json!({ "apiVersion": "v1", "kind": "Status" });
        let Reply::Json(200, v) = in_version(Reply::Json(200, status), "kueue.x-k8s.io/v1beta1")
        else {
            panic!("not json");
        };
        assert_eq!(v["apiVersion"], "v1");
    }
}
