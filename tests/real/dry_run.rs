//! `--dry-run` prints what the real server accepts: judged by the 1.20 kubectl with
//! `--dry-run=server`, then by creating the objects from the printed YAML for real.

use crate::support::*;

#[tokio::test]
async fn dry_run_yaml_and_json_are_accepted_by_the_server() {
    let Some(real) = Real::new("dry_run_yaml_and_json_are_accepted_by_the_server").await else {
        return;
    };
    let ns = real.namespace("dry").await;
    let script = real.script();
    let env = real.write("e.env", "SECRET_TOKEN=hush-hush-42\n");
    let entry = real.write(
        "entry.sh",
        "#!/bin/bash\nexec python /script/training-script.py\n",
    );
    let args = |format: &'static str| {
        vec![
            "--dry-run".into(),
            "-o".into(),
            format.into(),
            "-n".into(),
            ns.clone().into(),
            "-t".into(),
            "paper".into(),
            "-w".into(),
            "3".into(),
            "-e".into(),
            env.clone().into_os_string(),
            "-c".into(),
            entry.clone().into_os_string(),
            script.clone().into_os_string(),
        ]
    };
    // No kubeconfig at all: a dry run needs no cluster.
    let yaml = real.run_raw(&args("yaml"), &[]).await;
    yaml.success().stdout_lacks("hush-hush-42");
    let json = real.run_raw(&args("json"), &[]).await;
    json.success().stdout_lacks("hush-hush-42");
    assert_eq!(real.run_objects(&ns, "paper").await, Vec::<String>::new());

    for printed in [&yaml.stdout, &json.stdout] {
        let out = real
            .kubectl(
                Cred::Admin,
                &["apply", "--dry-run=server", "-f", "-"],
                printed,
            )
            .await;
        out.success();
        for object in [
            "configmap/paper-script",
            "secret/paper-env",
            "service/paper-worker-2",
            "pod/paper-worker-2",
        ] {
            out.stdout_has(&format!("{object} created (server dry run)"));
        }
        assert_eq!(out.stdout.lines().count(), 8, "{out:#?}");
    }
    assert_eq!(real.run_objects(&ns, "paper").await, Vec::<String>::new());

    // Created for real from the YAML, the objects are a run tf-spawner recognises.
    real.kubectl(Cred::Admin, &["create", "-f", "-"], &yaml.stdout)
        .await
        .success();
    assert_eq!(real.run_objects(&ns, "paper").await.len(), 8);
    let pods = real.pods(&ns, "paper").await;
    let tf_config = real.tf_config(&pods[2]).await;
    assert!(
        tf_config.contains(&format!("paper-worker-2.{ns}.svc:1999")),
        "{tf_config}"
    );
    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "-t", "paper"])
        .await;
    out.success();
    assert_eq!(out.stdout.matches("deleted ").count(), 8, "{out:#?}");
    assert_eq!(real.run_objects(&ns, "paper").await, Vec::<String>::new());
}
