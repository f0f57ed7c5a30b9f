//! What a delivery carries: an Atom document of the changes after a subscriber's cursor, built
//! once per (cursor, end) and shared by every subscriber at that cursor, with small dcz deltas
//! inline. A backlog too long (or older than the retained history) becomes a resync marker.
//! The same changes go as CBOR to subscribers that asked for it, and as a ResourceSync Change
//! Notification to those of the ResourceSync topic (a lost cursor there is a Framework
//! Notification naming the Resource List to read again).

use super::super::encodings::{Encoded, EncodingCache, Key, Kind};
use super::super::reader::Reader;
use crate::publish::feed::{entries, feed_id};
use bytes::Bytes;
use std::sync::{Arc, OnceLock};
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeKind, ChangesFeed, InlineDelta, Resync};
use webcoop_protocol::clock::Clock;
use webcoop_protocol::delta::{self, DEFAULT_LEVEL, DeltaEncoding, DeltaPlan};
use webcoop_protocol::websub::BodyCoding;

/// Changes per delivery.
pub(crate) const PAGE: usize = 500;
/// A backlog longer than this is replaced by a resync marker.
pub(crate) const MAX_BACKLOG: u64 = 10_000;
/// Deltas up to this size travel inside the delivery.
pub(crate) const MAX_INLINE_DELTA: usize = 8 << 10;

/// What a subscriber gets its deliveries as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// The changes feed in Atom (WebSub's default for a feed topic).
    Atom,
    /// The changes feed in CBOR (the subscriber asked for it).
    Cbor,
    /// ResourceSync Change Notifications (a subscriber of the ResourceSync topic).
    ResourceSync,
}

impl Format {
    /// Its media type.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Format::Atom => "application/atom+xml",
            Format::Cbor => changes_feed::CBOR_MEDIA_TYPE,
            Format::ResourceSync => "application/xml",
        }
    }

    /// Its name in the subscriptions database (none for Atom, as before formats existed).
    pub(crate) fn stored(self) -> Option<&'static str> {
        match self {
            Format::Atom => None,
            Format::Cbor => Some("cbor"),
            Format::ResourceSync => Some("resourcesync"),
        }
    }

    /// The format stored as `name`.
    pub(crate) fn from_stored(name: Option<&str>) -> Format {
        match name {
            Some("cbor") => Format::Cbor,
            Some("resourcesync") => Format::ResourceSync,
            _ => Format::Atom,
        }
    }
}

/// One form of a delivery document, compressed once per coding for every subscriber that
/// shares it.
#[derive(Debug)]
struct Form {
    plain: Bytes,
    /// Compressed as small as the coding goes (the binary deltas of CBOR gain from it).
    smallest: bool,
    gzip: OnceLock<Bytes>,
    zstd: OnceLock<Bytes>,
}

impl Form {
    fn new(plain: Bytes, smallest: bool) -> Form {
        Form {
            plain,
            smallest,
            gzip: OnceLock::new(),
            zstd: OnceLock::new(),
        }
    }

    fn coded(&self, coding: Option<BodyCoding>) -> Bytes {
        let cell = match coding {
            None => return self.plain.clone(),
            Some(BodyCoding::Gzip) => &self.gzip,
            Some(BodyCoding::Zstd) => &self.zstd,
        };
        cell.get_or_init(|| {
            Bytes::from(coding.map_or_else(Vec::new, |c| {
                if self.smallest {
                    c.encode_smallest(&self.plain)
                } else {
                    c.encode(&self.plain)
                }
            }))
        })
        .clone()
    }
}

/// A delivery document: the changes after a cursor, as Atom for every subscriber and as CBOR
/// for those that asked (written when first asked for).
#[derive(Debug)]
pub(crate) struct Document {
    feed: ChangesFeed,
    atom: OnceLock<Form>,
    cbor: OnceLock<Form>,
    resourcesync: OnceLock<Form>,
    /// The Resource List a ResourceSync subscriber reads again after a gap.
    resource_list: Url,
    /// The subscriber's cursor once it has this document.
    pub(crate) upto: u64,
}

impl Document {
    fn new(feed: ChangesFeed, upto: u64, resource_list: Url) -> Document {
        Document {
            feed,
            atom: OnceLock::new(),
            cbor: OnceLock::new(),
            resourcesync: OnceLock::new(),
            resource_list,
            upto,
        }
    }

    /// The bytes to send in `format`, with `coding`.
    pub(crate) fn body_as(&self, format: Format, coding: Option<BodyCoding>) -> Bytes {
        let form = match format {
            Format::Cbor => self
                .cbor
                .get_or_init(|| Form::new(changes_feed::write_cbor(&self.feed).into(), true)),
            Format::Atom => self
                .atom
                .get_or_init(|| Form::new(changes_feed::write(&self.feed).into(), false)),
            Format::ResourceSync => self
                .resourcesync
                .get_or_init(|| Form::new(self.notification().into(), false)),
        };
        form.coded(coding)
    }

    /// The ResourceSync Change Notification of these changes, or the Framework Notification
    /// that sends a subscriber back to the Resource List.
    fn notification(&self) -> String {
        use webcoop_protocol::resourcesync::{self as rs, Capability, Change, ChangeItem};
        use webcoop_protocol::validator::Sha256Digest;
        if self.feed.resync.is_some() {
            return rs::framework_notification(
                self.resource_list.as_str(),
                Capability::ResourceList,
                self.feed.updated,
            );
        }
        let items: Vec<ChangeItem> = self
            .feed
            .entries
            .iter()
            .map(|e| ChangeItem {
                loc: e.url.to_string(),
                change: match e.kind {
                    ChangeKind::Created => Change::Created,
                    ChangeKind::Modified => Change::Updated,
                    ChangeKind::Deleted => Change::Deleted,
                },
                datetime: e.time,
                content: e
                    .etag
                    .as_ref()
                    .and_then(Sha256Digest::from_etag)
                    .filter(|_| e.kind != ChangeKind::Deleted)
                    .map(|sha| {
                        (
                            sha,
                            e.size.unwrap_or(0),
                            e.content_type
                                .clone()
                                .unwrap_or_else(|| "application/octet-stream".into()),
                        )
                    }),
            })
            .collect();
        rs::change_notification(&items)
    }
}

