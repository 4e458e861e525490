//! A refusal by RBAC (403) as one line naming the right that is missing and the rule of
//! `examples/rbac.yaml` that grants it (issue 49: a verb missing a right says which).

/// The resources `examples/rbac.yaml` has a rule for (one rule per resource; `nodes` and
/// Volcano's `queues` in its ClusterRole).
const RBAC_RULES: [&str; 15] = [
    "pods",
    "pods/log",
    "services",
    "configmaps",
    "secrets",
    "events",
    "resourcequotas",
    "persistentvolumeclaims",
    "pods/exec",
    "pods/portforward",
    "networkpolicies",
    "podgroups",
    "localqueues",
    "nodes",
    "queues",
];

/// An RBAC refusal (`User "u" cannot patch resource "pods" in API group "" in the
/// namespace "ns"`, the authorizer's words since 1.14) as one line naming the right and
/// the rule of `examples/rbac.yaml` that grants it.
pub(super) fn missing_right(message: &str, namespace: &str) -> Option<String> {
    let (_, rest) = message.split_once(" cannot ")?;
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, _) = rest.split_once('"')?;
    let rule = if RBAC_RULES.contains(&resource) {
        let role = if matches!(resource, "nodes" | "queues") {
            "ClusterRole"
        } else {
            "Role"
        };
        format!("examples/rbac.yaml's {role} grants it in its rule for {resource}")
    } else {
        "examples/rbac.yaml lists what each command needs".to_string()
    };
    let scope = if message.ends_with("at the cluster scope") {
        "at the cluster scope".to_string()
    } else {
        format!("in namespace '{namespace}'")
    };
    Some(format!(
        "this credential is forbidden to {verb} {resource} {scope} (Forbidden, 403); {rule} (ask whoever manages the namespace to apply it)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_right_and_the_rule() {
        let m = r#"configmaps "t-script" is forbidden: User "system:serviceaccount:ns:ci" cannot patch resource "configmaps" in API group "" in the namespace "ns""#;
        assert_eq!(
            missing_right(m, "ns").as_deref(),
            Some(
                "this credential is forbidden to patch configmaps in namespace 'ns' (Forbidden, 403); examples/rbac.yaml's Role grants it in its rule for configmaps (ask whoever manages the namespace to apply it)"
            )
        );
        let m = r#"nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope"#;
        assert!(missing_right(m, "ns").unwrap().contains("list nodes at the cluster scope (Forbidden, 403); examples/rbac.yaml's ClusterRole grants it in its rule for nodes"));
        assert_eq!(missing_right("forbidden by a webhook", "ns"), None);
    }
}
