//! `examples/rbac.yaml`'s Role, ServiceAccount and RoleBinding and `rbac-gangs.yaml`'s Role
//! and RoleBinding made in a test's namespace (the cluster-scoped `rbac-cluster.yaml` is
//! optional and left out), and a kubeconfig carrying
//! that ServiceAccount's token from the TokenRequest API (`serviceaccounts/token`, a
//! POST every server since 1.20 serves; `kubectl create token` needs kubectl 1.24+).
//! Shared by the real-server and running-pods suites (issue 49, item 7).

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;

/// The shipped namespaced files (`examples/rbac.yaml` and the gangs' `rbac-gangs.yaml`),
/// split into their objects.
fn documents() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/");
    ["rbac.yaml", "rbac-gangs.yaml"]
        .into_iter()
        .flat_map(|name| {
            let file = std::fs::read_to_string(format!("{root}{name}")).expect(name);
            file.split("\n---\n")
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Creates the files' Roles, ServiceAccount and RoleBindings in `ns`, as they are written.
pub async fn apply_role(client: &Client, ns: &str) {
    let pp = PostParams::default();
    for doc in documents() {
        if doc.contains("\nkind: Role\n") {
            let role: Role = serde_saphyr::from_str(&doc).expect("the Role");
            Api::<Role>::namespaced(client.clone(), ns)
                .create(&pp, &role)
                .await
                .expect("create the Role");
        } else if doc.contains("\nkind: ServiceAccount\n") {
            let sa: ServiceAccount = serde_saphyr::from_str(&doc).expect("the ServiceAccount");
            Api::<ServiceAccount>::namespaced(client.clone(), ns)
                .create(&pp, &sa)
                .await
                .expect("create the ServiceAccount");
        } else if doc.contains("\nkind: RoleBinding\n") {
            let mut binding: RoleBinding = serde_saphyr::from_str(&doc).expect("the RoleBinding");
            for subject in binding.subjects.iter_mut().flatten() {
                subject.namespace = Some(ns.to_string());
            }
            Api::<RoleBinding>::namespaced(client.clone(), ns)
                .create(&pp, &binding)
                .await
                .expect("create the RoleBinding");
        }
    }
}

/// A kubeconfig for ServiceAccount `tf-spawner` of `ns` in `dir`: the admin kubeconfig's
/// server and CA, the account's token, `ns` as its namespace.
pub async fn kubeconfig(client: &Client, admin: &Path, ns: &str, dir: &Path) -> PathBuf {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let answer = Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create_token_request("tf-spawner", &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("TokenRequest for {ns}/tf-spawner: {e}"));
    let token = answer.status.expect("a token").token;
    let mut config = Kubeconfig::read_from(admin).expect("admin kubeconfig");
    let current = config.current_context.clone().unwrap_or_default();
    let user = format!("{ns}-tf-spawner");
    for context in &mut config.contexts {
        if context.name == current
            && let Some(c) = context.context.as_mut()
        {
            c.user = Some(user.clone());
            c.namespace = Some(ns.to_string());
        }
    }
    config.auth_infos = vec![kube::config::NamedAuthInfo {
        name: user,
        auth_info: Some(kube::config::AuthInfo {
            token: Some(token.into()),
            ..kube::config::AuthInfo::default()
        }),
        other: Default::default(),
    }];
    let path = dir.join("kubeconfig-service-account");
    std::fs::write(
        &path,
        serde_json::to_vec(&config).expect("kubeconfig as JSON"),
    )
    .unwrap();
    path
}
