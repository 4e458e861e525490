use std::time::Duration;

use kube_testserver::{RecordedRequest, TestServer};
use serde_json::json;

use super::PodEvent;
use super::machine::watch_seconds;
use crate::cluster::Cluster;
use crate::cluster::connect::{Target, read};
use crate::cluster::pager::PAGE;
use crate::cluster::retry::RetryPolicy;
use crate::labels::run_selector;

#[test]
fn a_watch_asks_the_server_to_end_it_before_the_idle_bound() {
    assert_eq!(watch_seconds(Duration::from_secs(300)), 270);
    assert_eq!(watch_seconds(Duration::from_secs(3600)), 290);
    assert_eq!(watch_seconds(Duration::from_secs(10)), 9);
    assert_eq!(watch_seconds(Duration::from_secs(2)), 1);
    for s in 2..400 {
        assert!(u64::from(watch_seconds(Duration::from_secs(s))) < s, "{s}");
    }
}

const NS: &str = "big";
const TAG: &str = "b10000";

/// The test server's answers so far to the follow's requests for the run's pods: list
/// pages (`limit`) and watches.
fn asked(server: &TestServer) -> (usize, usize) {
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let ours = |r: &&RecordedRequest| r.path == pods;
    let requests = server.requests();
    let pages = requests
        .iter()
        .filter(ours)
        .filter(|r| r.param("limit").is_some());
    let watches = requests
        .iter()
        .filter(ours)
        .filter(|r| r.param("watch").is_some());
    (pages.count(), watches.count())
}

fn seeded(pods: usize) -> TestServer {
    let server = TestServer::start();
    for i in 0..pods {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": format!("{TAG}-worker-{i}"),
                "labels": { (crate::labels::RUN_LABEL): TAG },
            },
            "spec": { "containers": [{ "name": "tensorflow", "image": "tf" }] },
        });
        server.insert("pods", NS, pod);
    }
    server
}

async fn cluster(server: &TestServer, dir: &std::path::Path) -> Cluster {
    let target = Target {
        kubeconfig: Some(server.write_kubeconfig(dir, "admin", None)),
        context: None,
    };
    let config = read(&target).await.expect("kubeconfig").config;
    Cluster::new(config.expect("config"), NS.into(), RetryPolicy::default()).expect("cluster")
}

/// Issue 61: the follow is a stream read on demand. A slow reader of a run of 10,000
/// pods (20 pages) makes a request of its own after each page, answered before it reads
/// on; each time the server has been asked for no page beyond the one the reader holds
/// (a follow that ran ahead, into a queue, would have asked for the next page by then),
/// and for no watch until the reader asks for the event after the list's end.
#[test]
fn a_slow_reader_of_a_large_run_holds_one_page() {
    const PODS: usize = 10_000;
    let server = seeded(PODS);
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let cluster = cluster(&server, dir.path()).await;
        let mut events = super::events(&cluster, &run_selector(TAG));
        assert_eq!(
            asked(&server),
            (0, 0),
            "nothing asked before the first read"
        );
        let (mut pages, mut pods) = (0, 0);
        loop {
            let (event, _) = events.next().await.expect("an event").expect("no error");
            match event {
                PodEvent::ListBegin => {}
                PodEvent::Page(items) => {
                    pages += 1;
                    pods += items.len();
                    assert!(items.len() <= PAGE as usize);
                    // The slow reader's own request, answered (and recorded) first.
                    assert!(!cluster.namespace_missing().await);
                    assert_eq!(asked(&server), (pages, 0), "page {pages} held");
                }
                PodEvent::ListEnd => break,
                other => panic!("{other:?} amid the list"),
            }
        }
        assert_eq!((pages, pods), (PODS / PAGE as usize, PODS));
        assert!(!cluster.namespace_missing().await);
        assert_eq!(
            asked(&server),
            (pages, 0),
            "no watch before the reader asks"
        );
        // The reader asks: the watch opens from the list's version and says the change.
        let changed = format!("{TAG}-worker-7");
        server.set_pod_phase(NS, &changed, "Running");
        let (event, _) = events.next().await.expect("an event").expect("no error");
        match event {
            PodEvent::Changed(pod) => assert_eq!(pod.metadata.name, Some(changed)),
            other => panic!("{other:?} instead of the change"),
        }
        assert_eq!(asked(&server), (pages, 1));
    });
}
