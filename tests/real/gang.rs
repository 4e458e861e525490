//! Gang scheduling against the real 1.20 server: the PodGroup CRDs are installed from
//! the small definitions in `tests/real/crds/` (so the server validates the PodGroups
//! tf-spawner sends), then a run per gang is spawned, checked and deleted.

use serde_json::Value;

use crate::support::*;

const CRDS: [(&str, &str, &str); 2] = [
    (
        "podgroups.scheduling.volcano.sh",
        include_str!("crds/volcano-podgroup.yaml"),
        "volcano",
    ),
    (
        "podgroups.scheduling.x-k8s.io",
        include_str!("crds/coscheduling-podgroup.yaml"),
        "coscheduling",
    ),
];

async fn pod_groups(real: &Real, crd: &str, ns: &str) -> Vec<Value> {
    let out = real
        .kubectl(Cred::Admin, &["get", crd, "-n", ns, "-o", "json"], "")
        .await;
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    list["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_gang_run_creates_a_pod_group_the_server_accepts() {
    let Some(real) = Real::new("a_gang_run_creates_a_pod_group_the_server_accepts").await else {
        return;
    };
    let ns = real.namespace("gang").await;
    let script = real.script();
    let volcano_queue = unique("tfs-q");
    for (crd, definition, gang) in CRDS {
        real.kubectl(Cred::Admin, &["apply", "-f", "-"], definition)
            .await
            .success();
        real.kubectl(
            Cred::Admin,
            &[
                "wait",
                "--for",
                "condition=established",
                "--timeout",
                "60s",
                &format!("crd/{crd}"),
            ],
            "",
        )
        .await
        .success();
        // Discovery serves the new version a moment after the CRD is established.
        let mut listed = false;
        for _ in 0..50 {
            let out = real
                .kubectl(Cred::Admin, &["get", crd, "-n", &ns], "")
                .await;
            if out.code == 0 {
                listed = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        assert!(listed, "{crd} never served");

        let tag = format!("g-{gang}");
        let mut args = vec![
            "-n",
            &ns,
            "-t",
            &tag,
            "-w",
            "2",
            "--chief",
            "--evaluator",
            "--gang",
            gang,
        ];
        if gang == "volcano" {
            args.extend(["--volcano-queue", &volcano_queue]);
            check_volcano_queue(&real, &ns, &args, &volcano_queue).await;
        }
        args.push(script.to_str().unwrap());
        real.run(Cred::Admin, &args).await.success();
        let groups = pod_groups(&real, crd, &ns).await;
        assert_eq!(groups.len(), 1, "{groups:#?}");
        let group = &groups[0];
        assert_eq!(group["metadata"]["name"], format!("{tag}-group").as_str());
        assert_eq!(group["spec"]["minMember"], 3, "{group:#}");
        if gang == "volcano" {
            assert_eq!(group["spec"]["queue"], volcano_queue.as_str(), "{group:#}");
            // What the server stored of the members' requests (the built-in template:
            // 1 CPU and 1Gi a pod; the chief and two workers, not the evaluator).
            assert_eq!(
                group["spec"]["minResources"],
                serde_json::json!({"cpu": "3", "memory": "3Gi"}),
                "{group:#}"
            );
        }
        let pods = real.pods(&ns, &tag).await;
        assert_eq!(pods.len(), 4);
        for pod in &pods {
            let spec = pod.spec.as_ref().unwrap();
            let expected = if gang == "volcano" {
                "volcano"
            } else {
                "scheduler-plugins-scheduler"
            };
            assert_eq!(spec.scheduler_name.as_deref(), Some(expected));
            let m = &pod.metadata;
            let group_name = if gang == "volcano" {
                m.annotations
                    .as_ref()
                    .unwrap()
                    .get("scheduling.k8s.io/group-name")
                    .cloned()
            } else {
                label(m, "scheduling.x-k8s.io/pod-group").map(str::to_string)
            };
            // The evaluator is scheduled on its own: no member of the gang.
            let evaluator = m.name.as_deref().unwrap().contains("evaluator");
            let expected = (!evaluator).then(|| format!("{tag}-group"));
            assert_eq!(group_name, expected);
        }
        real.run(Cred::Admin, &["-n", &ns, "-d", "-y", "-t", &tag])
            .await
            .success()
            .stdout_has(&format!("podgroup/{tag}-group"));
        assert!(pod_groups(&real, crd, &ns).await.is_empty());
    }
    let _ = real
        .kubectl(
            Cred::Admin,
            &["delete", VOLCANO_QUEUE_CRD, &volcano_queue, "--wait=false"],
            "",
        )
        .await;
    for (crd, _, _) in CRDS {
        let _ = real
            .kubectl(Cred::Admin, &["delete", "crd", crd, "--wait=false"], "")
            .await;
    }
}

const VOLCANO_QUEUE_CRD: &str = "queues.scheduling.volcano.sh";

/// `--volcano-queue`: a missing queue, then a closed one, are one error each and leave
/// nothing; then the queue is opened.
async fn check_volcano_queue(real: &Real, ns: &str, args: &[&str], queue: &str) {
    crate::queues::install_crd(
        real,
        VOLCANO_QUEUE_CRD,
        include_str!("crds/volcano-queue.yaml"),
        &[],
    )
    .await;
    let script = real.script();
    let mut args = args.to_vec();
    args.push(script.to_str().unwrap());
    let tag = args[3];
    let out = real.run(Cred::Admin, &args).await;
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has(&format!("error: Volcano queue '{queue}' does not exist"));
    assert!(real.run_objects(ns, tag).await.is_empty());
    let object = |state: &str| {
        format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: {queue}\nspec:\n  weight: 1\nstatus:\n  state: {state}\n"
        )
    };
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], &object("Closed"))
        .await
        .success();
    let out = real.run(Cred::Admin, &args).await;
    assert_eq!(out.code, 1, "{out:#?}");
    out.stderr_has(&format!(
        "error: Volcano queue '{queue}' is Closed: it takes no new PodGroups"
    ));
    assert!(real.run_objects(ns, tag).await.is_empty());
    real.kubectl(Cred::Admin, &["apply", "-f", "-"], &object("Open"))
        .await
        .success();
}
