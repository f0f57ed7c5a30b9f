//! Reading robots.rdf, strictly and within limits.

use super::fields::{FORMAT, bad, parse_date, parse_url};
use super::{Channel, Extensions, RdfItem, RobotsRdf, UpdatePeriod};
use crate::error::ParseError;
use crate::namespaces::Ns;
use crate::validator::EntityTag;
use crate::xml_read::{Attr, Node, ShapeLimits, XmlCursor, attr};
use chrono::{DateTime, Utc};
use std::collections::HashSet;
use url::Url;

/// Bounds on a robots.rdf a parser accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdfLimits {
    /// Largest document in bytes.
    pub max_bytes: u64,
    /// Most items.
    pub max_items: usize,
}

impl Default for RdfLimits {
    /// 512 MiB and two million items: about five times what a million-file site produces.
    fn default() -> Self {
        RdfLimits {
            max_bytes: 512 << 20,
            max_items: 2_000_000,
        }
    }
}

#[derive(Default)]
struct ChannelDraft {
    about: Option<Url>,
    title: Option<String>,
    link: Option<Url>,
    description: Option<String>,
    date: Option<DateTime<Utc>>,
    update_period: Option<UpdatePeriod>,
    update_frequency: Option<u32>,
    update_base: Option<DateTime<Utc>>,
    changes: Option<Url>,
    hub: Option<Url>,
    snapshot: Option<Url>,
    snapshot_max_record: Option<u64>,
    complete: bool,
    seq: Option<u64>,
    content_usage: Option<String>,
    parts: Vec<super::ListingPart>,
}

struct ItemDraft {
    about: Option<Url>,
    title: String,
    link: Option<String>,
    modified: Option<DateTime<Utc>>,
    size: Option<u64>,
    content_type: Option<String>,
    etag: Option<EntityTag>,
    delta: Option<Url>,
    extensions: Extensions,
}

enum Section {
    Outside,
    Channel,
    Item(Box<ItemDraft>),
    Other,
}

/// Parses a robots.rdf document. Unknown elements (RSS 1.0 `image`, `textinput`, other
/// modules) are skipped; every `item` must appear in the channel's `rdf:Seq` and vice versa.
pub fn parse(bytes: &[u8], limits: &RdfLimits) -> Result<RobotsRdf, ParseError> {
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "document size in bytes",
            limit: limits.max_bytes,
        });
    }
    let mut cursor = XmlCursor::new(
        bytes,
        FORMAT,
        ShapeLimits {
            max_depth: 32,
            max_text: 1 << 20,
        },
    );
    let mut channel: Option<ChannelDraft> = None;
    let mut items: Vec<RdfItem> = Vec::new();
    let mut seq: Vec<String> = Vec::new();
    let mut section = Section::Outside;
    loop {
        match cursor.next_node()? {
            Node::End => break,
            Node::Open {
                ns,
                ns_uri,
                local,
                attrs,
                depth,
            } => match depth {
                1 if !(ns == Ns::Rdf && local == "RDF") => return Err(wrong_root(local, ns_uri)),
                2 => {
                    section = match (ns, local) {
                        (Ns::Rss1, "channel") if channel.is_some() => {
                            return Err(ParseError::Inconsistent {
                                format: FORMAT,
                                message: "more than one <channel>".into(),
                            });
                        }
                        (Ns::Rss1, "channel") => {
                            channel = Some(ChannelDraft::open(attrs)?);
                            Section::Channel
                        }
                        (Ns::Rss1, "item") if items.len() >= limits.max_items => {
                            return Err(too_many_items(limits));
                        }
                        (Ns::Rss1, "item") => {
                            Section::Item(Box::new(ItemDraft::open(attrs, items.len() + 1)?))
                        }
                        _ => {
                            cursor.skip_element()?;
                            Section::Other
                        }
                    }
                }
                3 => match (&mut section, channel.as_mut()) {
                    (Section::Channel, Some(c)) => c.resource(ns, local, attrs)?,
                    (Section::Item(item), _) if (ns, local) == (Ns::Webcoop, "delta") => {
                        item.delta_resource(attrs, items.len() + 1)?
                    }
                    _ => {}
                },
                5 if matches!(section, Section::Channel) && ns == Ns::Rdf && local == "li" => {
                    push_seq(&mut seq, attrs, limits)?;
                }
                _ => {}
            },
            Node::Close {
                ns,
                local,
                text,
                depth,
            } => match depth {
                2 => {
                    if let Section::Item(draft) = std::mem::replace(&mut section, Section::Outside)
                    {
                        items.push(finish_item(*draft, items.len() + 1)?);
                    }
                }
                3 => match (&mut section, channel.as_mut()) {
                    (Section::Channel, Some(c)) => channel_field(c, ns, local, text)?,
                    (Section::Item(item), _) => item_field(item, ns, local, text, items.len() + 1)?,
                    _ => {}
                },
                _ => {}
            },
        }
    }

    let draft = channel.ok_or_else(|| ParseError::Missing {
        format: FORMAT,
        context: "rdf:RDF".into(),
        missing: "<channel>",
    })?;
    let channel = finish_channel(draft)?;
    check_table_of_contents(&seq, &items)?;
    check_parts(&channel, &items)?;
    Ok(RobotsRdf { channel, items })
}

