//! `spawn --detach` on running pods (issue 59): the supervisor's pod, from the image
//! `tools/supervisor-image/build.sh` makes of this very binary (imported into the node's
//! containerd by `TF_SPAWNER_PODS_SUPERVISOR_IMAGE`, a command taking the binary, as
//! `.ci/run` sets it; skipped with a notice without it), runs under the ServiceAccount
//! `examples/rbac.yaml` makes, reaches the API server through the `kubernetes` Service as
//! on users' clusters, and follows the run with nobody else: a worker deleted mid-run is
//! restarted by it, the run succeeds, the verdict is recorded, `--notify` reaches a server
//! on this machine, and the Job completes.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, LogParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{BIN, Cluster, phase, tag};

use crate::after::service_account;

const CONTROL: &str = "TF_SPAWNER_PODS_SUPERVISOR_IMAGE";

/// Prints its attempt, then three epochs of 4 s each.
const EPOCHS: &str = "\
import os, time
print('attempt', os.environ.get('TF_SPAWNER_ATTEMPT'), flush=True)
for e in range(1, 4):
    time.sleep(4)
    print(f'Epoch {e}/3', flush=True)
";

/// The supervisor's image, built from this binary and imported; `None` (with a notice)
/// without [`CONTROL`].
async fn supervisor_image(test: &str) -> Option<String> {
    let Some(command) = std::env::var(CONTROL).ok().filter(|v| !v.is_empty()) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: {CONTROL} not set (tools/one-node/supervisor-image.sh; see .ci/run)"
        );
        return None;
    };
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} {BIN}"))
        .output()
        .await
        .expect("run the image command");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{command} {BIN}: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Some(stdout.lines().last().expect("the image's name").to_string())
}

/// Waits (at most `within` seconds) until Job `name` has succeeded; the Jobs' API.
async fn completed(c: &Cluster, name: &str, within: u64) -> Api<Job> {
    let jobs = Api::<Job>::namespaced(c.client.clone(), &c.namespace);
    c.eventually(
        &format!("job {name} complete"),
        Duration::from_secs(within),
        || async {
            let job = jobs.get(name).await.ok()?;
            (job.status?.succeeded? == 1).then_some(())
        },
    )
    .await;
    jobs
}

fn annotation(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.metadata.annotations.as_ref()?.get(key).cloned()
}

/// A one-notice HTTP server on this machine, for a pod's `--notify`: its URL, and the
/// body of the first POST it receives (answered 204). The address is the one the node's
/// pods reach this machine at: the kubelet's `clusterDNS` (its `configz`, through the API
/// server), which the one-node cluster serves on the pods' bridge (`tools/one-node/`);
/// the node's InternalIP is on the loopback there, which pods have no route to.
async fn notice_server(c: &Cluster) -> (String, tokio::task::JoinHandle<String>) {
    let nodes = Api::<Node>::all(c.client.clone());
    let list = nodes.list(&ListParams::default()).await.expect("the nodes");
    let node = list.items[0].metadata.name.clone().expect("a node's name");
    let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/configz"))
        .body(Vec::new())
        .unwrap();
    let configz = c
        .client
        .request_text(request)
        .await
        .expect("the kubelet's configz");
    let config: serde_json::Value = serde_json::from_str(&configz).expect(&configz);
    let ip = config["kubeletconfig"]["clusterDNS"][0]
        .as_str()
        .unwrap_or_else(|| panic!("the kubelet's clusterDNS: {configz}"))
        .to_string();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.expect("a connection");
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return String::from_utf8_lossy(&seen).into_owned();
            }
            seen.extend_from_slice(&chunk[..n]);
            if let Some(body) = whole_body(&seen) {
                let _ = sock
                    .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                    .await;
                return body;
            }
        }
    });
    (format!("http://{ip}:{port}/hook"), body)
}

/// The body of an HTTP request read so far, once all of it (its Content-Length) is in.
fn whole_body(seen: &[u8]) -> Option<String> {
    let end = seen.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let body = seen.get(end + 4..end + 4 + length)?;
    Some(String::from_utf8_lossy(body).into_owned())
}

/// A detached run of [`EPOCHS`] on 2 workers, `--restarts 2` after a backoff (and more
/// flags), taken by its supervisor's pod, with its worker-1 deleted once running.
struct Detached {
    t: String,
    /// Who the record names as the run's follower (the supervisor's pod).
    follower: String,
    records: Api<ConfigMap>,
    pods: Api<Pod>,
    worker: String,
}

