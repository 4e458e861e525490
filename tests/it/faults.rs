//! Faults at every step: a spawn ends complete or with nothing left; a delete ends with
//! nothing left or says what is; no call touches another run or unlabelled objects.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kube_testserver::{Fault, Options, VOLCANO_PODGROUPS};
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

/// The run a matrix spawns and deletes: 2 workers with an env file (so a Secret), and in
/// [`Shape::Gang`] also `--gang volcano`, so a PodGroup, on a server with that API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    Gang,
}

impl Shape {
    fn env(self, options: Options) -> Env {
        Env::with(Options {
            volcano_api: self == Shape::Gang,
            ..options
        })
    }

    fn extra_args(self) -> &'static [&'static str] {
        match self {
            Shape::Plain => &[],
            Shape::Gang => &["--gang", "volcano"],
        }
    }

    /// The requests of a spawn: the lists of ResourceQuotas and of nodes (docs/resources.md: none here, so no list of pods), 5 lists
    /// (is the tag free? the supervisors' Jobs too), then 1 + 1 + 2 + 2 creates
    /// (ConfigMap and Secret, services, pods), and the GET that sees the ConfigMap is
    /// still there; with the gang first one discovery GET of the PodGroup API, a fifth
    /// list, and the PodGroup's create after the config.
    fn spawn_requests(self) -> usize {
        match self {
            Shape::Plain => 14,
            Shape::Gang => 17,
        }
    }

    fn objects(self) -> usize {
        match self {
            Shape::Plain => 6,
            Shape::Gang => 7,
        }
    }

    /// The requests of a delete: the supervisors' Jobs' collection DELETE first, the
    /// ConfigMap's, the lists of pods and services; then 2 + 2 single DELETEs and the
    /// collection DELETEs of the Secret, the NetworkPolicies and both PodGroup kinds (by
    /// label, issue 49).
    fn delete_requests(self) -> usize {
        12
    }
}

/// Another run and unlabelled look-alikes that no call may touch.
fn seed_others(env: &Env, shape: Shape) -> Vec<Value> {
    env.spawn(&[&["-t", "other", "-w", "1"], shape.extra_args()].concat())
        .success();
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
    if shape == Shape::Gang {
        env.server.insert(
            VOLCANO_PODGROUPS,
            "default",
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                   "metadata": {"name": "bystander"}, "spec": {"minMember": 1}}),
        );
    }
    let before = others(env);
    let expected = 2 + 1 + 1 + if shape == Shape::Gang { 2 } else { 0 };
    assert!(before.len() >= expected, "{before:#?}");
    before
}

