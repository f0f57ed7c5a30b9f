//! Feeds as the web writes them (RSS 0.9x, 1.0 and 2.0, Atom 1.0, JSON Feed 1.0 and 1.1), read
//! as a listing of a site's newest pages: each entry's identity, its page and its date, where
//! the feed says it lives (`rel="self"`, the WebSub topic) and the hubs that push it. Parsing is
//! feed-rs's (one model for every format; `shared/research/crates.md`); this module bounds what
//! it is given and keeps of its answer only what a crawler acts on, resolved against the feed's
//! own URL. A feed lists its newest entries only: an entry missing from it says nothing.

use chrono::{DateTime, Utc};
use url::Url;

/// The largest feed read, in bytes: WordPress's default feed of 10 posts with their content is
/// under 100 KB, a feed of 10,000 entries with summaries a few MB.
pub const MAX_BYTES: usize = 16 << 20;

/// The most entries a feed may list: past them it is refused rather than read in part.
pub const MAX_ENTRIES: usize = 10_000;

/// The longest entry identity kept, in bytes.
const MAX_ID: usize = 2_048;

/// Which format a feed was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeedFormat {
    /// RSS 0.9x (`<rss version="0.91">`).
    Rss0,
    /// RSS 1.0 (RDF).
    Rss1,
    /// RSS 2.0.
    Rss2,
    /// Atom 1.0.
    Atom,
    /// JSON Feed 1.0 or 1.1.
    Json,
}

impl FeedFormat {
    /// The name shown in logs and `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedFormat::Rss0 => "RSS 0.9x",
            FeedFormat::Rss1 => "RSS 1.0",
            FeedFormat::Rss2 => "RSS 2.0",
            FeedFormat::Atom => "Atom",
            FeedFormat::Json => "JSON Feed",
        }
    }
}

/// Whether a media type (as in `<link rel="alternate" type="...">` or `Content-Type`) is
/// one a feed is served as.
pub fn is_feed_media_type(media_type: &str) -> bool {
    let t = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        t.as_str(),
        "application/rss+xml"
            | "application/atom+xml"
            | "application/feed+json"
            | "application/rdf+xml"
            | "application/x-rss+xml"
    )
}

/// Whether `body` is a feed by its first element (`<rss>`, Atom's `<feed>`, RSS 1.0's
/// `<rdf:RDF>`) or, for JSON, its first byte: what tells a feed named as a sitemap (search
/// engines accept RSS and Atom there) from a sitemap, before either is parsed.
pub fn sniff(body: &[u8]) -> bool {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let Some(mut rest) = start.map(|i| &body[i..]) else {
        return false;
    };
    if rest.first() == Some(&b'{') {
        return true;
    }
    // Past the XML declaration, comments, processing instructions and the doctype.
    for _ in 0..64 {
        let Some(open) = rest.iter().position(|b| *b == b'<') else {
            return false;
        };
        rest = &rest[open + 1..];
        match rest.first() {
            Some(b'?' | b'!') => {
                let Some(close) = rest.iter().position(|b| *b == b'>') else {
                    return false;
                };
                rest = &rest[close + 1..];
            }
            Some(_) => {
                let end = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
                    .unwrap_or(rest.len());
                let name = &rest[..end];
                let local = name.rsplit(|b| *b == b':').next().unwrap_or(name);
                return local.eq_ignore_ascii_case(b"rss")
                    || local.eq_ignore_ascii_case(b"feed")
                    || name.eq_ignore_ascii_case(b"rdf:RDF");
            }
            None => return false,
        }
    }
    false
}

/// One entry of a feed.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedEntry {
    /// Its identity (Atom `id`, RSS `guid`, JSON Feed `id`; feed-rs makes one from the link
    /// where a format has none).
    pub id: String,
    /// The page it announces, absolute.
    pub url: Url,
    /// When it last changed, as the feed says (Atom `updated`, JSON `date_modified`; RSS has
    /// no edit date and gives its `pubDate`).
    pub modified: Option<DateTime<Utc>>,
    /// When it was first published.
    pub published: Option<DateTime<Utc>>,
    /// A digest of what it says (title, summary, content): an entry rewritten without a new
    /// date (RSS 2.0 has none for edits) is told by it.
    pub digest: u64,
}

impl FeedEntry {
    /// The date that says whether the page changed since a visit: the last change, else the
    /// publication.
    pub fn date(&self) -> Option<DateTime<Utc>> {
        self.modified.or(self.published)
    }
}

/// A feed, as a crawler acts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct WebFeed {
    /// Its format.
    pub format: FeedFormat,
    /// Where it says it lives (`rel="self"`, JSON Feed `feed_url`): the WebSub topic.
    pub self_url: Option<Url>,
    /// The WebSub hubs it names.
    pub hubs: Vec<Url>,
    /// When the feed itself last changed, as it says.
    pub updated: Option<DateTime<Utc>>,
    /// Its entries, in the feed's order.
    pub entries: Vec<FeedEntry>,
    /// Entries read past: no page URL of `http` or `https`, or an identity too long.
    pub skipped: usize,
}

