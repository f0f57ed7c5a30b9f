//! Reading the changes feed (from the changes endpoint or a WebSub delivery).

use super::{ChangeEntry, ChangeKind, ChangesFeed, InlineDelta, Resync};
use crate::dates::parse_w3cdtf;
use crate::delta::DeltaEncoding;
use crate::error::{Format, ParseError, excerpt};
use crate::namespaces::{CHANGE_SCHEME, Ns};
use crate::validator::EntityTag;
use crate::xml_read::{Node, ShapeLimits, XmlCursor, attr};
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
    ParseError::BadValue {
        format: FORMAT,
        context: context.to_string(),
        field,
        value: excerpt(value),
        reason: reason.to_string(),
    }
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
        match cursor.next_node()? {
            Node::End => break,
            Node::Open {
                ns,
                ns_uri,
                local,
                attrs,
                depth,
            } => match depth {
                1 if !(ns == Ns::Atom && local == "feed") => {
                    return Err(ParseError::WrongRoot {
                        format: FORMAT,
                        found: local.to_string(),
                        found_ns: ns_uri.to_string(),
                        expected: "<feed> in http://www.w3.org/2005/Atom",
                    });
                }
                2 => match (ns, local) {
                    (Ns::Atom, "entry") => {
                        if entries.len() >= limits.max_entries {
                            return Err(ParseError::Limit {
                                format: FORMAT,
                                what: "number of entries",
                                limit: limits.max_entries as u64,
                            });
                        }
                        entry = Some(EntryDraft::default());
                    }
                    (Ns::Atom, "link") => {
                        let href = attr(attrs, None, "href");
                        let rel = attr(attrs, None, "rel").unwrap_or("alternate");
                        if let Some(href) = href {
                            match rel {
                                "self" => {
                                    feed.self_link = Some(url("feed", "link rel=self", href)?)
                                }
                                "hub" => feed.hub = Some(url("feed", "link rel=hub", href)?),
                                "next" => feed.next = Some(url("feed", "link rel=next", href)?),
                                _ => {}
                            }
                        }
                    }
                    (Ns::Webcoop, "resync") => {
                        let since = attr(attrs, None, "since")
                            .ok_or_else(|| missing("wc:resync", "since"))?;
                        let href = attr(attrs, None, "href")
                            .ok_or_else(|| missing("wc:resync", "href"))?;
                        feed.resync = Some(Resync {
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
                },
                3 => {
                    let Some(e) = entry.as_mut() else { continue };
                    let context = format!("entry {}", entries.len() + 1);
                    match (ns, local) {
                        (Ns::Atom, "link") => {
                            let rel = attr(attrs, None, "rel").unwrap_or("alternate");
                            if let (true, Some(href)) =
                                (rel == "alternate", attr(attrs, None, "href"))
                            {
                                e.url = Some(url(&context, "link rel=alternate", href)?);
                            }
                        }
                        (Ns::Atom, "category")
                            if attr(attrs, None, "scheme") == Some(CHANGE_SCHEME) =>
                        {
                            let term = attr(attrs, None, "term").unwrap_or("");
                            e.kind =
                                Some(term.parse().map_err(|m: String| {
                                    bad(&context, "category term", term, m)
                                })?);
                        }
                        (Ns::Webcoop, "delta") => {
                            let encoding = attr(attrs, None, "encoding")
                                .ok_or_else(|| missing(&context, "wc:delta encoding"))?;
                            let base = attr(attrs, None, "base")
                                .ok_or_else(|| missing(&context, "wc:delta base"))?;
                            e.delta_meta = Some((
                                encoding.parse().map_err(|err| {
                                    bad(&context, "wc:delta encoding", encoding, err)
                                })?,
                                etag(&context, "wc:delta base", base)?,
                            ));
                        }
                        _ => {}
                    }
                }
                _ => {}
            },
            Node::Close {
                ns,
                local,
                text,
                depth,
            } => match depth {
                2 => match (ns, local) {
                    (Ns::Atom, "entry") => {
                        if let Some(e) = entry.take() {
                            entries.push(finish_entry(e, entries.len() + 1)?);
                        }
                    }
                    (Ns::Atom, "id") => feed.id = Some(text.trim().to_string()),
                    (Ns::Atom, "title") => feed.title = Some(text.to_string()),
                    (Ns::Atom, "updated") => feed.updated = Some(date("feed", "<updated>", text)?),
                    (Ns::Webcoop, "headSeq") => {
                        feed.head_seq = Some(
                            text.trim()
                                .parse()
                                .map_err(|e| bad("feed", "<wc:headSeq>", text, e))?,
                        )
                    }
                    (Ns::Webcoop, "contentUsage") => {
                        feed.content_usage = Some(text.trim().chars().take(1024).collect())
                    }
                    _ => {}
                },
                3 => {
                    let Some(e) = entry.as_mut() else { continue };
                    let context = format!("entry {}", entries.len() + 1);
                    match (ns, local) {
                        (Ns::Atom, "id") => e.id = true,
                        (Ns::Atom, "updated") => e.time = Some(date(&context, "<updated>", text)?),
                        (Ns::Webcoop, "seq") => {
                            e.seq = Some(
                                text.trim()
                                    .parse()
                                    .map_err(|err| bad(&context, "<wc:seq>", text, err))?,
                            )
                        }
                        (Ns::Webcoop, "etag") => e.etag = Some(etag(&context, "<wc:etag>", text)?),
                        (Ns::Webcoop, "previousEtag") => {
                            e.previous_etag = Some(etag(&context, "<wc:previousEtag>", text)?)
                        }
                        (Ns::Webcoop, "size") => {
                            e.size = Some(
                                text.trim()
                                    .parse()
                                    .map_err(|err| bad(&context, "<wc:size>", text, err))?,
                            )
                        }
                        (Ns::Webcoop, "type") => e.content_type = Some(text.trim().to_string()),
                        (Ns::Webcoop, "changed") => {
                            let f: f64 = text
                                .trim()
                                .parse()
                                .map_err(|err| bad(&context, "<wc:changed>", text, err))?;
                            if !(0.0..=1.0).contains(&f) {
                                return Err(bad(
                                    &context,
                                    "<wc:changed>",
                                    text,
                                    "must be between 0 and 1",
                                ));
                            }
                            e.changed_fraction = Some(f);
                        }
                        (Ns::Webcoop, "popularity") => {
                            let p: f64 = text
                                .trim()
                                .parse()
                                .map_err(|err| bad(&context, "<wc:popularity>", text, err))?;
                            if !(0.0..=1.0).contains(&p) {
                                return Err(bad(
                                    &context,
                                    "<wc:popularity>",
                                    text,
                                    "must be between 0 and 1",
                                ));
                            }
                            e.popularity = Some(p);
                        }
                        (Ns::Webcoop, "delta") => {
                            if let Some((encoding, base)) = e.delta_meta.take() {
                                let compact: String =
                                    text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                                let data = STANDARD
                                    .decode(compact.as_bytes())
                                    .map_err(|err| bad(&context, "<wc:delta>", &compact, err))?;
                                if data.len() > limits.max_inline_delta {
                                    return Err(ParseError::Limit {
                                        format: FORMAT,
                                        what: "inline delta size in bytes",
                                        limit: limits.max_inline_delta as u64,
                                    });
                                }
                                e.delta = Some(InlineDelta {
                                    encoding,
                                    base,
                                    data,
                                });
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            },
        }
    }

    Ok(ChangesFeed {
        id: feed.id.ok_or_else(|| missing("feed", "<id>"))?,
        title: feed.title.unwrap_or_default(),
        updated: feed.updated.ok_or_else(|| missing("feed", "<updated>"))?,
        self_link: feed
            .self_link
            .ok_or_else(|| missing("feed", "<link rel=\"self\">"))?,
        hub: feed.hub,
        next: feed.next,
        head_seq: feed.head_seq,
        resync: feed.resync,
        content_usage: feed.content_usage,
        entries,
    })
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