fn others(env: &Env) -> Vec<Value> {
    let mut all = vec![];
    for resource in [
        "pods",
        "services",
        "configmaps",
        "secrets",
        VOLCANO_PODGROUPS,
    ] {
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

fn spawn_with_env(env: &Env, tag: &str, shape: Shape) -> Output {
    let file = env.write("creds.env", "S3_SECRET_KEY=planted-fault-secret\n");
    let script = env.script();
    let args = [
        &[
            "--request-timeout",
            "1s",
            "-w",
            "2",
            "-t",
            tag,
            "-e",
            file.to_str().unwrap(),
        ],
        shape.extra_args(),
        &[script.to_str().unwrap()],
    ]
    .concat();
    run(env.cmd().args(args))
}

/// A 403 on the list of secrets means "this credential sees no secrets" (it may still
/// spawn without -e), on the list of PodGroups or Jobs "it cannot have made one", and on the list
/// of ResourceQuotas "the quota check is skipped" (docs/resources.md); the lists
/// run concurrently, so whether one of them gets the fault depends on arrival order.
fn a_harmless_list_was_forbidden(env: &Env) -> bool {
    env.server.requests().iter().any(|r| {
        r.method == "GET"
            && (r.path.ends_with("/secrets")
                || r.path.ends_with("/jobs")
                || r.path.ends_with("/podgroups")
                || r.path.ends_with("/resourcequotas"))
            && r.status == 403
    })
}

/// Whether the list of nodes failed: it only ever makes a warning, so the spawn goes on
/// whatever the answer.
fn the_nodes_list_failed(env: &Env) -> bool {
    (env.server.requests().iter())
        .any(|r| r.method == "GET" && r.path == "/api/v1/nodes" && r.status >= 400)
}

fn spawn_matrix(shape: Shape, kinds: &[Kind], expect_success: bool) {
    let env = shape.env(Options::default());
    let before = seed_others(&env, shape);
    for &kind in kinds {
        for k in 1..=shape.spawn_requests() {
            let tag = format!("f{}", k);
            env.server.clear_faults();
            env.server.clear_requests();
            env.server.add_fault(fault(kind, k));
            let out = spawn_with_env(&env, &tag, shape);
            let left = run_objects(&env, &tag);
            assert!(
                !out.stdout.contains("planted-fault-secret")
                    && !out.stderr.contains("planted-fault-secret")
            );
            let forbidden_list = (matches!(kind, Kind::Code(403))
                && a_harmless_list_was_forbidden(&env))
                || the_nodes_list_failed(&env);
            if expect_success || forbidden_list {
                out.success();
                assert_eq!(left.len(), shape.objects(), "{kind:?} at {k}: {left:?}");
                assert!(
                    env.server.requests().len() > shape.spawn_requests() || !expect_success,
                    "{kind:?} at {k}: the fault fell outside the spawn: {:#?}",
                    env.server.requests()
                );
            } else {
                out.failure(1);
                assert!(left.is_empty(), "{kind:?} at {k}: left {left:?}\n{out:#?}");
            }
            only_touched(&env, &tag);
            assert_eq!(others(&env), before, "{kind:?} at {k} touched another run");
            env.server.clear_faults();
            let cleanup = env.run(&["-d", "-t", &tag]);
            if left.is_empty() {
                // Nothing of the run, and the other run is there: a mistyped tag, says -d.
                cleanup.failure(1).stderr_has("the runs there: other");
            } else {
                cleanup.success();
            }
        }
    }
}

#[test]
fn spawn_survives_retryable_faults_at_every_step() {
    spawn_matrix(Shape::Plain, &RETRYABLE[..3], true);
}

#[test]
fn spawn_survives_lost_connections_at_every_step() {
    spawn_matrix(Shape::Plain, &RETRYABLE[3..], true);
}

#[test]
fn spawn_rolls_back_on_final_errors_at_every_step() {
    spawn_matrix(Shape::Plain, &FINAL, false);
}

#[test]
fn gang_spawn_survives_retryable_faults_at_every_step() {
    spawn_matrix(Shape::Gang, &RETRYABLE[..3], true);
}

#[test]
fn gang_spawn_survives_lost_connections_at_every_step() {
    spawn_matrix(Shape::Gang, &RETRYABLE[3..], true);
}

#[test]
fn gang_spawn_rolls_back_its_pod_group_on_final_errors_at_every_step() {
    spawn_matrix(Shape::Gang, &FINAL, false);
}

fn retries_run_out(shape: Shape) {
    let env = shape.env(Options::default());
    let before = seed_others(&env, shape);
    // From the k-th create on, every create answers 503: retries run out.
    let creates = shape.objects();
    for k in 1..=creates {
        let tag = format!("r{k}");
        env.server.clear_faults();
        env.server
            .add_fault(Fault::on("POST", "").nth(k).always().status(503));
        let out = spawn_with_env(&env, &tag, shape);
        out.failure(1).stderr_has("503");
        assert!(run_objects(&env, &tag).is_empty(), "at {k}");
        assert_eq!(others(&env), before);
    }
}

#[test]
fn spawn_rolls_back_when_retries_run_out() {
    retries_run_out(Shape::Plain);
}

#[test]
fn gang_spawn_rolls_back_when_retries_run_out() {
    retries_run_out(Shape::Gang);
}

fn delete_matrix(shape: Shape, options: Options, kinds: &[Kind]) {
    let env = shape.env(options);
    let before = seed_others(&env, shape);
    for kind in kinds {
        for k in 1..=shape.delete_requests() {
            let tag = format!("d{k}");
            env.server.clear_faults();
            spawn_with_env(&env, &tag, shape).success();
            env.server.clear_requests();
            env.server.add_fault(fault(*kind, k));
            let out = run(env
                .cmd()
                .args(["--request-timeout", "1s", "-d", "-t", &tag]));
            let left = run_objects(&env, &tag);
            let retryable = RETRYABLE
                .iter()
                .any(|r| format!("{r:?}") == format!("{kind:?}"));
            if out.code == 0 {
                assert!(left.is_empty(), "{kind:?} at {k}: {left:?}");
                assert!(
                    !retryable || env.server.requests().len() > shape.delete_requests(),
                    "{kind:?} at {k}: the fault fell outside the delete: {:#?}",
                    env.server.requests()
                );
            } else {
                out.failure(1)
                    .stderr_has("may be left in namespace 'default'");
                assert!(!retryable, "{kind:?} at {k} should be retried: {out:#?}");
                env.server.clear_faults();
                // A fault on a kind the run lacks (its PodGroups, deleted by label
                // whatever the record says) may have left nothing to delete again.
                let again = env.run(&["-d", "-t", &tag, "--ignore-not-found"]);
                assert!(
                    again.code == 0 || again.stdout.contains("nothing labelled"),
                    "{again:#?}"
                );
            }
            only_touched(&env, &tag);
            assert_eq!(others(&env), before, "{kind:?} at {k}");
            assert!(run_objects(&env, &tag).is_empty());
        }
    }
}

#[test]
fn delete_survives_faults_or_says_what_is_left() {
    let all: Vec<Kind> = RETRYABLE.iter().chain(FINAL.iter()).copied().collect();
    delete_matrix(Shape::Plain, Options::default(), &all);
}

#[test]
fn delete_on_a_1_20_server_survives_faults_or_says_what_is_left() {
    let all: Vec<Kind> = RETRYABLE.iter().chain(FINAL.iter()).copied().collect();
    delete_matrix(Shape::Plain, Options::v1_20(), &all);
}

#[test]
fn gang_delete_survives_faults_or_says_what_is_left() {
    let all: Vec<Kind> = RETRYABLE.iter().chain(FINAL.iter()).copied().collect();
    delete_matrix(Shape::Gang, Options::default(), &all);
}

fn interrupt_spawn(signal: &str, code: i32) {
    let env = Env::new();
    let before = seed_others(&env, Shape::Plain);
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
    crate::follow::send(&child, signal);
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
