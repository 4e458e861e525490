//! tf-spawner on a real kube-apiserver: what a spawn costs against the least it could,
//! and how to delete a run's pods.
//!
//! Spawn: the release binary spawning N workers, against a minimal client that sends the
//! same requests in the same stages (the 4 lists that check the tag is free, the config
//! map, the services 32 at a time, the pods 32 at a time) from inside this process: the
//! raw concurrent floor, with a new client (its connections opened during the spawn, as
//! the binary's are) and with an already connected one. Objects are taken from the
//! binary's own `--dry-run -o json`.
//!
//! Delete: one collection DELETE, or the names listed and then single DELETEs, 32 at a
//! time (tf-spawner's `--max-in-flight`).
//!
//! A server works through a collection DELETE one object at a time (unless its
//! `--delete-collection-workers` is raised), so on a real server the collection can lose
//! to concurrent single deletes; the test server cannot tell. This bench measures both
//! on the server named by `TF_SPAWNER_BENCH_KUBECONFIG` (an admin kubeconfig, e.g. the
//! real-server suite's v1.20 control plane: `../shared/tools/kube-apiserver`), for runs
//! of 100 and 1,000 workers made by the release binary itself, and prints a table.
//! Without the variable it says so and exits 0.
//!
//! `cargo bench --bench real_apiserver`; `REAL_SPAWN_SIZES=100` and
//! `REAL_DELETE_SIZES=100,1000` pick the sizes, `REAL_REPEAT=5` the runs per cell (the
//! median is printed).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
const VAR: &str = "TF_SPAWNER_BENCH_KUBECONFIG";
const IN_FLIGHT: usize = 32;
const SCRIPT: &str = "import os\nprint(os.environ['TF_CONFIG'])\n";
/// What tf-spawner's own collection DELETEs ask for: names, not whole pods.
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

#[derive(Clone, Copy, Debug)]
enum Strategy {
    Collection,
    Singles,
}

#[tokio::main]
async fn main() {
    let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        println!(
            "real_delete: {VAR} not set (an admin kubeconfig of a real API server); nothing measured"
        );
        return;
    };
    let kubeconfig = std::path::PathBuf::from(path);
    let file = Kubeconfig::read_from(&kubeconfig).expect("read the kubeconfig");
    let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig");
    let client = Client::try_from(config.clone()).expect("client");
    let sizes: Vec<u32> = std::env::var("REAL_DELETE_SIZES")
        .unwrap_or_else(|_| "100,1000".into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().expect("REAL_DELETE_SIZES: numbers"))
        .collect();
    let repeat: usize = std::env::var("REAL_REPEAT")
        .ok()
        .map(|s| s.parse().expect("REAL_REPEAT: a number"))
        .unwrap_or(5);
    let spawn_sizes: Vec<u32> = std::env::var("REAL_SPAWN_SIZES")
        .unwrap_or_else(|_| "100".into())
        .split(',')
        .map(|s| s.trim().parse().expect("REAL_SPAWN_SIZES: numbers"))
        .collect();
    let version = client.apiserver_version().await.expect("server version");
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("train.py");
    std::fs::write(&script, SCRIPT).expect("script");

    println!("# tf-spawner on a real API server");
    println!(
        "server: {}.{} ({}); {} CPUs here; median of {repeat}",
        version.major,
        version.minor,
        version.git_version,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!(
        "| workers | tf-spawner spawn | floor, new client | floor, connected client | spawn ÷ floor (new client) |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for n in spawn_sizes {
        let (mut ours, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..repeat {
            // Rotate which goes first, so none always meets a warmer server.
            for turn in 0..3 {
                let which = (round + turn) % 3;
                let ns = format!("bench-spawn-{n}-{round}-{:04x}", rand::random::<u16>());
                make_namespace(&client, &ns).await;
                match which {
                    0 => {
                        let start = Instant::now();
                        spawn(&kubeconfig, &ns, n, &script);
                        ours.push(start.elapsed());
                    }
                    1 => {
                        // A client of its own: it opens its connections during the spawn,
                        // as the binary does.
                        let objects = planned(&kubeconfig, &ns, n, &script);
                        let fresh = Client::try_from(config.clone()).expect("client");
                        cold.push(raw_spawn(&fresh, &ns, objects).await);
                    }
                    _ => {
                        let objects = planned(&kubeconfig, &ns, n, &script);
                        warm.push(raw_spawn(&client, &ns, objects).await);
                    }
                }
                let _ = Api::<Namespace>::all(client.clone())
                    .delete(&ns, &DeleteParams::default())
                    .await;
            }
        }
        let (o, c, w) = (median(&mut ours), median(&mut cold), median(&mut warm));
        println!(
            "| {n} | {} | {} | {} | {:.2} |",
            ms(o),
            ms(c),
            ms(w),
            o.as_secs_f64() / c.as_secs_f64()
        );
    }
    println!();
    println!(
        "| pods | collection DELETE | list + single DELETEs, {IN_FLIGHT} at a time | collection ÷ singles |"
    );
    println!("| ---: | ---: | ---: | ---: |");
    for n in sizes {
        let mut times = [Vec::new(), Vec::new()];
        for round in 0..repeat {
            for (i, strategy) in [Strategy::Collection, Strategy::Singles]
                .into_iter()
                .enumerate()
            {
                let ns = format!("bench-delete-{n}-{round}-{i}-{:04x}", rand::random::<u16>());
                make_namespace(&client, &ns).await;
                spawn(&kubeconfig, &ns, n, &script);
                let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
                let took = delete(&client, &pods, &ns, strategy).await;
                let left = pods
                    .list_metadata(&ListParams::default())
                    .await
                    .expect("list")
                    .items
                    .len();
                assert_eq!(left, 0, "{strategy:?} left {left} pods");
                times[i].push(took);
                let _ = Api::<Namespace>::all(client.clone())
                    .delete(&ns, &DeleteParams::default())
                    .await;
            }
        }
        let (c, s) = (median(&mut times[0]), median(&mut times[1]));
        println!(
            "| {n} | {} | {} | {:.2} |",
            ms(c),
            ms(s),
            c.as_secs_f64() / s.as_secs_f64()
        );
    }
}

/// The run's objects as the binary plans them (`--dry-run -o json`).
fn planned(
    kubeconfig: &std::path::Path,
    ns: &str,
    n: u32,
    script: &std::path::Path,
) -> Vec<serde_json::Value> {
    let out = std::process::Command::new(BIN)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "--dry-run",
            "-o",
            "json",
            "-n",
            ns,
            "-t",
            "run",
            "-w",
            &n.to_string(),
        ])
        .arg(script)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run tf-spawner --dry-run");
    assert!(
        out.status.success(),
        "dry run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON List");
    list["items"].as_array().expect("items").clone()
}

