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

/// `dir` in the defaults file is `--dir` (relative to the file's directory), `config`
/// shows it and where it came from, and a script outside it names the file.
#[test]
fn dir_in_the_defaults_file_ships_the_code() {
    let env = Env::new();
    let project = env.path("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(env.path("elsewhere")).unwrap();
    std::fs::write(project.join("train.py"), "import helpers\n").unwrap();
    std::fs::write(project.join("helpers.py"), "X = 1\n").unwrap();
    let config = env.write("project/tf-spawner.yaml", "dir: .\nworkers: 1\n");
    let run = |args: &[&str]| {
        crate::support::run(
            env.cmd()
                .env("TF_SPAWNER_CONFIG", &config)
                .current_dir(&project)
                .args(args),
        )
    };
    let shown = run(&["config", "-o", "json"]);
    shown.success();
    let settings: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        settings["settings"]["dir"],
        serde_json::json!({"value": project.join(".").display().to_string(), "source": "file"})
    );
    run(&["config"]).success().stdout_has("dir ");
    run(&["-t", "fromfile", "train.py"]).success();
    let cm = env
        .server
        .get("configmaps", "default", "fromfile-script")
        .unwrap();
    assert!(cm["binaryData"]["dir.tar.gz"].is_string(), "{cm:#}");
    // --dir on the command line beats the file; a script outside the file's dir names it.
    let elsewhere = env.write("elsewhere/train.py", "print(1)\n");
    run(&["-t", "outside", elsewhere.to_str().unwrap()])
        .failure(2)
        .stderr_has("is not inside --dir")
        .stderr_has("dir is set in config file");
    assert!(env.names("default").iter().all(|n| !n.contains("outside")));
    let other = elsewhere.parent().unwrap().to_str().unwrap();
    run(&["-t", "flagged", "--dir", other, elsewhere.to_str().unwrap()]).success();
}

