//! A refusal by RBAC (403) as one line naming the right that is missing, the rule of the
//! shipped file (`examples/rbac.yaml`, `rbac-gangs.yaml`, `rbac-cluster.yaml`) that grants
//! it and who can apply that file (issue 49: a verb missing a right says which).

/// Where the shipped RBAC files grant a resource: the file, its role, and who can apply
/// it. One rule per resource.
struct Grant {
    file: &'static str,
    role: &'static str,
    who: &'static str,
}

const NAMESPACE_ADMIN: Grant = Grant {
    file: "examples/rbac.yaml",
    role: "Role",
    who: "whoever manages the namespace",
};
const GANGS: Grant = Grant {
    file: "examples/rbac-gangs.yaml",
    role: "Role",
    who: "a cluster admin",
};
const CLUSTER: Grant = Grant {
    file: "examples/rbac-cluster.yaml",
    role: "ClusterRole",
    who: "a cluster admin",
};

/// The resources the shipped files have a rule for, and where.
const RBAC_RULES: [(&str, &Grant); 16] = [
    ("pods", &NAMESPACE_ADMIN),
    ("pods/log", &NAMESPACE_ADMIN),
    ("services", &NAMESPACE_ADMIN),
    ("configmaps", &NAMESPACE_ADMIN),
    ("secrets", &NAMESPACE_ADMIN),
    ("events", &NAMESPACE_ADMIN),
    ("resourcequotas", &NAMESPACE_ADMIN),
    ("persistentvolumeclaims", &NAMESPACE_ADMIN),
    ("pods/exec", &NAMESPACE_ADMIN),
    ("pods/portforward", &NAMESPACE_ADMIN),
    ("networkpolicies", &NAMESPACE_ADMIN),
    ("jobs", &NAMESPACE_ADMIN),
    ("podgroups", &GANGS),
    ("localqueues", &GANGS),
    ("nodes", &CLUSTER),
    ("queues", &CLUSTER),
];

/// An RBAC refusal (`User "u" cannot patch resource "pods" in API group "" in the
/// namespace "ns"`, the authorizer's words since 1.14) as one line naming the right and
/// the rule of the shipped file (`examples/rbac*.yaml`) that grants it.
pub(super) fn missing_right(message: &str, namespace: &str) -> Option<String> {
    let (_, rest) = message.split_once(" cannot ")?;
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, _) = rest.split_once('"')?;
    let rule = match RBAC_RULES.iter().find(|(r, _)| *r == resource) {
        Some((_, g)) => format!(
            "{}'s {} grants it in its rule for {resource} (ask {} to apply it)",
            g.file, g.role, g.who
        ),
        None => "examples/rbac.yaml lists what each command needs".to_string(),
    };
    let scope = if message.ends_with("at the cluster scope") {
        "at the cluster scope".to_string()
    } else {
        format!("in namespace '{namespace}'")
    };
    Some(format!(
        "this credential is forbidden to {verb} {resource} {scope} (Forbidden, 403); {rule}"
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
        assert!(missing_right(m, "ns").unwrap().ends_with("list nodes at the cluster scope (Forbidden, 403); examples/rbac-cluster.yaml's ClusterRole grants it in its rule for nodes (ask a cluster admin to apply it)"));
        let m = r#"podgroups.scheduling.volcano.sh is forbidden: User "u" cannot create resource "podgroups" in API group "scheduling.volcano.sh" in the namespace "ns""#;
        assert!(missing_right(m, "ns").unwrap().ends_with("examples/rbac-gangs.yaml's Role grants it in its rule for podgroups (ask a cluster admin to apply it)"));
        let m = r#"leases is forbidden: User "u" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "ns""#;
        assert!(
            missing_right(m, "ns")
                .unwrap()
                .ends_with("(Forbidden, 403); examples/rbac.yaml lists what each command needs")
        );
        assert_eq!(missing_right("forbidden by a webhook", "ns"), None);
    }
}