/// The spawn's requests, stage by stage, from a client that is already connected.
async fn raw_spawn(client: &Client, ns: &str, objects: Vec<serde_json::Value>) -> Duration {
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    let api = |kind: &str| {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", kind));
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar)
    };
    let of_kind = |kind: &str| -> Vec<DynamicObject> {
        objects
            .iter()
            .filter(|o| o["kind"] == kind)
            .map(|o| serde_json::from_value(o.clone()).expect("object"))
            .collect()
    };
    let lp = ListParams::default().labels("training_attempt=run");
    let pp = PostParams::default();
    let start = Instant::now();
    let (pods, services, config_maps, secrets) =
        (api("Pod"), api("Service"), api("ConfigMap"), api("Secret"));
    let (a, b, c, d) = tokio::join!(
        pods.list_metadata(&lp),
        services.list_metadata(&lp),
        config_maps.list_metadata(&lp),
        secrets.list_metadata(&lp),
    );
    for r in [a, b, c, d] {
        assert!(r.expect("list").items.is_empty());
    }
    for kind in ["ConfigMap", "Service", "Pod"] {
        let api = api(kind);
        futures::stream::iter(of_kind(kind))
            .map(|o| {
                let api = api.clone();
                let pp = pp.clone();
                async move { api.create(&pp, &o).await.map(|_| ()) }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await
            .expect("create");
    }
    start.elapsed()
}

async fn make_namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// A run of `n` workers, tag `run`, made by the release binary.
fn spawn(kubeconfig: &std::path::Path, ns: &str, n: u32, script: &std::path::Path) {
    let out = std::process::Command::new(BIN)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["-q", "-n", ns, "-t", "run", "-w", &n.to_string()])
        .arg(script)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run tf-spawner");
    assert!(
        out.status.success(),
        "spawn: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn delete(client: &Client, pods: &Api<Pod>, ns: &str, strategy: Strategy) -> Duration {
    let selector = "training_attempt=run";
    let dp = DeleteParams::default();
    let start = Instant::now();
    match strategy {
        Strategy::Collection => {
            let lp = ListParams::default().labels(selector);
            let mut request = kube::core::Request::new(format!("/api/v1/namespaces/{ns}/pods"))
                .delete_collection(&dp, &lp)
                .expect("request");
            request.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(METADATA_LIST),
            );
            client
                .request_text(request)
                .await
                .expect("collection DELETE");
        }
        Strategy::Singles => {
            let lp = ListParams::default().labels(selector);
            let names: Vec<String> = pods
                .list_metadata(&lp)
                .await
                .expect("list")
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            futures::stream::iter(names)
                .map(|name| {
                    let pods = pods.clone();
                    let dp = dp.clone();
                    async move { pods.delete(&name, &dp).await.map(|_| ()) }
                })
                .buffer_unordered(IN_FLIGHT)
                .try_collect::<Vec<()>>()
                .await
                .expect("single DELETEs");
        }
    }
    start.elapsed()
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
