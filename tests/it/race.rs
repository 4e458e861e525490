//! Two spawns of one tag at once (issue 64, item 6): exactly one runs, the other exits 7
//! with the tag check's line and leaves nothing, and touches none of the winner's objects.

use std::time::Duration;

use kube_testserver::Fault;
use serde_json::{Value, json};

use crate::support::{Env, Output};

/// The tag check saw nothing; the other spawn's ConfigMap landed just before this one's
/// create (planted by the server as that create arrives): a 409 AlreadyExists on the
/// run's first object is the tag taken, not an API error.
#[test]
fn a_spawn_that_loses_the_race_for_its_configmap_exits_7_and_leaves_the_winners_objects() {
    let env = Env::new();
    let winner = json!({
        "metadata": {
            "name": "racy-script",
            "labels": { "training_attempt": "racy" },
            "annotations": { "tf-spawner/invocation": "the-other-spawn" }
        },
        "data": { "train.py": "print('the winner')\n" }
    });
    env.server
        .add_fault(Fault::on("POST", "/configmaps").plant("configmaps", "default", winner));
    let env_file = env.write("e.env", "TOKEN=t\n");
    let out = env.spawn(&["-t", "racy", "-e", env_file.to_str().unwrap()]);
    out.failure(7)
        .stderr_has(
            "run 'racy' already exists in namespace 'default' (left of it: 1 configmap, no pods)",
        )
        .stderr_has("tf-spawner -d --wait -t racy -n default");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
    // Only the winner's ConfigMap, untouched: nothing of the loser's, no delete sent.
    assert_eq!(env.names("default"), ["configmap/racy-script"]);
    let stored = env
        .server
        .get("configmaps", "default", "racy-script")
        .unwrap();
    assert_eq!(
        stored["metadata"]["annotations"]["tf-spawner/invocation"],
        "the-other-spawn"
    );
    let writes: Vec<String> = env
        .server
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        writes,
        ["POST /api/v1/namespaces/default/configmaps"],
        "the loser sent its ConfigMap's create only"
    );
}

/// Two real spawns, their tag checks overlapping (each request 150 ms late): one exits
/// 0, the other 7, and the run in the namespace is the winner's, whole.
#[test]
fn of_two_spawns_of_one_tag_at_once_one_runs_and_the_other_exits_7() {
    let env = Env::new();
    env.server.set_latency(Duration::from_millis(150));
    let script = env.script();
    let env_file = env.write("e.env", "TOKEN=t\n");
    let args = [
        "-t",
        "both",
        "-w",
        "2",
        "-e",
        env_file.to_str().unwrap(),
        script.to_str().unwrap(),
    ];
    let children: Vec<_> = (0..2)
        .map(|_| {
            env.cmd()
                .args(args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start tf-spawner")
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("wait");
            Output {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect();
    let codes: Vec<i32> = outs.iter().map(|o| o.code).collect();
    let (won, lost) = match codes.as_slice() {
        [0, 7] => (&outs[0], &outs[1]),
        [7, 0] => (&outs[1], &outs[0]),
        _ => panic!("exit codes {codes:?}: {outs:#?}"),
    };
    won.success();
    lost.failure(7)
        .stderr_has("run 'both' already exists in namespace 'default'");
    let names = env.names("default");
    assert_eq!(names.len(), 1 + 1 + 2 + 2, "{names:?}");
    let invocations: Vec<Value> = ["configmaps", "secrets", "services", "pods"]
        .iter()
        .flat_map(|r| env.list(r, "default"))
        .map(|o| o["metadata"]["annotations"]["tf-spawner/invocation"].clone())
        .collect();
    assert!(
        invocations.iter().all(|i| *i == invocations[0]),
        "all of one spawn: {invocations:?}"
    );
}
