//! The API server killed (SIGKILL) and started again under `wait` and `logs -f`: both
//! go on, with a note while it is away and one when it is back, and give the verdict
//! they would have given.
//!
//! Needs, besides `TF_SPAWNER_TEST_KUBECONFIG`, how to kill and start the server:
//! `TF_SPAWNER_TEST_APISERVER_PID_FILE` (the kube-apiserver's PID file, e.g.
//! `$TF_SPAWNER_K8S/run/pids/kube-apiserver.pid` of
//! `../shared/tools/kube-apiserver/start.sh`) and
//! `TF_SPAWNER_TEST_APISERVER_START` (a shell command that starts it again, e.g. the
//! same `start.sh` with the same environment). Skipped, with a notice, without them.

use crate::started::Started;
use crate::support::*;

const PID_FILE: &str = "TF_SPAWNER_TEST_APISERVER_PID_FILE";
const START: &str = "TF_SPAWNER_TEST_APISERVER_START";

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

/// Kills the server with SIGKILL, waits until `noticed` (the followers said it is gone),
/// and starts it again.
async fn restart(pid_file: &str, start: &str, noticed: impl std::future::Future<Output = ()>) {
    let pid = std::fs::read_to_string(pid_file).expect("PID file");
    let killed = tokio::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .await
        .expect("kill");
    assert!(killed.success(), "kill -9 {pid}");
    noticed.await;
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
    // -v: its API calls on stderr, its watch among them (it prints nothing else here).
    let logs = ["-v", "-n", &ns, "logs", "-f", "-t", "rs"];
    let mut waiting = Started::new(&real, Cred::Admin, &wait);
    let mut following = Started::new(&real, Cred::Admin, &logs);
    // Both have listed and watch: wait has counted the tasks, logs -f opened its watch.
    waiting.line("worker ").await;
    following.err_line("watch=true").await;
    let lost = "note: lost the Kubernetes API server";
    restart(&pid_file, &start, async {
        waiting.err_line(lost).await;
        following.err_line(lost).await;
    })
    .await;
    real.set_terminated(&ns, "rs-worker-1", "tensorflow", 0)
        .await;
    real.set_terminated(&ns, "rs-worker-0", "tensorflow", 0)
        .await;
    let (waited, followed) = (waiting.finish().await, following.finish().await);
    for out in [&waited, &followed] {
        out.success()
            .stderr_has("note: lost the Kubernetes API server")
            .stderr_has("note: the Kubernetes API server answers again");
    }
    waited.stdout_has("run rs: Succeeded");
}
