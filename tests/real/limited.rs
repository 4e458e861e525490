//! The limited credentials of the real server's RBAC: `team-a` may use pods, services,
//! configmaps and secrets in namespace `team-a` only; `team-a-nosecrets` the same
//! without secrets. The shared namespace `team-a` (their kubeconfig context's) is kept
//! apart by unique tags.

use std::ffi::OsString;
use std::path::Path;

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
    let team_ns = real.team_ns();
    let tag = real.tag_in(&team_ns, "team");
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
    out.success()
        .stdout_has(&format!("created in namespace {team_ns}"));
    assert_eq!(
        real.run_objects(&team_ns, &tag).await,
        vec![
            format!("configmap/{tag}-script"),
            format!("pod/{tag}-worker-0"),
            format!("pod/{tag}-worker-1"),
            format!("secret/{tag}-env"),
            format!("service/{tag}-worker-0"),
            format!("service/{tag}-worker-1"),
        ]
    );
    let pod = &real.pods(&team_ns, &tag).await[1];
    assert!(
        real.tf_config(pod)
            .await
            .contains(&format!("{tag}-worker-1.{team_ns}.svc:1999"))
    );

    let out = real
        .run_raw(&["-d".into(), "-t".into(), tag.clone().into()], &env_var)
        .await;
    out.success()
        .stdout_has(&format!("deleted service/{tag}-worker-0"));
    assert_eq!(out.stdout.matches("deleted ").count(), 6, "{out:#?}");
    assert_eq!(real.run_objects(&team_ns, &tag).await, Vec::<String>::new());
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
        .stderr_has(&format!("in namespace '{ns}'"))
        .stderr_has("examples/rbac.yaml's Role grants it");
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
    let team_ns = real.team_ns();
    let tag = real.tag_in(&team_ns, "nosec");
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
    assert_eq!(real.run_objects(&team_ns, &tag).await, Vec::<String>::new());
}

#[tokio::test]
async fn without_secrets_rights_a_run_without_env_file_works() {
    let Some(real) = Real::new("without_secrets_rights_a_run_without_env_file_works").await else {
        return;
    };
    let team_ns = real.team_ns();
    let tag = real.tag_in(&team_ns, "nosec");
    let script = real.script();
    let out = real
        .run(
            Cred::TeamANoSecrets,
            &["-t", &tag, "-w", "1", script.to_str().unwrap()],
        )
        .await;
    out.success();
    assert_eq!(real.run_objects(&team_ns, &tag).await.len(), 3);
    // It deletes its run whole, with exit 0: its one request on secrets (by label,
    // whatever the record says, issue 49) is refused, and the run's config map says it
    // has none, so nothing is said of it.
    let out = real
        .run(Cred::TeamANoSecrets, &["-v", "-d", "-t", &tag])
        .await;
    out.success()
        .stdout_has(&format!("deleted pod/{tag}-worker-0"))
        .stdout_has(&format!("deleted service/{tag}-worker-0"))
        .stdout_has(&format!("deleted configmap/{tag}-script"));
    assert_eq!(out.stdout.matches("deleted ").count(), 3, "{out:#?}");
    assert!(
        out.stderr
            .lines()
            .filter(|l| l.contains("secrets"))
            .all(|l| l.contains("method=DELETE") && l.contains("status=403")),
        "{out:#?}"
    );
    assert_eq!(real.run_objects(&team_ns, &tag).await, Vec::<String>::new());
    // Deleting it again finds nothing, and cannot look at secrets: a note; exit 0 with
    // --ignore-not-found.
    let out = real
        .run(
            Cred::TeamANoSecrets,
            &["-d", "-t", &tag, "--ignore-not-found"],
        )
        .await;
    out.stdout_has("nothing labelled");
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(
        out.stderr.starts_with(&format!(
            "note: nothing else of run '{tag}' was found, and its secrets could not be looked for: deleting secrets: "
        )) && out.stderr.contains("forbidden")
            && out.stderr.trim_end().lines().count() == 1,
        "{out:#?}"
    );
}

#[tokio::test]
async fn without_secrets_rights_a_run_with_a_secret_is_a_clear_error_on_delete() {
    let Some(real) =
        Real::new("without_secrets_rights_a_run_with_a_secret_is_a_clear_error_on_delete").await
    else {
        return;
    };
    let team_ns = real.team_ns();
    let tag = real.tag_in(&team_ns, "withsec");
    let script = real.script();
    let env = real.write("e.env", "K=v\n");
    real.run(
        Cred::TeamA,
        &[
            "-t",
            &tag,
            "-w",
            "1",
            "-e",
            env.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    let out = real.run(Cred::TeamANoSecrets, &["-d", "-t", &tag]).await;
    out.failure(1)
        .stderr_has("error: deleting secrets: ")
        .stderr_has("Forbidden, 403")
        .stderr_has(&format!(
            "secrets of run '{tag}' may be left in namespace '{team_ns}'"
        ));
    out.stdout_has(&format!("deleted pod/{tag}-worker-0"))
        .stdout_has(&format!("deleted configmap/{tag}-script"));
    assert_eq!(
        real.run_objects(&team_ns, &tag).await,
        [format!("secret/{tag}-env")]
    );
    // A credential with rights on secrets removes what is left.
    real.run(Cred::TeamA, &["-d", "-t", &tag])
        .await
        .success()
        .stdout_has(&format!("deleted secret/{tag}-env"));
    assert_eq!(real.run_objects(&team_ns, &tag).await, Vec::<String>::new());
}

#[test]
fn credentials_come_from_their_own_variables() {
    let admin = Path::new("/srv/k8s/kubeconfig");
    let unset = |_: &str| None;
    assert_eq!(credential_path(admin, Cred::Admin, unset), admin);
    assert_eq!(
        credential_path(admin, Cred::TeamA, unset),
        Path::new("/srv/k8s/kubeconfig-team-a")
    );
    assert_eq!(
        credential_path(admin, Cred::TeamANoSecrets, unset),
        Path::new("/srv/k8s/kubeconfig-team-a-nosecrets")
    );
    let set = |name: &str| -> Option<OsString> {
        match name {
            "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A" => Some("/home/ci/alice.yaml".into()),
            "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A_NOSECRETS" => Some("/home/ci/bob.yaml".into()),
            _ => None,
        }
    };
    assert_eq!(
        credential_path(admin, Cred::TeamA, set),
        Path::new("/home/ci/alice.yaml")
    );
    assert_eq!(
        credential_path(admin, Cred::TeamANoSecrets, set),
        Path::new("/home/ci/bob.yaml")
    );
    // Each on its own; an empty value is no value.
    let one = |name: &str| -> Option<OsString> {
        match name {
            "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A" => Some("".into()),
            "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A_NOSECRETS" => Some("/home/ci/bob.yaml".into()),
            _ => None,
        }
    };
    assert_eq!(
        credential_path(admin, Cred::TeamA, one),
        Path::new("/srv/k8s/kubeconfig-team-a")
    );
    assert_eq!(
        credential_path(admin, Cred::TeamANoSecrets, one),
        Path::new("/home/ci/bob.yaml")
    );
}
