//! `sweep --resume NAME` (issues 57 item 1, 58 items 2, 3 and 12): the user runs the
//! sweep's own command again with `--resume NAME`; the experiment's record (a ConfigMap
//! anyone who may edit the namespace can write) gives only data — the runs' tags and
//! points, the seed, the verdicts of runs that ended, the digests — vetted, never a
//! command line or a directory. Runs that ended are never started again, even once
//! deleted; an edited script is refused unless `--allow-changed`; a cleanup by age
//! takes an experiment whole or not at all; `--local` sweeps resume too.

use serde_json::{Value, json};

use crate::follow::{await_run_watches, await_watches, exited, finish, send, start};
use crate::support::{Env, Output};
use crate::sweep::{await_pod, pods_of, posts_of};

const NS: &str = "default";

/// The sweep's command: 3 runs of `script`, one at a time, a placeholder in its
/// arguments.
fn command(name: &str, script: &str) -> Vec<String> {
    [
        "sweep",
        "-t",
        name,
        "-w",
        "1",
        "--param",
        "lr=0.1,0.2,0.3",
        "--parallel",
        "1",
        script,
        "--",
        "--lr={lr}",
    ]
    .map(String::from)
    .to_vec()
}

/// The same command with `--resume NAME` (and `more`) after `sweep`.
fn resumed(name: &str, script: &str, more: &[&str]) -> Vec<String> {
    let mut words = command(name, script);
    let extra = ["--resume", name]
        .into_iter()
        .chain(more.iter().copied())
        .map(String::from);
    words.splice(1..1, extra);
    words
}

fn start_words(env: &Env, words: &[String]) -> std::process::Child {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    start(env, &words)
}

fn run_words(env: &Env, words: &[String]) -> Output {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    env.run(&words)
}

/// Starts the sweep and interrupts it once its first run is followed (that run left
/// running); its last line names the command that takes it up.
fn interrupted_at_its_first_run(env: &Env, name: &str, script: &str) {
    let mut child = start_words(env, &command(name, script));
    await_pod(env, &format!("{name}-1-worker-0"), &mut child);
    await_watches(env, 1);
    send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has(&format!(
        "take it up with: tf-spawner sweep --resume {name} -t {name} -w 1 --param lr=0.1,0.2,0.3 --parallel 1 {script} -- '--lr={{lr}}'\n"
    ));
}

/// The experiment's record as stored, to be edited as an editor's `kubectl edit` would.
fn record(env: &Env, name: &str) -> (Value, Value) {
    let cm = env
        .server
        .get("configmaps", NS, &format!("{name}-experiment"))
        .unwrap();
    let plan = serde_json::from_str(cm["data"]["experiment.json"].as_str().unwrap()).unwrap();
    (cm, plan)
}

fn put_record(env: &Env, mut cm: Value, plan: &Value) {
    cm["data"]["experiment.json"] = json!(plan.to_string());
    env.server.insert("configmaps", NS, cm);
}

/// An editor rewrites the record with a command line and a directory of their own
/// (`--notify` a command, `--local --python` a program, `-e` the victim's kubeconfig,
/// the working directory `/`): what `--resume` replayed on main. The victim's
/// `--resume` runs the victim's own command: the runs are created and the sweep ends
/// (where the notice would run), and no marker file, no Secret, no change of
/// directory.
#[test]
fn a_forged_command_line_in_the_record_runs_nothing_here() {
    let env = Env::new();
    let s = env.script();
    let script = s.to_str().unwrap();
    let marker = env.path("pwned");
    let kubeconfig = env.write("admin.kubeconfig", "TOKEN=admin\n");
    interrupted_at_its_first_run(&env, "fx", script);
    let (cm, mut plan) = record(&env, "fx");
    let touch = format!("touch {}", marker.display());
    plan["argv"] = json!([
        "--notify",
        touch,
        "--local",
        "--python",
        "/bin/sh",
        "-e",
        kubeconfig.to_str().unwrap(),
        "-w",
        "1",
        "--param",
        "lr=0.1,0.2,0.3",
        "--parallel",
        "1",
        script,
        "--",
        "--lr={lr}"
    ]);
    plan["cwd"] = json!("/");
    put_record(&env, cm, &plan);

    let mut child = start_words(&env, &resumed("fx", script, &[]));
    await_watches(&env, 2);
    exited(&env, "fx-1-worker-0", 0);
    await_pod(&env, "fx-2-worker-0", &mut child);
    exited(&env, "fx-2-worker-0", 0);
    await_pod(&env, "fx-3-worker-0", &mut child);
    exited(&env, "fx-3-worker-0", 0);
    let out = finish(child);
    out.success()
        .stdout_has("experiment fx: taking it up (3 runs planned)")
        .stdout_has("experiment fx: all 3 runs succeeded");
    assert!(
        !out.stderr.contains("reading the experiment's files"),
        "{out:#?}"
    );
    // The sweep ended (where --notify would have run) and ran on the cluster.
    assert!(!marker.exists(), "the editor's command ran on this machine");
    assert!(env.list("secrets", NS).is_empty(), "no -e file was shipped");
    assert!(
        !env.path("tf-spawner-output").exists(),
        "nothing ran locally"
    );
    let pod = env.server.get("pods", NS, "fx-3-worker-0").unwrap();
    assert_eq!(
        crate::sweep::script_args(&pod),
        ["--lr=0.3"],
        "the victim's arguments"
    );
}

