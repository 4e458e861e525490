//! Fitting in: the kubectl plugin name, completions, the man page, output conventions
//! (`-o json`, `-q`, no escape codes off a terminal), `-v` logs without secrets, and
//! the defaults file.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::CommandFactory;
use serde_json::Value;
use tf_spawner::cli::Cli;

use crate::support::{Env, Output, run};

/// Every long flag of the main command (global ones included), from the clap
/// definitions, so these tests follow new flags.
fn long_flags() -> Vec<String> {
    let cmd = Cli::command();
    let flags: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(String::from))
        .collect();
    assert!(flags.len() > 20, "{flags:?}");
    for expected in ["workers", "dry-run", "verbose", "quiet", "namespace"] {
        assert!(
            flags.iter().any(|f| f == expected),
            "{expected} in {flags:?}"
        );
    }
    flags
}

/// The binary linked as kubectl's plugin `kubectl-tf_spawner` in `DIR/bin`.
fn plugin(env: &Env) -> PathBuf {
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("kubectl-tf_spawner");
    std::os::unix::fs::symlink(crate::support::BIN, &link).unwrap();
    link
}

#[test]
fn the_plugin_name_runs_the_same_commands_and_shows_kubectl_tf_spawner() {
    let env = Env::new();
    let link = plugin(&env);
    let script = env.script();
    let s = script.to_str().unwrap();
    let as_plugin = |args: &[&str]| {
        // The binary's clean environment (see `Env::cmd`), under the plugin's name.
        let cmd = env.cmd();
        let mut plugin_cmd = std::process::Command::new(&link);
        plugin_cmd.current_dir(env.dir.path()).env_clear();
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                plugin_cmd.env(k, v);
            }
        }
        run(plugin_cmd.args(args).stdin(std::process::Stdio::null()))
    };

    let help = as_plugin(&["--help"]);
    help.success()
        .stdout_has("Usage: kubectl tf-spawner [OPTIONS] [TRAINING_SCRIPT]");
    assert!(!help.stdout.contains("kubectl-tf_spawner"), "{help:#?}");
    as_plugin(&["status", "--help"])
        .success()
        .stdout_has("Usage: kubectl tf-spawner status");
    // The usual name is unchanged.
    env.run(&["--help"])
        .success()
        .stdout_has("Usage: tf-spawner [OPTIONS] [TRAINING_SCRIPT]");
    // A usage error names the plugin too, and exits 2.
    let bad = as_plugin(&["--no-such-flag"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(bad.stderr.contains("kubectl tf-spawner"), "{bad:#?}");

    // The same commands: a dry run, then a real spawn and delete.
    let dry = as_plugin(&["--dry-run", "-o", "json", "-w", "2", s]);
    dry.success();
    let list: Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 5, "{dry:#?}");
    as_plugin(&["-t", "plug", "-w", "1", s]).success();
    assert_eq!(
        env.names("default"),
        [
            "configmap/plug-script",
            "pod/plug-worker-0",
            "service/plug-worker-0"
        ]
    );
    as_plugin(&["-d", "-t", "plug"])
        .success()
        .stdout_has("deleted pod/plug-worker-0");
    assert!(env.names("default").is_empty());

    // Through kubectl itself, when there is one.
    let kubectl = std::env::var_os("TF_SPAWNER_TEST_KUBECTL")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join("kubectl"))
                .find(|p| p.is_file())
        });
    let Some(kubectl) = kubectl else {
        return;
    };
    let path = std::env::join_paths(
        std::iter::once(env.path("bin")).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(&kubectl);
    cmd.args(["tf-spawner", "--version"])
        .current_dir(env.dir.path())
        .env_clear()
        .env("HOME", env.dir.path())
        .env("PATH", path);
    let out = run(&mut cmd);
    out.success()
        .stdout_has(&format!("tf-spawner {}", env!("CARGO_PKG_VERSION")));
}

