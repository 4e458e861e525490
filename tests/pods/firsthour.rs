//! What a researcher's first hour needs on real pods (issue 30): arguments after `--`
//! reach the script unchanged.

use crate::support::{Cluster, RUN_TIMEOUT, tag};

/// The script prints its argv as JSON; the container's `args` carry spaces, quotes and
/// `$` to it without a shell in between, and the kubelet's `$(VAR)` and `$$` expansion
/// changes nothing: not the cluster's variable, not the run's own Secret's. `--local`
/// gives the same argv.
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
    let secrets = c.write("s.env", "SECRET_KEY=hunter2\n");
    let odd = "it's \"quoted\" $HOME `x`";
    let typed = [
        "--epochs",
        "3",
        odd,
        "a$$b",
        "$(TF_SPAWNER_CLUSTER)",
        "$(SECRET_KEY)",
        "x$",
    ];
    let template = c.template();
    let (template, script) = (template.to_str().unwrap(), script.to_str().unwrap());
    let secrets = secrets.to_str().unwrap();
    let spawn = [
        "-t",
        &t,
        "--pod-file",
        template,
        "-w",
        "1",
        "-e",
        secrets,
        script,
    ];
    let mut args = spawn.to_vec();
    args.push("--");
    args.extend(typed);
    c.run(&args).await.success();
    c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let argv = |out: &crate::support::Output| -> serde_json::Value {
        let line = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("worker-0 | argv="))
            .unwrap_or_else(|| panic!("no argv line: {out:#?}"));
        serde_json::from_str(line).unwrap()
    };
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success();
    assert_eq!(argv(&logs), serde_json::json!(typed));

    let mut local = vec!["--local", "-w", "1", "-e", secrets, script, "--"];
    local.extend(typed);
    let local = c.run(&local).await;
    local.success();
    assert_eq!(argv(&local), argv(&logs));
}

/// `--dir`: the pod unpacks the directory (python's tarfile) and the script imports a
/// module next to it, from its working directory.
#[tokio::test]
async fn dir_makes_the_scripts_modules_importable_in_a_pod() {
    let Some(c) = Cluster::new("shipdir").await else {
        return;
    };
    let t = tag("dir");
    let root = c.write("README", "");
    std::fs::create_dir_all(root.with_file_name("code")).unwrap();
    // `$(HOME)` and `$$` in the script's name reach python unexpanded too.
    let script = c.write(
        "code/tr$(HOME)a$$in.py",
        "import os, helpers\nprint('got', helpers.GREETING, open('conf.txt').read().strip(), os.getcwd(), flush=True)\n",
    );
    c.write("code/helpers.py", "GREETING = 'hello-from-helpers'\n");
    c.write("code/conf.txt", "conf\n");
    let code = script.parent().unwrap().to_str().unwrap().to_string();
    c.spawn(&t, &script, &["-w", "1", "--dir", &code]).await;
    let out = c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT]).await;
    let logs = c.run(&["logs", "-t", &t]).await;
    assert_eq!(out.code, 0, "{out:#?}\n{logs:#?}");
    logs.success()
        .stdout_has("worker-0 | got hello-from-helpers conf /tf-spawner-work");
}
