//! What each process really sees: `TF_CONFIG`, `WORKER_NUMBER` and `TOT_WORKERS` in the
//! running container, byte for byte the values the plan computes (`--dry-run` prints the
//! objects as they are stored; the kubelet expands `$(VAR)` references in env values
//! from the variables before them, so this test does the same to know what to expect).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{Cluster, RUN_TIMEOUT, expand, tag};

const PRINT_ENV: &str = "\
import json, os
keys = ['TF_CONFIG', 'WORKER_NUMBER', 'TOT_WORKERS']
print('ENV ' + json.dumps({k: os.environ.get(k) for k in keys}, sort_keys=True), flush=True)
";

#[tokio::test]
async fn every_container_sees_exactly_the_planned_tf_config() {
    let Some(c) = Cluster::new("env").await else {
        return;
    };
    let t = tag("env");
    let script = c.write("env.py", PRINT_ENV);
    let template = c.template();
    let roles = ["-w", "3", "--chief", "--ps", "1", "--evaluator"];

    // The plan, as it will be stored.
    let mut dry = vec!["--dry-run", "-o", "json", "-t", &t];
    dry.extend_from_slice(&["--pod-file", template.to_str().unwrap()]);
    dry.extend_from_slice(&roles);
    dry.push(script.to_str().unwrap());
    let planned = c.run(&dry).await;
    planned.success();
    let list: Value = serde_json::from_str(&planned.stdout).expect("--dry-run -o json");
    let expected = effective_env(&list);
    assert_eq!(expected.len(), 6, "{expected:#?}");

    c.spawn(&t, &script, &roles).await;
    c.run(&["wait", "-t", &t, "--all-workers", "--timeout", RUN_TIMEOUT])
        .await
        .success();
    // Every task has printed (the parameter server and evaluator too) once all have ended.
    let all_done = c
        .eventually(
            "every pod to finish",
            std::time::Duration::from_secs(60),
            || async {
                let pods = c.pods(&t).await;
                pods.iter()
                    .all(|p| crate::support::phase(p) == "Succeeded")
                    .then_some(pods.len())
            },
        )
        .await;
    assert_eq!(all_done, 6);
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success();

    for (pod, want) in &expected {
        let task = pod.strip_prefix(&format!("{t}-")).expect("pod name");
        // `logs` pads the prefixes of a run to one width: `chief-0     | …`.
        let seen = logs
            .stdout
            .lines()
            .find_map(|l| {
                let (who, rest) = l.split_once(" | ENV ")?;
                (who.trim_end() == task).then_some(rest)
            })
            .unwrap_or_else(|| panic!("no ENV line of {task}: {logs:#?}"));
        let seen: BTreeMap<String, Option<String>> = serde_json::from_str(seen).expect("ENV json");
        assert_eq!(&seen, want, "{pod}");
    }
}

/// For each pod of a `--dry-run -o json` List: the three variables as the container will
/// see them (`None` when unset), after Kubernetes' `$(VAR)` expansion.
fn effective_env(list: &Value) -> BTreeMap<String, BTreeMap<String, Option<String>>> {
    let items = list["items"].as_array().expect("items");
    let config_maps: BTreeMap<&str, &Value> = items
        .iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .map(|o| (o["metadata"]["name"].as_str().unwrap(), &o["data"]))
        .collect();
    let mut out = BTreeMap::new();
    for pod in items.iter().filter(|o| o["kind"] == "Pod") {
        let containers = pod["spec"]["containers"].as_array().expect("containers");
        let tf = containers
            .iter()
            .find(|c| c["name"] == "tensorflow")
            .unwrap_or(&containers[0]);
        let mut defined: Vec<(String, String)> = Vec::new();
        for var in tf["env"].as_array().into_iter().flatten() {
            let name = var["name"].as_str().unwrap().to_string();
            let value = if let Some(v) = var["value"].as_str() {
                expand(v, &defined)
            } else if let Some(r) = var["valueFrom"]["configMapKeyRef"].as_object() {
                let cm = config_maps[r["name"].as_str().unwrap()];
                cm[r["key"].as_str().unwrap()]
                    .as_str()
                    .expect("config map key")
                    .to_string()
            } else {
                continue;
            };
            defined.push((name, value));
        }
        let three = ["TF_CONFIG", "WORKER_NUMBER", "TOT_WORKERS"]
            .into_iter()
            .map(|k| {
                let value = defined.iter().rev().find(|(n, _)| n == k);
                (k.to_string(), value.map(|(_, v)| v.clone()))
            })
            .collect();
        out.insert(pod["metadata"]["name"].as_str().unwrap().to_string(), three);
    }
    out
}