/// The scripts call the binary back at each Tab (`tests/it/completion.rs` tests what it
/// answers, tags included); each shell's call completes every flag and verb.
#[test]
fn completions_for_bash_zsh_and_fish_complete_every_long_flag() {
    let env = Env::new();
    let hidden: Vec<String> = Cli::command()
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long().map(String::from))
        .collect();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.run(&["completions", shell]);
        out.success();
        assert!(out.stderr.is_empty(), "{out:#?}");
        let call = format!("TF_SPAWNER_COMPLETE=\"{shell}\"");
        let call_fish = format!("TF_SPAWNER_COMPLETE={shell} tf-spawner --");
        assert!(
            out.stdout.contains(&call) || out.stdout.contains(&call_fish),
            "{shell}: {}",
            out.stdout
        );
        let answer = |word: &str| {
            let mut cmd = env.cmd();
            cmd.env("TF_SPAWNER_COMPLETE", shell)
                .env("_CLAP_COMPLETE_INDEX", "1")
                .args(["--", "tf-spawner", word]);
            let out = run(&mut cmd);
            out.success();
            // fish and zsh: `VALUE<TAB or :>HELP`.
            (out.stdout.lines())
                .map(|l| l.split(['\t', ':']).next().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        };
        let flags = answer("--");
        for flag in long_flags().iter().filter(|f| !hidden.contains(f)) {
            let needle = format!("--{flag}");
            assert!(flags.contains(&needle), "{shell} completion lacks {needle}");
        }
        let verbs = answer("");
        for verb in [
            "wait",
            "status",
            "logs",
            "list",
            "config",
            "completions",
            "man",
        ] {
            assert!(
                verbs.iter().any(|v| v == verb),
                "{shell} completion lacks {verb}"
            );
        }
    }
    assert_eq!(env.run(&["completions", "tcsh"]).code, 2);
}

#[test]
fn the_man_page_is_roff_with_every_flag() {
    let env = Env::new();
    let out = env.run(&["man"]);
    out.success();
    assert!(out.stdout.contains(".TH tf-spawner 1"), "{}", out.stdout);
    for flag in long_flags() {
        // roff writes `-` as `\-`.
        let needle = format!("\\-\\-{}", flag.replace('-', "\\-"));
        assert!(out.stdout.contains(&needle), "man page lacks {needle}");
    }
}

