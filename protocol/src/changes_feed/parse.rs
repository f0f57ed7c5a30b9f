//! Reading the changes feed (from the changes endpoint or a WebSub delivery).

use super::{ChangeEntry, ChangeKind, ChangesFeed, InlineDelta, Resync};
use crate::dates::parse_w3cdtf;
use crate::delta::DeltaEncoding;
use crate::error::{Format, ParseError, bad_value};
use crate::namespaces::{CHANGE_SCHEME, Ns};
use crate::validator::EntityTag;
use crate::xml_read::{Attr, Node, ShapeLimits, XmlCursor, attr};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use url::Url;

const FORMAT: Format = Format::ChangesFeed;

/// Bounds on a feed document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedLimits {
    /// Largest document in bytes.
    pub max_bytes: u64,
    /// Most entries.
    pub max_entries: usize,
    /// Largest inline delta, decoded.
    pub max_inline_delta: usize,
}

impl Default for FeedLimits {
    /// 64 MiB, 100,000 entries, 1 MiB per inline delta.
    fn default() -> Self {
        FeedLimits {
            max_bytes: 64 << 20,
            max_entries: 100_000,
            max_inline_delta: 1 << 20,
        }
    }
}

fn bad(context: &str, field: &'static str, value: &str, reason: impl ToString) -> ParseError {
    bad_value(FORMAT, context, field, value, reason)
}

fn missing(context: &str, what: &'static str) -> ParseError {
    ParseError::Missing {
        format: FORMAT,
        context: context.to_string(),
        missing: what,
    }
}

fn date(context: &str, field: &'static str, text: &str) -> Result<DateTime<Utc>, ParseError> {
    parse_w3cdtf(text).map_err(|e| bad(context, field, text, e))
}

fn url(context: &str, field: &'static str, text: &str) -> Result<Url, ParseError> {
    Url::parse(text.trim()).map_err(|e| bad(context, field, text, e))
}

fn etag(context: &str, field: &'static str, text: &str) -> Result<EntityTag, ParseError> {
    text.parse().map_err(|e| bad(context, field, text, e))
}

#[derive(Default)]
struct FeedDraft {
    id: Option<String>,
    title: Option<String>,
    updated: Option<DateTime<Utc>>,
    self_link: Option<Url>,
    hub: Option<Url>,
    next: Option<Url>,
    head_seq: Option<u64>,
    resync: Option<Resync>,
    content_usage: Option<String>,
}

#[derive(Default)]
struct EntryDraft {
    id: bool,
    seq: Option<u64>,
    kind: Option<ChangeKind>,
    url: Option<Url>,
    time: Option<DateTime<Utc>>,
    etag: Option<EntityTag>,
    previous_etag: Option<EntityTag>,
    size: Option<u64>,
    content_type: Option<String>,
    changed_fraction: Option<f64>,
    popularity: Option<f64>,
    delta_meta: Option<(DeltaEncoding, EntityTag)>,
    delta: Option<InlineDelta>,
}

/// Parses a changes feed document.
pub fn parse(bytes: &[u8], limits: &FeedLimits) -> Result<ChangesFeed, ParseError> {
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
            // Inline deltas are base64: 4/3 of the decoded limit, plus line breaks.
            max_text: limits.max_inline_delta / 3 * 4 + 4096,
        },
    );
    let mut feed = FeedDraft::default();
    let mut entries = Vec::new();
    let mut entry: Option<EntryDraft> = None;
    loop {
        let context = || format!("entry {}", entries.len() + 1);
        match cursor.next_node()? {
            Node::End => break,
            Node::Open {
                ns,
                ns_uri,
                local,
                attrs,
                depth,
            } => match (depth, ns, local) {
                (1, Ns::Atom, "feed") => {}
                (1, ..) => {
                    return Err(ParseError::WrongRoot {
                        format: FORMAT,
                        found: local.to_string(),
                        found_ns: ns_uri.to_string(),
                        expected: "<feed> in http://www.w3.org/2005/Atom",
                    });
                }
                (2, Ns::Atom, "entry") if entries.len() >= limits.max_entries => {
                    return Err(ParseError::Limit {
                        format: FORMAT,
                        what: "number of entries",
                        limit: limits.max_entries as u64,
                    });
                }
                (2, Ns::Atom, "entry") => entry = Some(EntryDraft::default()),
                (2, ..) => feed.open(ns, local, attrs)?,
                (3, ..) => {
                    if let Some(e) = entry.as_mut() {
                        e.open(&context(), (ns, local), attrs)?;
                    }
                }
                _ => {}
            },
            Node::Close {
                ns,
                local,
                text,
                depth,
            } => match (depth, ns, local) {
                (2, Ns::Atom, "entry") => {
                    if let Some(e) = entry.take() {
                        entries.push(finish_entry(e, entries.len() + 1)?);
                    }
                }
                (2, ..) => feed.close(ns, local, text)?,
                (3, ..) => {
                    if let Some(e) = entry.as_mut() {
                        e.close(&context(), (ns, local), text, limits)?;
                    }
                }
                _ => {}
            },
        }
    }
    feed.finish(entries)
}

