//! The changes feed as CBOR (RFC 8949), for deliveries between a webcoop hub and a webcoop
//! subscriber that asked for it (`Accept: application/vnd.webcoop.changes+cbor` in its answer
//! to the hub's verification); every other subscriber gets Atom.
//!
//! The same [`ChangesFeed`], stated once: an entry's URL is a path on the topic's origin,
//! sequence numbers and times are differences from the entry before, SHA-256 validators are 32
//! raw bytes, inline deltas are raw dcz bytes (no base64), and a delta's base and the new
//! version's size are not repeated beside it (the dcz header and its zstd frame state them). A document is one CBOR array:
//!
//! ```text
//! [1, id, title, updated, self, hub?, next?, head_seq?, resync?, [entry...]]
//! updated    [unix seconds, nanoseconds]
//! resync     [since, listing URL]
//! entry      [seq - previous seq, kind (0 created, 1 modified, 2 deleted), path or URL,
//!             nanoseconds after the previous entry (the first: after updated),
//!             etag?, previous etag?, size?, media type?, millionths of the text changed?,
//!             dcz delta?]
//! etag       32 bytes: the strong SHA-256 tag; text: any other tag as sent (`W/"x"`)
//! ```
//!
//! `?` is CBOR null when absent. Beside a delta, a previous etag left null is the delta's base
//! and a size left null the content size of its zstd frame.

use super::{ChangeEntry, ChangeKind, ChangesFeed, FeedLimits, InlineDelta, Resync};
use crate::delta::{DeltaEncoding, dcz};
use crate::error::{Format, ParseError, bad_value};
use crate::validator::{EntityTag, Sha256Digest};
use chrono::{DateTime, TimeDelta, Utc};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use std::fmt;
use url::Url;

/// The media type of the CBOR changes feed.
pub const MEDIA_TYPE: &str = "application/vnd.webcoop.changes+cbor";

/// The format's version, first in every document.
const VERSION: u8 = 1;

/// Nesting of a valid document: the document, the entries, an entry, the resync marker.
const MAX_DEPTH: usize = 8;

const FORMAT: Format = Format::ChangesCbor;

/// Raw bytes (a CBOR byte string).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bin(Vec<u8>);

