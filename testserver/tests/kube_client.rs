//! The test server driven by the real `kube` client over TLS, as tf-spawner uses it.

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_testserver::{Fault, Options, TestServer, User};
use serde_json::json;

async fn client(server: &TestServer, user: &str, ns: Option<&str>) -> (Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = server.write_kubeconfig(dir.path(), user, ns);
    let kc = Kubeconfig::read_from(&path).unwrap();
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.read_timeout = Some(Duration::from_secs(5));
    (Client::try_from(config).unwrap(), dir)
}

fn pod(name: &str, attempt: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "labels": { "training_attempt": attempt, "app": "tf" } },
        "spec": { "restartPolicy": "Never", "containers": [{
            "name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0",
            "ports": [{ "name": "tfjob-port", "containerPort": 2222 }],
            "env": [{ "name": "TF_CONFIG", "value": "{}" }],
            "resources": { "requests": { "cpu": "500m", "memory": "512Mi" }, "limits": { "cpu": "1", "memory": "1Gi" } }
        }] }
    }))
    .unwrap()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_list_delete_over_tls() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", Some("default")).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for (name, attempt) in [("a-0", "run1"), ("a-1", "run1"), ("b-0", "run2")] {
        let created = pods
            .create(&PostParams::default(), &pod(name, attempt))
            .await
            .unwrap();
        let meta = &created.metadata;
        assert!(
            meta.uid.is_some()
                && meta.resource_version.is_some()
                && meta.creation_timestamp.is_some()
        );
        let status = created.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        assert_eq!(status.qos_class.as_deref(), Some("Burstable"));
    }
    let dup = api_error(
        pods.create(&PostParams::default(), &pod("a-0", "run1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "pods \"a-0\" already exists");

    let run1 = pods
        .list(&ListParams::default().labels("training_attempt=run1"))
        .await
        .unwrap();
    assert_eq!(run1.items.len(), 2);
    let others = pods
        .list(&ListParams::default().labels("training_attempt notin (run1),app"))
        .await
        .unwrap();
    assert_eq!(others.items.len(), 1);
    let missing = api_error(pods.get("nope").await.unwrap_err());
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "pods \"nope\" not found")
    );

    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(json!({
        "metadata": { "name": "a-0", "labels": { "training_attempt": "run1" } },
        "spec": { "clusterIP": "None", "selector": { "training_attempt": "run1" }, "ports": [{ "port": 2222 }] }
    }))
    .unwrap();
    let svc = services.create(&PostParams::default(), &svc).await.unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.ports.unwrap()[0].protocol.as_deref(), Some("TCP"));

    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "creds" }, "stringData": { "token": "abc" }
    }))
    .unwrap();
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["token"].0, b"abc");
    assert!(secret.string_data.is_none());

    // dryRun stores nothing
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    pods.create(&dry, &pod("dry", "run1")).await.unwrap();
    assert!(server.get("pods", "default", "dry").is_none());
    assert_eq!(server.object_count(), 5);

    let deleted = pods
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("training_attempt=run1"),
        )
        .await
        .unwrap();
    assert_eq!(deleted.left().unwrap().items.len(), 2);
    services
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("training_attempt=run1"),
        )
        .await
        .unwrap();
    let gone = services
        .delete("creds", &DeleteParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_error(gone).code, 404);
    assert!(
        secrets
            .delete("creds", &DeleteParams::default())
            .await
            .unwrap()
            .is_left()
    );
    assert_eq!(server.object_count(), 1);

    // create into a missing namespace
    let other: Api<ConfigMap> = Api::namespaced(client, "missing");
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap();
    let e = api_error(other.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "namespaces \"missing\" not found")
    );
    assert!(
        other
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let reqs = server.requests();
    assert!(reqs.iter().all(|r| r.user == "admin" && r.status != 0));
    assert_eq!(
        reqs.iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
            .count(),
        5
    );
}

