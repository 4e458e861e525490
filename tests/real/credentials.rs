//! The credentials real clusters use: an exec credential plugin (EKS' `aws eks
//! get-token`, GKE's `gke-gcloud-auth-plugin`, kubelogin for OIDC) whose tokens expire
//! within seconds. The plane's static tokens never expire, so the plugin hands out the
//! admin token with an `expirationTimestamp` [`LIFETIME`] seconds ahead and writes down
//! when it was called: a client that kept using a credential past its expiry would not
//! call it again.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::config::Kubeconfig;
use serde_json::json;

use crate::support::*;

/// How long the plugin's tokens last, in seconds.
const LIFETIME: u64 = 2;

/// A kubeconfig whose user is the admin through an exec plugin (a shell script in the
/// test's temp dir), and the file where the plugin writes the time of each call.
fn exec_kubeconfig(real: &Real) -> (PathBuf, PathBuf) {
    let admin = Kubeconfig::read_from(&real.admin_kubeconfig).expect("read the admin kubeconfig");
    let mut config = serde_json::to_value(&admin).expect("the kubeconfig as JSON");
    let user = &mut config["users"][0]["user"];
    let token = user["token"]
        .as_str()
        .expect("the admin kubeconfig's user has a token")
        .to_string();
    let token_file = real.write("plugin-token", &token);
    let calls = real.dir.path().join("plugin-calls");
    let plugin = real.write(
        "credential-plugin.sh",
        &format!(
            "#!/bin/sh\nnow=$(date +%s)\necho \"$now\" >> '{calls}'\nprintf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}}}\\n' \"$(cat '{token}')\" \"$(date -u -d \"@$((now + {LIFETIME}))\" +%Y-%m-%dT%H:%M:%SZ)\"\n",
            calls = calls.display(),
            token = token_file.display(),
        ),
    );
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod the plugin");
    *user = json!({"exec": {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": plugin,
        "interactiveMode": "Never",
    }});
    let path = real.write("kubeconfig-exec", &config.to_string());
    (path, calls)
}

/// The times (seconds since the epoch) the plugin was called.
fn calls(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().expect("a time in the plugin's log"))
        .collect()
}

#[tokio::test]
async fn an_exec_plugins_short_lived_tokens_are_renewed_through_a_long_wait() {
    let Some(real) =
        Real::new("an_exec_plugins_short_lived_tokens_are_renewed_through_a_long_wait").await
    else {
        return;
    };
    let ns = real.namespace("exec").await;
    let (kubeconfig, log) = exec_kubeconfig(&real);
    let script = real.script();
    let run = |args: &[&str]| {
        let mut all: Vec<OsString> = vec!["--kubeconfig".into(), kubeconfig.clone().into()];
        all.extend(["-n", &ns].iter().chain(args).map(OsString::from));
        all
    };
    real.run_raw(
        &run(&["-t", "ex", "-w", "2", script.to_str().unwrap()]),
        &[],
    )
    .await
    .success();
    let before = calls(&log).len();
    assert!(before >= 1, "the spawn called the plugin");

    // The run ends after several token lifetimes; the wait follows it to its verdict.
    let lifetime = Duration::from_secs(LIFETIME);
    let started = Instant::now();
    let wait = run(&["wait", "-t", "ex", "--timeout", "90s"]);
    let (out, ()) = tokio::join!(real.run_raw(&wait, &[]), async {
        tokio::time::sleep(lifetime * 3).await;
        for pod in ["ex-worker-0", "ex-worker-1"] {
            real.bind(&ns, pod, "node-a").await;
            real.set_running(&ns, pod, "tensorflow").await;
        }
        tokio::time::sleep(lifetime * 2).await;
        real.set_terminated(&ns, "ex-worker-1", "tensorflow", 0)
            .await;
        real.set_terminated(&ns, "ex-worker-0", "tensorflow", 0)
            .await;
    });
    out.success();
    assert!(
        !out.stderr.contains("401") && !out.stderr.contains("Unauthorized"),
        "{out:#?}"
    );
    assert!(started.elapsed() >= lifetime * 5, "{:?}", started.elapsed());
    // The wait asked for a credential again long after its first one had expired.
    let during = calls(&log)[before..].to_vec();
    let (first, last) = (during[0], *during.last().unwrap());
    assert!(
        last - first > LIFETIME * 2,
        "plugin calls during the wait at {during:?}"
    );

    real.run_raw(&run(&["-d", "-t", "ex", "-y"]), &[])
        .await
        .success();
    assert!(real.run_objects(&ns, "ex").await.is_empty());
}
