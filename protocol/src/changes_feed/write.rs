//! Writing the changes feed.

use super::{ChangeEntry, ChangesFeed};
use crate::dates::format_w3cdtf;
use crate::namespaces::{ATOM, CHANGE_SCHEME, WEBCOOP};
use crate::xml_write::{leaf, push_attr, push_text};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

fn link(out: &mut String, indent: &str, rel: &str, href: &str) {
    out.push_str(indent);
    out.push_str("<link rel=\"");
    out.push_str(rel);
    out.push_str("\" href=\"");
    push_attr(out, href);
    out.push_str("\"/>\n");
}

/// Writes a whole feed document.
pub fn write(feed: &ChangesFeed) -> String {
    let mut out = String::with_capacity(1024 + feed.entries.len() * 700);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"");
    out.push_str(ATOM);
    out.push_str("\" xmlns:wc=\"");
    out.push_str(WEBCOOP);
    out.push_str("\">\n");
    leaf(&mut out, "  ", "id", &feed.id);
    leaf(&mut out, "  ", "title", &feed.title);
    leaf(&mut out, "  ", "updated", &format_w3cdtf(feed.updated));
    out.push_str("  <author><name>webcoop-agent</name></author>\n");
    out.push_str("  <generator version=\"");
    out.push_str(env!("CARGO_PKG_VERSION"));
    out.push_str("\">webcoop</generator>\n");
    link(&mut out, "  ", "self", feed.self_link.as_str());
    if let Some(hub) = &feed.hub {
        link(&mut out, "  ", "hub", hub.as_str());
    }
    if let Some(next) = &feed.next {
        link(&mut out, "  ", "next", next.as_str());
    }
    if let Some(head) = feed.head_seq {
        leaf(&mut out, "  ", "wc:headSeq", &head.to_string());
    }
    if let Some(usage) = &feed.content_usage {
        leaf(&mut out, "  ", "wc:contentUsage", usage);
    }
    if let Some(resync) = &feed.resync {
        out.push_str("  <wc:resync since=\"");
        out.push_str(&resync.since.to_string());
        out.push_str("\" href=\"");
        push_attr(&mut out, resync.listing.as_str());
        if let Some(snapshot) = &resync.snapshot {
            out.push_str("\" snapshot=\"");
            push_attr(&mut out, snapshot.as_str());
        }
        out.push_str("\"/>\n");
    }
    for entry in &feed.entries {
        write_entry(&mut out, &feed.id, entry);
    }
    out.push_str("</feed>\n");
    out
}

/// Writes one `entry`; its `atom:id` is the feed id with `#` and the sequence number.
pub fn write_entry(out: &mut String, feed_id: &str, entry: &ChangeEntry) {
    out.push_str("  <entry>\n");
    leaf(out, "    ", "id", &format!("{feed_id}#{}", entry.seq));
    let path = match entry.url.query() {
        Some(q) => format!("{}?{q}", entry.url.path()),
        None => entry.url.path().to_string(),
    };
    leaf(out, "    ", "title", &format!("{} {path}", entry.kind));
    leaf(out, "    ", "updated", &format_w3cdtf(entry.time));
    link(out, "    ", "alternate", entry.url.as_str());
    out.push_str("    <category scheme=\"");
    out.push_str(CHANGE_SCHEME);
    out.push_str("\" term=\"");
    out.push_str(entry.kind.as_str());
    out.push_str("\"/>\n");
    if let Some(fraction) = entry.changed_fraction {
        leaf(
            out,
            "    ",
            "summary",
            &format!(
                "{} {path}: {:.2}% of the text changed",
                entry.kind,
                fraction * 100.0
            ),
        );
    }
    leaf(out, "    ", "wc:seq", &entry.seq.to_string());
    if let Some(etag) = &entry.etag {
        leaf(out, "    ", "wc:etag", &etag.to_string());
    }
    if let Some(etag) = &entry.previous_etag {
        leaf(out, "    ", "wc:previousEtag", &etag.to_string());
    }
    if let Some(size) = entry.size {
        leaf(out, "    ", "wc:size", &size.to_string());
    }
    if let Some(ct) = &entry.content_type {
        leaf(out, "    ", "wc:type", ct);
    }
    if let Some(fraction) = entry.changed_fraction {
        let f = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            1.0
        };
        leaf(out, "    ", "wc:changed", &format!("{f}"));
    }
    if let Some(p) = entry
        .popularity
        .filter(|p| p.is_finite() && (0.0..=1.0).contains(p))
    {
        leaf(out, "    ", "wc:popularity", &format!("{p}"));
    }
    if let Some(delta) = &entry.delta {
        out.push_str("    <wc:delta encoding=\"");
        out.push_str(delta.encoding.as_str());
        out.push_str("\" base=\"");
        push_attr(out, &delta.base.to_string());
        out.push_str("\">");
        push_text(out, &STANDARD.encode(&delta.data));
        out.push_str("</wc:delta>\n");
    }
    out.push_str("  </entry>\n");
}
