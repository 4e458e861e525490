//! wait, status, list and logs against the real server, with pod phases driven by
//! patching `pods/status` (there is no kubelet). Pod logs here are always empty (204, no
//! node has taken the pods).

use serde_json::{Value, json};

use crate::started::Started;
use crate::support::*;

/// Runs `args` as `cred` and, once the binary has listed the run (its first line, the
/// tasks counted: `worker    0/2 running, 2 pending`) and follows it, drives its pods.
async fn driven<F: std::future::Future>(
    real: &Real,
    cred: Cred,
    args: &[&str],
    drive: F,
) -> (Output, F::Output) {
    let mut started = Started::new(real, cred, args);
    started.line("worker ").await;
    let driven = drive.await;
    (started.finish().await, driven)
}

#[tokio::test]
async fn wait_follows_phases_to_success_saves_logs_and_cleans_up() {
    let Some(real) = Real::new("wait_follows_phases_to_success_saves_logs_and_cleans_up").await
    else {
        return;
    };
    let ns = real.namespace("follow").await;
    real.spawn_run(&ns, "ok", 2).await;
    let logs = real.dir.path().join("logs");
    let logs_arg = logs.to_str().unwrap().to_string();
    let args = [
        "-n",
        &ns,
        "wait",
        "-t",
        "ok",
        "--timeout",
        "60s",
        "--save-logs",
        &logs_arg,
        "--cleanup",
    ];
    let (out, ()) = driven(&real, Cred::Admin, &args, async {
        real.set_running(&ns, "ok-worker-0", "tensorflow").await;
        real.set_running(&ns, "ok-worker-1", "tensorflow").await;
        real.set_terminated(&ns, "ok-worker-1", "tensorflow", 0)
            .await;
        real.set_terminated(&ns, "ok-worker-0", "tensorflow", 0)
            .await;
    })
    .await;
    out.success();
    for pod in ["ok-worker-0", "ok-worker-1"] {
        assert!(logs.join(format!("{pod}.log")).is_file(), "{pod}: {out:#?}");
    }
    assert!(
        real.run_objects(&ns, "ok").await.is_empty(),
        "--cleanup left objects"
    );
}

#[tokio::test]
async fn wait_names_the_failed_pod_and_exits_3() {
    let Some(real) = Real::new("wait_names_the_failed_pod_and_exits_3").await else {
        return;
    };
    let ns = real.namespace("follow").await;
    real.spawn_run(&ns, "bad", 2).await;
    let args = ["-n", &ns, "wait", "-t", "bad", "--timeout", "60s"];
    let (out, ()) = driven(&real, Cred::Admin, &args, async {
        real.bind(&ns, "bad-worker-0", "node-a").await;
        real.set_running(&ns, "bad-worker-0", "tensorflow").await;
        real.set_terminated(&ns, "bad-worker-1", "tensorflow", 1)
            .await;
    })
    .await;
    assert_eq!(out.code, 3, "{out:#?}");
    let last = out
        .stderr
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with("error: ") && last.contains("bad-worker-1"),
        "{out:#?}"
    );
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    // The failed pod is left for inspection; the one still running on its node is
    // stopped and kept: the real server took the lowered deadline and the annotation
    // (a kubelet would end it; tests/pods sees one do it).
    out.stdout_has(
        "stopped 1 pod still running after the verdict: bad-worker-0 (kept with its logs until -d",
    );
    let pods = real.pods(&ns, "bad").await;
    assert_eq!(pods.len(), 2, "{pods:#?}");
    let stopped = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("bad-worker-0"))
        .unwrap();
    assert_eq!(
        stopped.spec.as_ref().unwrap().active_deadline_seconds,
        Some(1)
    );
    assert!(
        stopped
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key("tf-spawner/stopped"),
        "{stopped:#?}"
    );
    assert!(pods.iter().all(|p| p.metadata.deletion_timestamp.is_none()));
}

#[tokio::test]
async fn wait_for_start_fails_fast_on_an_image_that_cannot_be_pulled() {
    let Some(real) = Real::new("wait_for_start_fails_fast_on_an_image_that_cannot_be_pulled").await
    else {
        return;
    };
    let ns = real.namespace("follow").await;
    // No grace for the pull error (`--pull-grace`): it fails the run at once.
    let script = real.script();
    real.run(
        Cred::Admin,
        &[
            "-n",
            &ns,
            "-t",
            "pull",
            "-w",
            "1",
            "--pull-grace",
            "0s",
            script.to_str().unwrap(),
        ],
    )
    .await
    .success();
    let args = [
        "-n",
        &ns,
        "wait",
        "-t",
        "pull",
        "--for",
        "start",
        "--timeout",
        "60s",
    ];
    let (out, _) = driven(&real, Cred::Admin, &args, real.patch_pod_status(
            &ns,
            "pull-worker-0",
            json!({"phase": "Pending", "containerStatuses": [container_status("tensorflow", false, json!({
                "waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope:1\""}
            }))]}),
        )).await;
    out.failure(6).stderr_has("ImagePullBackOff");
}

