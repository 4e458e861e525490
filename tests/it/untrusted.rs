//! Issue 57, items 2 and 4: what someone else wrote is not the user's word. A project
//! file another user could have written is ignored until trusted; the lows of the third
//! probe (trust lines, `init` through a symlink, userinfo, placeholders, annotations that
//! name paths, completion candidates).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Env, Output, run};

fn run_in(env: &Env, dir: &Path, args: &[&str]) -> Output {
    run(env.cmd().current_dir(dir).args(args))
}

/// A project directory `name` whose tf-spawner.yaml sends runs elsewhere.
fn planted(env: &Env, name: &str) -> (PathBuf, PathBuf) {
    let dir = env.path(name);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let file = dir.join("tf-spawner.yaml");
    std::fs::write(&file, "namespace: evil\nworkers: 3\n").unwrap();
    (dir, file)
}

fn config(out: &Output) -> Value {
    out.success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:#?}"))
}

/// A project file owned by another user (the tests run as root: chown'd to uid 12345) is
/// ignored whole, with one line naming it and the fix, until `config --trust`; a spawn
/// below it goes where the user's own settings say (on main it went to the file's
/// namespace with its worker count, nothing said).
#[test]
fn a_project_file_of_another_user_is_ignored_until_trusted() {
    let env = Env::new();
    let (dir, file) = planted(&env, "shared");
    std::os::unix::fs::chown(&file, Some(12345), None).unwrap();
    let out = run_in(&env, &dir.join("sub"), &["config", "-o", "json"]);
    let got = config(&out);
    assert_eq!(
        out.stderr,
        format!(
            "warning: project file {} is ignored: it is owned by another user (uid 12345; you are {}); if you wrote it or have read it, run `tf-spawner config --trust` in {} to use it\n",
            file.display(),
            rustix_uid(),
            dir.display()
        )
    );
    assert_eq!(got["settings"]["namespace"]["value"], json!("default"));
    assert_eq!(got["settings"]["workers"]["source"], json!("default"));
    assert_eq!(got["project_file"], json!(file));
    assert!(
        got["project_ignored"]
            .as_str()
            .unwrap()
            .contains("uid 12345")
    );

    // A spawn below it: the user's namespace, the built-in 2 workers, not the file's 3.
    let script = env.script();
    let out = run_in(
        &env,
        &dir.join("sub"),
        &["-t", "own", script.to_str().unwrap()],
    );
    out.success()
        .stderr_has("is ignored: it is owned by another user");
    assert_eq!(env.names("evil"), Vec::<String>::new());
    assert_eq!(env.list("pods", "default").len(), 2);

    // Trusted, it is used (its hash recorded: an edit by its owner untrusts it).
    run_in(&env, &dir, &["config", "--trust"]).success();
    let out = run_in(&env, &dir.join("sub"), &["config", "-o", "json"]);
    let got = config(&out);
    assert_eq!(out.stderr, "");
    assert_eq!(
        got["settings"]["workers"],
        json!({"value": 3, "source": "project"})
    );
    std::fs::write(&file, "namespace: evil\nworkers: 4\n").unwrap();
    let out = run_in(&env, &dir.join("sub"), &["config", "-o", "json"]);
    assert_eq!(
        config(&out)["settings"]["workers"]["source"],
        json!("default")
    );
    assert!(out.stderr.contains("is ignored"), "{out:#?}");
}

/// A project file of the user's own in a directory anyone may write without the sticky
/// bit (anyone could have put it there, or swap it) is ignored; with the sticky bit, as
/// /tmp has, it is the user's.
#[test]
fn a_project_file_in_a_world_writable_directory_is_ignored_unless_sticky() {
    let env = Env::new();
    let (dir, file) = planted(&env, "open");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_in(&env, &dir.join("sub"), &["config", "-o", "json"]);
    let got = config(&out);
    assert_eq!(
        out.stderr,
        format!(
            "warning: project file {} is ignored: anyone may write its directory {} (mode 777, no sticky bit) and replace it; if you wrote it or have read it, run `tf-spawner config --trust` in {} to use it\n",
            file.display(),
            dir.display(),
            dir.display()
        )
    );
    assert_eq!(got["settings"]["namespace"]["value"], json!("default"));
    let out = run_in(&env, &dir, &["config"]);
    out.success().stdout_has(&format!(
        "project file: {} (ignored: anyone may write its directory",
        file.display()
    ));

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = run_in(&env, &dir.join("sub"), &["config", "-o", "json"]);
    let got = config(&out);
    assert_eq!(out.stderr, "");
    assert_eq!(
        got["settings"]["namespace"],
        json!({"value": "evil", "source": "project"})
    );
}

