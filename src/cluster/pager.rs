//! Lists in pages, as kubectl and client-go's pager do: `limit` items a request, the
//! next page asked for with the `continue` token of the one before. A run of 10,000
//! pods is 20 requests of ~2 MB instead of one of ~45 MB, and each page is handed on
//! (and dropped) before the next one is read, so a reader that folds pages into a
//! summary holds one page at a time, not the run's objects.
//!
//! A continue token expires with the resourceVersion it holds (the server compacts its
//! history every few minutes): the server answers 410 Gone, and the list starts over
//! from the first page (client-go's pager does the same, with one full list).

use kube::api::{Api, ListParams, ObjectList};
use serde::de::DeserializeOwned;

use super::retry::{CallError, Plain, RetryPolicy, retry};

/// Items per page: kubectl's and client-go's default.
pub const PAGE: u32 = 500;
/// Fresh starts after expired continue tokens before the list gives up.
const RESTARTS: u32 = 3;

/// The page after `token` (the first page without one), with retries.
pub(super) async fn page<K>(
    policy: &RetryPolicy,
    api: &Api<K>,
    selector: &str,
    token: Option<&str>,
) -> Result<ObjectList<K>, CallError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    page_with(policy, api, &ListParams::default().labels(selector), token).await
}

/// The page after `token` of a list with these parameters (selectors), with retries.
async fn page_with<K>(
    policy: &RetryPolicy,
    api: &Api<K>,
    base: &ListParams,
    token: Option<&str>,
) -> Result<ObjectList<K>, CallError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut params = base.clone().limit(PAGE);
    if let Some(token) = token {
        params = params.continue_token(token);
    }
    retry(policy, || api.list(&params), Plain).await
}

/// The continue token of a page, when there is a next one.
pub(super) fn next_token<K: Clone>(list: &ObjectList<K>) -> Option<String> {
    list.metadata.continue_.clone().filter(|c| !c.is_empty())
}

/// Whether an error says the continue token (or a watch's resourceVersion) is too old.
pub(super) fn expired(err: &CallError) -> bool {
    err.code() == Some(410)
}

/// Lists every object matching `selector`, page by page: `on_page(items, first)` gets
/// each page; `first` says a (new) list begins, and what earlier pages gave is to be
/// forgotten (after an expired continue token the list starts over).
pub(super) async fn list_pages<K>(
    policy: &RetryPolicy,
    api: &Api<K>,
    selector: &str,
    on_page: impl FnMut(Vec<K>, bool),
) -> Result<(), CallError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let params = ListParams::default().labels(selector);
    list_pages_with(policy, api, &params, on_page).await
}

/// [`list_pages`] with any list parameters (a field selector).
pub(super) async fn list_pages_with<K>(
    policy: &RetryPolicy,
    api: &Api<K>,
    params: &ListParams,
    mut on_page: impl FnMut(Vec<K>, bool),
) -> Result<(), CallError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut token: Option<String> = None;
    let mut restarts = 0;
    loop {
        match page_with(policy, api, params, token.as_deref()).await {
            Ok(list) => {
                let next = next_token(&list);
                on_page(list.items, token.is_none());
                match next {
                    Some(next) => token = Some(next),
                    None => return Ok(()),
                }
            }
            Err(e) if expired(&e) && token.is_some() && restarts < RESTARTS => {
                tracing::debug!(error = %e, "continue token expired; listing again");
                restarts += 1;
                token = None;
            }
            Err(e) => return Err(e),
        }
    }
}
