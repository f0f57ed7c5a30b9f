//! What the changes endpoint and its batches share of a page of the change log: the feed
//! around its entries, the link to the next page, its entity tag and the conditional answer.

use super::ServiceState;
use crate::publish::feed::feed_id;
use crate::store::LoggedChange;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use chrono::{DateTime, Utc};
use url::Url;
use webcoop_protocol::batch;
use webcoop_protocol::changes_feed::ChangesFeed;
use webcoop_protocol::validator::{EntityTag, IfNoneMatch};

/// The feed of a page of changes, without its entries, `updated` at `at`.
pub(crate) fn page_feed(s: &ServiceState, head: u64, at: DateTime<Utc>) -> ChangesFeed {
    ChangesFeed {
        id: feed_id(&s.base_url),
        title: format!("Changes of {}", s.base_url.host_str().unwrap_or("the site")),
        updated: at,
        self_link: s.topic.clone(),
        hub: Some(s.hub_url.clone()),
        next: None,
        head_seq: Some(head),
        resync: None,
        content_usage: s.content_usage.clone(),
        entries: Vec::new(),
    }
}

/// Where the changes after `page` are, if it is full and more follow.
pub(crate) fn next_link(
    s: &ServiceState,
    since: u64,
    limit: usize,
    page: &[LoggedChange],
    head: u64,
    bodies: bool,
) -> Option<Url> {
    let last = page.last().map_or(since, |c| c.seq);
    if last >= head || page.len() < limit && !bodies {
        return None;
    }
    let mut next = s.topic.clone();
    {
        let mut q = next.query_pairs_mut();
        q.append_pair("since", &last.to_string())
            .append_pair("limit", &limit.to_string());
        if bodies {
            q.append_pair(batch::BODIES_PARAM, "1");
        }
    }
    Some(next)
}

/// The entity tag of a page: what it starts after, its size, where it ends and the head.
pub(crate) fn page_etag(kind: char, since: u64, limit: usize, last: u64, head: u64) -> EntityTag {
    EntityTag::strong(format!("{kind}{since}-{limit}-{last}-{head}")).unwrap_or_else(|_| {
        EntityTag {
            weak: true,
            tag: String::new(),
        }
    })
}

/// Whether the client's `If-None-Match` names `etag`.
pub(crate) fn not_modified(headers: &HeaderMap, etag: &EntityTag) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| IfNoneMatch::parse(v).ok())
        .is_some_and(|inm| inm.matches(etag))
}

/// 304 Not Modified.
pub(crate) fn unchanged(etag: &EntityTag) -> Response {
    Response::builder()
        .status(StatusCode::NOT_MODIFIED)
        .header(header::ETAG, etag.to_string())
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::empty())
        .unwrap_or_default()
}