/// `status` shows the newest events of each pending pod, as `kubectl describe pod`
/// lists them (the scheduler's through events.k8s.io, the kubelet's through core/v1),
/// in one list of the namespace's events, and none for a run without pending pods.
#[test]
fn status_shows_the_events_of_pending_pods() {
    use crate::follow::{running, spawn_run, unschedulable, waiting};
    use kube_testserver::Reporter;
    let env = Env::new();
    spawn_run(&env, "ev", &["-w", "3", "--pull-grace", "0s"]);
    running(&env, "ev-worker-0");
    waiting(
        &env,
        "ev-worker-1",
        "ImagePullBackOff",
        "Back-off pulling image \"nope:1\"",
    );
    unschedulable(
        &env,
        "ev-worker-2",
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    );
    let event = |pod: &str, by, what, count| {
        assert!(env.server.record_pod_event("default", pod, by, what, count));
    };
    let pulled = "Failed to pull image \"nope:1\": rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/library/nope:1\": not found";
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        (
            "Normal",
            "Scheduled",
            "Successfully assigned default/ev-worker-1 to node-1",
        ),
        1,
    );
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        ("Normal", "Pulling", "Pulling image \"nope:1\""),
        2,
    );
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        ("Warning", "Failed", pulled),
        2,
    );
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        ("Warning", "Failed", "Error: ErrImagePull"),
        2,
    );
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        ("Normal", "BackOff", "Back-off pulling image \"nope:1\""),
        3,
    );
    event(
        "ev-worker-1",
        Reporter::Kubelet,
        ("Warning", "Failed", "Error: ImagePullBackOff"),
        3,
    );
    event(
        "ev-worker-2",
        Reporter::Scheduler,
        (
            "Warning",
            "FailedScheduling",
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        4,
    );
    // The running pod's events are not shown.
    event(
        "ev-worker-0",
        Reporter::Kubelet,
        ("Normal", "Started", "Started container tensorflow"),
        1,
    );
    env.server.clear_requests();

    let out = env.run(&["status", "ev"]);
    out.success()
        .stdout_has("events of the pods that have not started (newest first):")
        .stdout_lacks("Started container")
        .stdout_lacks("Successfully assigned");
    let rows: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("TASK "))
        .skip(1)
        .take_while(|l| !l.starts_with("verdict:"))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    // The age column: seconds, whatever second the test crossed.
    let rows: Vec<Vec<&str>> = rows
        .into_iter()
        .map(|mut r| {
            assert!(r[1].ends_with('s'), "{r:?}");
            r.remove(1);
            r
        })
        .collect();
    let expected = [
        [
            "worker-1",
            "Warning",
            "Failed (x3)",
            "Error: ImagePullBackOff",
        ],
        [
            "worker-1",
            "Normal",
            "BackOff (x3)",
            "Back-off pulling image \"nope:1\"",
        ],
        ["worker-1", "Warning", "Failed (x2)", "Error: ErrImagePull"],
        ["worker-1", "Warning", "Failed (x2)", pulled],
        [
            "worker-1",
            "Normal",
            "Pulling (x2)",
            "Pulling image \"nope:1\"",
        ],
        [
            "worker-2",
            "Warning",
            "FailedScheduling (x4)",
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ],
    ];
    assert_eq!(rows, expected, "{out:#?}");
    // The verdict stays the last line.
    assert!(
        out.stdout
            .ends_with("cannot start: ImagePullBackOff: Back-off pulling image \"nope:1\" (its image cannot be pulled: check --image; a slow registry: --pull-grace)\n"),
        "{out:#?}"
    );
    let lists: Vec<_> = env
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/events"))
        .collect();
    assert_eq!(lists.len(), 1, "{lists:#?}");
    assert_eq!(lists[0].status, 200, "{lists:#?}");
    assert!(
        lists[0]
            .query
            .contains("fieldSelector=involvedObject.kind%3DPod"),
        "{lists:#?}"
    );

    let json = env.run(&["status", "ev", "-o", "json"]);
    json.success();
    let status: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let pods = status["pods"].as_array().unwrap();
    assert_eq!(pods[0]["events"], serde_json::json!([]));
    let w1: Vec<&str> = pods[1]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(w1.len(), 5, "{:#}", pods[1]);
    assert!(!w1.contains(&"Scheduled"), "the oldest left out: {w1:?}");
    let w2 = &pods[2]["events"][0];
    assert_eq!(w2["type"], "Warning");
    assert_eq!(w2["reason"], "FailedScheduling");
    assert_eq!(w2["count"], 4);
    assert!(w2["last_seen"].is_string(), "{w2:#}");

    // One pending pod: the events of that pod only, by name, as kubectl describe asks.
    running(&env, "ev-worker-1");
    running(&env, "ev-worker-2");
    let env2 = Env::new();
    spawn_run(&env2, "one", &["-w", "1"]);
    env2.server.record_pod_event(
        "default",
        "one-worker-0",
        Reporter::Scheduler,
        ("Warning", "FailedScheduling", "0/1 nodes are available"),
        1,
    );
    env2.server.clear_requests();
    env2.run(&["status", "one"])
        .success()
        .stdout_has("FailedScheduling");
    let lists: Vec<_> = env2
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/events"))
        .collect();
    assert_eq!(lists.len(), 1, "{lists:#?}");
    assert!(
        lists[0]
            .query
            .contains("involvedObject.name%3Done-worker-0"),
        "{lists:#?}"
    );
    // Nothing pending: no events asked for.
    env.server.clear_requests();
    env.run(&["status", "ev"])
        .success()
        .stdout_lacks("events of");
    assert!(
        env.server
            .requests()
            .iter()
            .all(|r| !r.path.ends_with("/events"))
    );
}

/// Events that cannot be read (RBAC allows pods, not events) leave `status` working
/// with a note.
#[test]
fn status_without_access_to_events_still_answers() {
    use crate::follow::spawn_run;
    let env = Env::new();
    spawn_run(&env, "noev", &["-w", "1"]);
    env.server.add_fault(
        kube_testserver::Fault::on("GET", "/events")
            .always()
            .status(403),
    );
    let out = env.run(&["status", "noev"]);
    out.success()
        .stdout_has("noev-worker-0")
        .stderr_has("note: the pending pods' events are not shown");
}