impl Serialize for Bin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bin;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bin, E> {
                Ok(Bin(v.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bin, E> {
                Ok(Bin(v))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// An entity tag: the SHA-256 digest as bytes, or any other tag as text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tag {
    Sha256([u8; 32]),
    Other(String),
}

impl Tag {
    fn of(etag: &EntityTag) -> Tag {
        match Sha256Digest::from_etag(etag) {
            // Only when the tag is exactly the digest's: the bytes are written back as that.
            Some(d) if !etag.weak && d.etag() == *etag => Tag::Sha256(d.0),
            _ => Tag::Other(etag.to_string()),
        }
    }
}

impl Serialize for Tag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tag::Sha256(b) => s.serialize_bytes(b),
            Tag::Other(t) => s.serialize_str(t),
        }
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("32 bytes of SHA-256 or an entity tag as text")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Tag, E> {
                v.try_into()
                    .map(Tag::Sha256)
                    .map_err(|_| E::invalid_length(v.len(), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
                Ok(Tag::Other(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// One entry on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct Entry(
    u64,
    u8,
    String,
    i64,
    Option<Tag>,
    Option<Tag>,
    Option<u64>,
    Option<String>,
    Option<u32>,
    Option<Bin>,
);

/// The entries, read one by one so a document cannot hold more than the limit.
#[derive(Debug)]
struct Entries(Vec<Entry>);

impl Serialize for Entries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.0)
    }
}

thread_local! {
    /// The entry limit of the document being read (serde visitors take no arguments).
    static MAX_ENTRIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of entries")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entries, A::Error> {
                let max = MAX_ENTRIES.with(|m| m.get());
                let mut out = Vec::new();
                while let Some(e) = seq.next_element::<Entry>()? {
                    if out.len() == max {
                        return Err(de::Error::custom(format!("more than {max} entries")));
                    }
                    out.push(e);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The document on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct Doc(
    u8,
    String,
    String,
    (i64, u32),
    String,
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<(u64, String)>,
    Entries,
);

fn kind_code(k: ChangeKind) -> u8 {
    match k {
        ChangeKind::Created => 0,
        ChangeKind::Modified => 1,
        ChangeKind::Deleted => 2,
    }
}

/// Nanoseconds from `from` to `to`, clamped to what 64 bits hold (about 292 years).
fn nanos_between(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    (to - from)
        .num_nanoseconds()
        .unwrap_or(if to >= from { i64::MAX } else { i64::MIN })
}

/// The entry's URL as written: its path on the topic's origin, or the whole URL elsewhere.
fn url_text(url: &Url, topic: &Url) -> String {
    if url.origin() == topic.origin() {
        let path = &url[url::Position::BeforePath..];
        if topic.join(path).is_ok_and(|back| back == *url) {
            return path.to_string();
        }
    }
    url.to_string()
}

/// Writes `feed` as the CBOR changes feed. Inline deltas other than dcz are left out (the
/// entry still says what changed).
pub fn write_cbor(feed: &ChangesFeed) -> Vec<u8> {
    let mut prev_seq = 0;
    let mut prev_time = feed.updated;
    let entries = feed
        .entries
        .iter()
        .map(|e| {
            let delta = e
                .delta
                .as_ref()
                .filter(|d| d.encoding == DeltaEncoding::Dcz);
            // The base is in the dcz header: stated again only when it is not the previous
            // version's.
            let header_base = delta.and_then(|d| dcz::dictionary_of(&d.data).ok());
            let previous = e
                .previous_etag
                .as_ref()
                .filter(|p| header_base.is_none_or(|b| b.etag() != **p));
            // So is the new version's size (in its zstd frame header).
            let size = e
                .size
                .filter(|s| delta.and_then(|d| dcz::content_size(&d.data)) != Some(*s));
            let entry = Entry(
                e.seq.wrapping_sub(prev_seq),
                kind_code(e.kind),
                url_text(&e.url, &feed.self_link),
                nanos_between(prev_time, e.time),
                e.etag.as_ref().map(Tag::of),
                previous.map(Tag::of),
                size,
                e.content_type.clone(),
                e.changed_fraction
                    .map(|f| (f.clamp(0.0, 1.0) * 1e6).round() as u32),
                delta.map(|d| Bin(d.data.clone())),
            );
            prev_seq = e.seq;
            prev_time = e.time;
            entry
        })
        .collect();
    let doc = Doc(
        VERSION,
        feed.id.clone(),
        feed.title.clone(),
        (
            feed.updated.timestamp(),
            feed.updated.timestamp_subsec_nanos(),
        ),
        feed.self_link.to_string(),
        feed.hub.as_ref().map(Url::to_string),
        feed.next.as_ref().map(Url::to_string),
        feed.head_seq,
        feed.resync
            .as_ref()
            .map(|r| (r.since, r.listing.to_string())),
        Entries(entries),
    );
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = ciborium::into_writer(&doc, &mut out);
    out
}

fn bad(context: &str, field: &'static str, value: &str, reason: impl ToString) -> ParseError {
    bad_value(FORMAT, context, field, value, reason)
}

fn url(context: &str, field: &'static str, text: &str) -> Result<Url, ParseError> {
    Url::parse(text).map_err(|e| bad(context, field, text, e))
}

fn tag(context: &str, field: &'static str, t: Tag) -> Result<EntityTag, ParseError> {
    match t {
        Tag::Sha256(b) => Ok(Sha256Digest(b).etag()),
        Tag::Other(s) => s.parse().map_err(|e| bad(context, field, &s, e)),
    }
}

/// An entry's inline delta (a dictionary-compressed stream, whose base is the dictionary's
/// digest), within the limit.
fn inline_delta(
    context: &str,
    data: Vec<u8>,
    limits: &FeedLimits,
) -> Result<InlineDelta, ParseError> {
    if data.len() > limits.max_inline_delta {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "inline delta",
            limit: limits.max_inline_delta as u64,
        });
    }
    let base = dcz::dictionary_of(&data)
        .map_err(|e| bad(context, "delta", &format!("{} bytes", data.len()), e))?
        .etag();
    Ok(InlineDelta {
        encoding: DeltaEncoding::Dcz,
        base,
        data,
    })
}

/// The resync pointer: the compact form carries no snapshot, and a subscriber told to resync
/// reads the Atom page, which names it.
fn resync_of(since: u64, listing: &str) -> Result<Resync, ParseError> {
    Ok(Resync {
        since,
        listing: url("resync", "listing", listing)?,
        snapshot: None,
    })
}

/// Reads a CBOR changes feed, within `limits` (the same as Atom's: bytes, entries, the
/// size of an inline delta).
pub fn parse_cbor(bytes: &[u8], limits: &FeedLimits) -> Result<ChangesFeed, ParseError> {
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "document size",
            limit: limits.max_bytes,
        });
    }
    MAX_ENTRIES.with(|m| m.set(limits.max_entries));
    let doc: Doc =
        ciborium::de::from_reader_with_recursion_limit(bytes, MAX_DEPTH).map_err(|e| {
            ParseError::Inconsistent {
                format: FORMAT,
                message: format!("not a CBOR changes feed: {e}"),
            }
        })?;
    let Doc(version, id, title, (secs, nanos), self_link, hub, next, head_seq, resync, entries) =
        doc;
    if version != VERSION {
        return Err(bad(
            "document",
            "version",
            &version.to_string(),
            "only version 1 is known",
        ));
    }
    let updated = DateTime::from_timestamp(secs, nanos).ok_or_else(|| {
        bad(
            "document",
            "updated",
            &format!("{secs}.{nanos}"),
            "out of range",
        )
    })?;
    let self_link = url("document", "self", &self_link)?;
    let mut feed = ChangesFeed {
        id,
        title,
        updated,
        hub: hub.map(|h| url("document", "hub", &h)).transpose()?,
        next: next.map(|n| url("document", "next", &n)).transpose()?,
        head_seq,
        resync: resync
            .map(|(since, listing)| resync_of(since, &listing))
            .transpose()?,
        // Like the snapshot, the usage preferences are in the Atom form and robots.rdf.
        content_usage: None,
        entries: Vec::with_capacity(entries.0.len()),
        self_link,
    };
    let (mut seq, mut time) = (0u64, updated);
    for (i, Entry(dseq, kind, at, dtime, etag, previous, size, content_type, changed, delta)) in
        entries.0.into_iter().enumerate()
    {
        let context = format!("entry {}", i + 1);
        seq = seq
            .checked_add(dseq)
            .filter(|_| dseq > 0 || i == 0)
            .ok_or_else(|| {
                bad(
                    &context,
                    "seq",
                    &dseq.to_string(),
                    "not after the one before",
                )
            })?;
        time = time
            .checked_add_signed(TimeDelta::nanoseconds(dtime))
            .ok_or_else(|| bad(&context, "time", &dtime.to_string(), "out of range"))?;
        let kind = match kind {
            0 => ChangeKind::Created,
            1 => ChangeKind::Modified,
            2 => ChangeKind::Deleted,
            k => return Err(bad(&context, "kind", &k.to_string(), "expected 0, 1 or 2")),
        };
        let page = feed
            .self_link
            .join(&at)
            .map_err(|e| bad(&context, "url", &at, e))?;
        let delta = delta
            .map(|Bin(data)| inline_delta(&context, data, limits))
            .transpose()?;
        let size = size.or_else(|| delta.as_ref().and_then(|d| dcz::content_size(&d.data)));
        let previous_etag = match previous {
            Some(t) => Some(tag(&context, "previous etag", t)?),
            None => delta.as_ref().map(|d| d.base.clone()),
        };
        feed.entries.push(ChangeEntry {
            seq,
            kind,
            url: page,
            time,
            etag: etag.map(|t| tag(&context, "etag", t)).transpose()?,
            previous_etag,
            size,
            content_type,
            changed_fraction: changed.map(|m| (f64::from(m) / 1e6).min(1.0)),
            delta,
            popularity: None,
        });
    }
    Ok(feed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed() -> ChangesFeed {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let base = Url::parse("https://docs.example/").unwrap();
        let old = b"<p>version 3.11.2 of the docs</p>".repeat(20);
        let new = b"<p>version 3.11.3 of the docs</p>".repeat(20);
        let mut modified = ChangeEntry::new(
            41,
            ChangeKind::Modified,
            base.join("library/os.html").unwrap(),
            t("2026-11-24T10:00:00.123456789Z"),
        );
        modified.etag = Some(Sha256Digest::of(&new).etag());
        modified.previous_etag = Some(Sha256Digest::of(&old).etag());
        modified.size = Some(new.len() as u64);
        modified.content_type = Some("text/html".into());
        modified.changed_fraction = Some(0.25);
        modified.delta = Some(InlineDelta {
            encoding: DeltaEncoding::Dcz,
            base: Sha256Digest::of(&old).etag(),
            data: dcz::encode(&old, &new, 6).unwrap(),
        });
        let mut created = ChangeEntry::new(
            42,
            ChangeKind::Created,
            base.join("new%20page.html?x=1").unwrap(),
            t("2026-11-24T10:00:01Z"),
        );
        created.etag = Some("W/\"nginx-1a2b\"".parse().unwrap());
        let mut deleted = ChangeEntry::new(
            50,
            ChangeKind::Deleted,
            Url::parse("https://elsewhere.example/gone").unwrap(),
            t("2026-11-24T09:59:00Z"),
        );
        deleted.previous_etag = Some("\"abc\"".parse().unwrap());
        ChangesFeed {
            id: "https://docs.example/.well-known/webcoop/changes".into(),
            title: "Changes of docs.example".into(),
            updated: t("2026-11-24T09:00:00Z"),
            self_link: base.join(".well-known/webcoop/changes").unwrap(),
            hub: Some(base.join(".well-known/webcoop/hub").unwrap()),
            next: None,
            head_seq: Some(50),
            resync: None,
            content_usage: None,
            entries: vec![modified, created, deleted],
        }
    }

    #[test]
    fn a_feed_reads_back_as_written_and_states_the_delta_base_once() {
        let feed = feed();
        let bytes = write_cbor(&feed);
        assert_eq!(parse_cbor(&bytes, &FeedLimits::default()).unwrap(), feed);
        // The base's 32 bytes appear once (in the dcz header), the new tag's once.
        let base = Sha256Digest::from_etag(feed.entries[0].previous_etag.as_ref().unwrap())
            .unwrap()
            .0;
        let count = |needle: &[u8]| bytes.windows(needle.len()).filter(|w| *w == needle).count();
        assert_eq!(count(&base), 1);
        assert_eq!(count(b"library/os.html"), 1);
        assert_eq!(
            dcz::content_size(&feed.entries[0].delta.as_ref().unwrap().data),
            feed.entries[0].size,
            "the size is the frame's, so not written"
        );
        // Against the Atom document of the same changes.
        let atom = super::super::write(&feed);
        assert!(
            bytes.len() * 2 < atom.len(),
            "{} vs {}",
            bytes.len(),
            atom.len()
        );
    }

    #[test]
    fn a_resync_marker_and_an_empty_feed_read_back() {
        let mut feed = feed();
        feed.entries.clear();
        feed.resync = Some(Resync {
            since: 7,
            listing: Url::parse("https://docs.example/robots.rdf").unwrap(),
            snapshot: None,
        });
        let bytes = write_cbor(&feed);
        assert_eq!(parse_cbor(&bytes, &FeedLimits::default()).unwrap(), feed);
    }

    #[test]
    fn hostile_documents_are_refused_with_a_reason_never_a_panic() {
        let good = write_cbor(&feed());
        let limits = FeedLimits::default();
        // Every truncation.
        for n in 0..good.len() {
            assert!(parse_cbor(&good[..n], &limits).is_err(), "cut at {n}");
        }
        let small = FeedLimits {
            max_entries: 2,
            ..limits
        };
        let e = parse_cbor(&good, &small).unwrap_err().to_string();
        assert!(e.contains("more than 2 entries"), "{e}");
        let tiny = FeedLimits {
            max_inline_delta: 10,
            ..limits
        };
        let e = parse_cbor(&good, &tiny).unwrap_err().to_string();
        assert!(e.contains("inline delta"), "{e}");
        let doc = |entries: Vec<Entry>| {
            let mut out = Vec::new();
            let d = Doc(
                1,
                "id".into(),
                "t".into(),
                (0, 0),
                "https://a.example/c".into(),
                None,
                None,
                None,
                None,
                Entries(entries),
            );
            ciborium::into_writer(&d, &mut out).unwrap();
            out
        };
        let entry = |dseq, kind, dtime, delta: Option<Vec<u8>>| {
            Entry(
                dseq,
                kind,
                "/p".into(),
                dtime,
                None,
                None,
                None,
                None,
                None,
                delta.map(Bin),
            )
        };
        let cases = [
            (doc(vec![entry(1, 7, 0, None)]), "kind"),
            (
                doc(vec![entry(1, 1, 0, None), entry(0, 1, 0, None)]),
                "not after",
            ),
            (
                doc(vec![entry(u64::MAX, 1, 0, None), entry(1, 1, 0, None)]),
                "not after",
            ),
            (
                doc(vec![entry(1, 1, 0, Some(b"not dcz".to_vec()))]),
                "delta",
            ),
        ];
        for (bytes, why) in cases {
            let e = parse_cbor(&bytes, &limits).unwrap_err().to_string();
            assert!(e.contains(why), "{why}: {e}");
        }
        // Times far from now are the reader's to judge, but never out of chrono's range.
        let far = doc(vec![
            entry(1, 1, i64::MAX, None),
            entry(1, 1, i64::MAX, None),
        ]);
        assert!(parse_cbor(&far, &limits).is_ok());
        let mut out = Vec::new();
        let d = (
            1u8,
            "i",
            "t",
            (i64::MAX, 0u32),
            "https://a.example/",
            (),
            (),
            (),
            (),
            [(); 0],
        );
        ciborium::into_writer(&d, &mut out).unwrap();
        let e = parse_cbor(&out, &limits).unwrap_err().to_string();
        assert!(e.contains("updated"), "{e}");
        // A byte string that claims more than the document holds; nesting past the limit.
        let e = parse_cbor(
            &[0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &limits,
        );
        assert!(e.is_err());
        let deep = [0x81u8; 64];
        assert!(parse_cbor(&deep, &limits).is_err());
        // A short tag.
        let mut bytes = doc(vec![entry(1, 1, 0, None)]);
        bytes.clear();
        let d = (
            1u8,
            "i",
            "t",
            (0i64, 0u32),
            "https://a.example/",
            (),
            (),
            (),
            (),
            [(
                1u64,
                1u8,
                "/p",
                0i64,
                Bin(vec![1, 2, 3]),
                (),
                (),
                (),
                (),
                (),
            )],
        );
        ciborium::into_writer(&d, &mut bytes).unwrap();
        let e = parse_cbor(&bytes, &limits).unwrap_err().to_string();
        assert!(e.contains("32 bytes"), "{e}");
    }
}