fn rustix_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `config --trust` in a directory whose name holds a newline and a record line of its
/// own is refused in one line, and no line trusts the other path (on main the records
/// file got `sha256:… /…/x` and then the forged line, trusting the victim's file).
#[test]
fn a_trust_line_cannot_be_injected_by_a_newline_in_a_path() {
    let env = Env::new();
    let victim = env.path("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let forged = format!("x\nsha256:0000 {}/tf-spawner.yaml\ny", victim.display());
    let dir = env.path(&forged);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tf-spawner.yaml"), "workers: 1\n").unwrap();
    let out = run_in(&env, &dir, &["config", "--trust"]);
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("its path has a control character (a newline, a tab…); move the project to a path without one");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    let records = env.path(".config/tf-spawner/trusted");
    assert!(!records.exists(), "{:?}", std::fs::read_to_string(&records));
}

/// `init --force` replaces a planted symlink with the file, never writing through it
/// (on main `train.py -> ~/.bashrc` got the template written into the target).
#[test]
fn init_force_never_writes_through_a_symlink() {
    let env = Env::new();
    let target = env.write("bashrc", "export PS1='$ '\n");
    let exp = env.path("exp");
    std::fs::create_dir_all(&exp).unwrap();
    std::os::unix::fs::symlink(&target, exp.join("train.py")).unwrap();
    let out = env.run(&["init", "exp"]);
    assert_eq!(out.code, 2, "{out:#?}");
    out.stderr_has("exp/train.py exists");
    env.run(&["init", "--force", "exp"]).success();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "export PS1='$ '\n"
    );
    let meta = std::fs::symlink_metadata(exp.join("train.py")).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert!(
        std::fs::read_to_string(exp.join("train.py"))
            .unwrap()
            .contains("import")
    );
    let left: Vec<String> = std::fs::read_dir(&exp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tf-spawner-init"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `--notify URL`'s `user:password@` is never shown: not by `config` (table and JSON).
#[test]
fn a_notify_urls_password_is_never_shown() {
    let env = Env::new();
    let file = env.defaults_file("notify: https://bot:s3cret@hooks.example.com/T0/B1\n");
    for args in [&["config"][..], &["config", "-o", "json"]] {
        let out = run(env.cmd().env("TF_SPAWNER_CONFIG", &file).args(args));
        out.success().stdout_has("https://hooks.example.com/…");
        assert!(
            !out.stdout.contains("s3cret") && !out.stdout.contains("bot"),
            "{out:#?}"
        );
    }
}

/// The run's recorded volume (`tf-spawner/volume`, `tf-spawner/volume-folder` on its
/// ConfigMap) is checked as `--volume` and `cp` check paths: a mount path over the helper
/// image's programs, or a folder that would add a run to TensorBoard's `--logdir_spec`,
/// is refused in one line and no helper pod is made (on main `tensorboard` served
/// `/etc` as a run and `cp` mounted the claim over `/usr/local/bin`).
#[test]
fn a_recorded_volume_that_names_other_paths_is_refused() {
    let env = Env::new();
    env.server.insert(
        "persistentvolumeclaims",
        "default",
        json!({
            "metadata": {"name": "out"},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]}
        }),
    );
    env.spawn(&["-t", "v", "-w", "1", "--volume", "out"])
        .success();
    let edit = |key: &str, value: &str| {
        let mut cm = env.server.get("configmaps", "default", "v-script").unwrap();
        cm["metadata"]["annotations"][key] = json!(value);
        env.server.insert("configmaps", "default", cm);
    };
    let refused = |out: Output, why: &str| {
        assert_eq!(out.code, 1, "{out:#?}");
        out.stderr_has(&format!(
            "error: run 'v': the volume recorded on configmap/v-script is refused: {why}"
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    };
    edit("tf-spawner/volume-folder", "v,evil:/etc");
    refused(
        env.run(&["tensorboard", "-t", "v"]),
        "its folder \"v,evil:/etc\" is not a run's tag",
    );
    refused(env.run(&["cp", "-t", "v", "model", "m"]), "its folder");
    edit("tf-spawner/volume-folder", "v");
    edit("tf-spawner/volume", "out:/usr/local/bin");
    refused(
        env.run(&["cp", "-t", "v", "model", "m"]),
        "its mount path /usr/local/bin is in /usr, where the helper pod's programs are",
    );
    edit("tf-spawner/volume", "out:/script");
    refused(
        env.run(&["cp", "-t", "v", "model", "m"]),
        "\"out:/script\" is not CLAIM:PATH as tf-spawner writes it (tf-spawner never records that",
    );
    let pods: Vec<String> = env
        .names("default")
        .into_iter()
        .filter(|n| n.contains("-cp-") || n.contains("tensorboard"))
        .collect();
    assert!(pods.is_empty(), "{pods:?}");
}

/// A template's own mount where tf-spawner mounts the script (always) or the writable
/// HOME (`--run-as-user`) gives way to tf-spawner's, and says so in one line each (on
/// main it was dropped without a word); the pod has tf-spawner's mount there.
#[test]
fn a_template_mount_where_tf_spawner_mounts_is_said() {
    let env = Env::new();
    let template = env.write(
        "mounts.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    image: tf\n    volumeMounts:\n    - {name: code, mountPath: /script/}\n    - {name: home, mountPath: //home/tf-spawner}\n  volumes:\n  - {name: code, emptyDir: {}}\n  - {name: home, emptyDir: {}}\n",
    );
    let file = template.to_str().unwrap();
    let out = env.spawn(&[
        "-t",
        "m",
        "--pod-file",
        file,
        "-w",
        "1",
        "--run-as-user",
        "1000",
    ]);
    out.success()
        .stderr_has(&format!("warning: pod template {file}: spec.containers[0].volumeMounts: code at /script is where tf-spawner mounts the script, and is left out (mount it at another path to keep it)"))
        .stderr_has(&format!("warning: pod template {file}: spec.containers[0].volumeMounts: home at /home/tf-spawner is where tf-spawner mounts the writable HOME of --run-as-user, and is left out"));
    let pod = env.server.get("pods", "default", "m-worker-0").unwrap();
    let mounts: Vec<(String, String)> = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().into(),
                m["mountPath"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        !mounts.iter().any(|(n, _)| n == "code" || n == "home"),
        "{mounts:?}"
    );
    // Without --run-as-user, nothing of tf-spawner's is at /home/tf-spawner: kept, unsaid.
    let out = env.spawn(&["-t", "n", "--pod-file", file, "-w", "1"]);
    out.success();
    assert!(!out.stderr.contains("/home/tf-spawner"), "{out:#?}");
}
