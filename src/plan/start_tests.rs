//! The steps of a task's command: their order, and the wait for the cluster's names run
//! for real (its file run by python3 and bash, as in a pod).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::*;
use crate::plan::OutputVolume;
use crate::plan::tests::request;
use crate::plan::wait_for_names::{
    PY as WAIT_FOR_NAMES_PY, SH as WAIT_FOR_NAMES_SH, file as wait_for_names_file,
};
use crate::roles::Roles;

/// The variable that bounds the wait for the cluster's names, in seconds (0: no wait).
const WAIT_FOR_NAMES_VAR: &str = "TF_SPAWNER_WAIT_FOR_NAMES";

/// Every word of the command, the `-c` programs named by their step.
fn words(req: &SpawnRequest) -> Vec<String> {
    tf_command(req)
        .into_iter()
        .map(|w| match w.as_str() {
            MAKE_OUTPUT_DIR_PY | MAKE_OUTPUT_DIR_SH => "MKDIR".to_string(),
            UNPACK_AND_EXEC => "UNPACK".to_string(),
            _ => w,
        })
        .collect()
}

#[test]
fn every_command_waits_for_the_names_first_then_makes_the_folder_then_runs() {
    let mut req = request(Roles::workers(2).unwrap());
    assert_eq!(
        words(&req),
        [
            "python",
            "/script/wait-for-names.py",
            "python",
            "/script/training-script.py"
        ]
    );
    assert_eq!(
        wait_for_names_file(&req),
        ("wait-for-names.py", WAIT_FOR_NAMES_PY)
    );
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/output".into(),
        folder: None,
    });
    assert_eq!(
        words(&req)[2..],
        [
            "python",
            "-c",
            "MKDIR",
            "python",
            "/script/training-script.py"
        ]
    );
}

#[test]
fn an_entrypoint_waits_in_bash_and_dir_unpacks_after_the_wait() {
    let mut req = request(Roles::workers(2).unwrap());
    req.volume = Some(OutputVolume {
        claim: "results".into(),
        path: "/output".into(),
        folder: None,
    });
    req.entrypoint = Some(b"exec python \"$@\"\n".to_vec());
    assert_eq!(
        words(&req),
        [
            "bash",
            "/script/wait-for-names.sh",
            "bash",
            "-c",
            "MKDIR",
            "tf-spawner",
            "bash",
            "/script/entrypoint.sh"
        ]
    );
    assert_eq!(
        wait_for_names_file(&req),
        ("wait-for-names.sh", WAIT_FOR_NAMES_SH)
    );
    req.entrypoint = None;
    req.volume = None;
    req.bundle = Some(crate::bundle::Bundle {
        archive: Vec::new(),
        script: "src/train.py".into(),
        files: 1,
        left_out: Vec::new(),
    });
    assert_eq!(
        words(&req)[2..],
        [
            "python",
            "-c",
            "UNPACK",
            "python",
            "/tf-spawner-work/src/train.py"
        ]
    );
}

/// Runs the step's file, `program FILE echo ran`, with `cluster` and `limit`, as a pod
/// would.
fn run_step(program: &str, step: &str, cluster: &str, limit: Option<&str>) -> (Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wait-for-names");
    std::fs::write(&file, step).unwrap();
    let mut cmd = Command::new(program);
    cmd.arg(&file)
        .args(["echo", "ran"])
        .env("TF_SPAWNER_CLUSTER", cluster)
        // A missing name is answered at once by any resolver; bound it where none answers.
        .env("RES_OPTIONS", "timeout:1 attempts:1")
        .env_remove(WAIT_FOR_NAMES_VAR);
    if let Some(limit) = limit {
        cmd.env(WAIT_FOR_NAMES_VAR, limit);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap_or_else(|e| panic!("{program}: {e}"));
    (out, started.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn has_getent() -> bool {
    Command::new("bash")
        .args(["-c", "command -v getent"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn names_that_resolve_start_the_command_at_once_and_silently() {
    let cluster = r#"{"worker":["localhost:2222","localhost:2223"],"ps":["127.0.0.1:2224"]}"#;
    for (program, step) in [("python3", WAIT_FOR_NAMES_PY), ("bash", WAIT_FOR_NAMES_SH)] {
        let (out, _) = run_step(program, step, cluster, Some("30"));
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
        assert_eq!(text(&out.stderr), "", "{program}");
    }
}

#[test]
fn without_a_bound_nothing_is_looked_up() {
    let cluster = r#"{"worker":["no-such-task.invalid:2222"]}"#;
    for (program, step) in [("python3", WAIT_FOR_NAMES_PY), ("bash", WAIT_FOR_NAMES_SH)] {
        let (out, _) = run_step(program, step, cluster, None);
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
        assert_eq!(text(&out.stderr), "", "{program}");
    }
}

#[test]
fn a_name_that_never_resolves_is_named_at_the_bound_and_the_command_runs_anyway() {
    let cluster = r#"{"worker":["localhost:2222","no-such-task.invalid:2222"]}"#;
    let mut steps = vec![("python3", WAIT_FOR_NAMES_PY)];
    if has_getent() {
        steps.push(("bash", WAIT_FOR_NAMES_SH));
    }
    for (program, step) in steps {
        let (out, took) = run_step(program, step, cluster, Some("2"));
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
        // The seconds waited, at least the bound (more where a lookup is slow).
        let err = text(&out.stderr);
        let waited = err
            .strip_prefix("tf-spawner: no-such-task.invalid not found in DNS after ")
            .and_then(|rest| rest.strip_suffix(" s; starting anyway\n"))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(waited.is_some_and(|n| n >= 2), "{program}: {err}");
        assert!(took >= Duration::from_secs(1), "{program} waited {took:?}");
    }
}

#[test]
fn a_bound_of_0_starts_the_command_without_looking_up_any_name() {
    let cluster = r#"{"worker":["no-such-task.invalid:2222"]}"#;
    for (program, step) in [("python3", WAIT_FOR_NAMES_PY), ("bash", WAIT_FOR_NAMES_SH)] {
        let (out, _) = run_step(program, step, cluster, Some("0"));
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
        assert_eq!(text(&out.stderr), "", "{program}");
    }
}

#[test]
fn a_bound_that_is_not_a_number_is_said_once_and_nothing_is_waited_for() {
    let cluster = r#"{"worker":["localhost:2222"]}"#;
    for (program, step, said) in [
        ("python3", WAIT_FOR_NAMES_PY, "a number of seconds"),
        ("bash", WAIT_FOR_NAMES_SH, "a whole number of seconds"),
    ] {
        let (out, _) = run_step(program, step, cluster, Some("soon"));
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
        assert_eq!(
            text(&out.stderr),
            format!("tf-spawner: TF_SPAWNER_WAIT_FOR_NAMES is not {said}; not waiting\n"),
            "{program}"
        );
    }
    // A cluster it cannot read is not waited for: the command runs.
    for (program, step) in [("python3", WAIT_FOR_NAMES_PY), ("bash", WAIT_FOR_NAMES_SH)] {
        let (out, _) = run_step(program, step, "not json", None);
        assert!(out.status.success(), "{program}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{program}");
    }
}
