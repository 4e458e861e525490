//! A frozen watch as `wait` tells it (issue 64, item 5): `wait --idle-timeout` bounds
//! it from the command line, the heartbeat says how long ago the API server last
//! answered (a frozen watch's "still Running" is old news), and a wait that ends
//! without the cleanup `--cleanup` asked for says the run is left running.

use std::time::Duration;

use kube_testserver::Fault;

use crate::follow::{exited, finish, running, spawn_run, start};
use crate::support::Env;

/// A run `tag` of one worker, running, with no defaults file (so the built-in 5 min
/// idle bound unless a flag says otherwise).
fn running_run(tag: &str) -> Env {
    let env = Env::new();
    spawn_run(&env, tag, &["-w", "1"]);
    running(&env, &format!("{tag}-worker-0"));
    env
}

#[test]
fn wait_idle_timeout_drops_a_frozen_watch_and_the_verdict_comes() {
    let env = running_run("it");
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    env.server.clear_requests();
    let child = start(
        &env,
        &[
            "wait",
            "-t",
            "it",
            "--idle-timeout",
            "2s",
            "--timeout",
            "60s",
        ],
    );
    env.await_requests(1, "pod watch", |r| {
        r.param("watch").as_deref() == Some("true")
    });
    exited(&env, "it-worker-0", 0);
    let out = finish(child);
    out.success().stdout_has("run it: Succeeded");
    // The watch asked the server to end it before the flag's bound.
    let watch = env.first_watch();
    assert_eq!(watch.param("timeoutSeconds").as_deref(), Some("1"));
}

/// The watch froze (the idle bound 60 s, not passed) until `--timeout` ends the wait:
/// the heartbeat goes on saying `Running`, and how long ago the API server last said
/// anything, which grows with each line.
#[test]
fn the_heartbeat_says_how_long_ago_the_api_server_last_answered() {
    let env = running_run("hb");
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    let args = [
        "wait",
        "-t",
        "hb",
        "--idle-timeout",
        "60s",
        "--heartbeat",
        "1s",
        "--timeout",
        "5s",
    ];
    let out = finish(start(&env, &args));
    assert_eq!(out.code, 4, "{out:#?}");
    let ages: Vec<u64> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("still     Running; nothing new for "))
        .map(|l| {
            let (_, age) = l.split_once("; the API server last answered ").expect(l);
            age.strip_suffix("s ago").expect(l).parse().expect(l)
        })
        .collect();
    assert!(ages.len() >= 2, "{out:#?}");
    assert!(ages.windows(2).all(|w| w[0] < w[1]), "{ages:?}");
    assert!(ages[ages.len() - 1] >= 2, "{ages:?}");
}

/// A frozen watch, then a server that answers nothing: the wait gives up (exit 1)
/// before it could delete the run, and its one line says the run is left running.
#[test]
fn a_wait_that_gives_up_says_the_run_is_left_running_despite_cleanup() {
    let env = running_run("gz");
    env.server
        .add_fault(Fault::on("GET", "watch=true").silent().always());
    env.server.add_fault(
        Fault::on("GET", "/pods?")
            .nth(2)
            .hang(Duration::from_secs(120))
            .always(),
    );
    let child = start(
        &env,
        &[
            "wait",
            "-t",
            "gz",
            "--cleanup",
            "--idle-timeout",
            "2s",
            "--request-timeout",
            "1s",
            "--retries",
            "0",
            "--give-up-after",
            "3s",
        ],
    );
    let out = finish(child);
    // The outage's note, then the one error line, which says both.
    assert_eq!(out.code, 1, "{out:#?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: run 'gz' is left running despite --cleanup (delete it once the API server answers: tf-spawner -d --wait -t gz -n default): ")
            && last.contains("gave up after 3s, see --give-up-after"),
        "{out:#?}"
    );
    assert!(env.server.get("pods", "default", "gz-worker-0").is_some());
}