#[tokio::test]
async fn validation_answers_422() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let cases = [
        (
            json!({ "metadata": { "name": "Bad_Name" } }),
            "metadata.name",
        ),
        (
            json!({ "spec": { "containers": [{ "name": "c", "image": "i", "ports": [{ "name": "much-too-long-port-name", "containerPort": 1 }] }] } }),
            "spec.containers[0].ports[0].name",
        ),
        (
            json!({ "spec": { "containers": [{ "name": "c", "image": "i", "resources": { "requests": { "cpu": "2" }, "limits": { "cpu": "1" } } }] } }),
            "spec.containers[0].resources.requests",
        ),
        (
            json!({ "spec": { "containers": [{ "name": "c", "image": "i", "env": [{ "name": "1BAD", "value": "" }] }] } }),
            "spec.containers[0].env[0].name",
        ),
        (json!({ "spec": { "containers": [] } }), "spec.containers"),
        (
            json!({ "spec": { "containers": [{ "name": "c" }] } }),
            "spec.containers[0].image",
        ),
        (
            json!({ "spec": { "containers": [{ "name": "c", "image": "i", "volumeMounts": [{ "name": "v", "mountPath": "/v" }] }] } }),
            "spec.containers[0].volumeMounts[0].name",
        ),
    ];
    for (patch, field) in cases {
        let mut p = serde_json::to_value(pod("ok", "r")).unwrap();
        json_merge(&mut p, &patch);
        let p: Pod = serde_json::from_value(p).unwrap();
        let e = api_error(pods.create(&PostParams::default(), &p).await.unwrap_err());
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{field}");
        assert!(
            e.message.contains(&format!("is invalid: {field}")),
            "{}",
            e.message
        );
    }
    let e = api_error(
        pods.create(&PostParams::default(), &pod("x", "bad value!"))
            .await
            .unwrap_err(),
    );
    assert!(
        e.message
            .contains("metadata.labels: Invalid value: \"bad value!\""),
        "{}",
        e.message
    );

    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc = |v| serde_json::from_value::<Service>(v).unwrap();
    let e = api_error(
        services
            .create(&PostParams::default(), &svc(json!({ "metadata": { "name": "1svc" }, "spec": { "ports": [{ "port": 80 }] } })))
            .await
            .unwrap_err(),
    );
    assert!(e.message.contains("DNS-1035"), "{}", e.message);
    let e = api_error(
        services
            .create(&PostParams::default(), &svc(json!({ "metadata": { "name": "svc" }, "spec": { "ports": [{ "port": 80 }, { "port": 81 }] } })))
            .await
            .unwrap_err(),
    );
    assert!(
        e.message.contains("spec.ports[0].name: Required value"),
        "{}",
        e.message
    );

    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let big = "x".repeat(1024 * 1024 + 1);
    let e = api_error(
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "big" }, "data": { "k": big } }))
                .unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    let e = api_error(
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "k" }, "data": { "a/b": "" } }))
                .unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert!(e.message.contains("data[a/b]"), "{}", e.message);
    assert_eq!(server.object_count(), 0);
}

