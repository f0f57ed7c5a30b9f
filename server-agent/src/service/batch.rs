//! `GET changes?since=N&bodies=1`: a page of changes with the content of the pages it names,
//! in one response ([`webcoop_protocol::batch`]), for a crawler that was away.
//!
//! The page is cut short once its pages' content passes [`BUDGET`] (at least one change is
//! always in it), and its `next` link continues from there. A page's content is sent only if
//! the file is published now with the digest its last change in the page names: what left the
//! listing since (refused by the web server, deleted) or changed again is never sent, and the
//! crawler fetches it, or reads it in a later page. Compressed as the client accepts (zstd
//! over the whole batch, so one page's repeats in the next cost little).

use super::bodies::published;
use super::changes_page::{next_link, not_modified, page_etag, page_feed, unchanged};
use super::delta::MAX_SERVED_BYTES;
use super::negotiate::accepts;
use super::{ServiceState, plain};
use crate::content_type;
use crate::publish::feed::entries;
use crate::store::LoggedChange;
use crate::urls::url_of;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use std::collections::HashMap;
use std::sync::Arc;
use webcoop_protocol::batch;
use webcoop_protocol::changes_feed::{self, ChangeKind};
use webcoop_protocol::compression::{gzip, zstd_compress};
use webcoop_protocol::snapshot::Entry;

/// Bytes of page content a batch carries at most (the protocol's bound is twice this).
pub(crate) const BUDGET: u64 = 8 << 20;

/// zstd level of a batch: a few milliseconds a megabyte.
const LEVEL: i32 = 9;

/// The changes of `page` that fit the budget, and the paths whose content goes with them
/// (each with its last change in the cut page).
fn cut(mut page: Vec<LoggedChange>) -> (Vec<LoggedChange>, Vec<LoggedChange>) {
    let mut carried: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    let mut keep = page.len();
    for (i, c) in page.iter().enumerate() {
        let size = match (c.kind, c.size) {
            (ChangeKind::Deleted, _) | (_, None) => 0,
            (_, Some(s)) if s > MAX_SERVED_BYTES.min(BUDGET) => 0,
            (_, Some(s)) => s,
        };
        let with = total - carried.get(&c.path).copied().unwrap_or(0) + size;
        if with > BUDGET && i > 0 {
            keep = i;
            break;
        }
        total = with;
        carried.insert(c.path.clone(), size);
    }
    page.truncate(keep);
    let mut last: HashMap<&str, &LoggedChange> = HashMap::new();
    for c in &page {
        last.insert(&c.path, c);
    }
    let mut with_content: Vec<LoggedChange> = last
        .into_values()
        .filter(|c| {
            c.kind != ChangeKind::Deleted
                && c.sha256.is_some()
                && carried.get(&c.path).is_some_and(|&s| s > 0)
        })
        .cloned()
        .collect();
    with_content.sort_by_key(|c| c.seq);
    (page, with_content)
}

/// The batch answer for the page of changes after `since`.
pub(crate) async fn respond(
    s: Arc<ServiceState>,
    since: u64,
    limit: usize,
    head: u64,
    page: Vec<LoggedChange>,
    headers: &HeaderMap,
) -> Response {
    let (page, with_content) = cut(page);
    let last = page.last().map_or(since, |c| c.seq);
    let etag = page_etag('b', since, limit, last, head);
    if not_modified(headers, &etag) {
        return unchanged(&etag);
    }
    let mut feed = page_feed(&s, head, page.last().map_or(s.clock.now(), |c| c.time));
    feed.next = next_link(&s, since, limit, &page, head, true);
    feed.entries = entries(&s.base_url, &page, s.activity.popularity().as_deref());
    let atom = changes_feed::write(&feed);
    let mut self_url = s.topic.clone();
    self_url
        .query_pairs_mut()
        .append_pair("since", &since.to_string())
        .append_pair("limit", &limit.to_string())
        .append_pair(batch::BODIES_PARAM, "1");
    let zstd = accepts(headers, "accept-encoding", "zstd");
    let gz = !zstd && accepts(headers, "accept-encoding", "gzip");
    let reader = s.reader.clone();
    let base = s.base_url.clone();
    let now = s.clock.now();
    let built = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        let root = reader.docroot().to_path_buf();
        let mut content = Vec::with_capacity(with_content.len());
        for c in &with_content {
            let Some(sha) = c.sha256 else { continue };
            // Published now with this digest: the store's listing says so.
            let current = reader
                .blocking(|st| st.file(&c.path))
                .map_err(|e| e.to_string())?;
            if current.map(|f| f.0) != Some(sha) {
                continue;
            }
            let Ok(Some(body)) = published(&reader, &root, &c.path, &sha, MAX_SERVED_BYTES) else {
                continue;
            };
            content.push(Entry {
                url: url_of(&base, &c.path).to_string(),
                content_type: c
                    .content_type
                    .clone()
                    .unwrap_or_else(|| content_type::of_path(&c.path).to_string()),
                sha256: sha,
                body,
            });
        }
        let bytes = batch::write(
            self_url.as_str(),
            atom.as_bytes(),
            &content,
            now,
            crate::snapshot::record_id,
        );
        Ok(if zstd {
            zstd_compress(&bytes, LEVEL)
        } else if gz {
            gzip(&bytes, 6)
        } else {
            bytes
        })
    })
    .await;
    let body = match built {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n")),
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}\n")),
    };
    let mut b = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, batch::MEDIA_TYPE)
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::VARY, "Accept-Encoding")
        .header(header::ETAG, etag.to_string());
    if zstd {
        b = b.header(header::CONTENT_ENCODING, "zstd");
    } else if gz {
        b = b.header(header::CONTENT_ENCODING, "gzip");
    }
    b.body(Body::from(body)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use webcoop_protocol::validator::Sha256Digest;

    fn change(seq: u64, kind: ChangeKind, path: &str, size: u64) -> LoggedChange {
        LoggedChange {
            seq,
            kind,
            path: path.into(),
            time: Utc::now(),
            sha256: (kind != ChangeKind::Deleted).then(|| Sha256Digest::of(&seq.to_le_bytes())),
            prev_sha256: None,
            size: (kind != ChangeKind::Deleted).then_some(size),
            content_type: None,
            changed: None,
        }
    }

    #[test]
    fn a_page_is_cut_at_the_budget_and_carries_each_page_once() {
        let m = ChangeKind::Modified;
        let page = vec![
            change(1, m, "a", 3 << 20),
            change(2, m, "a", 3 << 20),
            change(3, m, "b", 4 << 20),
            change(4, ChangeKind::Deleted, "b", 0),
            change(5, m, "c", 4 << 20),
            change(6, m, "d", 2 << 20),
        ];
        let (kept, content) = cut(page);
        // a (3 MiB, once) + b (deleted: nothing) + c (4) = 7 MiB; d would pass 8.
        assert_eq!(
            kept.iter().map(|c| c.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(content.iter().map(|c| c.seq).collect::<Vec<_>>(), [2, 5]);
        // One change larger than the budget: listed alone, its content left to a fetch.
        let (kept, content) = cut(vec![change(1, m, "huge", 9 << 20), change(2, m, "x", 1)]);
        assert_eq!(kept.len(), 2);
        assert_eq!(content.iter().map(|c| c.seq).collect::<Vec<_>>(), [2]);
    }
}
