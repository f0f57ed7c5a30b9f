//! robots.rdf in parts: past one part's worth of resources the document at `/robots.rdf` is an
//! index whose channel names each part (`wc:part`) with the time it was last written, an opaque
//! version and its number of items; every part is a complete robots.rdf of its own holding a
//! range of the site's resources in path order. A crawler up to date asks for the index alone
//! and fetches only the parts whose version moved.
//!
//! `<wc:part rdf:resource="https://e.org/robots-1f2e.rdf" dc:date="2026-12-06T21:00:00Z"
//! wc:version="9c1d..." wc:items="2048"/>`: RDF/XML's property attributes on an empty property
//! element, so an RDF reader sees the part as a resource with a date, a version and a count.

use super::fields::{bad, parse_date, parse_url};
use crate::dates::format_w3cdtf;
use crate::error::ParseError;
use crate::namespaces::Ns;
use crate::xml_read::{Attr, attr};
use crate::xml_write::push_attr;
use chrono::{DateTime, Utc};
use url::Url;

/// Most parts an index may name: a hundred million resources at the agent's part size.
pub const MAX_PARTS: usize = 50_000;

/// Longest version token.
pub const MAX_VERSION: usize = 64;

/// One part as the index names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingPart {
    /// Where the part is served.
    pub url: Url,
    /// When the part was last written.
    pub date: DateTime<Utc>,
    /// An opaque token that changes whenever the part's content does (letters, digits, `-`,
    /// `_`; at most [`MAX_VERSION`]).
    pub version: String,
    /// How many items the part holds.
    pub items: u64,
}

/// Whether `v` may be a part's version.
pub fn valid_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= MAX_VERSION
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Writes one `wc:part` element of the channel.
pub fn write_part(out: &mut String, part: &ListingPart) {
    out.push_str("  <wc:part rdf:resource=\"");
    push_attr(out, part.url.as_str());
    out.push_str("\" dc:date=\"");
    out.push_str(&format_w3cdtf(part.date));
    out.push_str("\" wc:version=\"");
    push_attr(out, &part.version);
    out.push_str("\" wc:items=\"");
    out.push_str(&part.items.to_string());
    out.push_str("\"/>\n");
}

/// Reads a `wc:part` element's attributes; every one is required and checked.
pub(super) fn parse_part(attrs: &[Attr], index: usize) -> Result<ListingPart, ParseError> {
    let context = format!("wc:part {index}");
    let missing = |what| ParseError::Missing {
        format: crate::error::Format::RobotsRdf,
        context: context.clone(),
        missing: what,
    };
    let url = attr(attrs, Some(Ns::Rdf), "resource").ok_or_else(|| missing("rdf:resource"))?;
    let url = parse_url(&context, "rdf:resource", url)?;
    let date = attr(attrs, Some(Ns::Dc), "date").ok_or_else(|| missing("dc:date"))?;
    let date = parse_date(&context, "dc:date", date)?;
    let version = attr(attrs, Some(Ns::Webcoop), "version").ok_or_else(|| missing("wc:version"))?;
    if !valid_version(version) {
        return Err(bad(
            &context,
            "wc:version",
            version,
            "a version is 1 to 64 letters, digits, - or _",
        ));
    }
    let items = attr(attrs, Some(Ns::Webcoop), "items").ok_or_else(|| missing("wc:items"))?;
    let items = items
        .trim()
        .parse()
        .map_err(|e| bad(&context, "wc:items", items, e))?;
    Ok(ListingPart {
        url,
        date,
        version: version.to_string(),
        items,
    })
}

