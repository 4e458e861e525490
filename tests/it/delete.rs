//! Deleting a run: by label, nothing else, with or without collection deletes.

use kube_testserver::Options;
use serde_json::json;

use crate::support::Env;

fn seed_unrelated(env: &Env) {
    // An unlabelled pod and a config map that merely look like a run's objects.
    env.server.insert(
        "pods",
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keep-worker-0"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    env.server.insert(
        "configmaps",
        "default",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "keep-script", "labels": {"training_attempt": "keepx"}}}),
    );
}

#[test]
fn delete_removes_the_run_and_leaves_others_untouched() {
    let env = Env::new();
    seed_unrelated(&env);
    let file = env.write("e.env", "A=1\n");
    env.spawn(&["-t", "one", "-e", file.to_str().unwrap()])
        .success();
    env.spawn(&["-t", "two"]).success();
    let two_before = env
        .names("default")
        .into_iter()
        .filter(|n| n.contains("/two-"))
        .count();

    let out = env.run(&["-d", "-t", "one"]);
    out.success()
        .stdout_has("deleted pod/one-worker-0")
        .stdout_has("deleted service/one-worker-1")
        .stdout_has("deleted configmap/one-script")
        .stdout_has("deleted secret/one-env");
    let left = env.names("default");
    assert!(left.iter().all(|n| !n.contains("/one-")), "{left:?}");
    assert_eq!(
        left.iter().filter(|n| n.contains("/two-")).count(),
        two_before
    );
    assert!(left.contains(&"pod/keep-worker-0".to_string()));
    assert!(left.contains(&"configmap/keep-script".to_string()));
}

