//! `--queue` against a real server (docs/shared-clusters.md): Kueue's LocalQueue CRD is
//! installed from a small definition as each Kueue serves it (`crds/kueue-localqueue-*.yaml`:
//! `v1beta1` only up to v0.14, `v1beta2` beside it from v0.15 to v0.19, `v1beta2` only
//! from v0.20), one after the other in one test (a CRD's name is fixed, so the three
//! cannot coexist); Kueue itself does not run here, so its webhook never takes a pod,
//! which is what a namespace Kueue does not manage looks like. Every misconfiguration is
//! one `error:` line and nothing left. (Volcano's queue is checked in `gang.rs`, beside
//! the PodGroup CRDs it needs.)

use crate::support::*;

pub const LOCAL_QUEUE_CRD: &str = "localqueues.kueue.x-k8s.io";

/// Applies a CRD and waits until the server serves it.
pub async fn install_crd(real: &Real, crd: &str, definition: &str, probe: &[&str]) {
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], definition)
        .await
        .success();
    let established = format!("crd/{crd}");
    real.kubectl(
        Cred::Admin,
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout",
            "60s",
            &established,
        ],
        "",
    )
    .await
    .success();
    // Discovery serves the new version a moment after the CRD is established.
    for _ in 0..50 {
        let mut args = vec!["get", crd];
        args.extend_from_slice(probe);
        if real.kubectl(Cred::Admin, &args, "").await.code == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("{crd} never served");
}

/// The LocalQueue CRD as each Kueue serves it: (what, definition, versions served, the
/// version tf-spawner must read).
const KUEUE_CRDS: &[(&str, &str, &[&str], &str)] = &[
    (
        "Kueue up to v0.14",
        include_str!("crds/kueue-localqueue-v1beta1.yaml"),
        &["v1beta1"],
        "v1beta1",
    ),
    (
        "Kueue v0.15 to v0.19",
        include_str!("crds/kueue-localqueue-both.yaml"),
        &["v1beta1", "v1beta2"],
        "v1beta2",
    ),
    (
        "Kueue v0.20 on",
        include_str!("crds/kueue-localqueue-v1beta2.yaml"),
        &["v1beta2"],
        "v1beta2",
    ),
];

