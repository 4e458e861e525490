//! Faults at every step: a spawn ends complete or with nothing left; a delete ends with
//! nothing left or says what is; no call touches another run or unlabelled objects.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kube_testserver::{Fault, Options};
use serde_json::{Value, json};

use crate::support::{Env, Output, run};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Code(u16),
    /// 429 with Retry-After: 1.
    Throttle,
    /// Connection closed, request not carried out.
    Drop,
    /// Request carried out, answer lost.
    LostAnswer,
    /// No answer within the client's --request-timeout (the server carries it out later).
    Hang,
}

const RETRYABLE: [Kind; 6] = [
    Kind::Code(500),
    Kind::Code(503),
    Kind::Throttle,
    Kind::Drop,
    Kind::LostAnswer,
    Kind::Hang,
];
const FINAL: [Kind; 3] = [Kind::Code(403), Kind::Code(409), Kind::Code(422)];

fn fault(kind: Kind, nth: usize) -> Fault {
    let f = Fault::any().nth(nth);
    match kind {
        Kind::Code(code) => f.status(code),
        Kind::Throttle => f.too_many_requests(1),
        Kind::Drop => f.drop_connection(),
        Kind::LostAnswer => f.drop_response(),
        Kind::Hang => f.hang(Duration::from_millis(1500)),
    }
}

/// Another run and unlabelled look-alikes that no call may touch.
fn seed_others(env: &Env) -> Vec<Value> {
    env.spawn(&["-t", "other", "-w", "1"]).success();
    env.server.insert(
        "pods",
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bystander"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    env.server.insert(
        "configmaps",
        "default",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bystander"}, "data": {"a": "b"}}),
    );
    others(env)
}

fn others(env: &Env) -> Vec<Value> {
    let mut all = vec![];
    for resource in ["pods", "services", "configmaps", "secrets"] {
        for obj in env.list(resource, "default") {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            if name.starts_with("other-") || name == "bystander" {
                all.push(obj);
            }
        }
    }
    all
}

fn run_objects(env: &Env, tag: &str) -> Vec<String> {
    env.names("default")
        .into_iter()
        .filter(|n| {
            n.split('/')
                .nth(1)
                .is_some_and(|name| name.starts_with(&format!("{tag}-")))
        })
        .collect()
}

/// Every write the binary sent concerned the run `tag` only.
#[track_caller]
fn only_touched(env: &Env, tag: &str) {
    for r in env.server.requests() {
        if r.method == "GET" {
            continue;
        }
        let by_name = r
            .path
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(&format!("{tag}-")));
        let by_label =
            r.param("labelSelector").as_deref() == Some(&format!("training_attempt={tag}"));
        let create = r.method == "POST";
        assert!(
            by_name || by_label || create,
            "{} {}?{} touches more than run {tag}",
            r.method,
            r.path,
            r.query
        );
    }
}

fn spawn_with_env(env: &Env, tag: &str) -> Output {
    let file = env.write("creds.env", "S3_SECRET_KEY=planted-fault-secret\n");
    let script = env.script();
    run(env.cmd().args([
        "--request-timeout",
        "1s",
        "-w",
        "2",
        "-t",
        tag,
        "-e",
        file.to_str().unwrap(),
        script.to_str().unwrap(),
    ]))
}

/// A spawn of 2 workers with an env file sends 4 lists, then 1 + 1 + 2 + 2 creates.
const SPAWN_REQUESTS: usize = 10;