#[test]
fn delete_lists_pods_and_services_and_deletes_them_one_by_one_with_their_uid() {
    let env = Env::new();
    let envfile = env.write("e.env", "K=v\n");
    env.spawn(&["-t", "col", "-w", "5", "-e", envfile.to_str().unwrap()])
        .success();
    env.server.clear_requests();
    env.run(&["-d", "-t", "col"]).success();
    let requests = env.server.requests();
    let count = |method: &str, suffix: &str, selector: bool| {
        requests
            .iter()
            .filter(|r| {
                r.method == method
                    && r.path.contains(suffix)
                    && r.query.contains("labelSelector") == selector
            })
            .count()
    };
    // Pods and services: one list (by the run's label) and one DELETE each.
    assert_eq!(count("GET", "/pods", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/pods/", false), 5, "{requests:?}");
    assert_eq!(count("GET", "/services", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/services/", false), 5, "{requests:?}");
    // Config map and secret: one collection DELETE each.
    assert_eq!(count("DELETE", "/configmaps", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/secrets", true), 1, "{requests:?}");
    // Every kind is deleted by the run's label, whatever its ConfigMap records (issue
    // 49): one collection DELETE of NetworkPolicies and of each gang's PodGroups.
    assert_eq!(count("DELETE", "/networkpolicies", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/podgroups", true), 2, "{requests:?}");
    // And first the supervisors' Jobs (`--detach`), one collection DELETE.
    assert_eq!(count("DELETE", "/jobs", true), 1, "{requests:?}");
    assert_eq!(requests.len(), 18, "{requests:?}");
    assert!(env.names("default").is_empty());
}

#[test]
fn delete_falls_back_when_services_refuse_collection_delete() {
    let env = Env::with(Options {
        collection_delete_services: false,
        single_delete_returns_status: true,
        ..Options::default()
    });
    seed_unrelated(&env);
    env.spawn(&["-t", "old", "-w", "3"]).success();
    env.run(&["-d", "-t", "old"])
        .success()
        .stdout_has("deleted service/old-worker-2");
    assert_eq!(
        env.names("default"),
        ["configmap/keep-script", "pod/keep-worker-0"]
    );
}

#[test]
fn delete_needs_no_template_or_script_and_nothing_to_delete_is_exit_1_unless_ignored() {
    let env = Env::new();
    // Nothing matched is exit 1 in one line, an empty namespace included (docs/reference.md,
    // "One rule for every verb"); --ignore-not-found makes it exit 0, as kubectl's.
    let out = env.run(&["-d", "-t", "ghost"]);
    out.failure(1).stderr_has(
        "error: no run tagged 'ghost' in namespace default; no run is there (tf-spawner list -n default; --ignore-not-found makes this exit 0)",
    );
    assert_eq!(
        (out.stdout.as_str(), out.stderr.lines().count()),
        ("", 1),
        "{out:#?}"
    );
    let out = env.run(&["-d", "-t", "ghost", "--ignore-not-found"]);
    out.success()
        .stdout_has("nothing labelled training_attempt=ghost in namespace default");
    // The default tag, -y accepted.
    env.spawn(&[]).success();
    env.run(&["-d", "-y"])
        .success()
        .stdout_has("deleted pod/tf-spawner-worker-0");
    assert!(env.names("default").is_empty());
}

#[test]
fn delete_in_another_namespace() {
    let env = Env::new();
    env.server.create_namespace("ns2");
    env.spawn(&["-t", "a", "-n", "ns2"]).success();
    env.spawn(&["-t", "a"]).success();
    env.run(&["-d", "-t", "a", "-n", "ns2"]).success();
    assert!(env.names("ns2").is_empty());
    assert_eq!(env.names("default").len(), 5);
}

#[test]
fn delete_refuses_random_tag() {
    let env = Env::new();
    env.run(&["-d", "-r"]).failure(2).stderr_has("-r");
}

/// The children of `pid`, from /proc.
fn children_of(pid: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// The confirmation prompt (stdin a terminal: util-linux `script` gives it one) waits
/// for an answer; Ctrl-C ends the wait with exit 130 and nothing deleted.
#[test]
fn ctrl_c_at_the_delete_prompt_deletes_nothing_and_exits_130() {
    use std::io::Read;
    use std::process::Stdio;
    let env = Env::new();
    env.spawn(&["-t", "asked"]).success();
    let bin = crate::support::BIN;
    let mut child = std::process::Command::new("script")
        .args(["-qec", &format!("exec {bin} -d -t asked"), "/dev/null"])
        .current_dir(env.dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("KUBECONFIG", &env.kubeconfig)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux script");
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
        }
    });
    let mut shown = String::new();
    while !shown.contains("[y/N]") {
        shown = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the prompt");
    }
    let pids = children_of(child.id());
    assert_eq!(pids.len(), 1, "{pids:?}");
    // SAFETY: signals the tf-spawner our child `script` runs.
    unsafe {
        libc::kill(pids[0], libc::SIGINT);
    }
    let status = child.wait().unwrap();
    while let Ok(more) = rx.recv_timeout(std::time::Duration::from_secs(5)) {
        shown = more;
    }
    assert_eq!(status.code(), Some(130), "{shown}");
    assert!(
        shown.contains("error: interrupted; nothing was deleted"),
        "{shown}"
    );
    assert_eq!(env.names("default").len(), 5, "{:?}", env.names("default"));
    drop(child.stdin.take());
}

/// `-d` of a tag while its spawn is creating the pods (the first pod's create held 2 s
/// by the server): no pod is left without its ConfigMap (on main the spawn left pods
/// `-d` never saw, stuck in ContainerCreating). The spawn sees its ConfigMap gone,
/// deletes what it made and says why (issue 49).
#[test]
fn delete_during_a_spawn_leaves_no_pod_without_its_config_map() {
    use std::time::{Duration, Instant};
    let env = Env::new();
    env.server
        .add_fault(kube_testserver::Fault::on("POST", "/pods").hang(Duration::from_secs(2)));
    let script = env.script();
    let spawn = crate::follow::start(&env, &["-t", "race", "-w", "2", script.to_str().unwrap()]);
    let start = Instant::now();
    while !env
        .server
        .requests()
        .iter()
        .any(|r| r.method == "POST" && r.path.ends_with("/pods"))
    {
        assert!(start.elapsed() < Duration::from_secs(30), "no pod create");
        std::thread::sleep(Duration::from_millis(10));
    }
    env.run(&["-d", "-y", "-t", "race"]).success();
    let out = crate::follow::finish(spawn);
    out.failure(1)
        .stderr_has("run 'race' was deleted while it was being spawned")
        .stderr_has("configmap/race-script is gone");
    assert!(
        env.names("default").is_empty(),
        "{:?}",
        env.names("default")
    );
}