fn json_merge(t: &mut serde_json::Value, p: &serde_json::Value) {
    match (t, p) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                json_merge(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[tokio::test]
async fn authentication_and_namespace_limits() {
    let mut team = User::namespaced("team-a", "team-a");
    team.denied_resources = vec!["secrets".into()];
    let server = TestServer::start_with(Options {
        namespaces: vec!["default".into(), "team-a".into()],
        users: vec![team],
        ..Options::default()
    });
    let (client, _dir) = client(&server, "team-a", Some("team-a")).await;
    let own: Api<Pod> = Api::default_namespaced(client.clone());
    own.create(&PostParams::default(), &pod("p", "r"))
        .await
        .unwrap();
    let elsewhere: Api<Pod> = Api::namespaced(client.clone(), "other");
    let e = api_error(
        elsewhere
            .create(&PostParams::default(), &pod("p", "r"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods is forbidden: User \"team-a\" cannot create resource \"pods\" in API group \"\" in the namespace \"other\""
    );
    let all: Api<Pod> = Api::all(client.clone());
    let e = api_error(all.list(&ListParams::default()).await.unwrap_err());
    assert!(e.message.ends_with("at the cluster scope"), "{}", e.message);
    let secrets: Api<Secret> = Api::default_namespaced(client);
    assert_eq!(
        api_error(secrets.list(&ListParams::default()).await.unwrap_err()).code,
        403
    );

    let plain = TestServer::start_with(Options {
        tls: false,
        ..Options::default()
    });
    let answer = raw_get(&plain, "/api/v1/namespaces/default/pods", "wrong").await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("\"reason\":\"Unauthorized\""), "{answer}");
}

/// A raw HTTP GET on a server started with `tls: false`.
async fn raw_get(server: &TestServer, path: &str, token: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.url().trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn v1_20_service_deletes() {
    let server = TestServer::start_with(Options::v1_20());
    let (client, _dir) = client(&server, "admin", None).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": { "name": "w-0", "labels": { "training_attempt": "r" } },
        "spec": { "clusterIP": "None", "ports": [{ "port": 2222 }] }
    }))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let e = api_error(
        services
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels("training_attempt=r"),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (405, "MethodNotAllowed"));
    let res = services
        .delete("w-0", &DeleteParams::default())
        .await
        .unwrap();
    assert!(res.is_right(), "1.20 answers a Status");
    assert_eq!(server.object_count(), 0);
}

#[tokio::test]
async fn watch_sees_phases_and_deletion() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    pods.create(&PostParams::default(), &pod("w-0", "run"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("other", "else"))
        .await
        .unwrap();
    let wp = WatchParams::default()
        .labels("training_attempt=run")
        .timeout(10);
    let mut stream = pods.watch(&wp, "0").await.unwrap().boxed();
    let next = |ev: Option<Result<WatchEvent<Pod>, kube::Error>>| ev.unwrap().unwrap();
    assert!(
        matches!(next(stream.next().await), WatchEvent::Added(p) if p.metadata.name.as_deref() == Some("w-0"))
    );
    server.set_pod_phase("default", "other", "Running");
    server.set_pod_phase("default", "w-0", "Running");
    match next(stream.next().await) {
        WatchEvent::Modified(p) => assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running")),
        other => panic!("{other:?}"),
    }
    // the real-server suite drives phases through the status subresource
    let patch = json!({ "status": { "phase": "Succeeded" } });
    pods.patch_status("w-0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(matches!(next(stream.next().await), WatchEvent::Modified(_)));
    pods.delete("w-0", &DeleteParams::default()).await.unwrap();
    assert!(matches!(next(stream.next().await), WatchEvent::Deleted(_)));

    // from a resourceVersion: only later events
    let rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut from = pods
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    server.set_pod_phase("default", "other", "Failed");
    assert!(matches!(next(from.next().await), WatchEvent::Modified(_)));
}

#[tokio::test]
async fn logs_follow_and_waiting() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    pods.create(&PostParams::default(), &pod("l-0", "run"))
        .await
        .unwrap();
    // No node has taken the pod: 204 and no body, as a real server answers (the
    // container name is still checked first).
    assert_eq!(pods.logs("l-0", &LogParams::default()).await.unwrap(), "");
    let bad = LogParams {
        container: Some("nope".into()),
        ..Default::default()
    };
    assert_eq!(
        api_error(pods.logs("l-0", &bad).await.unwrap_err()).code,
        400
    );
    server.clear_requests();
    let mut unbound = pods
        .log_stream("l-0", &LogParams::default())
        .await
        .unwrap()
        .lines();
    assert_eq!(unbound.try_next().await.unwrap(), None);
    let answer = server.requests().pop().unwrap();
    assert_eq!(
        (answer.path.ends_with("/l-0/log"), answer.status),
        (true, 204)
    );

    // Bound to a node, the container not started yet: 400.
    server.bind_pod("default", "l-0", "node-1");
    let e = api_error(pods.logs("l-0", &LogParams::default()).await.unwrap_err());
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "container \"tensorflow\" in pod \"l-0\" is waiting to start: ContainerCreating"
    );

    server.set_pod_phase("default", "l-0", "Running");
    server.append_log("default", "l-0", "one\ntwo\n");
    let lp = LogParams {
        follow: true,
        ..Default::default()
    };
    let mut lines = pods.log_stream("l-0", &lp).await.unwrap().lines();
    assert_eq!(lines.try_next().await.unwrap().as_deref(), Some("one"));
    assert_eq!(lines.try_next().await.unwrap().as_deref(), Some("two"));
    server.append_log("default", "l-0", "three\n");
    assert_eq!(lines.try_next().await.unwrap().as_deref(), Some("three"));
    server.close_log("default", "l-0");
    assert_eq!(lines.try_next().await.unwrap(), None);

    let tail = LogParams {
        tail_lines: Some(1),
        timestamps: true,
        ..Default::default()
    };
    let text = pods.logs("l-0", &tail).await.unwrap();
    let (ts, line) = text.trim_end().split_once(' ').unwrap();
    assert_eq!(line, "three");
    assert!(ts.ends_with('Z') && ts.contains('T'), "{ts}");
}

#[tokio::test]
async fn faults_are_not_applied() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    server.add_fault(Fault::on("POST", "/pods").nth(1).status(500));
    server.add_fault(Fault::on("POST", "/pods").nth(2).too_many_requests(3));
    let e = api_error(
        pods.create(&PostParams::default(), &pod("f-0", "r"))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    // kube's client retries a 429 by itself
    pods.create(&PostParams::default(), &pod("f-0", "r"))
        .await
        .unwrap();

    server.add_fault(Fault::on("GET", "/pods/f-0").drop_connection());
    match pods.get("f-0").await {
        Err(kube::Error::Api(s)) => panic!("dropped connection answered {s:?}"),
        Err(_) => {}
        Ok(_) => panic!("dropped connection answered"),
    }
    pods.get("f-0").await.unwrap();

    server.add_fault(Fault::on("DELETE", "/pods/f-0").hang(Duration::from_millis(400)));
    let start = Instant::now();
    pods.delete("f-0", &DeleteParams::default()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(400));
    assert_eq!(server.object_count(), 0);

    let plain = TestServer::start_with(Options {
        tls: false,
        ..Options::default()
    });
    plain.add_fault(Fault::on("GET", "/api/v1/namespaces").too_many_requests(7));
    let answer = raw_get(
        &plain,
        "/api/v1/namespaces/default/pods",
        &plain.admin_token(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 7"), "{answer}");
    assert!(plain.requests()[0].user == "admin");

    let statuses: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("/pods"))
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, vec![500, 429, 201, 0, 200, 200]);
}