impl ChannelDraft {
    /// The channel as its opening tag names it.
    fn open(attrs: &[Attr]) -> Result<ChannelDraft, ParseError> {
        let mut draft = ChannelDraft::default();
        if let Some(about) = attr(attrs, Some(Ns::Rdf), "about") {
            draft.about = Some(parse_url("channel", "rdf:about", about)?);
        }
        Ok(draft)
    }

    /// A property of the channel given as a resource or attributes: the changes feed, the
    /// hub, the snapshot, a part.
    fn resource(&mut self, ns: Ns, local: &str, attrs: &[Attr]) -> Result<(), ParseError> {
        let resource = attr(attrs, Some(Ns::Rdf), "resource");
        match (ns, local, resource) {
            (Ns::Webcoop, "changes", Some(r)) => {
                self.changes = Some(parse_url("channel", "wc:changes", r)?)
            }
            (Ns::Webcoop, "hub", Some(r)) => self.hub = Some(parse_url("channel", "wc:hub", r)?),
            (Ns::Webcoop, "snapshot", Some(r)) => {
                self.snapshot = Some(parse_url("channel", "wc:snapshot", r)?)
            }
            (Ns::Webcoop, "part", _) => {
                if self.parts.len() >= super::MAX_PARTS {
                    return Err(ParseError::Limit {
                        format: FORMAT,
                        what: "number of parts",
                        limit: super::MAX_PARTS as u64,
                    });
                }
                let part = super::parts::parse_part(attrs, self.parts.len() + 1)?;
                self.parts.push(part);
            }
            _ => {}
        }
        Ok(())
    }
}

impl ItemDraft {
    /// The `index`th item's delta, named as a resource.
    fn delta_resource(&mut self, attrs: &[Attr], index: usize) -> Result<(), ParseError> {
        if let Some(r) = attr(attrs, Some(Ns::Rdf), "resource") {
            self.delta = Some(parse_url(&format!("item {index}"), "wc:delta", r)?);
        }
        Ok(())
    }

    /// The `index`th item as its opening tag names it.
    fn open(attrs: &[Attr], index: usize) -> Result<ItemDraft, ParseError> {
        let about = match attr(attrs, Some(Ns::Rdf), "about") {
            Some(a) => Some(parse_url(&format!("item {index}"), "rdf:about", a)?),
            None => None,
        };
        Ok(ItemDraft {
            about,
            title: String::new(),
            link: None,
            modified: None,
            size: None,
            content_type: None,
            etag: None,
            delta: None,
            extensions: Extensions::default(),
        })
    }
}