/// The versions of `kueue.x-k8s.io` the server's discovery lists, sorted (none: the
/// group is not served, 404).
async fn kueue_versions(real: &Real) -> Vec<String> {
    let out = real
        .kubectl(Cred::Admin, &["get", "--raw", "/apis/kueue.x-k8s.io"], "")
        .await;
    if out.code != 0 {
        assert!(out.stderr.contains("NotFound"), "{out:#?}");
        return vec![];
    }
    let group: serde_json::Value = serde_json::from_str(&out.stdout).expect("an APIGroup");
    let mut versions: Vec<String> = group["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["version"].as_str().expect("version").to_string())
        .collect();
    versions.sort();
    versions
}

/// Waits until discovery lists exactly `versions` (sorted) of `kueue.x-k8s.io`: the
/// server's discovery follows a CRD's creation and deletion a moment later.
async fn await_kueue_versions(real: &Real, versions: &[&str]) {
    for _ in 0..150 {
        if kueue_versions(real).await == versions {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!(
        "kueue.x-k8s.io never served {versions:?} (it serves {:?})",
        kueue_versions(real).await
    );
}

/// Installs a LocalQueue CRD and waits until the server serves LocalQueues in each of
/// `served` (sorted). Only raw requests: kubectl's cache of discovery may still hold the
/// previous definition's versions.
async fn install_local_queue_crd(real: &Real, crd: &str, served: &[&str], ns: &str) {
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], crd)
        .await
        .success();
    let established = format!("crd/{LOCAL_QUEUE_CRD}");
    let wait = ["wait", "--for", "condition=established", "--timeout", "60s"];
    let mut args = wait.to_vec();
    args.push(&established);
    real.kubectl(Cred::Admin, &args, "").await.success();
    await_kueue_versions(real, served).await;
    for version in served {
        let list = format!("/apis/kueue.x-k8s.io/{version}/namespaces/{ns}/localqueues");
        let mut tries = 0;
        while real
            .kubectl(Cred::Admin, &["get", "--raw", &list], "")
            .await
            .code
            != 0
        {
            tries += 1;
            assert!(tries < 150, "{list} never served");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}

/// Creates LocalQueue `name` in `version`.
async fn create_local_queue(real: &Real, version: &str, ns: &str, name: &str) {
    let queue = serde_json::json!({
        "apiVersion": format!("kueue.x-k8s.io/{version}"), "kind": "LocalQueue",
        "metadata": { "name": name, "namespace": ns },
        "spec": { "clusterQueue": "cluster-gpu" },
    });
    let request = kube::core::Request::new(format!(
        "/apis/kueue.x-k8s.io/{version}/namespaces/{ns}/localqueues"
    ))
    .create(
        &kube::api::PostParams::default(),
        serde_json::to_vec(&queue).unwrap(),
    )
    .unwrap();
    real.client
        .request::<serde_json::Value>(request)
        .await
        .unwrap_or_else(|e| panic!("create LocalQueue {name} in {version}: {e}"));
}

/// Deletes the LocalQueue CRD (and with it every LocalQueue) and waits until the group
/// is no longer served.
async fn remove_local_queue_crd(real: &Real) {
    real.kubectl(
        Cred::Admin,
        &["delete", "crd", LOCAL_QUEUE_CRD, "--ignore-not-found"],
        "",
    )
    .await
    .success();
    await_kueue_versions(real, &[]).await;
}

/// How many reads of a LocalQueue the server has answered in `version` (its
/// `apiserver_request_total` counter, summed over answer codes): which version
/// tf-spawner read, as the server saw it. A GET by name is counted as `verb="GET"` by
/// v1.36, and as `verb="LIST"` (scope `namespace`) by v1.20, whose metrics count a
/// custom resource's GET so (seen on the v1.20 plane: `kubectl get --raw
/// …/localqueues/team-gpu` raised the LIST counter); tf-spawner only GETs LocalQueues.
async fn local_queue_gets(real: &Real, version: &str) -> u64 {
    let out = real
        .kubectl(Cred::Admin, &["get", "--raw", "/metrics"], "")
        .await;
    out.success();
    let labels = [
        "group=\"kueue.x-k8s.io\"",
        "resource=\"localqueues\"",
        &format!("version=\"{version}\""),
    ];
    let read = |l: &&str| l.contains("verb=\"GET\"") || l.contains("verb=\"LIST\"");
    out.stdout
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter(read)
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test]
async fn queue_misconfigurations_are_one_error_and_leave_nothing() {
    let Some(real) = Real::new("queue_misconfigurations_are_one_error_and_leave_nothing").await
    else {
        return;
    };
    let ns = real.namespace("queues").await;
    remove_local_queue_crd(&real).await;
    spawn_fails(&real, &ns, "nk").await.stderr_has(
        "error: --queue team-gpu: Kueue is not installed on this cluster (no LocalQueue API kueue.x-k8s.io/v1beta2 or v1beta1)",
    );
    for (i, kueue) in KUEUE_CRDS.iter().enumerate() {
        check_kueue(&real, &ns, i, kueue).await;
        remove_local_queue_crd(&real).await;
    }
}

/// `--queue team-gpu` in `ns`, as admin: exit 1, one line, nothing left.
async fn spawn_fails(real: &Real, ns: &str, tag: &str) -> Output {
    let script = real.script();
    let args = [
        "-n",
        ns,
        "-t",
        tag,
        "-w",
        "3",
        "--queue",
        "team-gpu",
        script.to_str().unwrap(),
    ];
    let out = real.run(Cred::Admin, &args).await;
    assert_eq!(out.code, 1, "{out:#?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(
        real.run_objects(ns, tag).await.is_empty(),
        "{tag}: objects left"
    );
    out
}

/// One Kueue's LocalQueue CRD (a row of [`KUEUE_CRDS`]): a missing queue, then a queue
/// read in the version expected (the server's count of GETs in each version) whose
/// first pod no webhook takes, then credentials that may not read it.
async fn check_kueue(real: &Real, ns: &str, i: usize, kueue: &(&str, &str, &[&str], &str)) {
    let (what, crd, served, read) = *kueue;
    install_local_queue_crd(real, crd, served, ns).await;
    spawn_fails(real, ns, &format!("mq{i}"))
        .await
        .stderr_has(&format!(
            "error: Kueue LocalQueue 'team-gpu' does not exist in namespace '{ns}'"
        ));

    create_local_queue(real, read, ns, "team-gpu").await;
    let before = gets_by_version(real).await;
    // No Kueue webhook takes the first pod: rolled back before the others are sent.
    let tag = format!("um{i}");
    spawn_fails(real, ns, &tag).await.stderr_has(&format!(
        "error: --queue team-gpu: Kueue did not take pod {tag}-worker-0 (no kueue.x-k8s.io/managed label, no kueue.x-k8s.io/admission scheduling gate), so the run would start unqueued: Kueue does not manage namespace '{ns}'"
    ));
    let after = gets_by_version(real).await;
    let read_more: Vec<bool> = before.iter().zip(&after).map(|(b, a)| a > b).collect();
    let expected: Vec<bool> = ["v1beta1", "v1beta2"].iter().map(|v| *v == read).collect();
    assert_eq!(
        read_more, expected,
        "{what}: LocalQueue GETs in v1beta1, v1beta2: {before:?} then {after:?}"
    );
    cannot_read_is_a_note(real, &real.script()).await;
}

/// A user who may create pods but not read LocalQueues (RBAC's 403): a note, then the
/// same check of the first pod.
async fn cannot_read_is_a_note(real: &Real, script: &std::path::Path) {
    let team = real.team_ns();
    let tag = real.tag_in(&team, "q");
    let out = real
        .run(
            Cred::TeamA,
            &[
                "-t",
                &tag,
                "-w",
                "2",
                "--queue",
                "team-gpu",
                script.to_str().unwrap(),
            ],
        )
        .await;
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has(&format!(
        "note: cannot check Kueue LocalQueue 'team-gpu' (these credentials may not read localqueues.kueue.x-k8s.io in namespace '{team}'); going on"
    ))
    .stderr_has("error: --queue team-gpu: Kueue did not take pod");
    assert!(real.run_objects(&team, &tag).await.is_empty());
}

/// LocalQueue GETs answered so far in v1beta1 and in v1beta2.
async fn gets_by_version(real: &Real) -> Vec<u64> {
    vec![
        local_queue_gets(real, "v1beta1").await,
        local_queue_gets(real, "v1beta2").await,
    ]
}