/// What the record may hold is vetted against the victim's command: a point that is
/// not one of the parameters' (a value an editor chose), a run named outside the
/// experiment, parameters the command does not give: each one line, exit 2, nothing
/// created.
#[test]
fn a_record_whose_runs_are_not_the_sweeps_is_refused_and_nothing_starts() {
    let env = Env::new();
    let s = env.script();
    let script = s.to_str().unwrap();
    interrupted_at_its_first_run(&env, "vx", script);
    let (cm, original) = record(&env, "vx");
    type Forge<'a> = &'a dyn Fn(&mut Value);
    let cases: [(Forge, &str); 3] = [
        (
            &|p| p["runs"][2]["params"]["lr"] = json!("$(cat /etc/passwd)"),
            "error: experiment 'vx''s record (configmap vx-experiment) is not one this sweep makes: run vx-3's parameters (lr=$(cat /etc/passwd)) are not a point of the sweep's; nothing was started (remove it with tf-spawner -d --experiment vx, or pick another name with -t)\n",
        ),
        (
            &|p| p["runs"][1]["tag"] = json!("victim"),
            "error: experiment 'vx''s record (configmap vx-experiment) is not one this sweep makes: its run 2 is named 'victim'; nothing was started (remove it with tf-spawner -d --experiment vx, or pick another name with -t)\n",
        ),
        (
            &|p| p["params"][0]["values"]["list"] = json!(["0.1", "0.2", "0.3", "9"]),
            "error: experiment 'vx' was started with --param lr=0.1,0.2,0.3,9, not --param lr=0.1,0.2,0.3: run the command it was started with, adding --resume vx (or pick another name with -t for a new experiment); nothing was started\n",
        ),
    ];
    for (forge, line) in cases {
        let mut plan = original.clone();
        forge(&mut plan);
        put_record(&env, cm.clone(), &plan);
        let posts = env.count_requests(|r| r.method == "POST");
        let out = run_words(&env, &resumed("vx", script, &[]));
        assert_eq!(out.code, 2, "{out:#?}");
        assert_eq!(out.stderr, line);
        assert_eq!(env.count_requests(|r| r.method == "POST"), posts);
    }
    assert!(pods_of(&env, "vx-2").is_empty());
}

/// Ctrl-C, the script edited, `--resume`: refused in one line naming `--allow-changed`
/// (on main the rest of the runs ran the new code); with it, taken up.
#[test]
fn resume_refuses_an_edited_script_unless_allowed() {
    let env = Env::new();
    let s = env.script();
    let script = s.to_str().unwrap();
    interrupted_at_its_first_run(&env, "ex", script);
    env.write("train.py", "print('changed')\n");
    let out = run_words(&env, &resumed("ex", script, &[]));
    assert_eq!(out.code, 2, "{out:#?}");
    assert_eq!(
        out.stderr,
        format!(
            "error: experiment 'ex': the training script {script} changed since it began, so its runs would not be comparable: put them back as they were, or add --allow-changed to take it up as they are now\n"
        )
    );
    assert!(pods_of(&env, "ex-2").is_empty());

    let mut child = start_words(&env, &resumed("ex", script, &["--allow-changed"]));
    await_watches(&env, 2);
    exited(&env, "ex-1-worker-0", 0);
    await_pod(&env, "ex-2-worker-0", &mut child);
    exited(&env, "ex-2-worker-0", 0);
    await_pod(&env, "ex-3-worker-0", &mut child);
    exited(&env, "ex-3-worker-0", 0);
    finish(child).success();
    let cm = env.server.get("configmaps", NS, "ex-2-script").unwrap();
    assert_eq!(cm["data"]["training-script.py"], "print('changed')\n");
}

