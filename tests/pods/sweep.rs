//! `tf-spawner sweep` on real pods (docs/experiments.md): two runs of
//! `examples/wiring_check.py` at once, each wiring up through its own `TF_CONFIG`, each
//! labelled with the experiment and given its parameter as a variable.

use kube::ResourceExt;

use crate::support::{Cluster, RUN_TIMEOUT, repo_file, tag};

#[tokio::test]
async fn a_sweep_of_two_runs_wires_up_and_succeeds() {
    let Some(c) = Cluster::new("sweep").await else {
        return;
    };
    let t = tag("sw");
    let script = repo_file("examples/wiring_check.py");
    let template = c.template();
    let out = c
        .run(&[
            "sweep",
            "-t",
            &t,
            "-w",
            "2",
            "--pod-file",
            template.to_str().unwrap(),
            "--param",
            "n=1,2",
            "--parallel",
            "2",
            "--wait",
            "--timeout",
            RUN_TIMEOUT,
            script.to_str().unwrap(),
        ])
        .await;
    out.success()
        .stdout_has(&format!("experiment {t}: 2 runs, 2 at a time: --parallel"))
        .stdout_has(&format!("run {t}-2: Succeeded"))
        .stdout_has(&format!("experiment {t}: all 2 runs succeeded"));
    for (k, n) in [(1, "1"), (2, "2")] {
        let pods = c.pods(&format!("{t}-{k}")).await;
        assert_eq!(pods.len(), 2);
        for pod in pods {
            assert_eq!(pod.labels().get("tf-spawner/experiment"), Some(&t));
            let spec = pod.spec.clone().unwrap();
            let tf = spec
                .containers
                .iter()
                .find(|c| c.name == "tensorflow")
                .unwrap();
            let env = tf.env.clone().unwrap_or_default();
            let value = env.iter().find(|e| e.name == "TF_SPAWNER_PARAM_N");
            assert_eq!(value.and_then(|e| e.value.as_deref()), Some(n));
        }
    }
}