fn spawn_matrix(kinds: &[Kind], expect_success: bool) {
    let env = Env::new();
    let before = seed_others(&env);
    let expected_objects = 1 + 1 + 2 + 2;
    for &kind in kinds {
        for k in 1..=SPAWN_REQUESTS {
            let tag = format!("f{}", k);
            env.server.clear_faults();
            env.server.clear_requests();
            env.server.add_fault(fault(kind, k));
            let out = spawn_with_env(&env, &tag);
            let left = run_objects(&env, &tag);
            assert!(
                !out.stdout.contains("planted-fault-secret")
                    && !out.stderr.contains("planted-fault-secret")
            );
            // A 403 on the list of secrets means "this credential sees no secrets" (it may
            // still spawn without -e); the four lists run concurrently, so that one of them
            // gets the fault depends on arrival order.
            let secrets_list_forbidden =
                matches!(kind, Kind::Code(403))
                    && env.server.requests().iter().any(|r| {
                        r.method == "GET" && r.path.ends_with("/secrets") && r.status == 403
                    });
            if expect_success || secrets_list_forbidden {
                out.success();
                assert_eq!(left.len(), expected_objects, "{kind:?} at {k}: {left:?}");
            } else {
                out.failure(1);
                assert!(left.is_empty(), "{kind:?} at {k}: left {left:?}\n{out:#?}");
            }
            only_touched(&env, &tag);
            assert_eq!(others(&env), before, "{kind:?} at {k} touched another run");
            env.server.clear_faults();
            env.run(&["-d", "-t", &tag]).success();
        }
    }
}

#[test]
fn spawn_survives_retryable_faults_at_every_step() {
    spawn_matrix(&RETRYABLE[..3], true);
}

#[test]
fn spawn_survives_lost_connections_at_every_step() {
    spawn_matrix(&RETRYABLE[3..], true);
}

#[test]
fn spawn_rolls_back_on_final_errors_at_every_step() {
    spawn_matrix(&FINAL, false);
}

#[test]
fn spawn_rolls_back_when_retries_run_out() {
    let env = Env::new();
    let before = seed_others(&env);
    // From the k-th create on, every create answers 503: retries run out.
    for k in 1..=SPAWN_REQUESTS - 4 {
        let tag = format!("r{k}");
        env.server.clear_faults();
        env.server
            .add_fault(Fault::on("POST", "").nth(k).always().status(503));
        let out = spawn_with_env(&env, &tag);
        out.failure(1).stderr_has("503");
        assert!(run_objects(&env, &tag).is_empty(), "at {k}");
        assert_eq!(others(&env), before);
    }
}

#[test]
fn delete_survives_faults_or_says_what_is_left() {
    for options in [Options::default(), Options::v1_20()] {
        let env = Env::with(options);
        let before = seed_others(&env);
        for kind in RETRYABLE.iter().chain(FINAL.iter()) {
            for k in 1..=6 {
                let tag = format!("d{k}");
                env.server.clear_faults();
                spawn_with_env(&env, &tag).success();
                env.server.clear_requests();
                env.server.add_fault(fault(*kind, k));
                let out = run(env
                    .cmd()
                    .args(["--request-timeout", "1s", "-d", "-t", &tag]));
                let left = run_objects(&env, &tag);
                if out.code == 0 {
                    assert!(left.is_empty(), "{kind:?} at {k}: {left:?}");
                } else {
                    out.failure(1)
                        .stderr_has("may be left in namespace 'default'");
                    assert!(
                        !RETRYABLE
                            .iter()
                            .any(|r| format!("{r:?}") == format!("{kind:?}")),
                        "{kind:?} at {k} should be retried: {out:#?}"
                    );
                    env.server.clear_faults();
                    env.run(&["-d", "-t", &tag]).success();
                }
                only_touched(&env, &tag);
                assert_eq!(others(&env), before, "{kind:?} at {k}");
                assert!(run_objects(&env, &tag).is_empty());
            }
        }
    }
}

fn interrupt_spawn(signal: &str, code: i32) {
    let env = Env::new();
    let before = seed_others(&env);
    env.server.set_latency(Duration::from_millis(40));
    let script = env.script();
    let child = env
        .cmd()
        .args([
            "-w",
            "30",
            "--max-in-flight",
            "2",
            "-t",
            "sig",
            script.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while env
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
        < 8
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "spawn never got going"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        run_objects(&env, "sig").is_empty(),
        "{:?}",
        run_objects(&env, "sig")
    );
    assert_eq!(others(&env), before);
}

#[test]
fn ctrl_c_during_spawn_rolls_back() {
    interrupt_spawn("-INT", 130);
}

#[test]
fn sigterm_during_spawn_rolls_back() {
    interrupt_spawn("-TERM", 143);
}
