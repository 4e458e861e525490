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
        real.run(
            Cred::Admin,
            &[
                "-n",
                &ns,
                "-t",
                &tag,
                "-w",
                "2",
                "--chief",
                "--evaluator",
                "--queue",
                "team-gpu",
                "--gang",
                gang,
                script.to_str().unwrap(),
            ],
        )
        .await
        .success();
        let groups = pod_groups(&real, crd, &ns).await;
        assert_eq!(groups.len(), 1, "{groups:#?}");
        let group = &groups[0];
        assert_eq!(group["metadata"]["name"], format!("{tag}-group").as_str());
        assert_eq!(group["spec"]["minMember"], 3, "{group:#}");
        if gang == "volcano" {
            assert_eq!(group["spec"]["queue"], "team-gpu", "{group:#}");
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
                m.annotations.as_ref().unwrap()["scheduling.k8s.io/group-name"].clone()
            } else {
                label(m, "scheduling.x-k8s.io/pod-group")
                    .unwrap()
                    .to_string()
            };
            assert_eq!(group_name, format!("{tag}-group"));
        }
        real.run(Cred::Admin, &["-n", &ns, "-d", "-y", "-t", &tag])
            .await
            .success()
            .stdout_has(&format!("podgroup/{tag}-group"));
        assert!(pod_groups(&real, crd, &ns).await.is_empty());
    }
    for (crd, _, _) in CRDS {
        let _ = real
            .kubectl(Cred::Admin, &["delete", "crd", crd, "--wait=false"], "")
            .await;
    }
}