/// A number between 0 and 1.
fn share(context: &str, field: &'static str, text: &str) -> Result<f64, ParseError> {
    let f: f64 = text
        .trim()
        .parse()
        .map_err(|err| bad(context, field, text, err))?;
    if !(0.0..=1.0).contains(&f) {
        return Err(bad(context, field, text, "must be between 0 and 1"));
    }
    Ok(f)
}

impl FeedDraft {
    /// The feed read, with its `entries`; what a feed must have, checked.
    fn finish(self, entries: Vec<ChangeEntry>) -> Result<ChangesFeed, ParseError> {
        Ok(ChangesFeed {
            id: self.id.ok_or_else(|| missing("feed", "<id>"))?,
            title: self.title.unwrap_or_default(),
            updated: self.updated.ok_or_else(|| missing("feed", "<updated>"))?,
            self_link: self
                .self_link
                .ok_or_else(|| missing("feed", "<link rel=\"self\">"))?,
            hub: self.hub,
            next: self.next,
            head_seq: self.head_seq,
            resync: self.resync,
            content_usage: self.content_usage,
            entries,
        })
    }

    /// An element of the feed itself opens (a link, the resync pointer).
    fn open(&mut self, ns: Ns, local: &str, attrs: &[Attr]) -> Result<(), ParseError> {
        match (ns, local) {
            (Ns::Atom, "link") => {
                let rel = attr(attrs, None, "rel").unwrap_or("alternate");
                let Some(href) = attr(attrs, None, "href") else {
                    return Ok(());
                };
                match rel {
                    "self" => self.self_link = Some(url("feed", "link rel=self", href)?),
                    "hub" => self.hub = Some(url("feed", "link rel=hub", href)?),
                    "next" => self.next = Some(url("feed", "link rel=next", href)?),
                    _ => {}
                }
            }
            (Ns::Webcoop, "resync") => {
                let since =
                    attr(attrs, None, "since").ok_or_else(|| missing("wc:resync", "since"))?;
                let href = attr(attrs, None, "href").ok_or_else(|| missing("wc:resync", "href"))?;
                self.resync = Some(Resync {
                    since: since
                        .trim()
                        .parse()
                        .map_err(|e| bad("feed", "wc:resync since", since, e))?,
                    listing: url("feed", "wc:resync href", href)?,
                    snapshot: attr(attrs, None, "snapshot")
                        .map(|s| url("feed", "wc:resync snapshot", s))
                        .transpose()?,
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// An element of the feed itself closes with its text.
    fn close(&mut self, ns: Ns, local: &str, text: &str) -> Result<(), ParseError> {
        match (ns, local) {
            (Ns::Atom, "id") => self.id = Some(text.trim().to_string()),
            (Ns::Atom, "title") => self.title = Some(text.to_string()),
            (Ns::Atom, "updated") => self.updated = Some(date("feed", "<updated>", text)?),
            (Ns::Webcoop, "headSeq") => {
                self.head_seq = Some(
                    text.trim()
                        .parse()
                        .map_err(|e| bad("feed", "<wc:headSeq>", text, e))?,
                )
            }
            (Ns::Webcoop, "contentUsage") => {
                self.content_usage = Some(text.trim().chars().take(1024).collect())
            }
            _ => {}
        }
        Ok(())
    }
}

impl EntryDraft {
    /// An element of an entry opens (its link, its kind of change, its delta's attributes).
    fn open(
        &mut self,
        context: &str,
        (ns, local): (Ns, &str),
        attrs: &[Attr],
    ) -> Result<(), ParseError> {
        match (ns, local) {
            (Ns::Atom, "link") => {
                let rel = attr(attrs, None, "rel").unwrap_or("alternate");
                if let (true, Some(href)) = (rel == "alternate", attr(attrs, None, "href")) {
                    self.url = Some(url(context, "link rel=alternate", href)?);
                }
            }
            (Ns::Atom, "category") if attr(attrs, None, "scheme") == Some(CHANGE_SCHEME) => {
                let term = attr(attrs, None, "term").unwrap_or("");
                self.kind = Some(
                    term.parse()
                        .map_err(|m: String| bad(context, "category term", term, m))?,
                );
            }
            (Ns::Webcoop, "delta") => {
                let encoding = attr(attrs, None, "encoding")
                    .ok_or_else(|| missing(context, "wc:delta encoding"))?;
                let base =
                    attr(attrs, None, "base").ok_or_else(|| missing(context, "wc:delta base"))?;
                self.delta_meta = Some((
                    encoding
                        .parse()
                        .map_err(|err| bad(context, "wc:delta encoding", encoding, err))?,
                    etag(context, "wc:delta base", base)?,
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// An element of an entry closes with its text.
    fn close(
        &mut self,
        context: &str,
        (ns, local): (Ns, &str),
        text: &str,
        limits: &FeedLimits,
    ) -> Result<(), ParseError> {
        let number = |field| {
            text.trim()
                .parse::<u64>()
                .map_err(|err| bad(context, field, text, err))
        };
        match (ns, local) {
            (Ns::Atom, "id") => self.id = true,
            (Ns::Atom, "updated") => self.time = Some(date(context, "<updated>", text)?),
            (Ns::Webcoop, "seq") => self.seq = Some(number("<wc:seq>")?),
            (Ns::Webcoop, "etag") => self.etag = Some(etag(context, "<wc:etag>", text)?),
            (Ns::Webcoop, "previousEtag") => {
                self.previous_etag = Some(etag(context, "<wc:previousEtag>", text)?)
            }
            (Ns::Webcoop, "size") => self.size = Some(number("<wc:size>")?),
            (Ns::Webcoop, "type") => self.content_type = Some(text.trim().to_string()),
            (Ns::Webcoop, "changed") => {
                self.changed_fraction = Some(share(context, "<wc:changed>", text)?)
            }
            (Ns::Webcoop, "popularity") => {
                self.popularity = Some(share(context, "<wc:popularity>", text)?)
            }
            (Ns::Webcoop, "delta") => {
                if let Some((encoding, base)) = self.delta_meta.take() {
                    let data = inline_delta(context, text, limits)?;
                    self.delta = Some(InlineDelta {
                        encoding,
                        base,
                        data,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// An inline delta's bytes, from base64 with line breaks, within the limit.
fn inline_delta(context: &str, text: &str, limits: &FeedLimits) -> Result<Vec<u8>, ParseError> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let data = STANDARD
        .decode(compact.as_bytes())
        .map_err(|err| bad(context, "<wc:delta>", &compact, err))?;
    if data.len() > limits.max_inline_delta {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "inline delta size in bytes",
            limit: limits.max_inline_delta as u64,
        });
    }
    Ok(data)
}

fn finish_entry(e: EntryDraft, index: usize) -> Result<ChangeEntry, ParseError> {
    let context = format!("entry {index}");
    if !e.id {
        return Err(missing(&context, "<id>"));
    }
    Ok(ChangeEntry {
        seq: e.seq.ok_or_else(|| missing(&context, "<wc:seq>"))?,
        kind: e
            .kind
            .ok_or_else(|| missing(&context, "<category> in the webcoop change scheme"))?,
        url: e
            .url
            .ok_or_else(|| missing(&context, "<link rel=\"alternate\">"))?,
        time: e.time.ok_or_else(|| missing(&context, "<updated>"))?,
        etag: e.etag,
        previous_etag: e.previous_etag,
        size: e.size,
        content_type: e.content_type,
        changed_fraction: e.changed_fraction,
        delta: e.delta,
        popularity: e.popularity,
    })
}