fn json(out: &Output) -> Value {
    out.success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:#?}"))
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn objects(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            assert_eq!(keys(o), ["kind", "name"], "{o}");
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn spawn_delete_status_and_list_print_json_with_their_documented_keys() {
    let env = Env::new();
    let envfile = env.write("s.env", "A=b\n");
    let created = json(&env.spawn(&[
        "-t",
        "js",
        "-w",
        "2",
        "-o",
        "json",
        "-e",
        envfile.to_str().unwrap(),
    ]));
    assert_eq!(keys(&created), ["created", "namespace", "tag"]);
    assert_eq!(
        (created["tag"].as_str(), created["namespace"].as_str()),
        (Some("js"), Some("default"))
    );
    let names: BTreeSet<String> = env.names("default").into_iter().collect();
    assert_eq!(objects(&created["created"]), names);
    assert_eq!(names.len(), 6, "{names:?}");
    // Creation order: the config map first, the pods last.
    assert_eq!(created["created"][0]["kind"], "configmap");
    assert_eq!(created["created"][5]["kind"], "pod");

    let status = json(&env.run(&["status", "-t", "js", "-o", "json"]));
    assert_eq!(
        keys(&status),
        [
            "attempt",
            "attempts",
            "cost",
            "created_at",
            "duration_seconds",
            "failure",
            "follower",
            "helpers",
            "namespace",
            "never_started",
            "pending_restart",
            "pods",
            "progress",
            "recorded_verdict",
            "restarted_for",
            "tag",
            "verdict",
            "why_not_started"
        ]
    );
    let list = json(&env.run(&["list", "-o", "json"]));
    assert_eq!(keys(&list), ["runs"]);
    assert_eq!(list["runs"][0]["tag"], "js");

    let deleted = json(&env.run(&["-d", "-t", "js", "-o", "json"]));
    assert_eq!(keys(&deleted), ["deleted", "namespace", "tag"]);
    assert_eq!(objects(&deleted["deleted"]), names);
    assert!(env.names("default").is_empty());
    let nothing = json(&env.run(&["-d", "-t", "js", "-o", "json", "--ignore-not-found"]));
    assert_eq!(nothing["deleted"], serde_json::json!([]));

    // YAML: the same shape.
    let out = env.spawn(&["-t", "ys", "-w", "1", "-o", "yaml"]);
    out.success();
    let yaml: Value = serde_saphyr::from_str(&out.stdout).unwrap();
    assert_eq!(keys(&yaml), ["created", "namespace", "tag"]);
    assert_eq!(objects(&yaml["created"]).len(), 3);
}

/// A script that imports a module beside it while `--dir` is not given: one note at
/// spawn time naming `--dir` (the pods would fail with ModuleNotFoundError); `-q`
/// silences it, `--dir` and a standard-library import give none (issue 35, item 6).
#[test]
fn a_script_importing_a_module_beside_it_without_dir_gets_one_note() {
    let env = Env::new();
    let code = env.path("code");
    std::fs::create_dir_all(&code).unwrap();
    let script = code.join("train.py");
    std::fs::write(&script, "import os\nfrom helpers import greet\ngreet()\n").unwrap();
    std::fs::write(code.join("helpers.py"), "def greet(): print('hi')\n").unwrap();
    let script = script.to_str().unwrap();
    let want = format!(
        "note: train.py imports helpers from beside it (helpers.py), but only the script is shipped: add --dir {} to ship its directory\n",
        code.display()
    );
    let out = env.run(&["-t", "sib", "-w", "1", script]);
    out.success();
    assert_eq!(out.stderr.matches("--dir").count(), 1, "{out:#?}");
    out.stderr_has(&want);
    let out = env.run(&["-q", "-t", "sibq", "-w", "1", script]);
    out.success();
    assert_eq!(out.stderr, "", "{out:#?}");
    let dir = code.to_str().unwrap();
    let out = env.run(&["-t", "sibd", "-w", "1", "--dir", dir, script]);
    out.success();
    assert!(!out.stderr.contains("--dir"), "{out:#?}");
    std::fs::write(code.join("alone.py"), "import os\nimport json\n").unwrap();
    let alone = code.join("alone.py");
    let out = env.run(&["-t", "siba", "-w", "1", alone.to_str().unwrap()]);
    out.success();
    assert!(!out.stderr.contains("--dir"), "{out:#?}");
}

#[test]
fn quiet_prints_only_a_new_runs_tag_and_errors() {
    let env = Env::new();
    let out = env.spawn(&["-q", "-r", "-w", "1"]);
    out.success();
    assert!(out.stderr.is_empty(), "{out:#?}");
    let tag = out.stdout.strip_suffix('\n').expect("one line");
    assert!(
        tag.starts_with("tf-") && !tag.contains(char::is_whitespace),
        "{out:#?}"
    );
    assert!(
        env.names("default")
            .contains(&format!("pod/{tag}-worker-0"))
    );

    for args in [
        vec!["status", "-q", "-t", tag],
        vec!["list", "--quiet"],
        vec!["-q", "--dry-run", "train.py"],
        vec!["config", "-q"],
        vec!["-q", "-d", "-t", tag],
    ] {
        let out = env.run(&args);
        out.success();
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("", ""),
            "{args:?}"
        );
    }
    assert!(env.names("default").is_empty());
    // Errors still show.
    env.run(&["status", "-q", "-t", "gone"])
        .failure(1)
        .stderr_has("no pods labelled training_attempt=gone");
}

#[test]
fn no_escape_codes_off_a_terminal_even_without_no_color() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    for no_color in [false, true] {
        let tag = if no_color { "nc" } else { "col" };
        let runs: Vec<Vec<&str>> = vec![
            vec!["--help"],
            vec!["--dry-run", s],
            vec!["-v", "-t", tag, "-w", "1", s],
            vec!["status", "-t", tag],
            vec!["list"],
            vec!["logs", "-t", tag],
            vec!["config"],
            vec!["-vv", "-d", "-t", tag],
            vec!["-d", "-t", "bad_tag"],
        ];
        for args in &runs {
            let mut cmd = env.cmd();
            if !no_color {
                cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
            }
            let out = run(cmd.args(args));
            assert!(
                !out.stdout.contains('\x1b') && !out.stderr.contains('\x1b'),
                "escape codes from {args:?}: {out:#?}"
            );
        }
    }
}

