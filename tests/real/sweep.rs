//! `tf-spawner sweep` on a real API server (docs/experiments.md): under a ResourceQuota
//! that holds two runs at a time, the third run starts only once the quota controller
//! has counted a finished run's pods out; in a namespace enforcing Pod Security
//! `restricted` under a quota on limits, a sweep refused at its first run leaves
//! nothing, and one with the flags runs and `compare` reads it. Pods stay Pending here
//! (no nodes): the test binds them and patches their status as a kubelet would.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota};
use kube::api::PostParams;
use serde_json::json;

use crate::support::*;

/// Waits (60 s at most) until run `tag` has `n` pods.
async fn await_pods(real: &Real, ns: &str, tag: &str, n: usize) -> Vec<Pod> {
    let start = Instant::now();
    loop {
        let pods = real.pods(ns, tag).await;
        if pods.len() >= n {
            return pods;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{tag}: no {n} pods"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The quota's controller has counted (before that, no pod is admitted).
async fn await_counted(real: &Real, ns: &str, name: &str) {
    let start = Instant::now();
    while real
        .api::<ResourceQuota>(ns)
        .get(name)
        .await
        .unwrap()
        .status
        .and_then(|s| s.used)
        .is_none_or(|u| u.is_empty())
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "quota never counted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Both workers of run `tag` bound and exited 0.
async fn succeed(real: &Real, ns: &str, tag: &str) {
    for task in ["worker-1", "worker-0"] {
        let name = format!("{tag}-{task}");
        real.bind(ns, &name, "node-a").await;
        real.set_terminated(ns, &name, "tensorflow", 0).await;
    }
}

#[tokio::test]
async fn a_sweep_under_a_quota_for_two_runs_runs_two_at_a_time() {
    let Some(real) = Real::new("a_sweep_under_a_quota_for_two_runs_runs_two_at_a_time").await
    else {
        return;
    };
    let ns = real.namespace("sweep").await;
    let quota: ResourceQuota = serde_json::from_value(
        json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "4" } } }),
    )
    .unwrap();
    real.api::<ResourceQuota>(&ns)
        .create(&PostParams::default(), &quota)
        .await
        .expect("create quota");
    await_counted(&real, &ns, "q").await;
    let script = real.script();
    let args = [
        "-n",
        &ns,
        "sweep",
        "-t",
        "sq",
        "-w",
        "2",
        "--param",
        "lr=0.1,0.2,0.3",
        script.to_str().unwrap(),
        "--",
        "--lr",
        "{lr}",
    ];
    let mut sweep = crate::started::Started::new(&real, Cred::Admin, &args);
    await_pods(&real, &ns, "sq-2", 2).await;
    await_pods(&real, &ns, "sq-1", 2).await;
    // The runs that fit start together ("starting" printed, then created): a line the
    // follow of run 2 prints, after its creation, comes after a third run's "starting".
    sweep.line("sq-2  ").await;
    assert!(
        !sweep.stdout().contains("run sq-3"),
        "a third run does not fit: {}",
        sweep.stdout()
    );
    assert!(
        real.pods(&ns, "sq-3").await.is_empty(),
        "a third run does not fit"
    );
    succeed(&real, &ns, "sq-1").await;
    await_pods(&real, &ns, "sq-3", 2).await;
    succeed(&real, &ns, "sq-2").await;
    succeed(&real, &ns, "sq-3").await;
    let out = sweep.finish().await;
    out.success()
        .stdout_has(
            "experiment sq: 3 runs, 2 at a time: the quota 'q' leaves 4 pods, a run needs 2\n",
        )
        .stdout_has("experiment sq: all 3 runs succeeded");
    for (k, lr) in [(1, "0.1"), (2, "0.2"), (3, "0.3")] {
        let tag = format!("sq-{k}");
        let cms: Vec<ConfigMap> = real.config_maps(&ns, &tag).await;
        let cm = &cms[0];
        assert_eq!(label(&cm.metadata, "tf-spawner/experiment"), Some("sq"));
        let params = cm.metadata.annotations.as_ref().unwrap()["tf-spawner/params"].clone();
        assert_eq!(params, format!("{{\"lr\":\"{lr}\"}}"));
        for pod in real.pods(&ns, &tag).await {
            assert_eq!(label(&pod.metadata, "tf-spawner/experiment"), Some("sq"));
            let c = tf_container(&pod);
            assert_eq!(c.args.clone().unwrap_or_default(), ["--lr", lr]);
            assert_eq!(env_value(c, "TF_SPAWNER_PARAM_LR"), lr);
        }
    }
    let record = real
        .api::<ConfigMap>(&ns)
        .get("sq-experiment")
        .await
        .expect("the experiment's record");
    assert!(record.data.unwrap()["experiment.json"].contains("\"sq-3\""));
}