#[tokio::test]
async fn wait_times_out_with_exit_4() {
    let Some(real) = Real::new("wait_times_out_with_exit_4").await else {
        return;
    };
    let ns = real.namespace("follow").await;
    real.spawn_run(&ns, "slow", 1).await;
    real.run(
        Cred::Admin,
        &["-n", &ns, "wait", "-t", "slow", "--timeout", "2s"],
    )
    .await
    .failure(4);
}

#[tokio::test]
async fn status_and_list_show_what_the_server_stores() {
    let Some(real) = Real::new("status_and_list_show_what_the_server_stores").await else {
        return;
    };
    let ns = real.namespace("follow").await;
    real.spawn_run(&ns, "st", 2).await;
    real.spawn_run(&ns, "other", 1).await;
    real.set_running(&ns, "st-worker-0", "tensorflow").await;
    real.set_terminated(&ns, "st-worker-1", "tensorflow", 0)
        .await;

    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "status", "-t", "st", "-o", "json"],
        )
        .await;
    out.success();
    let status: Value = serde_json::from_str(&out.stdout).expect("status JSON");
    assert_eq!(status["verdict"], "Running");
    let phases: Vec<(String, String)> = status["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["phase"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        phases,
        [
            ("st-worker-0".to_string(), "Running".to_string()),
            ("st-worker-1".into(), "Succeeded".into())
        ]
    );

    let out = real
        .run(Cred::Admin, &["-n", &ns, "list", "-o", "json"])
        .await;
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).expect("list JSON");
    let mut tags: Vec<&str> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tag"].as_str().unwrap())
        .collect();
    tags.sort();
    assert_eq!(tags, ["other", "st"]);

    // Pod logs of unscheduled pods are empty here (204): not an error.
    real.run(Cred::Admin, &["-n", &ns, "logs", "-t", "st"])
        .await
        .success();
}

#[tokio::test]
async fn logs_notes_the_pods_that_have_not_started() {
    let Some(real) = Real::new("logs_notes_the_pods_that_have_not_started").await else {
        return;
    };
    let ns = real.namespace("logs").await;
    real.spawn_run(&ns, "lg", 3).await;
    real.set_running(&ns, "lg-worker-0", "tensorflow").await;
    real.patch_pod_status(
        &ns,
        "lg-worker-2",
        json!({"phase": "Pending", "containerStatuses": [container_status("tensorflow", false, json!({
            "waiting": {"reason": "ContainerCreating"}
        }))]}),
    )
    .await;
    // No node has taken these pods: every log request here answers 204 and no body,
    // for the running pod as for the pending ones. Only their status tells them apart.
    let out = real
        .run(Cred::Admin, &["-n", &ns, "logs", "-t", "lg"])
        .await;
    out.success();
    assert_eq!(out.stdout, "", "{out:#?}");
    assert_eq!(
        out.stderr,
        "note: pod lg-worker-1 has not started yet; no log\n\
         note: pod lg-worker-2 has not started yet (ContainerCreating); no log\n",
        "{out:#?}"
    );
}

