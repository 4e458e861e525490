//! What a researcher's first hour needs on real pods (issue 30): arguments after `--`
//! reach the script unchanged.

use crate::support::{Cluster, RUN_TIMEOUT, tag};

/// The script prints its argv as JSON; the container's `args` carry spaces, quotes and
/// `$` to it without a shell in between.
#[tokio::test]
async fn arguments_after_double_dash_reach_the_script_in_a_pod() {
    let Some(c) = Cluster::new("scriptargs").await else {
        return;
    };
    let t = tag("args");
    let script = c.write(
        "argv.py",
        "import json, sys\nprint('argv=' + json.dumps(sys.argv[1:]), flush=True)\n",
    );
    let odd = "it's \"quoted\" $HOME `x`";
    let template = c.template();
    let (template, script) = (template.to_str().unwrap(), script.to_str().unwrap());
    let spawn = ["-t", &t, "--pod-file", template, "-w", "1", script];
    let mut args = spawn.to_vec();
    args.extend(["--", "--epochs", "3", odd]);
    c.run(&args).await.success();
    c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success();
    let line = logs
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("worker-0 | argv="))
        .unwrap_or_else(|| panic!("no argv line: {logs:#?}"));
    let argv: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(argv, serde_json::json!(["--epochs", "3", odd]));
}
