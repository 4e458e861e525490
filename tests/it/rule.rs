//! One rule for every verb (docs/reference.md, "One rule for every verb"): a verb that
//! takes a run takes it as `-t TAG` and as its first positional; every `-o` takes json
//! and yaml; "nothing matched" is exit 1 and one line, never exit 0 and silence. The
//! walk starts from the verbs the binary names, so a new verb fails here until it is
//! placed in one of the tables below.

use serde_json::Value;

use crate::support::{Env, Output};

/// Verbs that act on one run, with the words that follow the run.
const RUN_VERBS: &[(&str, &[&str])] = &[
    ("wait", &["--timeout", "5s"]),
    ("status", &[]),
    ("logs", &[]),
    ("cp", &["model", "here"]),
    ("tensorboard", &[]),
    ("compare", &[]),
];

/// Verbs that take no run, and why (the reference says the same).
const OTHER_VERBS: &[(&str, &str)] = &[
    ("init", "makes a project"),
    ("list", "lists the runs; status RUN shows one"),
    ("config", "shows the settings"),
    ("completions", "prints a script"),
    ("man", "prints the man page"),
    ("sweep", "makes runs, named by -t NAME"),
];

/// The verbs as the binary names them (`tf-spawner` alone lists them).
fn verbs(env: &Env) -> Vec<String> {
    let out = env.run(&[]);
    out.failure(2);
    let list = out
        .stderr
        .split("(verbs: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no verb list: {out:#?}"));
    list.split(", ").map(str::to_string).collect()
}

fn one_error_line(out: &Output, code: i32, needle: &str) {
    out.failure(code).stderr_has(needle);
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    assert!(out.stderr.starts_with("error: "), "{out:#?}");
}

#[test]
fn every_verb_is_placed_by_the_rule() {
    let env = Env::new();
    let mut placed: Vec<&str> = RUN_VERBS.iter().map(|(v, _)| *v).collect();
    placed.extend(OTHER_VERBS.iter().map(|(v, _)| *v));
    placed.sort_unstable();
    let mut named = verbs(&env);
    named.sort_unstable();
    assert_eq!(named, placed, "a verb the rule does not place");
}

#[test]
fn a_run_is_named_by_t_or_the_first_positional_and_a_missing_one_is_exit_1() {
    let env = Env::new();
    env.spawn(&["-t", "real", "-w", "1"]).success();
    for (verb, rest) in RUN_VERBS {
        let positional: Vec<&str> = [*verb, "gone"].iter().chain(*rest).copied().collect();
        let flag: Vec<&str> = [*verb, "-t", "gone"].iter().chain(*rest).copied().collect();
        for args in [positional, flag] {
            one_error_line(&env.run(&args), 1, "gone");
        }
    }
    // The run that is there, both ways, the same report.
    let by_name = env.run(&["status", "real", "-o", "json"]);
    let by_flag = env.run(&["status", "-t", "real", "-o", "json"]);
    let tag = |out: &Output| -> Value {
        serde_json::from_str::<Value>(&out.stdout).unwrap()["tag"].clone()
    };
    assert_eq!(
        (tag(&by_name), tag(&by_flag)),
        ("real".into(), "real".into())
    );
    // Two different runs: a usage error.
    one_error_line(
        &env.run(&["status", "-t", "real", "other"]),
        2,
        "was given two runs",
    );
}

#[test]
fn every_output_flag_takes_json_and_yaml() {
    let env = Env::new();
    let script = env.script();
    let script = script.to_str().unwrap();
    env.spawn(&["-t", "real", "-w", "1"]).success();
    let reports: &[&[&str]] = &[
        &["status", "real"],
        &["list"],
        &["config"],
        &["compare", "real"],
        &["--dry-run", "-t", "dry", script],
    ];
    for args in reports {
        let json = env.run(&[*args, &["-o", "json"][..]].concat());
        json.success();
        let json: Value = serde_json::from_str(&json.stdout).expect("json");
        let yaml = env.run(&[*args, &["-o", "yaml"][..]].concat());
        yaml.success();
        if args.contains(&"--dry-run") {
            // A YAML stream, one document per object.
            let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml.stdout).expect("yaml");
            assert_eq!(docs.len(), json["items"].as_array().map_or(0, Vec::len));
        } else {
            let yaml: Value = serde_saphyr::from_str(&yaml.stdout).expect("yaml");
            // The same document, but for the ages that moved on between the two runs.
            let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
            assert_eq!(keys(&json), keys(&yaml), "{args:?}");
        }
    }
    let out = env.run(&["-d", "-t", "real", "-o", "yaml"]);
    out.success();
    let yaml: Value = serde_saphyr::from_str(&out.stdout).unwrap();
    assert_eq!(yaml["tag"], "real");
}

#[test]
fn nothing_matched_is_exit_1_and_one_line() {
    let env = Env::new();
    env.spawn(&["-t", "real", "-w", "2"]).success();
    one_error_line(
        &env.run(&["logs", "real", "--task", "worker-7"]),
        1,
        "run 'real' has no task worker-7 (its tasks: worker-0, worker-1)",
    );
    one_error_line(
        &env.run(&["list", "-n", "typo"]),
        1,
        "namespace 'typo' does not exist",
    );
    let out = env.run(&["-d", "-y", "-t", "gone"]);
    one_error_line(
        &out,
        1,
        "no run tagged 'gone' in namespace default; the runs there: real",
    );
    assert_eq!(out.stdout, "", "{out:#?}");
    env.run(&["-d", "-y", "-t", "gone", "--ignore-not-found"])
        .success()
        .stdout_has("nothing labelled training_attempt=gone in namespace default");
    one_error_line(
        &env.run(&["-d", "-y", "--experiment", "none"]),
        1,
        "no experiment 'none' there",
    );
    // An empty namespace that exists is an answer, not a miss.
    env.run(&["-d", "-y", "-t", "real"]).success();
    env.run(&["list"])
        .success()
        .stdout_has("no tf-spawner runs in namespace default");
}
