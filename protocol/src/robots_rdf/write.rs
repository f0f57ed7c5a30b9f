//! Writing robots.rdf, whole or as fragments the agent can cache per item.
//!
//! The document is `head` + one `seq_entry` per item + `channel_end` + one `item` per item +
//! `tail`. A single changed resource changes one item fragment (and, when a URL appears or goes,
//! one seq entry), so the agent re-renders only those and concatenates.

use super::{Channel, Extensions, RdfItem, RobotsRdf};
use crate::dates::{format_w3cdtf, push_w3cdtf};
use crate::namespaces::{DC, RDF, RSS1, SY, WEBCOOP};
use crate::validator::{EntityTag, Sha256Digest};
use crate::xml_write::{empty_with_attr, leaf, push_attr, push_text};
use chrono::{DateTime, Utc};
use url::Url;

/// Typical size of one item fragment, for pre-sizing buffers.
pub const ITEM_FRAGMENT_HINT: usize = 400;

/// Writes the whole document.
pub fn write(doc: &RobotsRdf) -> String {
    let mut out = String::with_capacity(1024 + doc.items.len() * (ITEM_FRAGMENT_HINT + 80));
    write_head(&mut out, &doc.channel);
    for item in &doc.items {
        write_seq_entry(&mut out, &item.url);
    }
    write_channel_end(&mut out);
    for item in &doc.items {
        write_item(&mut out, item);
    }
    write_tail(&mut out);
    out
}

/// The XML declaration, the root with its namespaces, and the channel up to its `rdf:Seq`.
pub fn write_head(out: &mut String, channel: &Channel) {
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<rdf:RDF xmlns:rdf=\"");
    out.push_str(RDF);
    out.push_str("\"\n  xmlns=\"");
    out.push_str(RSS1);
    out.push_str("\"\n  xmlns:dc=\"");
    out.push_str(DC);
    out.push_str("\"\n  xmlns:sy=\"");
    out.push_str(SY);
    out.push_str("\"\n  xmlns:wc=\"");
    out.push_str(WEBCOOP);
    out.push_str("\">\n<channel rdf:about=\"");
    push_attr(out, channel.about.as_str());
    out.push_str("\">\n");
    leaf(out, "  ", "title", &channel.title);
    leaf(out, "  ", "link", channel.link.as_str());
    leaf(out, "  ", "description", &channel.description);
    if let Some(date) = channel.date {
        leaf(out, "  ", "dc:date", &format_w3cdtf(date));
    }
    leaf(out, "  ", "sy:updatePeriod", channel.update_period.as_str());
    leaf(
        out,
        "  ",
        "sy:updateFrequency",
        &channel.update_frequency.max(1).to_string(),
    );
    if let Some(base) = channel.update_base {
        leaf(out, "  ", "sy:updateBase", &format_w3cdtf(base));
    }
    if let Some(changes) = &channel.changes {
        empty_with_attr(out, "  ", "wc:changes", "rdf:resource", changes.as_str());
    }
    if let Some(hub) = &channel.hub {
        empty_with_attr(out, "  ", "wc:hub", "rdf:resource", hub.as_str());
    }
    if let Some(snapshot) = &channel.snapshot {
        empty_with_attr(out, "  ", "wc:snapshot", "rdf:resource", snapshot.as_str());
        if let Some(max) = channel.snapshot_max_record {
            leaf(out, "  ", "wc:snapshotMaxRecord", &max.to_string());
        }
    }
    if channel.complete {
        leaf(out, "  ", "wc:complete", "true");
    }
    if let Some(seq) = channel.seq {
        leaf(out, "  ", "wc:seq", &seq.to_string());
    }
    if let Some(usage) = &channel.content_usage {
        leaf(out, "  ", "wc:contentUsage", usage);
    }
    for part in &channel.parts {
        super::write_part(out, part);
    }
    out.push_str("  <items>\n    <rdf:Seq>\n");
}

/// One `rdf:li` of the channel's table of contents.
pub fn write_seq_entry(out: &mut String, url: &Url) {
    write_seq_entry_str(out, url.as_str());
}

/// [`write_seq_entry`] for a URL the caller already holds as text (it must be a valid URL).
pub fn write_seq_entry_str(out: &mut String, url: &str) {
    empty_with_attr(out, "      ", "rdf:li", "rdf:resource", url);
}