const PLANTED: &str = "planted-Verbose-S3cret";

#[test]
fn verbose_logs_each_api_call_without_secrets() {
    let env = Env::new();
    let file = env.write("s.env", format!("KEY={PLANTED}\n"));
    let f = file.to_str().unwrap();
    let token = env.server.admin_token();
    assert!(token.len() >= 8);

    // -v: only API call lines, one per request, with method, path, status, time, attempt.
    let out = env.spawn(&["-v", "-t", "v1", "-w", "1", "-e", f]);
    out.success();
    let lines: Vec<&str> = out.stderr.lines().collect();
    let requests = env.server.requests();
    assert!(!lines.is_empty());
    assert_eq!(lines.len(), requests.len(), "{out:#?}");
    for line in &lines {
        assert!(line.contains("tf_spawner::api"), "{line}");
        assert!(
            line.contains("method=")
                && (line.contains("path=/api/v1/") || line.contains("path=/apis/batch/v1/")),
            "{line}"
        );
        assert!(
            line.contains("status=") && line.contains("elapsed="),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("attempt=1")
            && l.contains("method=POST")
            && l.contains("path=/api/v1/namespaces/default/secrets")
            && l.contains("status=201")),
        "{out:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("method=GET") && l.contains("labelSelector=training_attempt%3Dv1")),
        "the query string is shown: {out:#?}"
    );

    // -vv: retries too (a 503 on the first pod), and the client's internals.
    env.server
        .add_fault(kube_testserver::Fault::on("POST", "/pods").status(503));
    let out = env.spawn(&["-vv", "-t", "v2", "-w", "1", "-e", f]);
    out.success();
    assert!(out.stderr.contains("retrying"), "{out:#?}");
    assert!(
        out.stderr.lines().any(|l| l.contains("attempt=2")
            && l.contains("method=POST")
            && l.contains("status=201")),
        "{out:#?}"
    );
    assert!(
        out.stderr.contains("kube_client"),
        "client internals at -vv: {out:#?}"
    );
    let all = [
        out,
        env.run(&["-vvv", "-d", "-t", "v1"]),
        run(env.cmd().env("RUST_LOG", "trace").args(["-d", "-t", "v2"])),
    ];
    for out in &all {
        for secret in [PLANTED, token.as_str()] {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{secret} leaked: {out:#?}"
            );
        }
        assert!(
            !out.stderr
                .to_ascii_lowercase()
                .contains("authorization: bearer"),
            "{out:#?}"
        );
    }
    assert!(
        all[2].stderr.contains("method=DELETE"),
        "RUST_LOG works: {:#?}",
        all[2]
    );
    // Without -v or RUST_LOG: nothing on stderr.
    let quiet = env.spawn(&["-t", "v3", "-w", "1"]);
    quiet.success();
    assert_eq!(quiet.stderr, "");
}

/// The pods of a `--dry-run -o json`.
fn dry_pods(out: &Output) -> Vec<Value> {
    json(out)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .cloned()
        .collect()
}

