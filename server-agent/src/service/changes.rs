//! `GET changes?since=SEQ&limit=N`: the filtering interface, "everything changed since".
//!
//! An Atom page of the changes after `since`, oldest first, at most `limit` (default 500, at
//! most 10,000), with a `next` link while more follow. Without `since`, the newest page. A
//! `since` older than the retained history (or newer than anything the agent ever issued, as
//! after a restore) answers 410 Gone with a resync marker pointing at robots.rdf. The answer's
//! entity tag covers the page and the newest sequence number, so an idle site costs a 304.
//! With `bodies=1` the page comes as a batch, with the content of the pages it names
//! ([`super::batch`]).

use super::changes_page::{next_link, not_modified, page_etag, page_feed, unchanged};
use super::{ServiceState, plain};
use crate::publish::feed::entries;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use std::sync::Arc;
use webcoop_protocol::batch;
use webcoop_protocol::changes_feed::{self, Resync};
use webcoop_protocol::validator::EntityTag;

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
