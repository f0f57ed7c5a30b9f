//! Writing robots.rdf, whole or as fragments the agent can cache per item.
//!
//! The document is `head` + one `seq_entry` per item + `channel_end` + one `item` per item +
//! `tail`. A single changed resource changes one item fragment (and, when a URL appears or goes,
//! one seq entry), so the agent re-renders only those and concatenates.

use super::{Channel, RdfItem, RobotsRdf};
use crate::dates::format_w3cdtf;
use crate::namespaces::{DC, RDF, RSS1, SY, WEBCOOP};
use crate::xml_write::{empty_with_attr, leaf, push_attr};
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
    if let Some(seq) = channel.seq {
        leaf(out, "  ", "wc:seq", &seq.to_string());
    }
    out.push_str("  <items>\n    <rdf:Seq>\n");
}

/// One `rdf:li` of the channel's table of contents.
pub fn write_seq_entry(out: &mut String, url: &Url) {
    empty_with_attr(out, "      ", "rdf:li", "rdf:resource", url.as_str());
}

/// Closes the table of contents and the channel.
pub fn write_channel_end(out: &mut String) {
    out.push_str("    </rdf:Seq>\n  </items>\n</channel>\n");
}

/// One `item`.
pub fn write_item(out: &mut String, item: &RdfItem) {
    out.push_str("<item rdf:about=\"");
    push_attr(out, item.url.as_str());
    out.push_str("\">\n");
    leaf(out, "  ", "title", &item.title);
    leaf(out, "  ", "link", item.url.as_str());
    leaf(out, "  ", "dc:date", &format_w3cdtf(item.modified));
    if let Some(ct) = &item.content_type {
        leaf(out, "  ", "dc:format", ct);
    }
    if let Some(size) = item.size {
        leaf(out, "  ", "wc:size", &size.to_string());
    }
    if let Some(etag) = &item.etag {
        leaf(out, "  ", "wc:etag", &etag.to_string());
    }
    if let Some(delta) = &item.delta {
        empty_with_attr(out, "  ", "wc:delta", "rdf:resource", delta.as_str());
    }
    for (name, value) in item.extensions.iter() {
        let tag = format!("wc:{name}");
        leaf(out, "  ", &tag, value);
    }
    out.push_str("</item>\n");
}

/// Closes the document.
pub fn write_tail(out: &mut String) {
    out.push_str("</rdf:RDF>\n");
}
