//! Issue 57, item 3: everything read back is bounded. A kept attempt log is a ConfigMap
//! anyone who may edit the namespace can make: `logs --attempt N` and `wait --save-logs`
//! read each alone, cut at 16 MiB (tf-spawner keeps none longer), with one line per cut,
//! never gigabytes (on main four forged ones took 1.33 GB of memory and `--save-logs`
//! wrote 1.1 GB).

use std::io::Write;

use serde_json::json;

use crate::follow::{exited, running};
use crate::support::Env;

const NS: &str = "default";
const MIB: usize = 1 << 20;

/// `text` gzip'd and base64'd, as a ConfigMap's binaryData holds it.
fn packed(text: &[u8]) -> String {
    use base64::Engine;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text).unwrap();
    base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
}

/// A kept log of `pod`'s attempt 0, as an editor of the namespace can make one.
fn forge(env: &Env, tag: &str, pod: &str, log_gz: &str) {
    env.server.insert(
        "configmaps",
        NS,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": format!("{pod}-a0-log"), "namespace": NS,
                "labels": {"training_attempt": tag, "tf-spawner/attempt-log": "true",
                    "tf-spawner/attempt": "0", "app.kubernetes.io/managed-by": "tf-spawner"},
                "annotations": {"tf-spawner/pod": pod, "tf-spawner/attempt-ended": "forged"}
            },
            "binaryData": {"log.gz": log_gz}
        }),
    );
}

/// A run of one worker on its attempt 1 (as after a restart), with three forged kept logs
/// of attempt 0, each unpacking to 40 MiB.
fn run_with_bombs(env: &Env, tag: &str) -> Vec<String> {
    env.spawn(&["-t", tag, "-w", "1"]).success();
    let pod = format!("{tag}-worker-0");
    let mut p = env.server.get("pods", NS, &pod).unwrap();
    p["metadata"]["labels"]["tf-spawner/attempt"] = json!("1");
    env.server.insert("pods", NS, p);
    let line = [b'a'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    let bomb = packed(&line.repeat(40 * MIB / 100));
    let pods: Vec<String> = (0..3).map(|i| format!("{tag}-worker-{i}")).collect();
    for pod in &pods {
        forge(env, tag, pod, &bomb);
    }
    pods
}

#[test]
fn forged_kept_logs_are_read_within_bounds_each_cut_said_once() {
    let env = Env::new();
    let pods = run_with_bombs(&env, "bb");
    let out = env.run(&["logs", "bb", "--attempt", "0"]);
    out.success().stderr_has("run bb: attempt 0 ended: forged");
    for pod in &pods {
        out.stderr_has(&format!(
            "{pod}: attempt 0's log cut at 16 MiB: tf-spawner keeps none longer (someone who may edit the namespace's configmaps made it)"
        ));
    }
    // Three logs of 16 MiB each, with their `worker-N | ` prefixes: not 120 MiB.
    let prefixed = 16 * MIB / 100 * 111;
    assert!(
        out.stdout.len() <= 3 * (prefixed + 111),
        "{} bytes",
        out.stdout.len()
    );
    assert!(
        out.stdout.len() >= 3 * (prefixed - 111),
        "{} bytes",
        out.stdout.len()
    );
    assert_eq!(out.stderr.lines().count(), 4, "{}", out.stderr);

    // --save-logs writes each cut file, and says the cut.
    running(&env, "bb-worker-0");
    exited(&env, "bb-worker-0", 0);
    let out = env.run(&["wait", "bb", "--save-logs", "out"]);
    out.success()
        .stderr_has("bb-worker-2: attempt 0's log cut at 16 MiB");
    for pod in &pods {
        let file = env.path(&format!("out/{pod}.attempt-0.log"));
        let len = std::fs::metadata(&file).unwrap().len();
        assert!(len <= 16 * MIB as u64, "{}: {len}", file.display());
    }
}
