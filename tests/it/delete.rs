//! Deleting a run: by label, nothing else, with or without collection deletes.

use kube_testserver::Options;
use serde_json::json;

use crate::support::Env;

fn seed_unrelated(env: &Env) {
    // An unlabelled pod and a config map that merely look like a run's objects.
    env.server.insert(
        "pods",
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keep-worker-0"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    env.server.insert(
        "configmaps",
        "default",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "keep-script", "labels": {"training_attempt": "keepx"}}}),
    );
}

#[test]
fn delete_removes_the_run_and_leaves_others_untouched() {
    let env = Env::new();
    seed_unrelated(&env);
    let file = env.write("e.env", "A=1\n");
    env.spawn(&["-t", "one", "-e", file.to_str().unwrap()])
        .success();
    env.spawn(&["-t", "two"]).success();
    let two_before = env
        .names("default")
        .into_iter()
        .filter(|n| n.contains("/two-"))
        .count();

    let out = env.run(&["-d", "-t", "one"]);
    out.success()
        .stdout_has("deleted pod/one-worker-0")
        .stdout_has("deleted service/one-worker-1")
        .stdout_has("deleted configmap/one-script")
        .stdout_has("deleted secret/one-env");
    let left = env.names("default");
    assert!(left.iter().all(|n| !n.contains("/one-")), "{left:?}");
    assert_eq!(
        left.iter().filter(|n| n.contains("/two-")).count(),
        two_before
    );
    assert!(left.contains(&"pod/keep-worker-0".to_string()));
    assert!(left.contains(&"configmap/keep-script".to_string()));
}

#[test]
fn delete_lists_pods_and_services_and_deletes_them_one_by_one_with_their_uid() {
    let env = Env::new();
    let envfile = env.write("e.env", "K=v\n");
    env.spawn(&["-t", "col", "-w", "5", "-e", envfile.to_str().unwrap()])
        .success();
    env.server.clear_requests();
    env.run(&["-d", "-t", "col"]).success();
    let requests = env.server.requests();
    let count = |method: &str, suffix: &str, selector: bool| {
        requests
            .iter()
            .filter(|r| {
                r.method == method
                    && r.path.contains(suffix)
                    && r.query.contains("labelSelector") == selector
            })
            .count()
    };
    // Pods and services: one list (by the run's label) and one DELETE each.
    assert_eq!(count("GET", "/pods", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/pods/", false), 5, "{requests:?}");
    assert_eq!(count("GET", "/services", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/services/", false), 5, "{requests:?}");
    // Config map and secret: one collection DELETE each.
    assert_eq!(count("DELETE", "/configmaps", true), 1, "{requests:?}");
    assert_eq!(count("DELETE", "/secrets", true), 1, "{requests:?}");
    assert_eq!(requests.len(), 14, "{requests:?}");
    assert!(env.names("default").is_empty());
}

#[test]
fn delete_falls_back_when_services_refuse_collection_delete() {
    let env = Env::with(Options {
        collection_delete_services: false,
        single_delete_returns_status: true,
        ..Options::default()
    });
    seed_unrelated(&env);
    env.spawn(&["-t", "old", "-w", "3"]).success();
    env.run(&["-d", "-t", "old"])
        .success()
        .stdout_has("deleted service/old-worker-2");
    assert_eq!(
        env.names("default"),
        ["configmap/keep-script", "pod/keep-worker-0"]
    );
}

#[test]
fn delete_needs_no_template_or_script_and_nothing_to_delete_is_fine() {
    let env = Env::new();
    let out = env.run(&["-d", "-t", "ghost"]);
    out.success()
        .stdout_has("nothing labelled training_attempt=ghost in namespace default");
    // The default tag, -y accepted.
    env.spawn(&[]).success();
    env.run(&["-d", "-y"])
        .success()
        .stdout_has("deleted pod/tf-spawner-worker-0");
    assert!(env.names("default").is_empty());
}

#[test]
fn delete_in_another_namespace() {
    let env = Env::new();
    env.server.create_namespace("ns2");
    env.spawn(&["-t", "a", "-n", "ns2"]).success();
    env.spawn(&["-t", "a"]).success();
    env.run(&["-d", "-t", "a", "-n", "ns2"]).success();
    assert!(env.names("ns2").is_empty());
    assert_eq!(env.names("default").len(), 5);
}

#[test]
fn delete_refuses_random_tag() {
    let env = Env::new();
    env.run(&["-d", "-r"]).failure(2).stderr_has("-r");
}
