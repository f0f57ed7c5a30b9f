//! `GET changes?since=SEQ&limit=N`: the filtering interface, "everything changed since".
//!
//! An Atom page of the changes after `since`, oldest first, at most `limit` (default 500, at
//! most 10,000), with a `next` link while more follow. Without `since`, the newest page. A
//! `since` older than the retained history (or newer than anything the agent ever issued, as
//! after a restore) answers 410 Gone with a resync marker pointing at robots.rdf. The answer's
//! entity tag covers the page and the newest sequence number, so an idle site costs a 304.
//! With `bodies=1` the page comes as a batch, with the content of the pages it names
//! ([`super::batch`]).

use super::{ServiceState, plain};
use crate::publish::feed::{entries, feed_id};
use crate::store::LoggedChange;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use url::Url;
use webcoop_protocol::batch;
use webcoop_protocol::changes_feed::{self, ChangesFeed, Resync};
use webcoop_protocol::validator::{EntityTag, IfNoneMatch};

/// Changes per page unless the client asks otherwise.
pub(crate) const DEFAULT_LIMIT: usize = 500;
/// Most changes per page.
pub(crate) const MAX_LIMIT: usize = 10_000;

/// What a request asks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Query {
    /// The last change the client has.
    pub(crate) since: Option<u64>,
    /// Changes per page.
    pub(crate) limit: usize,
    /// Whether the content of the pages comes too.
    pub(crate) bodies: bool,
}

fn parse_query(query: Option<&str>) -> Result<Query, String> {
    let mut q = Query {
        since: None,
        limit: DEFAULT_LIMIT,
        bodies: false,
    };
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "since" => {
                q.since = Some(v.parse::<u64>().map_err(|_| {
                    format!("since={v:?} is not a sequence number (an integer from 0)")
                })?)
            }
            "limit" => {
                q.limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|l| (1..=MAX_LIMIT).contains(l))
                    .ok_or_else(|| format!("limit={v:?} is not a number from 1 to {MAX_LIMIT}"))?
            }
            batch::BODIES_PARAM => {
                q.bodies = match v.as_ref() {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(format!("bodies={v:?} is not 1 or 0")),
                }
            }
            _ => {}
        }
    }
    Ok(q)
}

fn atom(status: StatusCode, etag: Option<&EntityTag>, body: String) -> Response {
    let mut b = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/atom+xml")
        .header(header::CACHE_CONTROL, "no-cache");
    if let Some(t) = etag {
        b = b.header(header::ETAG, t.to_string());
    }
    b.body(Body::from(body)).unwrap_or_default()
}

/// The endpoint.
pub(crate) async fn changes(
    State(s): State<Arc<ServiceState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let Query {
        since,
        limit,
        bodies,
    } = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(message) => return plain(StatusCode::BAD_REQUEST, &format!("{message}\n")),
    };
    let window = s
        .reader
        .with(move |st| {
            let head = st.head_seq()?;
            let oldest = st.oldest_seq()?;
            let since = since.unwrap_or(head.saturating_sub(limit as u64));
            let gone = since > head || oldest.is_some_and(|o| since + 1 < o);
            let page = if gone {
                Vec::new()
            } else {
                st.changes_since(since, limit)?
            };
            Ok((head, since, gone, page))
        })
        .await;
    let (head, since, gone, page) = match window {
        Ok(w) => w,
        Err(e) => return plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n")),
    };
    if gone {
        let mut feed = page_feed(&s, head, s.clock.now());
        feed.resync = Some(Resync {
            since,
            listing: s.listing_url.clone(),
            snapshot: s
                .snapshots_in
                .as_deref()
                .and_then(crate::publish::snapshot::newest)
                .map(|seq| crate::publish::snapshot::url_of(&s.base_url, seq)),
        });
        return atom(StatusCode::GONE, None, changes_feed::write(&feed));
    }
    if bodies {
        return super::batch::respond(s, since, limit, head, page, &headers).await;
    }
    let last = page.last().map_or(since, |c| c.seq);
    let etag = page_etag('c', since, limit, last, head);
    if not_modified(&headers, &etag) {
        return unchanged(&etag);
    }
    let mut feed = page_feed(&s, head, page.last().map_or(s.clock.now(), |c| c.time));
    feed.next = next_link(&s, since, limit, &page, head, false);
    feed.entries = entries(&s.base_url, &page, s.activity.popularity().as_deref());
    atom(StatusCode::OK, Some(&etag), changes_feed::write(&feed))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_named() {
        assert_eq!(
            parse_query(None),
            Ok(Query {
                since: None,
                limit: DEFAULT_LIMIT,
                bodies: false
            })
        );
        assert_eq!(
            parse_query(Some("since=5&limit=10&x=y&bodies=1")),
            Ok(Query {
                since: Some(5),
                limit: 10,
                bodies: true
            })
        );
        assert!(
            parse_query(Some("bodies=yes"))
                .unwrap_err()
                .starts_with("bodies=")
        );
        assert!(
            parse_query(Some("since=-1"))
                .unwrap_err()
                .starts_with("since=")
        );
        assert!(
            parse_query(Some("since=abc"))
                .unwrap_err()
                .starts_with("since=")
        );
        assert!(
            parse_query(Some("limit=0"))
                .unwrap_err()
                .starts_with("limit=")
        );
        assert!(
            parse_query(Some("limit=10001"))
                .unwrap_err()
                .starts_with("limit=")
        );
    }
}
