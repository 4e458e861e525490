//! `tf-spawner sweep` on real pods (docs/experiments.md): two runs of
//! `examples/wiring_check.py` at once, each wiring up through its own `TF_CONFIG`, each
//! labelled with the experiment and given its parameter as a variable; a small mnist
//! sweep that `compare` judges; Ctrl-C and `--resume`; ASHA stopping two losing runs.

use std::io::Write;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::support::{Cluster, RUN_TIMEOUT, phase, repo_file, tag};
use crate::tensorflow::tensorflow_template;
use crate::tensorflow::tf_common::write_synthetic_mnist;

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

/// A small sweep of `examples/mnist.py` over two learning rates, both runs at once on
/// the one-node cluster's TensorFlow image; `compare` names the one that learned (its
/// record's final loss the lower), without a log read.
#[tokio::test]
async fn an_mnist_sweep_of_two_learning_rates_and_compare_names_the_better() {
    let Some(c) = Cluster::new("sweep-mnist").await else {
        return;
    };
    let Some(template) = tensorflow_template(&c, "sweep_mnist").await else {
        return;
    };
    let started = Instant::now();
    write_synthetic_mnist(&c.dir.path().join("mnist.npz"), 256, 64);
    let env = c.write(
        "mnist.env",
        "MNIST_NPZ=/data/mnist.npz\nMODEL_DIR=/tmp/model\nEPOCHS=3\nSTEPS_PER_EPOCH=8\nBATCH_PER_REPLICA=32\n",
    );
    let t = tag("swm");
    let script = repo_file("examples/mnist.py");
    // 1e-7 learns nothing in 24 steps; 3e-3 does: the better one is the second.
    let out = c
        .run(&[
            "sweep",
            "-t",
            &t,
            "-w",
            "1",
            "--pod-file",
            template.to_str().unwrap(),
            "-e",
            env.to_str().unwrap(),
            "--param",
            "lr=1e-7,3e-3",
            "--parallel",
            "2",
            "--wait",
            "--timeout",
            "400s",
            script.to_str().unwrap(),
            "--",
            "--lr",
            "{lr}",
        ])
        .await;
    if out.code != 0 {
        let logs = c.run(&["logs", "-t", &format!("{t}-1")]).await;
        panic!("{out:#?}\nrun 1's log:\n{}", logs.stdout);
    }
    out.stdout_has(&format!("experiment {t}: all 2 runs succeeded"));

    // What the records hold: each run's final loss, 3 epochs, its parameter.
    let loss = |k: u32| {
        let c = &c;
        let t = &t;
        async move {
            let cm = Api::<ConfigMap>::namespaced(c.client.clone(), &c.namespace)
                .get(&format!("{t}-{k}-script"))
                .await
                .expect("the run's ConfigMap");
            let notes = cm.metadata.annotations.unwrap_or_default();
            let metrics: Value =
                serde_json::from_str(&notes["tf-spawner/metrics"]).expect("metrics JSON");
            assert_eq!(metrics["epochs_done"], 3, "{metrics:#}");
            metrics["final"]["loss"].as_f64().expect("a final loss")
        }
    };
    let (slow, fast) = (loss(1).await, loss(2).await);
    assert!(fast < slow, "3e-3 ends lower: {fast} vs {slow}");

    let out = c.run(&["compare", &t]).await;
    out.success().stdout_has(&format!("best: {t}-2 (*)\n"));
    let best_row = out
        .stdout
        .lines()
        .find(|l| l.starts_with('*'))
        .unwrap_or_else(|| panic!("no row marked best: {out:#?}"));
    assert!(
        best_row.contains(&format!("{t}-2")) && best_row.contains("3e-3"),
        "{best_row}"
    );
    let json = c.run(&["compare", &t, "-o", "json"]).await;
    let json: Value = serde_json::from_str(&json.stdout).expect("compare -o json");
    assert_eq!(json["best"], format!("{t}-2"), "{json:#}");
    assert_eq!(json["runs"][0]["params"]["lr"], "3e-3", "{json:#}");
    assert_eq!(json["runs"][0]["final"]["loss"].as_f64(), Some(fast));
    let _ = writeln!(
        std::io::stderr(),
        "an mnist sweep of 2 runs and compare: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Ctrl-C in the middle of a sweep leaves its running run alone and starts nothing
/// more; `sweep --resume` follows that run (not re-created) and starts only the one
/// that never started; the experiment ends with both succeeded.
#[tokio::test]
async fn ctrl_c_then_resume_starts_nothing_twice_and_finishes() {
    let Some(c) = Cluster::new("sweep-resume").await else {
        return;
    };
    let started = Instant::now();
    let t = tag("swr");
    let script = c.write(
        "nap.py",
        "import os, time\ntime.sleep(float(os.environ['TF_SPAWNER_PARAM_S']))\nprint('slept', flush=True)\n",
    );
    let template = c.template();
    // The sweep's own command: given again, with --resume, to take it up (the record
    // gives data only, never a command: docs/hardened.md).
    let command = [
        "sweep",
        "-t",
        &t,
        "-w",
        "1",
        "--pod-file",
        template.to_str().unwrap(),
        "--param",
        "s=12,1",
        "--parallel",
        "1",
        "--wait",
        "--timeout",
        RUN_TIMEOUT,
        script.to_str().unwrap(),
    ];
    let child = c.start(&command);
    let first = c
        .eventually("run 1's pod running", Duration::from_secs(120), || async {
            let pods = c.pods(&format!("{t}-1")).await;
            (pods.len() == 1 && phase(&pods[0]) == "Running").then_some(pods)
        })
        .await;
    let pid = child.id().expect("pid") as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let ended = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("ends after Ctrl-C")
        .unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "-n {} sweep --resume {t} -t {t} -w 1 ",
            c.namespace
        )),
        "{stderr}"
    );
    assert!(
        c.pods(&format!("{t}-2")).await.is_empty(),
        "run 2 never started"
    );

    let mut resumed = command.to_vec();
    resumed.splice(1..1, ["--resume", t.as_str()]);
    let out = c.run(&resumed).await;
    out.success()
        .stdout_has(&format!("experiment {t}: taking it up (2 runs planned)"))
        .stdout_has(&format!("experiment {t}: all 2 runs succeeded"));
    let again = c.pods(&format!("{t}-1")).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].uid(), first[0].uid(), "run 1 not re-created");
    assert_eq!(c.pods(&format!("{t}-2")).await.len(), 1);
    let maps = Api::<ConfigMap>::namespaced(c.client.clone(), &c.namespace)
        .list(&ListParams::default())
        .await
        .expect("list configmaps");
    let mut names: Vec<String> = maps
        .items
        .iter()
        .map(|m| m.name_any())
        .filter(|n| n.starts_with(&t))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("{t}-1-script"),
            format!("{t}-2-script"),
            format!("{t}-experiment")
        ]
    );
    let _ = writeln!(
        std::io::stderr(),
        "Ctrl-C and --resume of a 2-run sweep: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Prints 4 epochs with `val_loss` = lr / epoch, each epoch taking 2·lr seconds: the
/// better a run, the sooner it reaches each rung (its lead doubling at each), so the
/// losing runs are the ones judged there, whatever the order their pods started in.
pub(crate) const RUNG_SCRIPT: &str = "\
import os, time
lr = float(os.environ['TF_SPAWNER_PARAM_LR'])
for e in range(1, 5):
    time.sleep(2 * lr)
    print(f'Epoch {e}/4', flush=True)
    print(f'1/1 - 0s 5ms/step - loss: {lr / e:.4f} - val_loss: {lr / e:.4f}', flush=True)
";

/// Adaptive sweeps on real pods (issue 60 item 6): ASHA (η 2, rungs at epochs 1 and 2
/// of 4) over three runs at once stops the two losing ones at a rung, each with its line,
/// their pods stopped by the kubelet at the lowered deadline; the best trains to its end
/// and `compare` names it from the records.
#[tokio::test]
async fn asha_stops_the_two_losing_runs_and_the_best_survives() {
    let Some(c) = Cluster::new("sweep-asha").await else {
        return;
    };
    let t = tag("as");
    let script = c.write("rungs.py", RUNG_SCRIPT);
    let template = c.template();
    let out = c
        .run(&[
            "sweep",
            "-t",
            &t,
            "-w",
            "1",
            "--pod-file",
            template.to_str().unwrap(),
            "--param",
            "lr=1,2,3",
            "--parallel",
            "3",
            "--objective",
            "val_loss",
            "--early-stop",
            "asha",
            "--eta",
            "2",
            "--timeout",
            RUN_TIMEOUT,
            script.to_str().unwrap(),
        ])
        .await;
    out.success()
        .stdout_has("early stopping: asha, rungs at epochs 1, 2")
        .stdout_has(&format!("run {t}-1: Succeeded"))
        .stdout_has(&format!(
            "experiment {t}: all 3 runs done: 1 succeeded, 2 stopped early"
        ));
    for k in [2, 3] {
        assert!(
            out.stdout.contains(&format!("{t}-{k} stopped at epoch ")),
            "run {k} stopped at a rung: {out:#?}"
        );
    }
    // The stopped runs' pods end at their lowered deadline; the best's succeeded.
    for (k, want) in [(1, "Succeeded"), (2, "Failed"), (3, "Failed")] {
        let run = format!("{t}-{k}");
        let c = &c;
        let run = &run;
        let ended = c
            .eventually(
                &format!("{run}'s pod ended"),
                Duration::from_secs(60),
                || async move {
                    let pods = c.pods(run).await;
                    let p = phase(pods.first()?);
                    (p == "Succeeded" || p == "Failed").then_some(p)
                },
            )
            .await;
        assert_eq!(ended, want, "{run}");
    }
    let compared = c.run(&["compare", &t]).await;
    compared
        .success()
        .stdout_has(&format!("best: {t}-1 (*)\n"))
        .stdout_has("StoppedEarly");
}