#[test]
fn the_defaults_file_beats_built_in_defaults_and_flags_beat_it() {
    let env = Env::new();
    env.write("gpu.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    from: file-template\nspec:\n  containers:\n  - name: tensorflow\n    image: ignored:1\n");
    let path = env.defaults_file("namespace: team-a\nimage: registry.example.org/tf:9\npod_file: ../../gpu.yaml\nport: 2222\nworkers: 3\n",
    );
    let script = env.script();
    let s = script.to_str().unwrap();

    let pods = dry_pods(&env.run(&["--dry-run", "-o", "json", s]));
    assert_eq!(pods.len(), 3);
    let pod = &pods[0];
    assert_eq!(pod["metadata"]["namespace"], "team-a");
    assert_eq!(
        pod["metadata"]["labels"]["from"], "file-template",
        "pod_file relative to the config file"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "registry.example.org/tf:9"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["ports"][0]["containerPort"],
        2222
    );

    let pods = dry_pods(&env.run(&[
        "--dry-run",
        "-o",
        "json",
        "-n",
        "mine",
        "-i",
        "img:2",
        "-p",
        "3333",
        "-w",
        "1",
        s,
    ]));
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["metadata"]["namespace"], "mine");
    assert_eq!(pods[0]["spec"]["containers"][0]["image"], "img:2");
    assert_eq!(
        pods[0]["spec"]["containers"][0]["ports"][0]["containerPort"],
        3333
    );

    // `config` says where each value came from.
    let out = env.run(&["config", "-n", "flagged"]);
    out.success()
        .stdout_has(&format!("config file: {}", path.display()));
    let row = |key: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} row: {out:#?}"))
            .to_string()
    };
    assert!(
        row("namespace").contains("flagged") && row("namespace").ends_with("flag"),
        "{out:#?}"
    );
    assert!(row("port").contains("2222"), "{out:#?}");
    assert!(
        row("port").ends_with(&format!("config file {}", path.display())),
        "{out:#?}"
    );
    assert!(row("workers").contains(" 3 "), "{out:#?}");
    let config = json(&env.run(&["config", "-o", "json", "--namespace", "x"]));
    assert_eq!(config["config_file"], path.display().to_string());
    assert_eq!(config["config_file_found"], true);
    assert_eq!(
        config["settings"]["namespace"],
        serde_json::json!({"value": "x", "source": "flag"})
    );
    assert_eq!(
        config["settings"]["port"],
        serde_json::json!({"value": 2222, "source": "file"})
    );
    assert_eq!(config["settings"]["image"]["source"], "file");

    // A real spawn honours the file's namespace.
    env.server.create_namespace("other");
    env.defaults_file("namespace: other\nworkers: 1\n");
    env.spawn(&["-t", "ns"])
        .success()
        .stdout_has("created in namespace other");
    assert_eq!(env.names("other").len(), 3);
}

#[test]
fn config_shows_built_in_and_kubeconfig_sources_and_other_file_places() {
    let env = Env::new();
    let out = env.run(&["config"]);
    out.success().stdout_has("(not found; none is needed)");
    for key in ["namespace", "image", "pod_file", "port", "workers"] {
        let line = out.stdout.lines().find(|l| l.starts_with(key)).unwrap();
        assert!(line.ends_with("default"), "{line}");
    }
    // The kubeconfig context's namespace.
    let sub = env.path("ctx");
    std::fs::create_dir_all(&sub).unwrap();
    let kc = env
        .server
        .write_kubeconfig(&sub, "admin", Some("from-context"));
    let config = json(&env.run_as(&kc, &["config", "-o", "json"]));
    assert_eq!(
        config["settings"]["namespace"],
        serde_json::json!({"value": "from-context", "source": "kubeconfig"})
    );
    env.run_as(&kc, &["config"])
        .success()
        .stdout_has("kubeconfig (context test)");

    // XDG_CONFIG_HOME, then TF_SPAWNER_CONFIG, take the file from elsewhere.
    let xdg = env.path("xdg");
    std::fs::create_dir_all(xdg.join("tf-spawner")).unwrap();
    std::fs::write(xdg.join("tf-spawner/config.yaml"), "port: 1234\n").unwrap();
    let out = run(env
        .cmd()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "-o", "json"]));
    assert_eq!(json(&out)["settings"]["port"]["value"], 1234);
    let other = env.write("elsewhere.yaml", "port: 4321\n");
    let out = run(env
        .cmd()
        .env("XDG_CONFIG_HOME", &xdg)
        .env("TF_SPAWNER_CONFIG", &other)
        .args(["config", "-o", "json"]));
    assert_eq!(json(&out)["settings"]["port"]["value"], 4321);
}

