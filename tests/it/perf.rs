//! Request counts of large runs (timings belong to `cargo bench --bench spawn_delete`)
//! and `-d --wait`.

use serde_json::json;

use crate::support::Env;

/// Methods of the requests the server saw, counted.
fn count(env: &Env, method: &str) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.method == method)
        .count()
}

#[test]
fn spawn_sends_one_create_per_object_and_delete_one_delete_per_object() {
    let env = Env::new();
    for (tag, workers) in [("small", 1), ("large", 100)] {
        env.server.clear_requests();
        env.spawn(&["-t", tag, "-w", &workers.to_string()])
            .success();
        // The quotas and the nodes (docs/resources.md; no node here, so no list of pods),
        // five lists (is the tag free? the supervisors' Jobs too), then the config map,
        // the services, the pods, and one GET: is the ConfigMap still there (a `-d` at the
        // same time)?
        assert_eq!(count(&env, "GET"), 8, "{tag}");
        assert_eq!(count(&env, "POST"), 1 + 2 * workers, "{tag}");
        assert_eq!(env.server.requests().len(), 8 + 1 + 2 * workers, "{tag}");

        env.server.clear_requests();
        env.run(&["-d", "-y", "-t", tag])
            .success()
            .stdout_has(&format!("deleted pod/{tag}-worker-{}", workers - 1));
        // A list of the pods' and the services' names and one DELETE each (faster than a
        // collection DELETE on a real server: see src/cluster/remove.rs), and the config
        // map's collection DELETE; and, whatever the ConfigMap records (issue 49), one
        // collection DELETE each of secrets, NetworkPolicies and both PodGroup kinds; and
        // first the supervisors' Jobs' (`--detach`: none here, so nothing more).
        let requests = env.server.requests();
        assert_eq!(count(&env, "GET"), 2, "{tag}: {requests:?}");
        assert_eq!(
            count(&env, "DELETE"),
            6 + 2 * workers,
            "{tag}: {requests:?}"
        );
        assert_eq!(requests.len(), 8 + 2 * workers, "{tag}: {requests:?}");
    }
    assert!(env.names("default").is_empty());
}

/// Pods of the run bound to a node: a DELETE leaves them terminating for a while.
fn seed_pods_on_a_node(env: &Env, tag: &str, n: usize) {
    for i in 0..n {
        env.server.insert(
            "pods",
            "default",
            json!({"metadata": {"name": format!("{tag}-worker-{i}"),
                                "labels": {"training_attempt": tag}},
                   "spec": {"nodeName": "node-1",
                            "containers": [{"name": "tensorflow", "image": "busybox"}]}}),
        );
    }
}

#[test]
fn delete_wait_returns_once_the_terminating_pods_are_gone() {
    let env = Env::new();
    seed_pods_on_a_node(&env, "slow", 2);
    env.server.clear_requests();
    env.run(&["-d", "-y", "--wait", "-t", "slow"])
        .success()
        .stdout_has("deleted pod/slow-worker-1")
        .stdout_has("2 pods of run 'slow' terminated")
        .stderr_has("waiting for 2 pods to terminate…");
    assert!(env.list("pods", "default").is_empty());
    // The pods one by one after a list, the services' list (empty), the collection
    // deletes of config maps and secrets (no config map says the run has none), of
    // both PodGroup kinds (nor whether it has a gang: 404 here, no such API) and of
    // network policies (nor whether it has one); then one list and one watch, whatever
    // the number of pods; and first the supervisors' Jobs' collection DELETE.
    assert_eq!(count(&env, "DELETE"), 1 + 2 + 2 + 2 + 1);
    let gets = count(&env, "GET");
    assert!((3..=5).contains(&gets), "{:?}", env.server.requests());
}

#[test]
fn delete_wait_with_nothing_lingering_costs_one_list() {
    let env = Env::new();
    env.spawn(&["-t", "quick", "-w", "3"]).success();
    env.server.clear_requests();
    let out = env.run(&["-d", "-y", "--wait", "-t", "quick"]);
    out.success().stdout_has("deleted pod/quick-worker-2");
    assert!(!out.stderr.contains("waiting"), "{out:#?}");
    // 3 pods and 3 services one by one, the config map's collection DELETE and those of
    // secrets, NetworkPolicies and both PodGroup kinds (by label); the lists of pods and
    // services, and the one list of the wait; and first the supervisors' Jobs'.
    assert_eq!(count(&env, "DELETE"), 1 + 3 + 3 + 1 + 4);
    assert_eq!(count(&env, "GET"), 3);
    assert!(env.names("default").is_empty());
}

#[test]
fn delete_wait_gives_up_at_the_timeout() {
    let env = Env::new();
    seed_pods_on_a_node(&env, "stuck", 1);
    // The test server keeps a terminating pod for about a second.
    let out = env.run(&["-d", "-y", "--wait", "--timeout", "10ms", "-t", "stuck"]);
    assert_eq!(out.code, 4, "{out:#?}");
    // The progress line, then the error as the last line.
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("error: timed out after 10ms"), "{out:#?}");
    assert!(last.contains("kubectl get pods -n default -l training_attempt=stuck"));
}
