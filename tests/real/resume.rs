//! Issue 57 item 1 on a real API server: someone who may edit the namespace (`team-a`)
//! plants an experiment's record whose command line runs a program on the user's machine
//! (`--notify`), ships the user's admin kubeconfig (`-e`) and names a directory of its
//! own; the user's `sweep --resume` (the admin) refuses it in one line, and with
//! `--allow-changed` takes up only its data: the user's own script runs on the
//! cluster, nothing runs here, nothing of the user's is shipped.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

async fn await_pod(real: &Real, ns: &str, tag: &str) {
    let start = Instant::now();
    while real.pods(ns, tag).await.is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "{tag}: no pod");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_editors_forged_experiment_record_runs_nothing_on_the_users_machine() {
    let Some(real) =
        Real::new("an_editors_forged_experiment_record_runs_nothing_on_the_users_machine").await
    else {
        return;
    };
    let ns = real.team_ns();
    let name = unique("rf");
    let script = real.script();
    let script = script.to_str().unwrap();
    let marker = real.write("marker-path", "").with_file_name("pwned");
    let admin = real.kubeconfig(Cred::Admin);
    // The editor's record: a command line and a directory of theirs, runs of the
    // user's experiment as its parameters make them.
    let runs: Vec<_> = (1..=2)
        .map(|k| json!({"tag": format!("{name}-{k}"), "params": {"lr": format!("0.{k}")}}))
        .collect();
    let plan = json!({
        "name": name,
        "params": [{"name": "lr", "values": {"list": ["0.1", "0.2"]}}],
        "method": "grid",
        "parallel": 1,
        "argv": ["--notify", format!("touch {}", marker.display()), "-e",
                 admin.to_str().unwrap(), "--param", "lr=0.1,0.2", script],
        "cwd": "/",
        "runs": runs,
    });
    let record = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-experiment"),
                     "labels": {"tf-spawner/experiment": name,
                                "app.kubernetes.io/managed-by": "tf-spawner"}},
        "data": {"experiment.json": plan.to_string()},
    });
    real.kubectl(
        Cred::TeamA,
        &["create", "-n", &ns, "-f", "-"],
        &record.to_string(),
    )
    .await
    .success();

    // The user's own command, with --resume: refused (the record holds no digest of
    // the user's script), nothing created.
    let command = |more: &[&'static str]| {
        let mut words = vec!["-n", ns.as_str(), "sweep", "--resume", name.as_str()];
        words.extend_from_slice(more);
        words.extend(["-w", "1", "--param", "lr=0.1,0.2", script]);
        words
    };
    let out = real.run(Cred::Admin, &command(&[])).await;
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("holds no digest of the script and files it began with")
        .stderr_has("--allow-changed");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(real.config_maps(&ns, &format!("{name}-1")).await.is_empty());

    // Taken up as data: the user's script runs, one run at a time (the record's
    // --parallel); the sweep ends, where a --notify would run.
    let args = command(&["--allow-changed"]);
    let sweep = real.run(Cred::Admin, &args);
    let driver = async {
        for k in 1..=2 {
            let tag = format!("{name}-{k}");
            await_pod(&real, &ns, &tag).await;
            let pod = format!("{tag}-worker-0");
            real.bind(&ns, &pod, "node-a").await;
            real.set_terminated(&ns, &pod, "tensorflow", 0).await;
        }
    };
    let (out, ()) = tokio::join!(sweep, driver);
    out.success()
        .stdout_has(&format!("experiment {name}: all 2 runs succeeded"));
    assert!(
        !marker.exists(),
        "the editor's --notify ran on the user's machine"
    );
    let cm = &real.config_maps(&ns, &format!("{name}-2")).await[0];
    let shipped = cm.data.as_ref().unwrap()["training-script.py"].clone();
    assert_eq!(shipped, std::fs::read_to_string(script).unwrap());
    for k in 1..=2 {
        let pods = real.pods(&ns, &format!("{name}-{k}")).await;
        let spec = pods[0].spec.as_ref().unwrap();
        let from_secret = spec
            .containers
            .iter()
            .any(|c| c.env_from.iter().flatten().any(|e| e.secret_ref.is_some()));
        assert!(
            !from_secret,
            "no -e file of the editor's choosing was shipped"
        );
    }
    real.run(Cred::Admin, &["-n", &ns, "-d", "-y", "--experiment", &name])
        .await
        .success();
}