impl Detached {
    /// Spawns it (what the spawn printed, for the test to read), awaits the supervisor
    /// taking it and worker-1 running, deletes worker-1.
    async fn lose_a_worker(
        c: &Cluster,
        image: &str,
        prefix: &str,
        backoff: &str,
        more: &[&str],
    ) -> Detached {
        service_account::apply_role(&c.client, &c.namespace).await;
        let t = tag(prefix);
        let script = c.write("epochs.py", EPOCHS);
        let args = [
            "-w",
            "2",
            "--detach",
            "--supervisor-image",
            image,
            "--restarts",
            "2",
            "--restart-backoff",
            backoff,
        ];
        c.spawn(&t, &script, &[&args[..], more].concat())
            .await
            .stdout_has(&format!(
                "run {t}: followed from the cluster by job/{t}-supervisor"
            ));
        // The spawning process is gone: the supervisor's pod takes the run.
        let records = Api::<ConfigMap>::namespaced(c.client.clone(), &c.namespace);
        let record = format!("{t}-script");
        let follower = c
            .eventually(
                "the supervisor taking the run",
                Duration::from_secs(120),
                || async {
                    let cm = records.get(&record).await.ok()?;
                    annotation(&cm, "tf-spawner/follower")
                        .filter(|w| w.contains(&format!("on {t}-supervisor-")))
                },
            )
            .await;
        let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
        let worker = format!("{t}-worker-1");
        c.eventually("worker-1 running", Duration::from_secs(120), || async {
            let pod = pods.get(&worker).await.ok()?;
            (phase(&pod) == "Running").then_some(())
        })
        .await;
        pods.delete(&worker, &DeleteParams::default())
            .await
            .expect("delete worker-1");
        Detached {
            t,
            follower,
            records,
            pods,
            worker,
        }
    }

    /// The record's annotation `key`, once it has one (within `within`).
    async fn recorded(&self, c: &Cluster, what: &str, key: &str, within: u64) -> String {
        let record = format!("{}-script", self.t);
        c.eventually(what, Duration::from_secs(within), || async {
            let cm = self.records.get(&record).await.ok()?;
            annotation(&cm, key)
        })
        .await
    }

    /// Every task pod of the run is of attempt 1: exactly one restart.
    async fn restarted_once(&self, c: &Cluster) {
        let tasks = c.pods(&self.t).await.into_iter().filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .is_some_and(|l| !l.contains_key("tf-spawner/helper"))
        });
        for pod in tasks {
            let attempt = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("tf-spawner/attempt"))
                .cloned();
            assert_eq!(
                attempt.as_deref(),
                Some("1"),
                "exactly one restart: {pod:?}"
            );
        }
    }

    /// The supervisor's pods' names.
    async fn supervisors(&self) -> Vec<String> {
        let sup = format!("training_attempt={},tf-spawner/helper=supervisor", self.t);
        let list = self
            .pods
            .list(&ListParams::default().labels(&sup))
            .await
            .unwrap();
        list.items
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    }
}

