//! Shell completion of run tags, as kubectl completes resource names (issue 51 item 6):
//! the script `completions SHELL` prints calls the binary back at each Tab
//! (`TF_SPAWNER_COMPLETE=SHELL tf-spawner -- WORDS…`), which answers with the flags and,
//! where a verb takes a run, the tags of the namespace's runs; silent and quick without a
//! cluster.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::CommandFactory;
use serde_json::json;
use tf_spawner::cli::Cli;

use crate::follow::spawn_run;
use crate::support::{BIN, Env, Output, run};

/// What the binary answers for the words of a command line, the last one being
/// completed (one candidate a line).
fn tab_with(env: &Env, kubeconfig: Option<&Path>, words: &[&str]) -> Output {
    let mut cmd = env.cmd();
    if let Some(kubeconfig) = kubeconfig {
        cmd.env("KUBECONFIG", kubeconfig);
    }
    cmd.env("TF_SPAWNER_COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", words.len().to_string())
        .env("_CLAP_IFS", "\n")
        .args(["--", "tf-spawner"])
        .args(words);
    run(&mut cmd)
}

pub fn tab(env: &Env, words: &[&str]) -> Vec<String> {
    let out = tab_with(env, None, words);
    out.success();
    assert!(out.stderr.is_empty(), "{out:#?}");
    out.stdout.lines().map(String::from).collect()
}

/// Runs `alpha` and `beta`, and `lrs-1` of experiment `lrs`.
fn three_runs(env: &Env) {
    for tag in ["alpha", "beta", "lrs-1"] {
        spawn_run(env, tag, &["-w", "1"]);
    }
    let mut cm = env
        .server
        .get("configmaps", "default", "lrs-1-script")
        .expect("the run's ConfigMap");
    cm["metadata"]["labels"]["tf-spawner/experiment"] = json!("lrs");
    env.server.insert("configmaps", "default", cm);
}

#[test]
fn every_verb_that_takes_a_run_completes_the_namespaces_tags() {
    let env = Env::new();
    three_runs(&env);
    let tags = ["alpha", "beta", "lrs-1"];
    for words in [
        &["wait", ""][..],
        &["wait", "-t", ""],
        &["status", ""],
        &["status", "--tag", ""],
        &["logs", "-f", ""],
        &["logs", "-t", ""],
        &["cp", "-t", ""],
        &["tensorboard", "-t", ""],
        &["compare", "-t", ""],
        &["-d", "-t", ""],
        &["-dy", "-t", ""],
        &["-n", "default", "status", ""],
    ] {
        let got = tab(&env, words);
        for tag in tags {
            assert!(got.iter().any(|g| g == tag), "{words:?}: {got:?}");
        }
    }
    // Where tags match, only they are offered (as kubectl offers only names); a `-`
    // asks for the flags, and without runs the flags come as before.
    assert_eq!(tab(&env, &["status", ""]), tags);
    assert!(tab(&env, &["status", "--"]).contains(&"--tag".to_string()));
    assert!(tab(&env, &["status", "zz"]).is_empty());
    // What is typed narrows them; the experiment's name where a verb takes one.
    assert_eq!(tab(&env, &["logs", "-t", "al"]), ["alpha"]);
    let compared = tab(&env, &["compare", ""]);
    for name in ["lrs", "alpha", "beta", "lrs-1"] {
        assert!(compared.iter().any(|c| c == name), "{compared:?}");
    }
    assert_eq!(tab(&env, &["sweep", "--resume", ""]), ["lrs"]);
    // A new run's tag is new: none offered; nor in a namespace without runs.
    assert!(tab(&env, &["-t", ""]).is_empty());
    assert!(tab(&env, &["wait", "-n", "elsewhere", "-t", ""]).is_empty());
}

#[test]
fn flags_and_verbs_still_complete() {
    let env = Env::new();
    let cmd = Cli::command();
    let main = tab(&env, &["--"]);
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if let Some(long) = arg.get_long() {
            assert!(main.contains(&format!("--{long}")), "--{long}: {main:?}");
        }
    }
    let verbs = tab(&env, &[""]);
    for verb in cmd.get_subcommands().filter(|v| !v.is_hide_set()) {
        assert!(verbs.iter().any(|v| v == verb.get_name()), "{verbs:?}");
    }
    let wait = tab(&env, &["wait", "--"]);
    for flag in ["--timeout", "--cleanup", "--notify", "--namespace"] {
        assert!(wait.iter().any(|w| w == flag), "{wait:?}");
    }
    assert_eq!(tab(&env, &["wait", "--for", ""]), ["start", "end"]);
    // The man page says what the script completes.
    let man = env.run(&["man"]);
    assert!(
        man.stdout.contains("run tags of the namespace"),
        "{}",
        man.stdout
    );
}

/// A kubeconfig for an API server that takes the connection and never answers.
fn silent_server(env: &Env) -> (TcpListener, std::path::PathBuf) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let path = env.write(
        "silent.kubeconfig",
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
             clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n\
             contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
        ),
    );
    (listener, path)
}

#[test]
fn without_a_cluster_a_tab_offers_nothing_and_says_nothing() {
    let env = Env::new();
    let (_listener, silent) = silent_server(&env);
    // The server takes the connection and never answers: the Tab gives up within its
    // bound (2 s; the request's own timeout is 30 s), silent, exit 0.
    let started = Instant::now();
    let out = tab_with(&env, Some(&silent), &["status", "-t", ""]);
    assert!(started.elapsed() < Duration::from_secs(20), "{out:#?}");
    assert_eq!((out.code, &*out.stdout, &*out.stderr), (0, "", ""));
    // No kubeconfig at all, or one that is not YAML: the same.
    for kubeconfig in [env.path("absent"), env.write("bad", "{{{")] {
        let out = tab_with(&env, Some(&kubeconfig), &["wait", ""]);
        assert_eq!((out.code, &*out.stderr), (0, ""), "{out:#?}");
        assert!(!out.stdout.contains("alpha"), "{out:#?}");
    }
}

/// The script a user sources, in a real bash: Tab after `status ` lists the runs.
#[test]
fn bash_completes_the_tags_with_the_script_completions_prints() {
    if !Path::new("/bin/bash").exists() && !Path::new("/usr/bin/bash").exists() {
        return;
    }
    let env = Env::new();
    three_runs(&env);
    let script = env.run(&["completions", "bash"]);
    script.success();
    let script = env.write("tf-spawner.bash", &script.stdout);
    let bin_dir = Path::new(BIN).parent().unwrap();
    let line = format!(
        "source {}; f=$(complete -p tf-spawner | sed 's/.* -F \\([^ ]*\\) .*/\\1/'); \
         COMP_WORDS=(tf-spawner status be); COMP_CWORD=2; COMP_LINE='tf-spawner status be'; \
         COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9; \"$f\" tf-spawner be status; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"; \
         COMP_WORDS=(tf-spawner wait -t ''); COMP_CWORD=3; COMPREPLY=(); \"$f\" tf-spawner '' -t; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.current_dir(env.path("."))
        .env_clear()
        .env("PATH", path)
        .env("HOME", env.path("."))
        .env("KUBECONFIG", &env.kubeconfig)
        .args(["-c", &line]);
    let out = run(&mut cmd);
    out.success();
    assert_eq!(out.stdout, "beta\nalpha\nbeta\nlrs-1\n", "{out:#?}");
}