/// The man page refers to no page that does not exist (clap_mangen's SUBCOMMANDS
/// section named tf-spawner-wait(1) and others): each verb is a subsection of the one
/// page, with its synopsis and flags.
#[test]
fn the_man_page_has_no_dangling_references() {
    let env = Env::new();
    let out = env.run(&["man"]);
    out.success();
    let page = &out.stdout;
    // A reference is NAME(SECTION); roff writes `-` as `\-`.
    let references: Vec<&str> = page
        .match_indices("(1)")
        .chain(page.match_indices("(8)"))
        .map(|(at, _)| {
            let start = page[..at]
                .rfind(|c: char| c.is_whitespace() || c == '>')
                .map_or(0, |i| i + 1);
            &page[start..at + 3]
        })
        .collect();
    assert!(
        references.is_empty(),
        "references to other pages: {references:?}"
    );
    assert!(!page.contains("tf\\-spawner\\-wait"), "{page}");
    for verb in [
        "wait",
        "status",
        "logs",
        "list",
        "cp",
        "tensorboard",
        "config",
    ] {
        assert!(
            page.contains(&format!(".SS \"tf-spawner {verb}\"")),
            "no section for {verb}"
        );
    }
    // Each verb's own flags are in its section.
    let wait = &page[page.find(".SS \"tf-spawner wait\"").unwrap()..];
    let wait = &wait[..wait[4..].find(".SS ").unwrap()];
    assert!(wait.contains("\\-\\-save\\-logs"), "{wait}");
    assert!(!wait.contains("\\-\\-max\\-log\\-requests"), "{wait}");
}

/// Help fits a screen: on 80 columns, `tf-spawner --help` (the overview naming every
/// verb), `spawn -h` = `help spawn` (the spawn summary), and each verb's `-h` and
/// `--help` are at most 50 lines; `spawn --help` has every spawn flag.
#[test]
fn help_fits_a_screen_per_verb() {
    use clap::CommandFactory;
    let env = Env::new();
    let help = |args: &[&str]| {
        let out = crate::support::run(env.cmd().env("COLUMNS", "80").args(args));
        out.success();
        let long = out
            .stdout
            .lines()
            .filter(|l| l.chars().count() > 80)
            .count();
        assert_eq!(long, 0, "lines over 80 columns: {out:#?}");
        out.stdout
    };
    let lines = |text: &str| text.lines().count();
    let cli = tf_spawner::cli::Cli::command();
    // `supervise` (what a detached run's pod runs) is hidden: no help of its own.
    let verbs: Vec<&str> = cli
        .get_subcommands()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name())
        .collect();
    let overview = help(&["--help"]);
    assert!(lines(&overview) <= 50, "{overview}");
    assert_eq!(help(&["-h"]), overview);
    assert_eq!(help(&["help"]), overview);
    for verb in verbs.iter().chain(&["spawn"]) {
        assert!(
            overview.contains(&format!("\n  {verb} ")),
            "{verb}: {overview}"
        );
    }
    let spawn = help(&["spawn", "-h"]);
    assert!(lines(&spawn) <= 50, "{} lines: {spawn}", lines(&spawn));
    assert_eq!(help(&["help", "spawn"]), spawn);
    assert!(
        spawn.contains("--workers") && spawn.contains("--dir"),
        "{spawn}"
    );
    assert!(spawn.contains("Global options"), "{spawn}");
    assert!(spawn.contains("tf-spawner spawn --help"), "{spawn}");
    // The full spawn help: every flag, under headings.
    let full = help(&["spawn", "--help"]);
    for arg in cli.get_arguments().filter_map(|a| a.get_long()) {
        assert!(
            full.contains(&format!("--{arg}")),
            "--{arg} missing: {full}"
        );
    }
    assert!(
        full.contains("Shared clusters:") && full.contains("Roles:"),
        "{full}"
    );
    for verb in verbs.iter().filter(|v| **v != "help") {
        for flag in ["-h", "--help"] {
            let text = help(&[verb, flag]);
            assert!(
                lines(&text) <= 50,
                "{verb} {flag}: {} lines: {text}",
                lines(&text)
            );
            assert!(text.contains("Global options"), "{verb} {flag}: {text}");
        }
        assert_eq!(help(&["help", verb]), help(&[verb, "--help"]));
    }
}
