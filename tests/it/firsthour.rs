//! Naming runs and verbs the way kubectl, stern and arena do (issue 30).

use crate::support::Env;

#[test]
fn the_tag_is_a_positional_or_t_before_or_after_the_verb() {
    let env = Env::new();
    env.spawn(&["-w", "1", "-t", "exp42"]).success();
    for args in [
        vec!["status", "exp42"],
        vec!["-t", "exp42", "status"],
        vec!["status", "-t", "exp42"],
        vec!["-t", "exp42", "status", "exp42"],
    ] {
        env.run(&args).success().stdout_has("exp42-worker-0");
    }
    // Not the default run: there is none.
    env.run(&["status"]).stdout_lacks("exp42-worker-0");
    env.run(&["status", "exp42", "-t", "other"])
        .failure(2)
        .stderr_has("two runs");
    env.run(&["-t", "nope", "logs", "exp42"]).failure(2);
    env.run(&["logs", "exp42"]).success();
    let waited = env.run(&["wait", "exp42", "--for", "start", "--timeout", "1s"]);
    assert!(!waited.stderr.contains("unexpected"), "{waited:#?}");
    assert_ne!(waited.code, 2, "{waited:#?}");
    // -d still takes the tag by -t only.
    env.run(&["-d", "exp42"]).failure(2).stderr_has("-d -t TAG");
}

#[test]
fn spawn_is_an_explicit_verb() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    env.run(&["spawn", "-w", "1", "-t", "sp", s]).success();
    env.run(&[
        "-n", "default", "spawn", "-w", "2", "-t", "sq", s, "--", "spawn",
    ])
    .success();
    let names = env.names("default");
    assert!(names.contains(&"pod/sp-worker-0".to_string()), "{names:?}");
    assert!(names.contains(&"pod/sq-worker-1".to_string()), "{names:?}");
    let pod = env.server.get("pods", "default", "sq-worker-0").unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["args"],
        serde_json::json!(["spawn"])
    );
}

#[test]
fn no_arguments_prints_a_short_usage_naming_the_verbs() {
    let env = Env::new();
    env.run(&[])
        .failure(2)
        .stderr_has("error: a training script or a verb is needed")
        .stderr_has("wait, status, logs, list");
}

/// After a spawn: `run TAG created` and the next steps as our own commands, under the
/// name the user ran (`kubectl tf-spawner` as a kubectl plugin); `-q` only the tag.
#[test]
fn a_spawn_leads_to_wait_logs_status_and_delete() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    let out = env.run(&["-w", "2", "-t", "lead", s]);
    out.success()
        .stdout_has(
            "run lead created in namespace default (label training_attempt=lead): configmap/lead-script, 2 services, 2 pods",
        )
        .stdout_has("  tf-spawner wait lead -n default")
        .stdout_has("  tf-spawner logs -f lead -n default")
        .stdout_has("  tf-spawner status lead -n default")
        .stdout_has("  tf-spawner -d -t lead -n default");
    assert!(!out.stdout.contains("kubectl"), "{out:#?}");
    let quiet = env.run(&["-q", "-w", "1", "-t", "quiet", s]);
    assert_eq!(quiet.stdout, "quiet\n", "{quiet:#?}");

    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("kubectl-tf_spawner");
    std::os::unix::fs::symlink(crate::support::BIN, &link).unwrap();
    let cmd = env.cmd();
    let mut plugin = std::process::Command::new(&link);
    plugin.current_dir(env.path("")).env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            plugin.env(k, v);
        }
    }
    let out = crate::support::run(plugin.args(["-w", "1", "-t", "plug", s]));
    out.success()
        .stdout_has("run plug created")
        .stdout_has("  kubectl tf-spawner wait plug -n default")
        .stdout_has("  kubectl tf-spawner logs -f plug -n default")
        .stdout_has("  kubectl tf-spawner -d -t plug -n default");
}

/// A pod being deleted is `Terminating` in `status` and `list`, as kubectl shows it.
#[test]
fn pods_being_deleted_are_terminating_in_status_and_list() {
    let env = Env::new();
    env.spawn(&["-w", "2", "-t", "term"]).success();
    for i in 0..2 {
        env.server
            .set_pod_phase("default", &format!("term-worker-{i}"), "Running");
    }
    env.server.mark_terminating("default", "term-worker-0");

    let status = env.run(&["status", "term"]);
    status.success();
    let row = |name: &str| {
        status
            .stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {status:#?}"))
            .to_string()
    };
    assert!(row("term-worker-0 ").contains("Terminating"), "{status:#?}");
    assert!(row("term-worker-1 ").contains("Running"), "{status:#?}");
    let json: serde_json::Value =
        serde_json::from_str(&env.run(&["status", "term", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["pods"][0]["terminating"], true);
    assert_eq!(json["pods"][1]["terminating"], false);
    env.run(&["list"]).success().stdout_has("1 terminating");

    env.server.mark_terminating("default", "term-worker-1");
    let list = env.run(&["list"]);
    list.success().stdout_has("2 terminating");
    let line = list
        .stdout
        .lines()
        .find(|l| l.starts_with("term "))
        .unwrap();
    assert!(line.contains("Terminating"), "{list:#?}");
}
