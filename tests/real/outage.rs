//! The API server killed (SIGKILL) and started again under `wait` and `logs -f`: both
//! go on, with a note while it is away and one when it is back, and give the verdict
//! they would have given.
//!
//! Needs, besides `TF_SPAWNER_TEST_KUBECONFIG`, how to kill and start the server:
//! `TF_SPAWNER_TEST_APISERVER_PID_FILE` (the kube-apiserver's PID file, e.g.
//! `$TF_SPAWNER_K8S/run/pids/kube-apiserver.pid` of `tools/kube-apiserver/start.sh`) and
//! `TF_SPAWNER_TEST_APISERVER_START` (a shell command that starts it again, e.g. the
//! same `start.sh` with the same environment). Skipped, with a notice, without them.

use std::time::Duration;

use crate::support::*;

const PID_FILE: &str = "TF_SPAWNER_TEST_APISERVER_PID_FILE";
const START: &str = "TF_SPAWNER_TEST_APISERVER_START";
/// How long the server stays down.
const DOWN: Duration = Duration::from_secs(15);

fn restart_settings(test: &str) -> Option<(String, String)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var(PID_FILE), var(START)) {
        (Some(pid_file), Some(start)) if std::path::Path::new(&pid_file).is_file() => {
            Some((pid_file, start))
        }
        _ => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {PID_FILE} (an existing file) and {START} not set (see tests/real/outage.rs)"
            );
            None
        }
    }
}

/// Kills the server with SIGKILL, waits [`DOWN`], and starts it again.
async fn restart(pid_file: &str, start: &str) {
    let pid = std::fs::read_to_string(pid_file).expect("PID file");
    let killed = tokio::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .await
        .expect("kill");
    assert!(killed.success(), "kill -9 {pid}");
    tokio::time::sleep(DOWN).await;
    let started = tokio::process::Command::new("sh")
        .args(["-c", start])
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .expect("start the server");
    assert!(started.success(), "{start}");
}

#[tokio::test]
async fn wait_and_logs_follow_survive_an_api_server_restart() {
    let test = "wait_and_logs_follow_survive_an_api_server_restart";
    let Some(real) = Real::new(test).await else {
        return;
    };
    let Some((pid_file, start)) = restart_settings(test) else {
        return;
    };
    let ns = real.namespace("outage").await;
    real.spawn_run(&ns, "rs", 2).await;
    real.set_running(&ns, "rs-worker-0", "tensorflow").await;
    real.set_running(&ns, "rs-worker-1", "tensorflow").await;
    let wait = ["-n", &ns, "wait", "-t", "rs", "--timeout", "5m"];
    let logs = ["-n", &ns, "logs", "-f", "-t", "rs"];
    let (waited, followed, ()) = tokio::join!(
        real.run(Cred::Admin, &wait),
        real.run(Cred::Admin, &logs),
        async {
            // Both have listed and watch by then.
            tokio::time::sleep(Duration::from_secs(3)).await;
            restart(&pid_file, &start).await;
            real.set_terminated(&ns, "rs-worker-1", "tensorflow", 0)
                .await;
            real.set_terminated(&ns, "rs-worker-0", "tensorflow", 0)
                .await;
        },
    );
    for out in [&waited, &followed] {
        out.success()
            .stderr_has("note: lost the Kubernetes API server")
            .stderr_has("note: the Kubernetes API server answers again");
    }
    waited.stdout_has("run rs: Succeeded");
}
