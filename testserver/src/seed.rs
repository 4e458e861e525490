//! Objects put in the store without a request: [`crate::TestServer::insert`], and the
//! fault that plants one ([`crate::FaultAction::Plant`]).

use serde_json::{Value, json};

use crate::context::Shared;
use crate::objects;
use crate::store::Store;

/// [`crate::TestServer::insert`], also the fault that plants an object
/// ([`crate::FaultAction::Plant`]).
pub(crate) fn seed(shared: &Shared, resource: &str, namespace: &str, mut obj: Value) {
    let mut st = shared.store.lock().unwrap_or_else(|e| e.into_inner());
    if objects::is_namespaced(resource) && !st.namespace_exists(namespace) {
        add_namespace(&mut st, namespace);
    }
    if let Some(kind) = objects::kind_of(resource) {
        obj["kind"] = json!(kind);
        obj["apiVersion"] = json!(objects::api_version_of(resource));
    }
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    let given_status = obj.get("status").cloned();
    if resource == "secrets" {
        objects::normalize_secret(&mut obj);
    }
    objects::fill_new(&shared.cluster_ips, resource, namespace, &mut obj);
    if let (Some(s), "pods") = (given_status, resource) {
        objects::merge_patch(&mut obj["status"], &s);
    }
    st.put(resource, namespace, obj);
}

pub(crate) fn add_namespace(store: &mut Store, name: &str) {
    let mut ns = json!({ "kind": "Namespace", "apiVersion": "v1", "metadata": { "name": name } });
    // A namespace takes no cluster IP.
    objects::fill_new(&objects::ClusterIps::default(), "namespaces", "", &mut ns);
    store.put("namespaces", "", ns);
}
