//! Issue 51: where the tool knows the cause of a mistake, its one line names the fix.

use crate::support::Env;

#[test]
fn a_misspelled_containers_field_is_named_in_the_error() {
    let env = Env::new();
    let pod = env.write(
        "typo.yaml",
        "apiVersion: v1\nkind: Pod\nspec:\n  contaners:\n  - name: tensorflow\n    image: x\n",
    );
    let out = env.spawn(&["-t", "typo", "--pod-file", pod.to_str().unwrap()]);
    out.failure(2).stderr_has(&format!(
        "error: pod template {} has no containers: spec.contaners is not a field of a Pod; did you mean `spec.containers`?",
        pod.display()
    ));
    assert!(env.server.requests().is_empty(), "no API call");
}

#[test]
fn a_template_restart_policy_other_than_never_is_refused_in_one_line() {
    let env = Env::new();
    for policy in ["Always", "OnFailure"] {
        let pod = env.write(
            "restart.yaml",
            format!(
                "apiVersion: v1\nkind: Pod\nspec:\n  restartPolicy: {policy}\n  containers:\n  - name: tensorflow\n"
            ),
        );
        let out = env.spawn(&["-t", "again", "--pod-file", pod.to_str().unwrap()]);
        out.failure(2).stderr_has(&format!(
            "error: pod template {}: spec.restartPolicy is {policy}; tf-spawner needs Never (remove the line)",
            pod.display()
        ));
        assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    }
    assert!(env.server.requests().is_empty(), "no API call");
}