/// Issue 41: a defaults-file value goes through its flag's own parser, so the file
/// refuses what the flag refuses (durations past 100 years, an image with a space, a bad
/// volume), and the error names the file's key, never the flag. `--restart-backoff` is
/// bounded as its help says (at most 5m).
#[test]
fn the_defaults_file_refuses_what_the_flags_refuse_naming_its_key() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    let max = u64::MAX;
    for (text, says) in [
        (
            format!("start_timeout: {max}\n"),
            format!("key 'start_timeout': \"{max}\": longer than 100 years"),
        ),
        (
            format!("give_up_after: {max}\n"),
            format!("key 'give_up_after': \"{max}\": longer than 100 years"),
        ),
        (
            "tensorboard_image: \"has space\"\n".to_string(),
            "key 'tensorboard_image': \"has space\" is not a valid image name".to_string(),
        ),
        (
            "volume: \"out:relative\"\n".to_string(),
            "key 'volume': \"out:relative\": the mount path \"relative\" must be an absolute directory".to_string(),
        ),
    ] {
        let path = env.defaults_file(&text);
        let prefix = format!("config file {}: ", path.display());
        for args in [vec!["config"], vec!["--dry-run", s], vec!["tensorboard"]] {
            let out = env.run(&args);
            out.failure(2).stderr_has(&format!("{prefix}{says}"));
            assert!(!out.stderr.contains("--"), "a flag is blamed: {out:#?}");
        }
    }
    env.defaults_file("");
    for (args, value) in [
        (vec!["wait", "--restart-backoff", "99y"], "99y"),
        (
            vec!["--wait", "--restarts", "1", "--restart-backoff", "6m", s],
            "6m",
        ),
    ] {
        env.run(&args).failure(2).stderr_has(&format!(
            "error: --restart-backoff \"{value}\": at most 5m, the longest pause between restarts"
        ));
    }
    assert!(env.server.requests().is_empty());
    assert!(env.names("default").is_empty());
}

#[test]
fn a_bad_defaults_file_is_a_usage_error_naming_the_file_and_the_key() {
    let env = Env::new();
    let script = env.script();
    let s = script.to_str().unwrap();
    for (text, expected) in [
        (
            "port: 0\n",
            "key 'port': \"0\" is not a port number from 1 to 65535",
        ),
        ("port: http\n", "key 'port'"),
        ("workers: -1\n", "key 'workers'"),
        (
            "image: [a, b]\n",
            "key 'image': expected one value, got [\"a\",\"b\"]",
        ),
        ("imgae: x\n", "unknown key 'imgae'; did you mean 'image'?"),
        ("image: [\n", "not valid YAML"),
        ("- just\n- a list\n", "expected keys"),
    ] {
        let path = env.defaults_file(text);
        let prefix = format!("config file {}: ", path.display());
        for args in [vec!["--dry-run", s], vec!["config"], vec!["status"]] {
            env.run(&args)
                .failure(2)
                .stderr_has(&prefix)
                .stderr_has(expected);
        }
    }
    assert!(env.server.requests().is_empty());
    // Completions and the man page need no config.
    env.run(&["man"]).success();
    // A file named by TF_SPAWNER_CONFIG must exist.
    let out = run(env
        .cmd()
        .env("TF_SPAWNER_CONFIG", env.path("missing.yaml"))
        .arg("config"));
    out.failure(2).stderr_has("cannot read config file");
}