#[tokio::test]
async fn a_sweep_under_pod_security_restricted_and_a_limits_quota() {
    let Some(real) = Real::new("a_sweep_under_pod_security_restricted_and_a_limits_quota").await
    else {
        return;
    };
    let psa = real.server_minor().await >= 23;
    let ns = crate::hardened::enforcing(&real, "sweep-psa", "restricted").await;
    let quota: ResourceQuota = serde_json::from_value(json!({ "metadata": { "name": "lim" },
        "spec": { "hard": { "limits.cpu": "1", "limits.memory": "2Gi" } } }))
    .unwrap();
    real.api::<ResourceQuota>(&ns)
        .create(&PostParams::default(), &quota)
        .await
        .expect("create quota");
    await_counted(&real, &ns, "lim").await;
    let script = real.script();
    let script = script.to_str().unwrap();
    let sweep = |more: &[&'static str]| {
        let mut args = vec!["-n", ns.as_str(), "sweep", "-t", "sl", "-w", "1"];
        args.extend_from_slice(more);
        args.extend(["--param", "lr=0.1,0.2", script]);
        args
    };
    let nothing_left = || async {
        let maps: Vec<ConfigMap> = real.list(&ns, "tf-spawner/experiment=sl").await;
        assert!(maps.is_empty(), "{maps:?}");
        assert!(real.pods(&ns, "sl-1").await.is_empty());
    };
    // No limits: the quota's rule, before anything is made.
    let out = real.run(Cred::Admin, &sweep(&[])).await;
    out.failure(1).stderr_has(&format!("error: resource quota 'lim' in namespace '{ns}' requires limits.cpu and limits.memory on every container, and the worker's pod's container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created"));
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    nothing_left().await;
    let limits = ["--cpu", "500m", "--memory", "1Gi"];
    if psa {
        // Root: Pod Security's refusal of the first run, the record taken back.
        let out = real.run(Cred::Admin, &sweep(&limits)).await;
        out.failure(1).stderr_has(&format!(
            "namespace '{ns}' enforces Pod Security \"restricted\": runAsNonRoot != true"
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
        nothing_left().await;
    }
    let args = sweep(&[&limits[..], &["--run-as-user", "1000"]].concat());
    let run = real.run(Cred::Admin, &args);
    let driver = async {
        for tag in ["sl-1", "sl-2"] {
            await_pods(&real, &ns, tag, 1).await;
        }
        for tag in ["sl-1", "sl-2"] {
            let name = format!("{tag}-worker-0");
            real.bind(&ns, &name, "node-a").await;
            real.set_terminated(&ns, &name, "tensorflow", 0).await;
        }
    };
    let (out, ()) = tokio::join!(run, driver);
    out.success()
        .stdout_has("experiment sl: 2 runs, 2 at a time: the quota 'lim' leaves 1 limits.cpu, a run needs 500m\n")
        .stdout_has("experiment sl: all 2 runs succeeded");
    for tag in ["sl-1", "sl-2"] {
        let pods = real.pods(&ns, tag).await;
        let c = tf_container(&pods[0]);
        let limits = c.resources.as_ref().unwrap().limits.as_ref().unwrap();
        assert_eq!(limits["cpu"].0, "500m");
        let user = c.security_context.as_ref().and_then(|s| s.run_as_user);
        let pod_user = pods[0]
            .spec
            .as_ref()
            .unwrap()
            .security_context
            .as_ref()
            .and_then(|s| s.run_as_user);
        assert_eq!(user.or(pod_user), Some(1000), "{:?}", pods[0]);
    }
    // compare reads both runs' records: their parameters and verdicts.
    let out = real
        .run(Cred::Admin, &["-n", &ns, "compare", "sl", "-o", "json"])
        .await;
    out.success();
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let mut rows: Vec<(String, String, String)> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&r["tag"]),
                text(&r["params"]["lr"]),
                text(&r["verdict"]),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("sl-1".into(), "0.1".into(), "Succeeded".into()),
            ("sl-2".into(), "0.2".into(), "Succeeded".into())
        ],
        "{json:#}"
    );
}