/// Why a feed could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FeedError {
    /// The document is larger than [`MAX_BYTES`].
    #[error("feed of {bytes} bytes is over the {} MiB a feed may have", MAX_BYTES >> 20)]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// It lists more than [`MAX_ENTRIES`] entries.
    #[error("feed lists {entries} entries, more than the {MAX_ENTRIES} read")]
    TooManyEntries {
        /// How many.
        entries: usize,
    },
    /// It is not RSS, Atom or JSON Feed, or not well-formed.
    #[error("not a feed (RSS, Atom or JSON Feed): {0}")]
    NotAFeed(String),
}

/// The JSON Feed fields feed-rs does not mark: the feed's own URL and its hubs.
#[derive(serde::Deserialize, Default)]
struct JsonHead {
    #[serde(default)]
    feed_url: Option<String>,
    #[serde(default)]
    hubs: Vec<JsonHub>,
}

#[derive(serde::Deserialize)]
struct JsonHub {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    url: String,
}

/// The digest of an entry's title, summary and content.
fn text_digest(e: &feed_rs::model::Entry) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [
        e.title.as_ref().map(|t| t.content.as_str()),
        e.summary.as_ref().map(|t| t.content.as_str()),
        e.content.as_ref().and_then(|c| c.body.as_deref()),
    ] {
        // Each part's length first, so that text moved from one part to another counts.
        let part = part.unwrap_or_default();
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.digest()
}

/// Reads the feed `body` fetched from `base` (relative URLs resolve against it).
pub fn parse(body: &[u8], base: &Url) -> Result<WebFeed, FeedError> {
    if body.len() > MAX_BYTES {
        return Err(FeedError::TooLarge { bytes: body.len() });
    }
    let parser = feed_rs::parser::Builder::new()
        .base_uri(Some(base.as_str()))
        .build();
    let feed = parser
        .parse(body)
        .map_err(|e| FeedError::NotAFeed(e.to_string()))?;
    if feed.entries.len() > MAX_ENTRIES {
        return Err(FeedError::TooManyEntries {
            entries: feed.entries.len(),
        });
    }
    let format = match feed.feed_type {
        feed_rs::model::FeedType::RSS0 => FeedFormat::Rss0,
        feed_rs::model::FeedType::RSS1 => FeedFormat::Rss1,
        feed_rs::model::FeedType::RSS2 => FeedFormat::Rss2,
        feed_rs::model::FeedType::Atom => FeedFormat::Atom,
        feed_rs::model::FeedType::JSON => FeedFormat::Json,
    };
    let absolute = |href: &str| {
        base.join(href.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
    };
    let rel_is = |l: &feed_rs::model::Link, want: &str| {
        l.rel.as_deref().is_some_and(|r| {
            r.split_ascii_whitespace()
                .any(|r| r.eq_ignore_ascii_case(want))
        })
    };
    let (mut self_url, mut hubs) = (None, Vec::new());
    if format == FeedFormat::Json {
        let head: JsonHead = serde_json::from_slice(body).unwrap_or_default();
        self_url = head.feed_url.as_deref().and_then(absolute);
        hubs = head
            .hubs
            .iter()
            .filter(|h| h.kind.eq_ignore_ascii_case("websub"))
            .filter_map(|h| absolute(&h.url))
            .collect();
    } else {
        for l in &feed.links {
            if rel_is(l, "self") && self_url.is_none() {
                self_url = absolute(&l.href);
            } else if rel_is(l, "hub")
                && let Some(u) = absolute(&l.href)
                && !hubs.contains(&u)
            {
                hubs.push(u);
            }
        }
    }
    let mut entries = Vec::with_capacity(feed.entries.len());
    let mut skipped = 0;
    for e in feed.entries {
        // The page: the entry's first link that is not another relation (an enclosure, a
        // comments feed, a reply), else an identity that is itself a web address.
        let page = e
            .links
            .iter()
            .filter(|l| l.rel.is_none() || rel_is(l, "alternate"))
            .find_map(|l| absolute(&l.href))
            .or_else(|| {
                Url::parse(e.id.trim())
                    .ok()
                    .and_then(|u| absolute(u.as_str()))
            });
        match page {
            Some(url) if e.id.len() <= MAX_ID => entries.push(FeedEntry {
                digest: text_digest(&e),
                id: e.id,
                url,
                modified: e.updated,
                published: e.published,
            }),
            _ => skipped += 1,
        }
    }
    Ok(WebFeed {
        format,
        self_url,
        hubs,
        updated: feed.updated,
        entries,
        skipped,
    })
}

#[cfg(test)]
mod tests;
