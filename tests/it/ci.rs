//! What a CI pipeline needs (issue 51 item 5): a valid tag from any CI variable, the
//! summary with `-q -o json`, exit codes it can branch on, a clear line in a pod that
//! has no service account token.

use serde_json::Value;

use crate::support::Env;

#[test]
fn tag_from_makes_a_valid_tag_of_any_ci_variable() {
    let env = Env::new();
    // A short commit SHA that starts with a digit (10 times in 16): a tag all the same.
    env.spawn(&["-q", "--tag-from", "0a1b2c3", "-w", "1"])
        .success()
        .stdout_has("run-0a1b2c3\n");
    assert!(
        env.names("default")
            .contains(&"pod/run-0a1b2c3-worker-0".to_string())
    );
    // A branch name as the prefix of a random tag.
    let out = env.spawn(&["-q", "-r", "--tag-from", "feature/New_Thing", "-w", "1"]);
    out.success();
    let tag = out.stdout.trim();
    assert!(
        tag.starts_with("feature-new-thing-") && tag.len() == 26,
        "{out:#?}"
    );
    // The same text names the run for -d.
    env.run(&["-d", "--tag-from", "0a1b2c3"])
        .success()
        .stdout_has("deleted pod/run-0a1b2c3-worker-0");
    // Nothing to make a tag of: a usage error, before any call.
    env.server.clear_requests();
    env.spawn(&["--tag-from", "/_/"])
        .failure(2)
        .stderr_has("--tag-from \"/_/\" has no letter or digit to make a tag of");
    env.spawn(&["--tag-from", "x", "-t", "y"]).failure(2);
    assert!(env.server.requests().is_empty());
}

#[test]
fn quiet_json_is_the_summary_and_a_taken_tag_is_exit_7() {
    let env = Env::new();
    let out = env.spawn(&["-q", "-o", "json", "-t", "qj", "-w", "1"]);
    out.success();
    let json: Value = serde_json::from_str(&out.stdout).expect("JSON, not the bare tag");
    assert_eq!(json["tag"], "qj");
    assert_eq!(json["created"].as_array().map(Vec::len), Some(3));
    assert_eq!(out.stderr, "");
    // The tag is taken: 7, apart from an API error (1) and a usage error (2).
    let out = env.spawn(&["-t", "qj", "-w", "1"]);
    out.failure(7).stderr_has("run 'qj' already exists");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
}

#[test]
fn a_pod_without_a_service_account_token_says_so() {
    // On a machine that is a pod with a token, kube's in-cluster config finds it.
    if std::path::Path::new("/var/run/secrets/kubernetes.io/serviceaccount/token").exists() {
        return;
    }
    let env = Env::new();
    let out = crate::support::run(
        env.cmd()
            .env_remove("KUBECONFIG")
            .env("KUBERNETES_SERVICE_HOST", "10.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", "443")
            .args(["list"]),
    );
    out.failure(1).stderr_has(
        "this is a pod (KUBERNETES_SERVICE_HOST is set) without a service account token at /var/run/secrets/kubernetes.io/serviceaccount/token",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
}

#[test]
fn spawn_wait_takes_all_workers_where_it_waits_for_a_verdict() {
    let env = Env::new();
    // Without --restarts, spawn --wait waits until every pod runs: no verdict to decide.
    env.spawn(&["-t", "aw", "--wait", "--all-workers"])
        .failure(2)
        .stderr_has("--all-workers decides a verdict, and spawn --wait waits for one only with --restarts N");
    assert_eq!(env.server.object_count(), 0);
    // Without --wait: clap names the flag it needs.
    env.spawn(&["-t", "aw", "--all-workers"]).failure(2);
    // With --restarts it is the wait's: it reaches the verdict (here: --timeout).
    let out = env.spawn(&[
        "-t",
        "aw",
        "--wait",
        "--restarts",
        "1",
        "--all-workers",
        "--timeout",
        "1s",
    ]);
    assert_eq!(out.code, 4, "{out:#?}");
}