fn wrong_root(local: &str, ns_uri: &str) -> ParseError {
    ParseError::WrongRoot {
        format: FORMAT,
        found: local.to_string(),
        found_ns: ns_uri.to_string(),
        expected: "<rdf:RDF> in http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    }
}

fn too_many_items(limits: &RdfLimits) -> ParseError {
    ParseError::Limit {
        format: FORMAT,
        what: "number of items",
        limit: limits.max_items as u64,
    }
}

/// An entry of the channel's table of contents (`rdf:Seq`), within the limit of items.
fn push_seq(seq: &mut Vec<String>, attrs: &[Attr], limits: &RdfLimits) -> Result<(), ParseError> {
    let resource = attr(attrs, Some(Ns::Rdf), "resource")
        .or_else(|| attr(attrs, None, "resource"))
        .ok_or_else(|| ParseError::Missing {
            format: FORMAT,
            context: format!("rdf:li {}", seq.len() + 1),
            missing: "rdf:resource",
        })?;
    if seq.len() >= limits.max_items {
        return Err(too_many_items(limits));
    }
    seq.push(resource.trim().to_string());
    Ok(())
}

fn channel_field(c: &mut ChannelDraft, ns: Ns, local: &str, text: &str) -> Result<(), ParseError> {
    match (ns, local) {
        (Ns::Rss1, "title") => c.title = Some(text.to_string()),
        (Ns::Rss1, "link") => c.link = Some(parse_url("channel", "<link>", text)?),
        (Ns::Rss1, "description") => c.description = Some(text.to_string()),
        (Ns::Dc, "date") => c.date = Some(parse_date("channel", "<dc:date>", text)?),
        (Ns::Sy, "updatePeriod") => {
            c.update_period = Some(
                text.parse()
                    .map_err(|e: String| bad("channel", "<sy:updatePeriod>", text, e))?,
            )
        }
        (Ns::Sy, "updateFrequency") => {
            let n: u32 = text
                .trim()
                .parse()
                .map_err(|e| bad("channel", "<sy:updateFrequency>", text, e))?;
            if n == 0 {
                return Err(bad(
                    "channel",
                    "<sy:updateFrequency>",
                    text,
                    "must be a positive integer",
                ));
            }
            c.update_frequency = Some(n);
        }
        (Ns::Sy, "updateBase") => {
            c.update_base = Some(parse_date("channel", "<sy:updateBase>", text)?)
        }
        (Ns::Webcoop, "contentUsage") => {
            c.content_usage = Some(text.trim().chars().take(1024).collect())
        }
        (Ns::Webcoop, "snapshotMaxRecord") => {
            c.snapshot_max_record = Some(
                text.trim()
                    .parse()
                    .map_err(|e| bad("channel", "<wc:snapshotMaxRecord>", text, e))?,
            )
        }
        (Ns::Webcoop, "complete") => {
            c.complete = match text.trim() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(bad(
                        "channel",
                        "<wc:complete>",
                        text,
                        "must be true or false",
                    ));
                }
            }
        }
        (Ns::Webcoop, "seq") => {
            c.seq = Some(
                text.trim()
                    .parse()
                    .map_err(|e| bad("channel", "<wc:seq>", text, e))?,
            )
        }
        _ => {}
    }
    Ok(())
}

fn item_field(
    item: &mut ItemDraft,
    ns: Ns,
    local: &str,
    text: &str,
    index: usize,
) -> Result<(), ParseError> {
    let context = || format!("item {index}");
    match (ns, local) {
        (Ns::Rss1, "title") => item.title = text.to_string(),
        (Ns::Rss1, "link") => item.link = Some(text.trim().to_string()),
        // dc:date is the RSS 1.0 convention; dcterms:modified and the thesis's dc:modified
        // are read too, so listings from other generators work.
        (Ns::Dc, "date") | (Ns::DcTerms, "modified") | (Ns::Dc, "modified") => {
            item.modified = Some(parse_date(&context(), "<dc:date>", text)?)
        }
        (Ns::Dc, "format") => item.content_type = Some(text.trim().to_string()),
        (Ns::Webcoop, "size") => {
            item.size = Some(
                text.trim()
                    .parse()
                    .map_err(|e| bad(&context(), "<wc:size>", text, e))?,
            )
        }
        (Ns::Webcoop, "etag") => {
            item.etag = Some(
                text.parse()
                    .map_err(|e| bad(&context(), "<wc:etag>", text, e))?,
            )
        }
        (Ns::Webcoop, "delta") => {}
        (Ns::Webcoop, name) => {
            // Unknown wc: elements are kept; a reserved name in the wrong place is dropped.
            let _ = item.extensions.insert(name, text);
        }
        _ => {}
    }
    Ok(())
}