/// Builds and shares delivery documents.
pub(crate) struct Documents {
    reader: Reader,
    encodings: Arc<EncodingCache>,
    clock: Arc<dyn Clock>,
    base: Url,
    topic: Url,
    hub: Url,
    listing: Url,
    resource_list: Url,
    cache: moka::future::Cache<(u64, u64), Arc<Document>>,
    /// The site's usage preferences, stated in every pushed Atom document.
    pub(crate) content_usage: Option<String>,
}

impl Documents {
    /// A builder for the site at `base`.
    pub(crate) fn new(
        reader: Reader,
        encodings: Arc<EncodingCache>,
        clock: Arc<dyn Clock>,
        base: Url,
        topic: Url,
        hub: Url,
        listing: Url,
    ) -> Self {
        let base_for_list = base.clone();
        Documents {
            reader,
            encodings,
            clock,
            base,
            topic,
            hub,
            listing,
            resource_list: base_for_list
                .join(&format!(
                    "{}{}",
                    webcoop_protocol::resourcesync::DIRECTORY,
                    webcoop_protocol::resourcesync::RESOURCE_LIST
                ))
                .unwrap_or(base_for_list),
            content_usage: None,
            cache: moka::future::Cache::builder()
                .max_capacity(256)
                .time_to_live(std::time::Duration::from_secs(60))
                .build(),
        }
    }

    /// The document taking a subscriber from `cursor` towards `upto`.
    pub(crate) async fn get(&self, cursor: u64, upto: u64) -> Result<Arc<Document>, String> {
        self.cache
            .try_get_with((cursor, upto), self.build(cursor, upto))
            .await
            .map_err(|e: Arc<String>| e.to_string())
    }

    async fn build(&self, cursor: u64, upto: u64) -> Result<Arc<Document>, String> {
        let (oldest, page) = self
            .reader
            .with(move |st| {
                let oldest = st.oldest_seq()?;
                let page = st.changes_since(cursor, PAGE)?;
                Ok((oldest, page))
            })
            .await
            .map_err(|e| e.to_string())?;
        let mut feed = ChangesFeed {
            id: feed_id(&self.base),
            title: format!("Changes of {}", self.base.host_str().unwrap_or("the site")),
            updated: self.clock.now(),
            self_link: self.topic.clone(),
            hub: Some(self.hub.clone()),
            next: None,
            head_seq: Some(upto),
            resync: None,
            content_usage: self.content_usage.clone(),
            entries: Vec::new(),
        };
        let lost = oldest.is_some_and(|o| cursor + 1 < o);
        if lost || upto.saturating_sub(cursor) > MAX_BACKLOG {
            feed.resync = Some(Resync {
                since: cursor,
                listing: self.listing.clone(),
                // A subscriber told to resync reads robots.rdf, which names the snapshot.
                snapshot: None,
            });
            return Ok(Arc::new(Document::new(
                feed,
                upto,
                self.resource_list.clone(),
            )));
        }
        let page: Vec<_> = page.into_iter().filter(|c| c.seq <= upto).collect();
        let reached = page.last().map_or(upto, |c| c.seq);
        let mut list = entries(&self.base, &page, None);
        for (entry, change) in list.iter_mut().zip(&page) {
            if let (ChangeKind::Modified, Some(prev), Some(new)) =
                (change.kind, change.prev_sha256, change.sha256)
            {
                entry.delta = self
                    .inline_delta(&change.path, prev, new)
                    .await
                    .map(|data| InlineDelta {
                        encoding: DeltaEncoding::Dcz,
                        base: prev.etag(),
                        data,
                    });
            }
        }
        if let Some(last) = page.last() {
            feed.updated = last.time;
        }
        feed.entries = list;
        Ok(Arc::new(Document::new(
            feed,
            reached,
            self.resource_list.clone(),
        )))
    }

    /// The dcz delta of a change when both versions are kept and it is small.
    async fn inline_delta(
        &self,
        path: &str,
        prev: webcoop_protocol::validator::Sha256Digest,
        new: webcoop_protocol::validator::Sha256Digest,
    ) -> Option<Vec<u8>> {
        let reader = self.reader.clone();
        let p: Arc<str> = Arc::from(path);
        let key = Key {
            path: p.clone(),
            base: Some(prev),
            target: new,
            kind: Kind::Dcz,
        };
        let encoded = self
            .encodings
            .get_or_encode(key, move || {
                let versions = reader
                    .blocking(|st| Ok((st.version(&p, &prev)?, st.version(&p, &new)?)))
                    .map_err(|e| e.to_string())?;
                let (Some(old), Some(cur)) = versions else {
                    return Ok(Encoded::Unavailable);
                };
                match delta::plan(DeltaEncoding::Dcz, &old, &cur, DEFAULT_LEVEL) {
                    Ok(DeltaPlan::Delta(d)) => Ok(Encoded::Body(Bytes::from(d.body))),
                    Ok(DeltaPlan::NotWorthIt { .. }) => Ok(Encoded::NotWorthIt),
                    Err(e) => Err(e.to_string()),
                }
            })
            .await
            .ok()?;
        match encoded.as_ref() {
            Encoded::Body(b) if b.len() <= MAX_INLINE_DELTA => Some(b.to_vec()),
            _ => None,
        }
    }
}