#[tokio::test]
async fn a_detached_run_is_restarted_by_its_supervisor_with_nobody_attached() {
    let test = "a_detached_run_is_restarted_by_its_supervisor_with_nobody_attached";
    let Some(c) = Cluster::new("detach").await else {
        return;
    };
    let Some(image) = supervisor_image(test).await else {
        return;
    };
    // Its --notify URL: a server on this machine, reached from the node's pods.
    let (url, notice) = notice_server(&c).await;
    let d = Detached::lose_a_worker(&c, &image, "det", "1s", &["--notify", &url]).await;
    let (t, worker) = (&d.t, &d.worker);
    let verdict = d
        .recorded(&c, "the supervisor's verdict", "tf-spawner/verdict", 240)
        .await;
    let log = match d.supervisors().await.first() {
        Some(name) => d
            .pods
            .logs(name, &LogParams::default())
            .await
            .unwrap_or_default(),
        None => String::new(),
    };
    assert_eq!(verdict, "Succeeded", "{log}");
    assert!(
        log.contains(&format!(
            "run {t}: restart 1/2 in 1s: pod {worker} (worker-1) was deleted while it ran"
        )),
        "{log}"
    );
    d.restarted_once(&c).await;
    // --notify: the supervisor told the run's end once, at its verdict, restart and all.
    let body = tokio::time::timeout(Duration::from_secs(60), notice)
        .await
        .expect("the supervisor's notice within 60 s of the verdict")
        .expect("the notice server");
    let told: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(told["verdict"], "Succeeded", "{body}");
    assert_eq!(told["tag"], t.as_str(), "{body}");
    assert_eq!(told["restarts"], 1, "{body}");
    // The Job ends with the run, 0: nothing left to follow.
    let jobs = completed(&c, &format!("{t}-supervisor"), 60).await;
    // The morning's status: the attempt, why, and who followed it (it let go).
    let status = c.run(&["status", t]).await;
    status
        .success()
        .stdout_has(&format!(
            "attempt: 1 (pod {worker} (worker-1) was deleted while it ran; re-created by tf-spawner on {t}-supervisor-"
        ))
        .stdout_has("verdict: Succeeded");
    assert!(d.follower.starts_with("tf-spawner on "), "{}", d.follower);
    // -d removes the supervisor with the run.
    c.run(&["-d", "-y", "-t", t]).await.success();
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// The supervisor's pod deleted in the middle of a restart (its backoff: the restart
/// recorded, the pods not yet made again): the Job's next pod takes the run up from its
/// record and finishes that restart; the run ends after exactly one.
#[tokio::test]
async fn a_supervisor_lost_mid_restart_is_replaced_and_the_run_restarted_once() {
    let test = "a_supervisor_lost_mid_restart_is_replaced_and_the_run_restarted_once";
    let Some(c) = Cluster::new("detach-lost").await else {
        return;
    };
    let Some(image) = supervisor_image(test).await else {
        return;
    };
    let d = Detached::lose_a_worker(&c, &image, "dlo", "15s", &[]).await;
    d.recorded(&c, "the restart recorded", "tf-spawner/restarting", 60)
        .await;
    let supervisor = d
        .follower
        .split_once(" on ")
        .and_then(|(_, rest)| rest.split_once(','))
        .map(|(pod, _)| pod.to_string())
        .expect("the supervisor's pod in its name");
    d.pods
        .delete(&supervisor, &DeleteParams::default())
        .await
        .expect("delete the supervisor's pod");

    let verdict = d
        .recorded(&c, "the verdict", "tf-spawner/verdict", 240)
        .await;
    assert_eq!(verdict, "Succeeded");
    d.restarted_once(&c).await;
    let second = d
        .supervisors()
        .await
        .into_iter()
        .find(|n| *n != supervisor)
        .expect("the Job's second pod");
    let log = d.pods.logs(&second, &LogParams::default()).await.unwrap();
    assert!(log.contains(&format!("run {}: Succeeded", d.t)), "{log}");
}

/// `sweep --detach` (issue 59): three runs of the rung script (`val_loss` = lr / epoch,
/// 2·lr s an epoch), two at a time; the command makes the record, the first run and the
/// sweep's supervisor, then ends; the supervisor's pod starts the other two as runs end,
/// with nobody attached. Once the third run exists its pod is deleted: the Job's next
/// pod takes the sweep over from the record, follows the two runs under way and starts
/// none again, and completes; `compare` names the best from the records; `-d
/// --experiment` removes it all.
#[tokio::test]
async fn a_detached_sweep_runs_to_its_end_with_nobody_attached() {
    let test = "a_detached_sweep_runs_to_its_end_with_nobody_attached";
    let Some(c) = Cluster::new("detach-sweep").await else {
        return;
    };
    let Some(image) = supervisor_image(test).await else {
        return;
    };
    service_account::apply_role(&c.client, &c.namespace).await;
    let t = tag("dsw");
    let script = c.write("rungs.py", crate::sweep::RUNG_SCRIPT);
    let template = c.template();
    let line = format!(
        "sweep -t {t} -w 1 --param lr=1,2,3 --parallel 2 --objective val_loss --detach --supervisor-image {image}"
    );
    let mut args: Vec<&str> = line.split(' ').collect();
    args.extend(["--pod-file", template.to_str().unwrap()]);
    args.push(script.to_str().unwrap());
    c.run(&args).await.success().stdout_has(&format!(
        "experiment {t}: followed from the cluster by job/{t}-sweeper"
    ));
    let jobs = completed(&c, &format!("{t}-sweeper"), 300).await;
    let pods = Api::<Pod>::namespaced(c.client.clone(), &c.namespace);
    let selector = format!("tf-spawner/experiment={t},tf-spawner/helper=supervisor");
    let sweepers = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    let name = sweepers.items[0].metadata.name.clone().unwrap();
    let log = pods.logs(&name, &LogParams::default()).await.unwrap();
    for want in [
        format!(
            "supervising experiment {t} in namespace {}: 3 runs",
            c.namespace
        ),
        format!("run {t}-3 (lr=3): starting"),
        format!("experiment {t}: all 3 runs succeeded"),
        format!("supervisor of experiment {t}: done"),
    ] {
        assert!(log.contains(&want), "{want:?} in {log}");
    }
    c.run(&["compare", &t])
        .await
        .success()
        .stdout_has(&format!("best: {t}-1 (*)\n"))
        .stdout_lacks("followed now: experiment");
    c.run(&["-d", "-y", "--experiment", &t]).await.success();
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
