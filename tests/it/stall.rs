//! Stalls named without a guessed bound, and restarted (docs/progress.md, "Stalls"): the
//! bound derived from the gaps between the progress lines the run printed, and
//! `--on-stall restart` / `--restart-on stall`, counted against `--restarts`.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::follow::{exited, failed_with_logs, finish, running, start};
use crate::progress::{keras_epochs, stuck_run};
use crate::support::await_attempt;
use crate::support::{Env, Output};

const NS: &str = "default";

/// `wait ARGS` with a defaults file holding `settings`.
fn wait_with(env: &Env, settings: &str, args: &[&str]) -> Output {
    let config = env.write("config.yaml", settings);
    crate::support::run(
        env.cmd()
            .env("TF_SPAWNER_CONFIG", &config)
            .arg("wait")
            .args(args),
    )
}

/// Lines printed at once (no gap): the floor is the bound, and it says so.
#[test]
fn the_derived_bound_is_never_under_its_floor() {
    let env = Env::new();
    stuck_run(&env, "fl");
    let out = wait_with(
        &env,
        "stall_floor: 1s\n",
        &["-t", "fl", "--on-stall", "fail"],
    );
    failed_with_logs(&out, 3);
    out.stderr_has("error: run 'fl' made no progress: no progress from worker-0 since ")
        .stderr_has(
            " (1s: 10 × its longest gap between progress lines, 0s, at least 1s) (--on-stall fail); the last: epoch 2/3",
        );
}

/// A gap of 1.2 s or more between two lines, times 3: the stall is named no sooner
/// than 3.6 s after the last line.
#[test]
fn the_derived_bound_is_a_multiple_of_the_longest_gap_seen() {
    let env = Env::new();
    crate::follow::spawn_run(&env, "gap", &["-w", "1"]);
    running(&env, "gap-worker-0");
    env.server.append_log(NS, "gap-worker-0", "Epoch 1/3\n");
    std::thread::sleep(Duration::from_millis(1200));
    let last = Instant::now();
    env.server.append_log(NS, "gap-worker-0", "Epoch 2/3\n");
    let out = env.run(&[
        "wait",
        "-t",
        "gap",
        "--stall-factor",
        "3",
        "--stall-floor",
        "1s",
        "--on-stall",
        "fail",
    ]);
    let quiet = last.elapsed();
    failed_with_logs(&out, 3);
    out.stderr_has(": 3 × its longest gap between progress lines, ")
        .stderr_has(", at least 1s) (--on-stall fail)");
    assert!(quiet >= Duration::from_millis(3600), "{quiet:?} {out:#?}");
}

/// `status` names a stall by the derived bound, from the defaults file's settings.
#[test]
fn status_names_a_stall_by_the_derived_bound() {
    let env = Env::new();
    stuck_run(&env, "sd");
    let config = env.write("config.yaml", "stall_floor: 1s\nstall_factor: 5\n");
    // Stalled once the floor (1 s) has passed since the last line.
    crate::support::eventually("status to name the stall", || {
        let out = crate::support::run(
            env.cmd()
                .env("TF_SPAWNER_CONFIG", &config)
                .args(["status", "-t", "sd", "-o", "json"]),
        );
        let json: Value = serde_json::from_str(&out.stdout).unwrap();
        (json["progress"]["stalled"] == true)
            .then_some(())
            .ok_or(json)
    });
    // The built-in floor (30m): no stall yet.
    let out = env.run(&["status", "-t", "sd", "-o", "json"]);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["progress"]["stalled"], false, "{json:#}");
}

/// `--on-stall restart`: the stalled run is restarted as for a preemption, its reason
/// recorded, the stalled attempt's log kept; the next attempt succeeds.
#[test]
fn a_stall_restarts_the_run_which_then_succeeds() {
    let env = Env::new();
    stuck_run(&env, "sr");
    let names = ["sr-worker-0", "sr-worker-1"];
    let mut child = start(
        &env,
        &[
            "wait",
            "sr",
            "--stall-after",
            "1s",
            "--on-stall",
            "restart",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_attempt(&env, "sr", &names, "1", &mut child);
    for n in names {
        running(&env, n);
    }
    env.server
        .append_log(NS, "sr-worker-0", &keras_epochs(1, 3, 3));
    exited(&env, "sr-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("run sr: restart 1/1 in 0s: stalled at epoch 2, for ")
        .stdout_has("; re-creating its 2 pods (attempt 1)\n")
        .stdout_has("run sr: Succeeded");
    let status = env.run(&["status", "sr", "-o", "json"]);
    let json: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(json["attempt"], 1, "{json:#}");
    let why = json["restarted_for"].as_str().unwrap_or_default();
    assert!(why.starts_with("stalled at epoch 2, for "), "{json:#}");
    env.run(&["logs", "sr", "--attempt", "0"])
        .success()
        .stdout_has("worker-0 | Epoch 2/3");
}

/// `stall` in `--restart-on` restarts too, counted against `--restarts`: stalled again
/// with none left, the run fails saying so.
#[test]
fn a_stall_with_no_restart_left_fails_the_run() {
    let env = Env::new();
    stuck_run(&env, "sx");
    let names = ["sx-worker-0", "sx-worker-1"];
    let mut child = start(
        &env,
        &[
            "wait",
            "sx",
            "--stall-after",
            "1s",
            "--restart-on",
            "stall",
            "--restarts",
            "1",
            "--restart-backoff",
            "0s",
        ],
    );
    await_attempt(&env, "sx", &names, "1", &mut child);
    for n in names {
        running(&env, n);
    }
    env.server.append_log(NS, "sx-worker-0", "Epoch 1/3\n");
    let out = finish(child);
    failed_with_logs(&out, 3);
    out.stdout_has("run sx: restart 1/1 in 0s: stalled at epoch 2, for ")
        .stderr_has("run sx: not restarted: its 1 restart (--restarts) is used")
        .stderr_has("error: run 'sx' made no progress: no progress from worker-0 since ")
        .stderr_has("(--on-stall restart, no restart made); the last: epoch 1/3");
}

#[test]
fn a_stall_restart_needs_restarts() {
    let env = Env::new();
    let out = env.run(&["wait", "-t", "x", "--on-stall", "restart"]);
    out.failure(2)
        .stderr_has("--on-stall restart needs --restarts N");
    let out = wait_with(&env, "stall_factor: lots\n", &["-t", "x"]);
    out.failure(2)
        .stderr_has("key 'stall_factor': ")
        .stderr_has("is not a whole number");
    let out = env.run(&["wait", "-t", "x", "--stall-floor", "0s"]);
    out.failure(2)
        .stderr_has("--stall-floor \"0s\": must be at least 1s");
}