impl super::RobotsRdf {
    /// The whole listing from an index and its parts as read: the index's channel with every
    /// part's items, in the order given. A part naming parts of its own is refused (an index
    /// is one level deep), as are more items than `max_items`.
    pub fn assemble(
        mut self,
        parts: impl IntoIterator<Item = super::RobotsRdf>,
        max_items: usize,
    ) -> Result<super::RobotsRdf, ParseError> {
        for part in parts {
            if !part.channel.parts.is_empty() {
                return Err(ParseError::Inconsistent {
                    format: crate::error::Format::RobotsRdf,
                    message: format!("part {} names parts of its own", part.channel.about),
                });
            }
            if self.items.len() + part.items.len() > max_items {
                return Err(ParseError::Limit {
                    format: crate::error::Format::RobotsRdf,
                    what: "number of items",
                    limit: max_items as u64,
                });
            }
            self.items.extend(part.items);
        }
        self.channel.parts.clear();
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots_rdf::{Channel, RdfLimits, RobotsRdf, UpdatePeriod, parse, write};
    use chrono::TimeZone;

    fn index(parts: Vec<ListingPart>) -> RobotsRdf {
        RobotsRdf {
            channel: Channel {
                title: "e.org".into(),
                description: "d".into(),
                update_period: UpdatePeriod::Hourly,
                seq: Some(7),
                parts,
                ..Channel::new(
                    Url::parse("https://e.org/robots.rdf").unwrap(),
                    Url::parse("https://e.org/").unwrap(),
                )
            },
            items: Vec::new(),
        }
    }

    fn part(n: u64) -> ListingPart {
        ListingPart {
            url: Url::parse(&format!("https://e.org/robots-{n:x}.rdf")).unwrap(),
            date: Utc
                .timestamp_millis_opt(1_800_000_000_123 + n as i64)
                .unwrap(),
            version: format!("v{n:016x}"),
            items: 2000 + n,
        }
    }

    #[test]
    fn an_index_reads_back_as_written() {
        let doc = index((1..=3).map(part).collect());
        let back = parse(write(&doc).as_bytes(), &RdfLimits::default()).unwrap();
        assert_eq!(back, doc);
    }

    /// Replaces the first part's `from` text in a written index.
    fn altered(from: &str, to: &str) -> String {
        let text = write(&index(vec![part(1), part(2)]));
        assert!(text.contains(from), "{from} in {text}");
        text.replacen(from, to, 1)
    }

    #[test]
    fn a_part_that_cannot_be_read_whole_fails_the_index_naming_what() {
        let cases = [
            (altered("wc:version=\"v", "wc:version=\"<v"), "wc:version"),
            (altered("wc:version=\"v", "wc:version=\"../v"), "wc:version"),
            (altered("wc:items=\"2001\"", "wc:items=\"-1\""), "wc:items"),
            (altered("wc:items=\"2001\"", ""), "wc:items"),
            (altered(" dc:date=\"", " dc:dated=\""), "dc:date"),
            (altered("rdf:resource=\"https://e.org/robots-1.rdf\"", "rdf:resource=\"not a url\""), "rdf:resource"),
            (altered("robots-2.rdf", "robots-1.rdf"), "named twice"),
            (
                altered("    </rdf:Seq>", "      <rdf:li rdf:resource=\"https://e.org/a\"/>\n    </rdf:Seq>")
                    .replace("</rdf:RDF>", "<item rdf:about=\"https://e.org/a\"><title>a</title><link>https://e.org/a</link><dc:date>2026-01-01T00:00:00Z</dc:date></item></rdf:RDF>"),
                "items of its own",
            ),
        ];
        for (text, what) in cases {
            let e = parse(text.as_bytes(), &RdfLimits::default())
                .expect_err(what)
                .to_string();
            assert!(e.contains(what), "{what}: {e}");
        }
    }

    #[test]
    fn an_index_of_too_many_parts_is_refused() {
        let line = write(&index(vec![part(1)]));
        let one = line
            .lines()
            .find(|l| l.contains("<wc:part"))
            .unwrap()
            .to_string();
        let many: String = (0..=MAX_PARTS)
            .map(|i| one.replace("robots-1.rdf", &format!("robots-p{i}.rdf")) + "\n")
            .collect();
        let text = line.replace(&format!("{one}\n"), &many);
        let e = parse(text.as_bytes(), &RdfLimits::default()).unwrap_err();
        assert!(e.to_string().contains("number of parts"), "{e}");
    }
}
