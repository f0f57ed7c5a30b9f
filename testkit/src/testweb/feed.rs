//! A host's feed, as a blog serves one: the newest pages by the time they last changed, each
//! entry dated and carrying its text, in RSS 2.0 (`pubDate` only, as WordPress's `/feed/`),
//! Atom 1.0 (`updated`) or JSON Feed 1.1 (`date_modified`); or an Atom feed whose dates lie
//! (three entries in turn claim a change on every request, as the lying sitemap does).

use super::render::text;
use axum::body::Body;
use axum::http::{Response, StatusCode};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::fmt::Write as _;

/// A host's feed, and how it is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feed {
    /// RSS 2.0 at `/feed.xml`.
    Rss,
    /// Atom at `/feed.atom`.
    Atom,
    /// JSON Feed at `/feed.json`.
    Json,
    /// Atom at `/feed.atom`, three entries in turn dated now on every request.
    LyingAtom,
}

/// Entries a feed lists: its newest pages.
pub const FEED_ENTRIES: usize = 10;

impl Feed {
    /// Where it is served.
    pub fn path(self) -> &'static str {
        match self {
            Feed::Rss => "/feed.xml",
            Feed::Atom | Feed::LyingAtom => "/feed.atom",
            Feed::Json => "/feed.json",
        }
    }

    /// Its media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Feed::Rss => "application/rss+xml",
            Feed::Atom | Feed::LyingAtom => "application/atom+xml",
            Feed::Json => "application/feed+json",
        }
    }

    /// The `<link>` that names it in a page's head, where pages name it there.
    pub(super) fn head_link(self, named: FeedNaming) -> String {
        if named != FeedNaming::Head {
            return String::new();
        }
        format!(
            "<link rel=\"alternate\" type=\"{}\" title=\"Feed\" href=\"{}\">",
            self.media_type(),
            self.path()
        )
    }

    /// The `Link` header that names it, where pages name it there.
    pub(super) fn header_link(self, named: FeedNaming) -> Option<axum::http::HeaderValue> {
        if named != FeedNaming::LinkHeader {
            return None;
        }
        let v = format!(
            "<{}>; rel=\"alternate\"; type=\"{}\"",
            self.path(),
            self.media_type()
        );
        v.parse().ok()
    }
}

/// Where a host's pages name its feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedNaming {
    /// `<link rel="alternate" type="...">` in every page's head.
    Head,
    /// A `Link: <...>; rel="alternate"; type="..."` header on every page.
    LinkHeader,
    /// Nowhere: only robots.txt (a `Sitemap:` line) names it, if the test says so.
    Nowhere,
}

/// A host's feed of its generated pages.
pub(super) fn feed_of(
    s: &super::State,
    host: &str,
    spec: &super::HostSpec,
    kind: Feed,
) -> Response<Body> {
    let published = DateTime::parse_from_rfc2822(super::LAST_MODIFIED)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let turn = super::count(s, format!("{host}/feed")) as usize;
    let versions: HashMap<String, super::Version> = s
        .versions
        .lock()
        .map(|v| {
            v.iter()
                .filter(|((h, _), _)| h == host)
                .map(|((_, p), v)| (p.clone(), *v))
                .collect()
        })
        .unwrap_or_default();
    let pages: Vec<String> = (0..spec.pages).map(|i| format!("/p/{i}.html")).collect();
    let origin = format!("http://{host}:{}", s.port);
    let hub = spec.hub.as_deref();
    serve(kind, (&origin, hub), &pages, &versions, published, turn)
}

/// The feed of `origin`'s `pages` (path -> (version, last change)), written as `kind` says,
/// naming `hub` where there is one; `turn` counts the requests for it.
pub(super) fn serve(
    kind: Feed,
    (origin, hub): (&str, Option<&str>),
    pages: &[String],
    versions: &HashMap<String, (u32, DateTime<Utc>)>,
    published: DateTime<Utc>,
    turn: usize,
) -> Response<Body> {
    let now = Utc::now();
    let mut dated: Vec<(DateTime<Utc>, u32, &String)> = pages
        .iter()
        .map(|p| {
            let (v, at) = versions.get(p).copied().unwrap_or((0, published));
            (at, v, p)
        })
        .collect();
    // Newest first; pages never changed by their path.
    dated.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(b.2)));
    dated.truncate(FEED_ENTRIES);
    let entries = dated.iter().enumerate().map(|(i, (at, v, path))| {
        let lying = kind == Feed::LyingAtom && (i + 3 * turn) % FEED_ENTRIES < 3;
        let date = if lying { now } else { *at };
        (
            format!("{origin}{path}"),
            date,
            format!("{path} version {v}"),
        )
    });
    let mut body = String::new();
    let hub_link = hub.map_or(String::new(), |h| {
        format!("<link rel=\"hub\" href=\"{h}\"/>")
    });
    match kind {
        Feed::Rss => {
            let _ = write!(
                body,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel><title>{origin}</title><link>{origin}/</link><description>d</description><lastBuildDate>{}</lastBuildDate><atom:link href=\"{origin}/feed.xml\" rel=\"self\" type=\"application/rss+xml\"/>{}",
                // As WordPress: the time of the newest change.
                dated.first().map_or(published, |d| d.0).to_rfc2822(),
                hub_link.replace("<link", "<atom:link")
            );
            for (url, date, text) in entries {
                // RSS has no edit date: the first publication stays, the text changes.
                let _ = write!(
                    body,
                    "<item><title>{url}</title><link>{url}</link><guid isPermaLink=\"true\">{url}</guid><pubDate>{}</pubDate><description>{text}</description></item>",
                    published.to_rfc2822()
                );
                let _ = date;
            }
            body.push_str("</channel></rss>");
        }
        Feed::Atom | Feed::LyingAtom => {
            let _ = write!(
                body,
                "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>{origin}</title><id>{origin}/feed.atom</id><updated>{}</updated><link rel=\"self\" href=\"{origin}/feed.atom\"/>{hub_link}",
                now.to_rfc3339()
            );
            for (url, date, text) in entries {
                let _ = write!(
                    body,
                    "<entry><title>{url}</title><id>{url}</id><link rel=\"alternate\" href=\"{url}\"/><updated>{}</updated><published>{}</published><summary>{text}</summary></entry>",
                    date.to_rfc3339(),
                    published.to_rfc3339()
                );
            }
            body.push_str("</feed>");
        }
        Feed::Json => {
            let items: Vec<serde_json::Value> = entries
                .map(|(url, date, text)| {
                    serde_json::json!({
                        "id": url, "url": url, "content_text": text,
                        "date_published": published.to_rfc3339(),
                        "date_modified": date.to_rfc3339(),
                    })
                })
                .collect();
            body = serde_json::json!({
                "version": "https://jsonfeed.org/version/1.1",
                "title": origin,
                "home_page_url": format!("{origin}/"),
                "feed_url": format!("{origin}/feed.json"),
                "items": items,
            })
            .to_string();
        }
    }
    let mut r = text(StatusCode::OK, kind.media_type(), body);
    if let Some(h) = hub
        && let Ok(v) = format!(
            "<{h}>; rel=\"hub\", <{origin}{}>; rel=\"self\"",
            kind.path()
        )
        .parse()
    {
        r.headers_mut().insert(axum::http::header::LINK, v);
    }
    r
}