#[test]
fn works_from_plain_tests_and_graceful_pod_deletion() {
    let server = TestServer::start();
    server.insert(
        "pods",
        "default",
        json!({
            "metadata": { "name": "bound", "labels": { "training_attempt": "r" } },
            "spec": { "nodeName": "node-1", "containers": [{ "name": "c", "image": "i" }] },
            "status": { "phase": "Running" }
        }),
    );
    assert_eq!(
        server.get("pods", "default", "bound").unwrap()["status"]["phase"],
        "Running"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (client, _dir) = client(&server, "admin", None).await;
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let p = pods
            .delete("bound", &DeleteParams::default())
            .await
            .unwrap()
            .left()
            .unwrap();
        assert!(p.metadata.deletion_timestamp.is_some());
        assert!(pods.get("bound").await.is_ok());
        // Gone once its grace period has passed, as a kubelet ends it.
        let start = std::time::Instant::now();
        let gone = loop {
            match pods.get("bound").await {
                Err(e) => break api_error(e).code,
                Ok(_) => assert!(start.elapsed() < Duration::from_secs(30), "never gone"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(gone, 404);
    });
}

#[tokio::test]
async fn generate_name_and_expired_watch() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({ "metadata": { "generateName": "cfg-" } })).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");

    for i in 0..10_001 {
        server.insert(
            "configmaps",
            "default",
            json!({ "metadata": { "name": format!("c{i}") } }),
        );
    }
    let mut stream = cms
        .watch(&WatchParams::default().timeout(5), "2")
        .await
        .unwrap()
        .boxed();
    match stream.next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!(e.code, 410),
        other => panic!("{other:?}"),
    }
}

/// Pages as a real kube-apiserver (v1.20 checked by hand) answers them: every page with
/// the first page's resourceVersion, `remainingItemCount` only without a selector, and
/// 410 `Expired` (with a token to go on) for a token older than the compacted history.
#[tokio::test]
async fn lists_in_pages_like_a_real_server() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..5 {
        let labels = json!({ "grp": "x" });
        server.insert(
            "configmaps",
            "default",
            json!({ "metadata": { "name": format!("pg-{i}"), "labels": labels } }),
        );
    }
    let selected = ListParams::default().labels("grp=x").limit(2);
    let first = cms.list(&selected).await.unwrap();
    let names = |l: &kube::api::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(names(&first), ["pg-0", "pg-1"]);
    assert_eq!(first.metadata.remaining_item_count, None);
    let token = first.metadata.continue_.clone().unwrap();
    // A change between pages does not move the list's version.
    server.insert(
        "configmaps",
        "default",
        json!({ "metadata": { "name": "other" } }),
    );
    let second = cms
        .list(&selected.clone().continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["pg-2", "pg-3"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let unfiltered = cms.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(unfiltered.metadata.remaining_item_count, Some(4));

    server.compact();
    let next = second.metadata.continue_.clone().unwrap();
    let expired = api_error(
        cms.list(&selected.clone().continue_token(&next))
            .await
            .unwrap_err(),
    );
    assert_eq!((expired.code, expired.reason.as_str()), (410, "Expired"));
    assert!(
        expired
            .message
            .starts_with("The provided continue parameter is too old")
    );
}

/// `stop` refuses connections and cuts open watches, `resume` answers again with the
/// store as it was.
#[tokio::test]
async fn stops_answering_and_comes_back() {
    let server = TestServer::start();
    let (client, _dir) = client(&server, "admin", None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    pods.create(&PostParams::default(), &pod("p-0", "t"))
        .await
        .unwrap();
    let mut watch = pods
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Added(_)))));
    server.stop();
    // The watch ends (or breaks), and nothing answers.
    assert!(!matches!(watch.next().await, Some(Ok(_))));
    let refused = pods.list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(refused, kube::Error::Api(_)), "{refused:?}");
    server.resume();
    let mut listed = None;
    for _ in 0..100 {
        match pods.list(&ListParams::default()).await {
            Ok(list) => {
                listed = Some(list);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert_eq!(listed.expect("answers again").items.len(), 1);
}