#[tokio::test]
async fn a_namespace_limited_credential_can_follow_its_runs() {
    let Some(real) = Real::new("a_namespace_limited_credential_can_follow_its_runs").await else {
        return;
    };
    let ns = real.team_ns();
    let tag = real.tag_in(&ns, "fol");
    let script = real.script();
    real.run(
        Cred::TeamA,
        &["-t", &tag, "-w", "1", script.to_str().unwrap()],
    )
    .await
    .success();
    let pod = format!("{tag}-worker-0");
    let args = ["wait", "-t", &tag, "--timeout", "60s"];
    let (out, _) = driven(
        &real,
        Cred::TeamA,
        &args,
        real.set_terminated(&ns, &pod, "tensorflow", 0),
    )
    .await;
    out.success();
    real.run(Cred::TeamA, &["status", "-t", &tag])
        .await
        .success()
        .stdout_has(&pod);
    real.run(Cred::TeamA, &["list"])
        .await
        .success()
        .stdout_has(&tag);
    real.run(Cred::TeamA, &["list", "-A"])
        .await
        .failure(1)
        .stderr_has("forbidden");
    real.run(Cred::TeamA, &["-d", "-t", &tag]).await.success();
    // Nothing matched: a missing namespace is exit 1 in one line, for whoever may read
    // namespaces (404) and for a credential that may not even list pods there (403).
    for cred in [Cred::Admin, Cred::TeamA] {
        let out = real
            .run(cred, &["list", "-n", "tf-spawner-no-such-ns"])
            .await;
        out.failure(1).stderr_has("tf-spawner-no-such-ns");
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
}

/// A run larger than one page (500 pods): status, list and wait read every pod, in
/// pages the real server cut with its continue tokens.
#[tokio::test]
async fn a_run_larger_than_a_page_is_listed_in_pages() {
    let Some(real) = Real::new("a_run_larger_than_a_page_is_listed_in_pages").await else {
        return;
    };
    let ns = real.namespace("follow").await;
    real.spawn_run(&ns, "big", 501).await.success();
    real.set_running(&ns, "big-worker-500", "tensorflow").await;

    let out = real
        .run(
            Cred::Admin,
            &["-v", "-n", &ns, "status", "-t", "big", "-o", "json"],
        )
        .await;
    out.success();
    let status: Value = serde_json::from_str(&out.stdout).expect("status JSON");
    let pods = status["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 501);
    assert_eq!(pods[500]["name"], "big-worker-500");
    assert_eq!(pods[500]["phase"], "Running");
    // Two pages of the run's task pods (the helper pods, `tf-spawner/helper`, are a list of
    // their own): the first without a token, the second with the server's.
    let pages: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("GET") && l.contains("/pods?") && l.contains("limit=500"))
        .filter(|l| l.contains("%21tf-spawner%2Fhelper"))
        .collect();
    assert_eq!(pages.len(), 2, "{}", out.stderr);
    assert!(pages[1].contains("continue="), "{}", out.stderr);

    let out = real
        .run(Cred::Admin, &["-n", &ns, "list", "-o", "json"])
        .await;
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).expect("list JSON");
    let worker = &list["runs"][0]["roles"]["worker"];
    assert_eq!(
        (worker["total"].as_u64(), worker["running"].as_u64()),
        (Some(501), Some(1))
    );

    let out = real
        .run(
            Cred::Admin,
            &["-n", &ns, "wait", "-t", "big", "--timeout", "3s"],
        )
        .await;
    assert_eq!(out.code, 4, "{out:#?}");
    out.stdout_has("worker    1/501 running, 500 pending");
}

/// One follower at a time (docs/reference.md): the record names the first wait, taken
/// and let go by compare-and-swap on the real server; a second wait shows the run, acts on
/// nothing and ends with the first one's verdict.
#[tokio::test]
async fn a_second_wait_shows_a_held_run_and_ends_with_the_first_ones_verdict() {
    let Some(real) =
        Real::new("a_second_wait_shows_a_held_run_and_ends_with_the_first_ones_verdict").await
    else {
        return;
    };
    let ns = real.namespace("follower").await;
    real.spawn_run(&ns, "held", 1).await;
    let args = ["-n", &ns, "wait", "-t", "held", "--timeout", "60s"];
    let mut first = Started::new(&real, Cred::Admin, &args);
    first.line("worker ").await;
    let annotation = |key: &'static str| {
        let real = &real;
        let ns = ns.clone();
        async move {
            let cms = real.config_maps(&ns, "held").await;
            let cm = cms
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some("held-script"))
                .expect("the run's record");
            let annotations = cm.metadata.annotations.clone().unwrap_or_default();
            annotations.get(key).cloned()
        }
    };
    let holder = annotation("tf-spawner/follower").await.expect("a follower");
    let mut second = Started::new(&real, Cred::Admin, &args);
    second
        .line("this wait shows the run and acts on nothing")
        .await;
    second.line("worker ").await;
    real.set_running(&ns, "held-worker-0", "tensorflow").await;
    real.set_terminated(&ns, "held-worker-0", "tensorflow", 0)
        .await;
    first
        .finish()
        .await
        .success()
        .stdout_has("run held: Succeeded");
    second
        .finish()
        .await
        .success()
        .stdout_has(&format!("run held is followed by {holder}"))
        .stdout_has(&format!("run held: Succeeded (recorded by {holder})"));
    assert_eq!(annotation("tf-spawner/follower").await, None);
    assert_eq!(
        annotation("tf-spawner/follower-exit").await.as_deref(),
        Some("0")
    );
}