/// A run that ended is never started again: its verdict is in the record, so deleting
/// its objects does not make `--resume` run it twice. A cleanup by age keeps an
/// experiment whole while a run of it goes on, and takes it whole (record and runs)
/// once all ended; `compare` knows the runs deleted meanwhile.
#[test]
fn resume_after_cleanup_starts_nothing_that_ended() {
    let env = Env::new();
    let s = env.script();
    let script = s.to_str().unwrap();
    let mut child = start_words(&env, &command("cx", script));
    await_pod(&env, "cx-1-worker-0", &mut child);
    exited(&env, "cx-1-worker-0", 0);
    await_pod(&env, "cx-2-worker-0", &mut child);
    exited(&env, "cx-2-worker-0", 1);
    await_pod(&env, "cx-3-worker-0", &mut child);
    await_run_watches(&env, "cx-3", 1);
    send(&child, "-INT");
    assert_eq!(finish(child).code, 130);
    let (cm, _) = record(&env, "cx");
    assert_eq!(cm["data"]["ended.cx-1"], "Succeeded");

    // cx-3 runs: the experiment is kept whole.
    let out = env.run(&["-d", "--finished", "--older-than", "0s", "-y"]);
    out.success().stderr_has(
        "experiment cx is kept whole: run cx-3 is Pending (its runs and its record go together)",
    );
    assert!(env.server.get("configmaps", NS, "cx-1-script").is_some());
    assert!(env.server.get("configmaps", NS, "cx-experiment").is_some());

    // Its ended runs deleted by hand: compare still knows them.
    env.run(&["-d", "-t", "cx-1"]).success();
    env.run(&["-d", "-t", "cx-2"]).success();
    let out = env.run(&["compare", "cx"]);
    out.success()
        .stderr_has("experiment cx: runs cx-1, cx-2 were deleted; the verdicts are its record's")
        .stdout_has("cx-1");
    assert!(out.stdout.contains("Failed"), "{out:#?}");

    let posts = (posts_of(&env, "/configmaps"), posts_of(&env, "/pods"));
    let child = start_words(&env, &resumed("cx", script, &[]));
    await_run_watches(&env, "cx-3", 2);
    exited(&env, "cx-3-worker-0", 0);
    let out = finish(child);
    assert_eq!(out.code, 3, "{out:#?}");
    out.stderr_has("error: experiment 'cx': 1 of 3 runs failed: cx-2");
    let after = (posts_of(&env, "/configmaps"), posts_of(&env, "/pods"));
    assert_eq!(after, posts, "nothing made again");
    assert!(env.server.get("configmaps", NS, "cx-1-script").is_none());

    // All ended: the cleanup takes the experiment whole, its record first.
    let out = env.run(&["-d", "--finished", "--older-than", "0s", "-y"]);
    out.success()
        .stdout_has("deleted configmap/cx-experiment\n")
        .stdout_has("deleted configmap/cx-3-script\n");
    assert!(
        env.names_not_terminating(NS).is_empty(),
        "{:?}",
        env.names(NS)
    );
    let out = run_words(&env, &resumed("cx", script, &[]));
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("no experiment 'cx' in namespace 'default'");
    assert!(
        env.names_not_terminating(NS).is_empty(),
        "{:?}",
        env.names(NS)
    );
}

/// `--resume` alone, the way main took it: one line saying what to give.
#[test]
fn resume_without_the_sweeps_command_says_to_give_it() {
    let env = Env::new();
    let out = env.run(&["sweep", "--resume", "rx"]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert_eq!(
        out.stderr,
        "error: --resume rx takes experiment rx up with the command it was started with: give it again (its --param flags, script and arguments), adding --resume rx\n"
    );
    assert!(env.server.requests().is_empty());
}

/// A `--local` sweep interrupted during its second run resumes: the first is not run
/// again, the second and third are.
#[test]
fn a_local_sweep_resumes_running_only_what_did_not_end() {
    let env = Env::new();
    let log = env.path("ran.log");
    let block = env.write("block", "");
    let started = env.path("started-2");
    let script = env.write(
        "p.py",
        format!(
            "import os, sys, time\nn = os.environ['TF_SPAWNER_PARAM_N']\nopen({log:?}, 'a').write(n + '\\n')\nif n == '2' and os.path.exists({block:?}):\n    open({started:?}, 'w').close()\n    time.sleep(60)\n"
        ),
    );
    let script = script.to_str().unwrap();
    let words = [
        "sweep", "--local", "-t", "loc", "-w", "1", "--param", "n=1,2,3", script,
    ];
    let child = start(&env, &words);
    let begin = std::time::Instant::now();
    while !started.exists() {
        assert!(begin.elapsed().as_secs() < 60, "run loc-2 never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    send(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:#?}");
    out.stderr_has(&format!(
        "take it up with: tf-spawner sweep --resume loc --local -t loc -w 1 --param n=1,2,3 {script}"
    ));
    std::fs::remove_file(&block).unwrap();
    let mut again = vec!["sweep", "--resume", "loc"];
    again.extend_from_slice(&words[1..]);
    let out = env.run(&again);
    out.success()
        .stdout_has("run loc-1 (local): Succeeded (recorded; not run again)")
        .stdout_has("local experiment loc: all 3 runs succeeded");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran, "1\n2\n2\n3\n", "loc-1 once, loc-2 again, loc-3 once");
    assert!(env.server.requests().is_empty(), "no cluster");
}
