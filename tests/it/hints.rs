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