fn finish_channel(d: ChannelDraft) -> Result<Channel, ParseError> {
    let missing = |what| ParseError::Missing {
        format: FORMAT,
        context: "channel".into(),
        missing: what,
    };
    Ok(Channel {
        about: d.about.ok_or_else(|| missing("rdf:about"))?,
        title: d.title.unwrap_or_default(),
        link: d.link.ok_or_else(|| missing("<link>"))?,
        description: d.description.unwrap_or_default(),
        date: d.date,
        update_period: d.update_period.unwrap_or(UpdatePeriod::Daily),
        update_frequency: d.update_frequency.unwrap_or(1),
        update_base: d.update_base,
        changes: d.changes,
        hub: d.hub,
        snapshot: d.snapshot,
        snapshot_max_record: d.snapshot_max_record,
        complete: d.complete,
        seq: d.seq,
        content_usage: d.content_usage,
        parts: d.parts,
    })
}

fn finish_item(d: ItemDraft, index: usize) -> Result<RdfItem, ParseError> {
    let context = format!("item {index}");
    let url = match (d.about, d.link) {
        (Some(about), _) => about,
        (None, Some(link)) => parse_url(&context, "<link>", &link)?,
        (None, None) => {
            return Err(ParseError::Missing {
                format: FORMAT,
                context,
                missing: "rdf:about",
            });
        }
    };
    let modified = d.modified.ok_or_else(|| ParseError::Missing {
        format: FORMAT,
        context: format!("item {index} ({url})"),
        missing: "<dc:date>",
    })?;
    Ok(RdfItem {
        url,
        title: d.title,
        modified,
        size: d.size,
        content_type: d.content_type,
        etag: d.etag,
        delta: d.delta,
        extensions: d.extensions,
    })
}

/// An index names each part once and lists no items of its own (which would be a second
/// answer to what the parts say).
fn check_parts(channel: &Channel, items: &[RdfItem]) -> Result<(), ParseError> {
    if channel.parts.is_empty() {
        return Ok(());
    }
    if !items.is_empty() {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!(
                "the channel names {} parts and lists {} items of its own",
                channel.parts.len(),
                items.len()
            ),
        });
    }
    let mut seen = HashSet::with_capacity(channel.parts.len());
    if let Some(dup) = channel.parts.iter().find(|p| !seen.insert(p.url.as_str())) {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!("part {} is named twice", dup.url),
        });
    }
    Ok(())
}

/// RSS 1.0 requires the channel's `rdf:Seq` to list the items. Our writer lists them in the
/// same order, which is checked in one pass; other orders fall back to set comparison.
fn check_table_of_contents(seq: &[String], items: &[RdfItem]) -> Result<(), ParseError> {
    let mut present: HashSet<&str> = HashSet::with_capacity(items.len());
    if let Some(dup) = items.iter().find(|i| !present.insert(i.url.as_str())) {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!("item {} appears twice", dup.url),
        });
    }
    if seq.len() == items.len() && seq.iter().zip(items).all(|(s, i)| s == i.url.as_str()) {
        return Ok(());
    }
    let normalise = |s: &String| {
        Url::parse(s)
            .map(String::from)
            .unwrap_or_else(|_| s.clone())
    };
    let listed: HashSet<String> = seq.iter().map(normalise).collect();
    if let Some(item) = items.iter().find(|i| !listed.contains(i.url.as_str())) {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!("item {} is not listed in the channel's rdf:Seq", item.url),
        });
    }
    if let Some(url) = listed.iter().find(|u| !present.contains(u.as_str())) {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!("rdf:Seq lists {url}, which has no <item>"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_complete(value: &str) -> String {
        format!(
            r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:wc="{}">
<channel rdf:about="https://e.org/robots.rdf"><title>t</title><link>https://e.org/</link>
<description>d</description><wc:complete>{value}</wc:complete>
<items><rdf:Seq/></items></channel></rdf:RDF>"#,
            crate::namespaces::WEBCOOP
        )
    }

    #[test]
    fn completeness_is_read_as_stated_and_anything_else_refused() {
        let read = |v: &str| parse(with_complete(v).as_bytes(), &RdfLimits::default());
        assert!(read("true").unwrap().channel.complete);
        assert!(!read(" false ").unwrap().channel.complete);
        // A claim that cannot be read is not taken for either answer.
        for bad in ["yes", "1", "TRUE", ""] {
            let e = read(bad).unwrap_err().to_string();
            assert!(e.contains("wc:complete"), "{bad:?}: {e}");
        }
    }
}
