//! Issue 47 on a real API server: the metrics record (an annotation of the run's
//! ConfigMap, at most 64 KiB) is accepted, comes back in the metadata-only list that
//! `compare` and `list` make, an annotation over the API's 256 KiB is refused (why the
//! record is bounded), and `-d --experiment` deletes an experiment's runs by its label.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::*;

/// A metrics record of about `bytes` bytes: one metric over many epochs.
fn record(first: f64, bytes: usize) -> String {
    let epochs = bytes / 27;
    let epoch: Vec<usize> = (1..=epochs).collect();
    let loss: Vec<f64> = (1..=epochs)
        .map(|e| first / e as f64 + 0.000_123_4)
        .collect();
    let last = *loss.last().unwrap();
    json!({"epochs_done": epochs, "final": {"loss": last}, "best": {"loss": last},
        "curve": {"epoch": epoch, "metrics": {"loss": loss}}})
    .to_string()
}

async fn annotate(
    real: &Real,
    ns: &str,
    tag: &str,
    patch: Value,
) -> Result<ConfigMap, kube::Error> {
    real.api::<ConfigMap>(ns)
        .patch(
            &format!("{tag}-script"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
}

#[tokio::test]
async fn metrics_records_come_back_in_the_metadata_list_and_an_experiment_is_deleted_whole() {
    let Some(real) = Real::new(
        "metrics_records_come_back_in_the_metadata_list_and_an_experiment_is_deleted_whole",
    )
    .await
    else {
        return;
    };
    let ns = real.namespace("compare").await;
    for (tag, first, lr) in [("lrs-1", 0.9, "0.1"), ("lrs-2", 0.3, "0.01")] {
        real.spawn_run(&ns, tag, 1).await;
        let text = record(first, 60 * 1024);
        assert!(
            text.len() <= 64 * 1024 && text.len() > 50 * 1024,
            "{}",
            text.len()
        );
        let patch = json!({"metadata": {
            "labels": {"tf-spawner/experiment": "lrs"},
            "annotations": {"tf-spawner/params": json!({"lr": lr}).to_string(),
                "tf-spawner/metrics": text, "tf-spawner/verdict": "Succeeded"}}});
        annotate(&real, &ns, tag, patch)
            .await
            .expect("a 60 KiB record is accepted");
        // The sweep labels every object of its runs.
        let label = json!({"metadata": {"labels": {"tf-spawner/experiment": "lrs"}}});
        let (name, params) = (format!("{tag}-worker-0"), PatchParams::default());
        real.api::<Pod>(&ns)
            .patch(&name, &params, &Patch::Merge(&label))
            .await
            .unwrap();
        real.api::<Service>(&ns)
            .patch(&name, &params, &Patch::Merge(&label))
            .await
            .unwrap();
    }
    real.spawn_run(&ns, "other", 1).await;

    // Over the API's 256 KiB of annotations: refused (apimachinery's
    // ValidateAnnotationsSize, TotalAnnotationSizeLimitB).
    let big = json!({"metadata": {"annotations": {"tf-spawner/metrics": "x".repeat(300 * 1024)}}});
    let refused = annotate(&real, &ns, "other", big).await;
    match refused {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(e.message.contains("262144"), "{}", e.message);
        }
        other => panic!("a 300 KiB annotation was not refused: {other:?}"),
    }

    let out = real
        .run(Cred::Admin, &["-n", &ns, "compare", "lrs", "-o", "json"])
        .await;
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["best"], "lrs-2", "{json:#}");
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert_eq!(json["runs"][0]["params"]["lr"], "0.01");
    assert!(json["runs"][0]["curve"]["epoch"].as_array().unwrap().len() > 2000);
    let out = real
        .run(Cred::Admin, &["-n", &ns, "list", "-o", "json"])
        .await;
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let runs = list["runs"].as_array().unwrap();
    let lrs1 = runs.iter().find(|r| r["tag"] == "lrs-1").unwrap();
    assert_eq!(lrs1["experiment"], "lrs");
    assert!(lrs1["metrics"]["loss"].is_f64(), "{lrs1:#}");

    let out = real
        .run(Cred::Admin, &["-n", &ns, "-d", "--experiment", "lrs", "-y"])
        .await;
    out.success().stdout_has("deleted configmap/lrs-1-script");
    for tag in ["lrs-1", "lrs-2"] {
        assert!(real.run_objects(&ns, tag).await.is_empty(), "{tag} left");
    }
    assert!(!real.run_objects(&ns, "other").await.is_empty());
}
