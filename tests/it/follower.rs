//! One follower at a time (docs/reference.md, "One follower at a time"): the run's
//! ConfigMap names the `wait` that acts for the run; a second `wait` shows the run and
//! acts on nothing, ending with the first one's verdict and exit code, or takes the run
//! over when the first lets go of it. The tests check what the server stores (the
//! record's annotations, the pods' attempts) and what each wait printed.

use serde_json::Value;

use crate::follow::{await_watches, exited, finish, running, start};
use crate::support::{Env, Output, await_attempt, eventually, run_pods};

const NS: &str = "default";

fn record(env: &Env, tag: &str) -> Value {
    env.server
        .get("configmaps", NS, &format!("{tag}-script"))
        .expect("the run's record")
}

fn annotation(env: &Env, tag: &str, key: &str) -> Option<String> {
    record(env, tag)["metadata"]["annotations"][key]
        .as_str()
        .map(String::from)
}

/// Writes the record's follower as another process would.
fn forge_follower(env: &Env, tag: &str, who: &str, checked_in: i64) {
    let mut cm = record(env, tag);
    let annotations = &mut cm["metadata"]["annotations"];
    annotations["tf-spawner/follower"] = who.into();
    annotations["tf-spawner/follower-checked-in"] = checked_in.to_string().into();
    env.server.insert("configmaps", NS, cm);
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn restart_lines(out: &Output) -> usize {
    out.stdout
        .lines()
        .filter(|l| l.contains(": restart "))
        .count()
}

#[test]
fn a_second_wait_shows_the_run_acts_on_nothing_and_ends_as_the_first() {
    let env = Env::new();
    env.spawn(&["-t", "fw", "-w", "2"]).success();
    let names = ["fw-worker-0", "fw-worker-1"];
    for n in names {
        running(&env, n);
    }
    let args = ["wait", "fw", "--restarts", "2", "--restart-backoff", "0s"];
    let mut first = start(&env, &args);
    eventually("the first wait named as the run's follower", || {
        annotation(&env, "fw", "tf-spawner/follower")
            .map(drop)
            .ok_or(record(&env, "fw"))
    });
    let holder = annotation(&env, "fw", "tf-spawner/follower").unwrap();
    assert!(
        holder.starts_with("tf-spawner on ") && holder.contains(", pid "),
        "{holder}"
    );
    let second = start(&env, &args);
    // Both follow the run's pods: the second has found the first holding it.
    await_watches(&env, 2);

    env.server.delete_pod(NS, "fw-worker-1");
    await_attempt(&env, "fw", &names, "1", &mut first);
    for n in names {
        running(&env, n);
    }
    exited(&env, "fw-worker-0", 0);
    let first = finish(first);
    let second = finish(second);
    first.success().stdout_has("run fw: Succeeded");
    assert_eq!(restart_lines(&first), 1, "{first:#?}");
    // The second restarted nothing: one restart in all, the run at attempt 1.
    assert_eq!(restart_lines(&second), 0, "{second:#?}");
    assert!(run_pods(&env, "fw").values().all(|p| p.1 == "1"));
    second
        .success()
        .stdout_has(&format!("run fw is followed by {holder} (checked in "))
        .stdout_has("this wait shows the run and acts on nothing")
        .stdout_has(&format!("run fw: Succeeded (recorded by {holder})"));
    // The first let go, leaving its exit code beside the verdict.
    assert_eq!(annotation(&env, "fw", "tf-spawner/follower"), None);
    assert_eq!(
        annotation(&env, "fw", "tf-spawner/follower-exit").as_deref(),
        Some("0")
    );
}

#[test]
fn the_second_wait_exits_with_the_first_ones_failure() {
    let env = Env::new();
    env.spawn(&["-t", "ff", "-w", "1"]).success();
    running(&env, "ff-worker-0");
    let first = start(&env, &["wait", "ff"]);
    eventually("the first wait named as the run's follower", || {
        annotation(&env, "ff", "tf-spawner/follower")
            .map(drop)
            .ok_or(())
    });
    let second = start(&env, &["wait", "ff"]);
    await_watches(&env, 2);
    exited(&env, "ff-worker-0", 1);
    let first = finish(first);
    let second = finish(second);
    assert_eq!(first.code, 3, "{first:#?}");
    assert_eq!(second.code, 3, "{second:#?}");
    second.stdout_has("run ff: Failed: ");
}

#[test]
fn a_follower_that_lets_go_without_a_verdict_is_taken_over() {
    let env = Env::new();
    env.spawn(&["-t", "fl", "-w", "1"]).success();
    running(&env, "fl-worker-0");
    let gone = "tf-spawner on laptop, pid 4242";
    forge_follower(&env, "fl", gone, now());
    let waiting = start(&env, &["wait", "fl"]);
    await_watches(&env, 1);
    // The other follower ends without a verdict (its --timeout, a Ctrl-C): it lets go.
    let mut cm = record(&env, "fl");
    let annotations = cm["metadata"]["annotations"].as_object_mut().unwrap();
    annotations.remove("tf-spawner/follower");
    annotations.remove("tf-spawner/follower-checked-in");
    env.server.insert("configmaps", NS, cm);
    eventually("the wait taking the run over", || {
        let who = annotation(&env, "fl", "tf-spawner/follower");
        match who {
            Some(w) if w != gone => Ok(()),
            other => Err(other),
        }
    });
    exited(&env, "fl-worker-0", 0);
    let out = finish(waiting);
    out.success()
        .stdout_has(&format!("run fl is followed by {gone}"))
        .stdout_has(&format!(
            "run fl: {gone} let go of it without a verdict; this wait takes the run over"
        ))
        .stdout_has("run fl: Succeeded");
    // It acted as the follower: the verdict is its record.
    assert_eq!(
        annotation(&env, "fl", "tf-spawner/verdict").as_deref(),
        Some("Succeeded")
    );
}

#[test]
fn a_follower_silent_past_the_hold_or_forged_holds_nothing() {
    let env = Env::new();
    env.spawn(&["-t", "fs", "-w", "1"]).success();
    running(&env, "fs-worker-0");
    // Checked in two minutes ago; and one on two lines (forged).
    for who in ["tf-spawner on laptop, pid 7", "wait\n\x1b[31mforged"] {
        forge_follower(&env, "fs", who, now() - 120);
        let waiting = start(&env, &["wait", "fs", "--timeout", "1s"]);
        let out = finish(waiting);
        assert_eq!(out.code, 4, "{out:#?}");
        assert!(!out.stdout.contains("is followed by"), "{out:#?}");
    }
    // status names a follower that stopped checking in.
    forge_follower(&env, "fs", "tf-spawner on laptop, pid 7", now() - 300);
    env.run(&["status", "fs"])
        .success()
        .stdout_has("followed by: tf-spawner on laptop, pid 7, which stopped checking in 5m");
    let json: Value =
        serde_json::from_str(&env.run(&["status", "fs", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["follower"]["who"], "tf-spawner on laptop, pid 7");
    assert_eq!(json["follower"]["checking_in"], false);
    // So does list: a FOLLOWED BY column, and the same follower in its JSON.
    env.run(&["list"])
        .success()
        .stdout_has("FOLLOWED BY")
        .stdout_has("laptop, pid 7 (silent for 5m");
    let json: Value = serde_json::from_str(&env.run(&["list", "-o", "json"]).stdout).unwrap();
    assert_eq!(
        json["runs"][0]["follower"]["who"],
        "tf-spawner on laptop, pid 7"
    );
    assert_eq!(json["runs"][0]["follower"]["checking_in"], false);
}

#[test]
fn status_names_the_live_follower() {
    let env = Env::new();
    env.spawn(&["-t", "fn", "-w", "1"]).success();
    running(&env, "fn-worker-0");
    let waiting = start(&env, &["wait", "fn"]);
    eventually("the wait named as the run's follower", || {
        annotation(&env, "fn", "tf-spawner/follower")
            .map(drop)
            .ok_or(())
    });
    let who = annotation(&env, "fn", "tf-spawner/follower").unwrap();
    env.run(&["status", "fn"])
        .success()
        .stdout_has(&format!("followed by: {who} (checked in "));
    let at = who.split_once(" on ").unwrap().1;
    env.run(&["list"])
        .success()
        .stdout_has(&format!("{at} (checked in "));
    env.run(&["compare", "fn"])
        .success()
        .stdout_has(&format!("followed now: fn by {at} (checked in "));
    exited(&env, "fn-worker-0", 0);
    finish(waiting).success();
    // Let go at its end: status and list name nobody.
    let out = env.run(&["status", "fn"]);
    assert!(!out.stdout.contains("followed by"), "{out:#?}");
    let out = env.run(&["list"]);
    assert!(!out.stdout.contains("FOLLOWED BY"), "{out:#?}");
    let out = env.run(&["compare", "fn"]);
    assert!(!out.stdout.contains("followed now"), "{out:#?}");
    let json: Value = serde_json::from_str(&env.run(&["list", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["runs"][0]["follower"], Value::Null);
}
