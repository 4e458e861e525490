//! Issue 45: `tf-spawner init` (the files written, refusals, `--force`) and the project
//! file `tf-spawner.yaml` (flag > project > user > built-in, as `config` shows; paths
//! relative to it; the trust rule for what runs a program or leaves the project).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Env, Output, run};

fn template(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates/init")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The binary run in `dir` (below the test's temp dir).
fn run_in(env: &Env, dir: &Path, args: &[&str]) -> Output {
    run(env.cmd().current_dir(dir).args(args))
}

/// `config -o json` run in `dir`.
fn config_in(env: &Env, dir: &Path, args: &[&str]) -> Value {
    let out = run_in(env, dir, &[&["config", "-o", "json"], args].concat());
    out.success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:#?}"))
}

/// A project directory `name` in the temp dir with `text` as its tf-spawner.yaml.
fn project(env: &Env, name: &str, text: &str) -> PathBuf {
    let dir = env.path(name);
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    std::fs::write(dir.join("tf-spawner.yaml"), text).unwrap();
    dir
}

#[test]
fn init_writes_the_project_and_names_the_next_commands() {
    let env = Env::new();
    let out = env.run(&["init", "exp"]);
    out.success()
        .stdout_has("created exp: train.py, tf-spawner.yaml, .tfspawnerignore\n")
        .stdout_has("  cd exp\n")
        .stdout_has("  tf-spawner --local -w 2 train.py")
        .stdout_has("  tf-spawner -w 4 train.py");
    assert_eq!(out.stderr, "");
    let exp = env.path("exp");
    assert_eq!(read(&exp.join("train.py")), template("train.py"));
    assert_eq!(
        read(&exp.join("tf-spawner.yaml")),
        template("tf-spawner.yaml")
    );
    assert_eq!(
        read(&exp.join(".tfspawnerignore")),
        template("tfspawnerignore")
    );
    assert!(read(&exp.join("train.py")).contains("BackupAndRestore"));

    // --custom-loop, into the current directory (no `cd` to print).
    let here = env.path("loop");
    std::fs::create_dir_all(&here).unwrap();
    let out = run_in(&env, &here, &["init", "--custom-loop"]);
    out.success()
        .stdout_has("created .: train.py")
        .stdout_lacks("cd ");
    assert_eq!(
        read(&here.join("train.py")),
        template("train_custom_loop.py")
    );
    // -q: the files, and nothing on stdout.
    let quiet = env.run(&["init", "-q", "quiet"]);
    quiet.success();
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    assert!(env.path("quiet/train.py").is_file());

    // A run of the new project ships it (`dir: .`) without a note: its own
    // `.tfspawnerignore` is not news.
    let spawned = run_in(&env, &exp, &["-t", "fresh", "train.py"]);
    spawned.success().stdout_has("run fresh created");
    spawned.stderr_lacks("left out");
    let script = env.server.get("configmaps", "default", "fresh-script");
    assert!(script.unwrap()["binaryData"]["dir.tar.gz"].is_string());

    // Its script reads its own arguments before TensorFlow is imported (none is here): a
    // mistyped one ends every task at once with argparse's line.
    let typo = run_in(
        &env,
        &exp,
        &["--local", "-t", "typo", "train.py", "--", "--epcohs", "2"],
    );
    // The first task to end decides; the other may be stopped before it prints.
    assert_eq!(typo.code, 3, "{typo:#?}");
    typo.stdout_has(" | train.py: error: unrecognized arguments: --epcohs 2")
        .stderr_has("exited with code 2");

    // The project's settings are what `config` reads there.
    let settings = config_in(&env, &exp, &[]);
    assert_eq!(settings["project_file"], json!(exp.join("tf-spawner.yaml")));
    assert_eq!(
        settings["settings"]["workers"],
        json!({"value": 2, "source": "project"})
    );
    assert_eq!(
        settings["settings"]["dir"],
        json!({"value": format!("{}/.", exp.display()), "source": "project"})
    );
}

#[test]
fn init_refuses_to_overwrite_a_file_and_force_overwrites_it() {
    let env = Env::new();
    let exp = env.path("exp");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::write(exp.join("train.py"), "mine\n").unwrap();
    env.run(&["init", "exp"])
        .failure(2)
        .stderr_has("exp/train.py exists: tf-spawner init leaves it alone (--force overwrites it)");
    assert_eq!(read(&exp.join("train.py")), "mine\n");
    assert!(!exp.join("tf-spawner.yaml").exists(), "nothing is written");
    assert!(!exp.join(".tfspawnerignore").exists(), "nothing is written");

    env.run(&["init", "--force", "exp"]).success();
    assert_eq!(read(&exp.join("train.py")), template("train.py"));
    env.run(&["init", "exp"])
        .failure(2)
        .stderr_has("exp/train.py, exp/tf-spawner.yaml, exp/.tfspawnerignore exist");

    env.write("afile", "x");
    env.run(&["init", "afile"])
        .failure(2)
        .stderr_has("afile is a file, not a directory");
}

#[test]
fn the_project_file_sits_between_the_flags_and_the_users_file() {
    let env = Env::new();
    let user = env.path(".config/tf-spawner");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.yaml"),
        "workers: 5\nport: 2222\nimage: user/img:1\nnamespace: user-ns\n",
    )
    .unwrap();
    let dir = project(
        &env,
        "proj",
        "workers: 3\nimage: project/img:1\nnamespace: team-p\n",
    );
    // Found from a directory below it, as cargo finds Cargo.toml.
    let below = dir.join("sub/deeper");
    let got = config_in(&env, &below, &["-n", "flag-ns"]);
    let s = &got["settings"];
    assert_eq!(
        s["namespace"],
        json!({"value": "flag-ns", "source": "flag"})
    );
    assert_eq!(s["workers"], json!({"value": 3, "source": "project"}));
    assert_eq!(
        s["image"],
        json!({"value": "project/img:1", "source": "project"})
    );
    assert_eq!(s["port"], json!({"value": 2222, "source": "file"}));
    assert_eq!(s["restarts"], json!({"value": 0, "source": "default"}));

    let table = run_in(&env, &below, &["config"]);
    table.success().stdout_has(&format!(
        "project file: {}\n",
        dir.join("tf-spawner.yaml").display()
    ));
    let row = |key: &str| {
        table
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap()
            .to_string()
    };
    assert!(
        row("workers").ends_with(&format!(
            "project file {}",
            dir.join("tf-spawner.yaml").display()
        )),
        "{}",
        row("workers")
    );
    assert!(row("port").contains("config file "), "{}", row("port"));

    // What the spawn makes: the project's workers and image.
    let script = env.script();
    let out = run_in(
        &env,
        &below,
        &["--dry-run", "-o", "json", script.to_str().unwrap()],
    );
    out.success();
    let objects: Value = serde_json::from_str(&out.stdout).unwrap();
    let pods: Vec<&Value> = objects["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .collect();
    assert_eq!(pods.len(), 3);
    assert_eq!(
        pods[0]["metadata"]["namespace"], "team-p",
        "the project's namespace"
    );
    assert_eq!(pods[0]["spec"]["containers"][0]["image"], "project/img:1");

    // Outside the project, no project file: the user's file.
    let got = config_in(&env, env.dir.path(), &[]);
    assert_eq!(got["project_file"], Value::Null);
    assert_eq!(
        got["settings"]["workers"],
        json!({"value": 5, "source": "file"})
    );
    // A bad project file is named as such.
    std::fs::write(dir.join("tf-spawner.yaml"), "wokers: 3\n").unwrap();
    run_in(&env, &below, &["config"])
        .failure(2)
        .stderr_has(&format!(
            "project file {}: unknown key 'wokers'; did you mean 'workers'?",
            dir.join("tf-spawner.yaml").display()
        ));
    std::fs::write(dir.join("tf-spawner.yaml"), "workers: 0\n").unwrap();
    run_in(&env, &below, &["config"])
        .failure(2)
        .stderr_has("project file ")
        .stderr_has("tf-spawner.yaml: key 'workers': ");
}

#[test]
fn paths_in_the_project_file_are_relative_to_it() {
    let env = Env::new();
    let dir = project(&env, "proj", "pod_file: pods/pod.yaml\ndir: .\n");
    std::fs::create_dir_all(dir.join("pods")).unwrap();
    std::fs::write(
        dir.join("pods/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    image: from/template:1\n",
    )
    .unwrap();
    std::fs::write(dir.join("train.py"), crate::support::SCRIPT).unwrap();
    let below = dir.join("sub");
    let got = config_in(&env, &below, &[]);
    assert_eq!(
        got["settings"]["pod_file"],
        json!({"value": dir.join("pods/pod.yaml"), "source": "project"})
    );
    let script = dir.join("train.py");
    let out = run_in(
        &env,
        &below,
        &["--dry-run", "-o", "json", script.to_str().unwrap()],
    );
    out.success();
    assert!(out.stdout.contains("\"from/template:1\""), "{out:#?}");
    // A script outside its `dir` names the project file.
    let elsewhere = env.write("elsewhere.py", "print(1)\n");
    run_in(&env, &below, &["-t", "out", elsewhere.to_str().unwrap()])
        .failure(2)
        .stderr_has(&format!(
            "(dir is set in project file {}; --dir DIR overrides it)",
            dir.join("tf-spawner.yaml").display()
        ));
}

/// A cloned repository must not run a program on this machine, nor point tf-spawner at
/// files outside itself, until its user trusts the file (`config --trust`, its path and
/// hash recorded beside the user's config; an edit untrusts it).
#[test]
fn a_project_file_runs_no_program_until_trusted() {
    let env = Env::new();
    let dir = project(&env, "proj", "workers: 2\npython: .venv/bin/python\n");
    // The interpreter it names leaves a mark when it runs.
    let python = dir.join(".venv/bin/python");
    std::fs::create_dir_all(python.parent().unwrap()).unwrap();
    let mark = env.path("ran");
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\necho ran >> {}\nexec python3 \"$@\"\n",
            mark.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("train.py"), "print('trained')\n").unwrap();
    let file = dir.join("tf-spawner.yaml");
    let refusal = format!(
        "error: project file {} sets python (a program this machine would run), which it may only once you trust it: read it, then run `tf-spawner config --trust` (or remove the key)\n",
        file.display()
    );
    for args in [
        &["status", "x"][..],
        &["--local", "-w", "1", "train.py"][..],
    ] {
        let out = run_in(&env, &dir, args);
        out.failure(2);
        assert_eq!(out.stderr, refusal);
    }
    assert!(!mark.exists(), "nothing ran");
    // `config` shows it, and the key unused.
    run_in(&env, &dir, &["config"])
        .success()
        .stdout_has("(not trusted: python not used; read it, then tf-spawner config --trust)");
    let got = config_in(&env, &dir, &[]);
    assert_eq!(got["project_trusted"], false);
    assert_eq!(got["project_untrusted_keys"], json!(["python"]));
    assert_eq!(
        got["settings"]["python"],
        json!({"value": "python3", "source": "default"})
    );

    let out = run_in(&env, &dir.join("sub"), &["config", "--trust"]);
    out.success()
        .stdout_has(&format!("trusted {} as it is now (sha256:", file.display()));
    let store = read(&env.path(".config/tf-spawner/trusted"));
    assert!(
        store.ends_with(&format!(" {}\n", file.display())),
        "{store}"
    );
    let got = config_in(&env, &dir, &[]);
    assert_eq!(got["project_trusted"], true);
    assert_eq!(
        got["settings"]["python"],
        json!({"value": python, "source": "project"})
    );
    run_in(&env, &dir, &["--local", "-w", "1", "train.py"])
        .success()
        .stdout_has("trained");
    assert_eq!(read(&mark), "ran\n");

    // An edit untrusts it; trusting again replaces the record.
    std::fs::write(&file, "workers: 1\npython: .venv/bin/python\n").unwrap();
    run_in(&env, &dir, &["status", "x"]).failure(2);
    run_in(&env, &dir, &["config", "--trust"]).success();
    assert_eq!(
        read(&env.path(".config/tf-spawner/trusted"))
            .lines()
            .count(),
        1
    );
    run_in(&env, &dir, &["--local", "-w", "1", "train.py"]).success();

    // A path out of the project is refused the same way; inside it is not.
    let other = project(&env, "other", "pod_file: ../proj/pod.yaml\n");
    run_in(&env, &other, &["config"]).success();
    run_in(&env, &other, &["status", "x"])
        .failure(2)
        .stderr_has(&format!(
            "sets pod_file ({}/../proj/pod.yaml, outside the project)",
            other.display()
        ));
    let inside = project(&env, "inside", "pod_file: sub/../pod.yaml\n");
    let got = config_in(&env, &inside, &[]);
    assert_eq!(got["project_untrusted_keys"], json!([]));
    // No project file: nothing to trust.
    run_in(&env, env.dir.path(), &["config", "--trust"])
        .failure(2)
        .stderr_has("there is no tf-spawner.yaml here or in a parent directory");
}

/// The README's step 2: `--python .venv/bin/python` in a project whose tf-spawner.yaml
/// ships it (`dir: .`): the relative interpreter is this directory's, not the unpacked
/// copy's the tasks run in.
#[test]
fn a_relative_python_is_the_invocations_with_dir() {
    let env = Env::new();
    let dir = project(&env, "proj", "dir: .\n");
    let python = dir.join("bin/py");
    std::fs::create_dir_all(python.parent().unwrap()).unwrap();
    let mark = env.path("ran");
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\necho ran >> {}\nexec python3 \"$@\"\n",
            mark.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("train.py"), "print('trained')\n").unwrap();
    run_in(
        &env,
        &dir,
        &["--local", "-w", "1", "--python", "bin/py", "train.py"],
    )
    .success()
    .stdout_has("trained");
    assert_eq!(read(&mark), "ran\n");
}
