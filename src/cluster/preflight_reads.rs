//! The reads of a spawn's pre-flight checks (`preflight/`): the namespace's
//! ResourceQuotas, the nodes and the pods on them. Credentials that may not read them (403, as for most
//! teams' nodes) get `None`: the check is skipped, said under `-v`.

use anyhow::Result;
use k8s_openapi::api::core::v1::{Node, Pod, ResourceQuota};
use kube::api::{Api, ListParams};

use super::Cluster;
use super::pager::{PAGE, next_token};
use super::retry::{Plain, retry};

impl Cluster {
    /// The namespace's ResourceQuotas (one list: a namespace has a few).
    pub async fn resource_quotas(&self) -> Result<Option<Vec<ResourceQuota>>> {
        let api: Api<ResourceQuota> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default();
        match retry(&self.policy, || api.list(&params), Plain).await {
            Ok(list) => Ok(Some(list.items)),
            Err(e) if e.code() == Some(403) => {
                tracing::info!(
                    namespace = %self.namespace,
                    "these credentials may not list resourcequotas: the quota check is skipped (the API server still applies them)"
                );
                Ok(None)
            }
            Err(e) => Err(self.explain("listing resourcequotas", &e)),
        }
    }

    /// The pods of every namespace that have not ended (what holds a node's room), in
    /// pages; `None` when they cannot be read (403 for most teams, or any other
    /// failure: they only ever make a warning).
    pub async fn live_pods(&self) -> Option<Vec<Pod>> {
        let mut pods = Vec::new();
        let fields = "status.phase!=Succeeded,status.phase!=Failed";
        let api: Api<Pod> = Api::all(self.client.clone());
        let params = ListParams::default().fields(fields);
        let listed = super::pager::list_pages_with(&self.policy, &api, &params, |page, first| {
            if first {
                pods.clear();
            }
            pods.extend(page);
        })
        .await;
        match listed {
            Ok(()) => Some(pods),
            Err(e) => {
                tracing::info!(error = %e, "cannot list the pods of every namespace: no warning for a node full now");
                None
            }
        }
    }

    /// The cluster's nodes, in pages; `None` when they cannot be read (403, or any other
    /// failure: they only ever make a warning). With `at_most`, one page of that many,
    /// and `None` for a cluster of more nodes.
    pub async fn nodes(&self, at_most: Option<u32>) -> Option<Vec<Node>> {
        let api: Api<Node> = Api::all(self.client.clone());
        let mut nodes = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(at_most.unwrap_or(PAGE));
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            match retry(&self.policy, || api.list(&params), Plain).await {
                Ok(page) => {
                    token = next_token(&page);
                    nodes.extend(page.items);
                }
                Err(e) => {
                    tracing::info!(error = %e, "cannot list nodes: the node check is skipped");
                    return None;
                }
            }
            if token.is_none() {
                return Some(nodes);
            }
            if at_most.is_some() {
                tracing::info!("more than {} nodes: the node check is skipped", nodes.len());
                return None;
            }
        }
    }
}
