//! The limited credentials of the real server's RBAC: `team-a` may use pods, services,
//! configmaps and secrets in namespace `team-a` only; `team-a-nosecrets` the same
//! without secrets. The shared namespace `team-a` is kept apart by unique tags.

use std::ffi::OsString;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};

use crate::support::*;

/// Everything in `ns` (whatever its labels) but what the controller manager makes.
async fn everything(real: &Real, ns: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    all.extend(
        real.list::<Pod>(ns, "")
            .await
            .iter()
            .map(|o| format!("pod/{}", name(&o.metadata))),
    );
    all.extend(
        real.list::<Service>(ns, "")
            .await
            .iter()
            .map(|o| format!("service/{}", name(&o.metadata))),
    );
    all.extend(
        real.list::<ConfigMap>(ns, "")
            .await
            .iter()
            .map(|o| format!("configmap/{}", name(&o.metadata)))
            .filter(|n| n != "configmap/kube-root-ca.crt"),
    );
    all.extend(
        real.list::<Secret>(ns, "")
            .await
            .iter()
            .filter(|s| s.type_.as_deref() != Some("kubernetes.io/service-account-token"))
            .map(|o| format!("secret/{}", name(&o.metadata))),
    );
    all
}

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

#[tokio::test]
async fn team_a_spawns_and_deletes_in_its_namespace() {
    let Some(real) = Real::new("team_a_spawns_and_deletes_in_its_namespace").await else {
        return;
    };
    let tag = real.tag_in(TEAM_NS, "team");
    let script = real.script();
    let env = real.write("e.env", "WANDB_KEY=k-123\n");
    // KUBECONFIG instead of --kubeconfig, and no -n: the context's namespace, team-a.
    let kubeconfig: OsString = real.kubeconfig(Cred::TeamA).into();
    let env_var = [("KUBECONFIG", kubeconfig)];
    let out = real
        .run_raw(
            &[
                "-t".into(),
                tag.clone().into(),
                "-w".into(),
                "2".into(),
                "-e".into(),
                env.into(),
                script.into(),
            ],
            &env_var,
        )
        .await;
    out.success().stdout_has("created in namespace team-a");
    assert_eq!(
        real.run_objects(TEAM_NS, &tag).await,
        vec![
            format!("configmap/{tag}-script"),
            format!("pod/{tag}-worker-0"),
            format!("pod/{tag}-worker-1"),
            format!("secret/{tag}-env"),
            format!("service/{tag}-worker-0"),
            format!("service/{tag}-worker-1"),
        ]
    );
    let pod = &real.pods(TEAM_NS, &tag).await[1];
    assert!(
        env_value(tf_container(pod), "TF_CONFIG")
            .contains(&format!("{tag}-worker-1.team-a.svc:1999"))
    );

    let out = real
        .run_raw(&["-d".into(), "-t".into(), tag.clone().into()], &env_var)
        .await;
    out.success()
        .stdout_has(&format!("deleted service/{tag}-worker-0"));
    assert_eq!(out.stdout.matches("deleted ").count(), 6, "{out:#?}");
    assert_eq!(real.run_objects(TEAM_NS, &tag).await, Vec::<String>::new());
}

#[tokio::test]
async fn team_a_is_forbidden_elsewhere() {
    let Some(real) = Real::new("team_a_is_forbidden_elsewhere").await else {
        return;
    };
    let ns = real.namespace("forbidden").await;
    let script = real.script();
    let before = everything(&real, &ns).await;
    let out = real
        .run(
            Cred::TeamA,
            &["-n", &ns, "-t", "intruder", script.to_str().unwrap()],
        )
        .await;
    out.failure(1)
        .stderr_has("forbidden")
        .stderr_has("403")
        .stderr_has(&format!("\"{ns}\""));
    assert_eq!(everything(&real, &ns).await, before, "nothing created");

    // A run there (made by admin) cannot be deleted with team-a's rights, and is left whole.
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "owned",
            "-w",
            "1",
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    let owned = real.snapshot(&ns, "owned").await;
    assert_eq!(owned.len(), 3);
    let out = real
        .run(Cred::TeamA, &["-n", &ns, "-d", "-t", "owned"])
        .await;
    out.failure(1).stderr_has("forbidden");
    assert_eq!(real.snapshot(&ns, "owned").await, owned);
}

#[tokio::test]
async fn without_secrets_rights_an_env_file_is_a_clear_error_and_creates_nothing() {
    let Some(real) =
        Real::new("without_secrets_rights_an_env_file_is_a_clear_error_and_creates_nothing").await
    else {
        return;
    };
    let tag = real.tag_in(TEAM_NS, "nosec");
    let script = real.script();
    let env = real.write("e.env", "K=v\n");
    let out = real
        .run(
            Cred::TeamANoSecrets,
            &[
                "-t",
                &tag,
                "-e",
                env.to_str().unwrap(),
                script.to_str().unwrap(),
            ],
        )
        .await;
    out.failure(1).stderr_has("secrets").stderr_has("forbidden");
    assert_eq!(real.run_objects(TEAM_NS, &tag).await, Vec::<String>::new());
}

#[tokio::test]
async fn without_secrets_rights_a_run_without_env_file_works() {
    let Some(real) = Real::new("without_secrets_rights_a_run_without_env_file_works").await else {
        return;
    };
    let tag = real.tag_in(TEAM_NS, "nosec");
    let script = real.script();
    let out = real
        .run(
            Cred::TeamANoSecrets,
            &["-t", &tag, "-w", "1", script.to_str().unwrap()],
        )
        .await;
    out.success();
    assert_eq!(real.run_objects(TEAM_NS, &tag).await.len(), 3);
}