/// Closes the table of contents and the channel.
pub fn write_channel_end(out: &mut String) {
    out.push_str("    </rdf:Seq>\n  </items>\n</channel>\n");
}

/// One `item`.
pub fn write_item(out: &mut String, item: &RdfItem) {
    write_item_ref(
        out,
        &ItemRef {
            url: item.url.as_str(),
            title: &item.title,
            modified: item.modified,
            size: item.size,
            content_type: item.content_type.as_deref(),
            etag: item.etag.as_ref().map(ValidatorRef::Tag),
            delta: item.delta.as_ref().map(Url::as_str),
            extensions: Some(&item.extensions),
        },
    );
}

/// A validator as the writer takes it: an entity tag, or the digest ours are made from.
#[derive(Debug, Clone, Copy)]
pub enum ValidatorRef<'a> {
    /// Any entity tag.
    Tag(&'a EntityTag),
    /// The strong tag of a version with this SHA-256 ([`Sha256Digest::etag`]).
    Digest(&'a Sha256Digest),
}

/// An item borrowed from the caller's own records, so a listing of 100,000 resources is written
/// without building 100,000 owned items. URLs must be valid absolute URLs.
#[derive(Debug, Clone, Copy)]
pub struct ItemRef<'a> {
    /// The resource's URL.
    pub url: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Last modification of the content.
    pub modified: DateTime<Utc>,
    /// Bytes.
    pub size: Option<u64>,
    /// Media type.
    pub content_type: Option<&'a str>,
    /// Validator of the current version.
    pub etag: Option<ValidatorRef<'a>>,
    /// The delta link.
    pub delta: Option<&'a str>,
    /// Further `wc:` elements.
    pub extensions: Option<&'a Extensions>,
}

fn push_u64(out: &mut String, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

/// One `item` from borrowed fields (same output as [`write_item`]).
pub fn write_item_ref(out: &mut String, item: &ItemRef<'_>) {
    out.push_str("<item rdf:about=\"");
    push_attr(out, item.url);
    out.push_str("\">\n");
    leaf(out, "  ", "title", item.title);
    leaf(out, "  ", "link", item.url);
    out.push_str("  <dc:date>");
    push_w3cdtf(out, item.modified);
    out.push_str("</dc:date>\n");
    if let Some(ct) = item.content_type {
        leaf(out, "  ", "dc:format", ct);
    }
    if let Some(size) = item.size {
        out.push_str("  <wc:size>");
        push_u64(out, size);
        out.push_str("</wc:size>\n");
    }
    match item.etag {
        Some(ValidatorRef::Tag(etag)) => leaf(out, "  ", "wc:etag", &etag.to_string()),
        Some(ValidatorRef::Digest(digest)) => {
            out.push_str("  <wc:etag>\"");
            digest.push_etag_tag(out);
            out.push_str("\"</wc:etag>\n");
        }
        None => {}
    }
    if let Some(delta) = item.delta {
        empty_with_attr(out, "  ", "wc:delta", "rdf:resource", delta);
    }
    if let Some(extensions) = item.extensions {
        for (name, value) in extensions.iter() {
            out.push_str("  <wc:");
            out.push_str(name);
            out.push('>');
            push_text(out, value);
            out.push_str("</wc:");
            out.push_str(name);
            out.push_str(">\n");
        }
    }
    out.push_str("</item>\n");
}

/// Closes the document.
pub fn write_tail(out: &mut String) {
    out.push_str("</rdf:RDF>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_digest_is_written_as_its_entity_tag() {
        let digest = Sha256Digest::of(b"page");
        let tag = digest.etag();
        let item = |etag| ItemRef {
            url: "https://e.org/a",
            title: "/a",
            modified: Utc.timestamp_opt(0, 0).unwrap(),
            size: Some(0),
            content_type: None,
            etag: Some(etag),
            delta: None,
            extensions: None,
        };
        let (mut a, mut b) = (String::new(), String::new());
        write_item_ref(&mut a, &item(ValidatorRef::Digest(&digest)));
        write_item_ref(&mut b, &item(ValidatorRef::Tag(&tag)));
        assert_eq!(a, b);
        assert!(a.contains(&format!("<wc:etag>{tag}</wc:etag>")));
    }
}
