//! What a response says, worked out where it was fetched (off the scheduler): validators,
//! the media type as checked after the fact (servers ignore `Accept`), the content digest that
//! finds duplicates and changes, and for HTML the links worth following.

mod char_refs;
mod content_coding;
pub(crate) mod encoding;
mod foreign;
mod gunzip;
mod html_tags;
pub(crate) mod links;
pub mod robots_tag;
pub(crate) mod scope;
pub mod url_norm;

/// The first header field named `name` (case-insensitive) of a list as received.
pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

use crate::analyze::scope::LinkPolicy;
use crate::ids::Fp;
pub use content_coding::decode;
pub(crate) use content_coding::decoded_room;
pub(crate) use content_coding::{Undecoded, decode_within};
use links::link_header;
use url::Url;
use webcoop_protocol::validator::Sha256Digest;

/// A response as received (or as read back from the archive).
#[derive(Debug, Clone, Copy)]
pub struct Received<'a> {
    /// The URL fetched.
    pub url: &'a Url,
    /// Status code.
    pub status: u16,
    /// Header fields.
    pub headers: &'a [(String, String)],
    /// Body as received (content-coded).
    pub body: &'a [u8],
    /// Whether the body was cut at the size limit.
    pub truncated: bool,
}

impl Received<'_> {
    /// The first header field named `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(self.headers, name)
    }
}

/// A link to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Normalised URL.
    pub(crate) url: String,
    /// Its fingerprint.
    pub(crate) fp: Fp,
    /// Its host's key, where that is not the start of `url`.
    origin: Option<String>,
}

impl Link {
    /// The link to `url`.
    pub(crate) fn to(url: &Url) -> Link {
        // An http(s) URL without user information begins with its origin: most links then
        // need no second string (a page's hundred links were a hundred allocations each way).
        let prefix = matches!(url.scheme(), "http" | "https")
            && url.username().is_empty()
            && url.password().is_none();
        Link {
            url: url.as_str().to_string(),
            fp: url_norm::fingerprint(url),
            origin: (!prefix).then(|| url_norm::origin_key(url)),
        }
    }

    /// The link to `url`, with the fingerprint `fp` in place of its own.
    pub(crate) fn with_fp(url: &Url, fp: Fp) -> Link {
        Link {
            fp,
            ..Link::to(url)
        }
    }

    /// Its host's key: scheme, host and port ([`url_norm::origin_key`]).
    pub(crate) fn origin(&self) -> &str {
        match &self.origin {
            Some(o) => o,
            None => {
                let after_scheme = self.url.find("://").map_or(0, |i| i + 3);
                let end = self.url[after_scheme..]
                    .find(['/', '?', '#'])
                    .map_or(self.url.len(), |i| after_scheme + i);
                &self.url[..end]
            }
        }
    }
}

/// What was learnt from a response.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// `ETag`.
    pub(crate) etag: Option<String>,
    /// `Last-Modified`.
    pub(crate) last_modified: Option<String>,
    /// Whether the validators are weak (RFC 9110, 8.8.2.2): a `Last-Modified` less than one
    /// second before the response's `Date` (or after it) may hide a second edit within that
    /// second, and so may an `ETag` servers derive from it (nginx's, Apache's).
    pub(crate) weak_validators: bool,
    /// Media type, from the header or sniffed when there is none.
    pub(crate) media_type: Option<String>,
    /// Whether the content is not whole: the body was cut at the size limit, or decoding it
    /// reached the limit. No validator is computed for such a page.
    pub(crate) cut: bool,
    /// Where a 3xx points, or a page's `<meta http-equiv="refresh">`, resolved and normalised.
    pub(crate) location: Option<Url>,
    /// The encoding an HTML page was read in and where it was learnt (`windows-1252;
    /// from=header`).
    pub(crate) encoding: Option<String>,
    /// Digest of the decoded content (2xx only).
    pub(crate) digest: Option<u64>,
    /// Strong validator of the decoded content as the webcoop protocol writes it (the
    /// SHA-256 entity tag), to compare with what a cooperating site announces (2xx only).
    pub(crate) validator: Option<String>,
    /// Links admitted by the policy (HTML 2xx only, not under `nofollow` in the page or its
    /// `X-Robots-Tag`).
    pub links: Vec<Link>,
    /// Links seen but not followed (scope, depth, traps).
    pub(crate) refused: usize,
    /// `<meta name="robots" content="noindex">`, or the same in `X-Robots-Tag`.
    pub(crate) noindex: bool,
    /// The content coding was unknown or the data corrupt: not parsed.
    pub(crate) undecodable: bool,
    /// A WebSub hub named by the page (`Link` header or `<link rel="hub">`) and the topic
    /// to subscribe to there (`rel="self"`, else the page).
    pub(crate) hub: Option<(Url, Url)>,
    /// Feeds the page names (`<link rel="alternate" type="application/rss+xml">`), admitted
    /// by the policy: not among `links`,
    /// since cooperation reads them as feeds (and follows them as links only where it does not).
    pub(crate) feeds: Vec<Link>,
}

/// Whether the content looks like HTML (for responses without a media type).
fn looks_like_html(body: &[u8]) -> bool {
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF))
        .unwrap_or(body.len());
    let head: Vec<u8> = body[start..]
        .iter()
        .take(15)
        .map(u8::to_ascii_lowercase)
        .collect();
    ["<!doctype html", "<html", "<head", "<body"]
        .iter()
        .any(|p| head.starts_with(p.as_bytes()))
}

/// As [`decode`], borrowing a body that has no content coding instead of copying it.
fn decoded<'a>(
    coding: Option<&str>,
    body: &'a [u8],
    truncated: bool,
    limit: usize,
) -> Option<std::borrow::Cow<'a, [u8]>> {
    let plain = coding
        .map(str::trim)
        .is_none_or(|c| c.is_empty() || c.eq_ignore_ascii_case("identity"));
    if plain {
        Some(std::borrow::Cow::Borrowed(&body[..body.len().min(limit)]))
    } else {
        decode(coding, body, truncated, limit).map(std::borrow::Cow::Owned)
    }
}

/// RFC 9110, 8.8.2.2: a `Last-Modified` is strong only if it is at least one second before
/// the `Date` of the response that carried it. Without a readable `Date` it is taken as strong
/// (there is nothing to compare with, and most responses have one).
pub(crate) fn weak_validators(last_modified: Option<&str>, date: Option<&str>) -> bool {
    use webcoop_protocol::dates::parse_http_date;
    match (
        last_modified.map(parse_http_date),
        date.map(parse_http_date),
    ) {
        (Some(Ok(lm)), Some(Ok(date))) => lm + chrono::Duration::seconds(1) > date,
        _ => false,
    }
}

/// What a response's `Link` header names: a WebSub hub and topic, and feeds
/// (`rel="alternate"` with a feed's type) as `<link>` does.
fn link_header_of(a: &mut Analysis, r: &Received<'_>, policy: &LinkPolicy, depth: u32) {
    if let Some(links) = r.header("link").map(|v| link_header(r.url, v)) {
        let find = |rel: &str| links.iter().find(|(_, r)| r == rel).map(|(u, _)| u.clone());
        if let Some(hub) = find("hub") {
            a.hub = Some((hub, find("self").unwrap_or_else(|| r.url.clone())));
        }
    }
    for url in r
        .header("link")
        .map(|v| links::feed_links(r.url, v))
        .unwrap_or_default()
    {
        let link = Link::to(&url);
        match policy.admit(&url, depth + 1) {
            Ok(()) if !a.feeds.iter().any(|l| l.fp == link.fp) => a.feeds.push(link),
            Ok(()) => {}
            Err(_) => a.refused += 1,
        }
    }
}

/// Analyses a response to a page found at `depth`.
pub fn analyze(r: Received<'_>, depth: u32, policy: &LinkPolicy, decode_limit: usize) -> Analysis {
    let mut a = Analysis {
        etag: r.header("etag").map(str::to_string),
        last_modified: r.header("last-modified").map(str::to_string),
        weak_validators: weak_validators(r.header("last-modified"), r.header("date")),
        media_type: r
            .header("content-type")
            .map(|c| {
                c.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|m| !m.is_empty()),
        ..Analysis::default()
    };
    if (300..400).contains(&r.status) {
        a.location = r
            .header("location")
            .and_then(|l| url_norm::resolve(r.url, l));
        return a;
    }
    if !(200..300).contains(&r.status) {
        return a;
    }
    let Some(content) = decoded(
        r.header("content-encoding"),
        r.body,
        r.truncated,
        decode_limit,
    ) else {
        a.undecodable = true;
        a.digest = Some(xxhash_rust::xxh3::xxh3_64(r.body));
        return a;
    };
    a.digest = Some(xxhash_rust::xxh3::xxh3_64(&content));
    // A coded body whose decoding filled the limit may have more to it than was decoded.
    let coded = !matches!(
        r.header("content-encoding").map(str::trim),
        None | Some("" | "identity")
    );
    a.cut = r.truncated || (coded && content.len() >= decode_limit);
    // WebSub discovery: the HTTP header first, then the document.
    link_header_of(&mut a, &r, policy, depth);
    if !a.cut {
        a.validator = Some(Sha256Digest::of(&content).etag().to_string());
    }
    if a.media_type.is_none() && looks_like_html(&content) {
        a.media_type = Some("text/html".to_string());
    }
    let html = matches!(
        a.media_type.as_deref(),
        Some("text/html" | "application/xhtml+xml")
    );
    if !html {
        return a;
    }
    let tag = robots_tag::parse(
        r.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("x-robots-tag"))
            .map(|(_, v)| v.as_str()),
        policy.agent(),
    );
    let found = links::extract_served(r.url, &content, r.header("content-type"));
    a.encoding = found
        .encoding
        .map(|(e, source)| format!("{}; from={}", e.name(), source.as_str()));
    // A refresh is a redirect written in the page: followed as one, whatever `nofollow` says
    // of the page's links.
    if a.location.is_none() {
        a.location = found.refresh.clone();
    }
    a.noindex = found.noindex || tag.noindex;
    if a.hub.is_none()
        && let Some(hub) = found.hub
    {
        a.hub = Some((hub, found.topic.unwrap_or_else(|| r.url.clone())));
    }
    let followed = if tag.nofollow {
        &[][..]
    } else {
        &found.links[..]
    };
    for url in followed {
        match policy.admit(url, depth + 1) {
            Ok(()) if found.feeds.contains(url) => {
                let link = Link::to(url);
                if !a.feeds.iter().any(|l| l.fp == link.fp) {
                    a.feeds.push(link);
                }
            }
            Ok(()) => a.links.push(Link::to(url)),
            Err(_) => a.refused += 1,
        }
    }
    a
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_last_modified_within_the_second_of_the_date_is_weak() {
        let date = Some("Tue, 24 Nov 2026 12:00:05 GMT");
        assert!(weak_validators(Some("Tue, 24 Nov 2026 12:00:05 GMT"), date));
        assert!(
            weak_validators(Some("Tue, 24 Nov 2026 12:00:09 GMT"), date),
            "in the future"
        );
        assert!(!weak_validators(
            Some("Tue, 24 Nov 2026 12:00:04 GMT"),
            date
        ));
        assert!(!weak_validators(
            Some("Tue, 24 Nov 2026 12:00:05 GMT"),
            None
        ));
        assert!(!weak_validators(Some("soon"), date));
    }

    use super::*;
    use crate::analyze::scope::{Limits, Scope};

    fn policy() -> LinkPolicy {
        LinkPolicy::new(
            Scope::Host,
            &[Url::parse("http://e.com/").unwrap()],
            Limits::default(),
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_links_origin_is_its_hosts_key_whether_read_from_its_url_or_kept() {
        for raw in [
            "http://e.com/a?b#c",
            "HTTP://E.COM:80/x",
            "https://e.com:443",
            "http://e.com:8080?q",
            "http://b\u{fc}cher.example/",
            "http://[::1]:8080/x",
            "http://127.0.0.1/",
            "http://user:pass@e.com/secret",
            "http://user@e.com:81/",
            "ftp://e.com/file",
        ] {
            let url = Url::parse(raw).unwrap();
            let link = Link::to(&url);
            assert_eq!(link.origin(), url_norm::origin_key(&url), "{raw}");
            assert_eq!(Link::with_fp(&url, Fp(7)).origin(), link.origin(), "{raw}");
        }
    }

    #[test]
    fn html_is_parsed_after_decoding_and_links_filtered() {
        let url = Url::parse("http://e.com/dir/").unwrap();
        let html =
            br#"<a href="a.html">a</a><a href="http://other.com/">o</a><a href="/x/x/x">trap</a>"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, html).unwrap();
        let body = gz.finish().unwrap();
        let h = headers(&[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("ETag", "\"1\""),
        ]);
        let r = Received {
            url: &url,
            status: 200,
            headers: &h,
            body: &body,
            truncated: false,
        };
        let a = analyze(r, 0, &policy(), 1 << 20);
        assert_eq!(
            a.links,
            [Link::to(&Url::parse("http://e.com/dir/a.html").unwrap())]
        );
        assert_eq!(a.refused, 2);
        assert_eq!(
            a.digest,
            Some(xxhash_rust::xxh3::xxh3_64(html)),
            "digest of the content, not the coding"
        );
        assert_eq!(a.etag.as_deref(), Some("\"1\""));
    }

    #[test]
    fn the_media_type_decides_not_the_url() {
        let url = Url::parse("http://e.com/page.html").unwrap();
        let body = br#"<html><a href="/hidden">x</a></html>"#;
        let image = headers(&[("Content-Type", "image/png")]);
        let a = analyze(
            Received {
                url: &url,
                status: 200,
                headers: &image,
                body,
                truncated: false,
            },
            0,
            &policy(),
            1 << 20,
        );
        assert!(a.links.is_empty(), "not HTML: stored, not parsed");
        let none = headers(&[]);
        let a = analyze(
            Received {
                url: &url,
                status: 200,
                headers: &none,
                body,
                truncated: false,
            },
            0,
            &policy(),
            1 << 20,
        );
        assert_eq!(
            (a.media_type.as_deref(), a.links.len()),
            (Some("text/html"), 1),
            "sniffed"
        );
        let moved = headers(&[("Location", "../new.html#top")]);
        let a = analyze(
            Received {
                url: &url,
                status: 301,
                headers: &moved,
                body: b"",
                truncated: false,
            },
            0,
            &policy(),
            1 << 20,
        );
        assert_eq!(a.location.unwrap().as_str(), "http://e.com/new.html");
        let bad = headers(&[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]);
        let a = analyze(
            Received {
                url: &url,
                status: 200,
                headers: &bad,
                body: b"not gzip",
                truncated: false,
            },
            0,
            &policy(),
            1 << 20,
        );
        assert!(a.undecodable && a.links.is_empty());
        let deep = headers(&[("Content-Type", "text/html")]);
        let a = analyze(
            Received {
                url: &url,
                status: 200,
                headers: &deep,
                body,
                truncated: false,
            },
            15,
            &policy(),
            1 << 20,
        );
        assert!(a.links.is_empty(), "a link from depth 15 would be at 16");
    }

    fn hub_of(link: Option<&str>, body: &[u8]) -> Option<(String, String)> {
        let url = Url::parse("http://e.com/blog/").unwrap();
        let mut h = vec![("Content-Type", "text/html")];
        if let Some(l) = link {
            h.push(("Link", l));
        }
        let h = headers(&h);
        analyze(
            Received {
                url: &url,
                status: 200,
                headers: &h,
                body,
                truncated: false,
            },
            0,
            &policy(),
            1 << 20,
        )
        .hub
        .map(|(h, t)| (h.to_string(), t.to_string()))
    }

    #[test]
    fn a_hub_is_found_in_the_header_first_then_the_document() {
        let html =
            br#"<link rel="hub" href="https://hub.example/"><link rel="self" href="/blog/feed">"#;
        assert_eq!(
            hub_of(None, html),
            Some((
                "https://hub.example/".into(),
                "http://e.com/blog/feed".into()
            ))
        );
        assert_eq!(
            hub_of(Some("<https://other.example/hub>; rel=\"hub\""), html),
            Some((
                "https://other.example/hub".into(),
                "http://e.com/blog/".into()
            )),
            "the header wins; without rel=self the topic is the page"
        );
        assert_eq!(hub_of(None, b"<p>no hub</p>"), None);
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;
    use crate::analyze::scope::{Limits, Scope};
    use std::io::Write;

    #[test]
    fn a_page_whose_decoding_fills_the_limit_has_no_validator() {
        let url = Url::parse("http://e.com/big.html").unwrap();
        let policy = LinkPolicy::new(Scope::Host, std::slice::from_ref(&url), Limits::default());
        let page = vec![b'a'; 10_000];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&page).unwrap();
        let body = gz.finish().unwrap();
        let headers = vec![
            ("content-type".to_string(), "text/html".to_string()),
            ("content-encoding".to_string(), "gzip".to_string()),
        ];
        let received = |limit| {
            analyze(
                Received {
                    url: &url,
                    status: 200,
                    headers: &headers,
                    body: &body,
                    truncated: false,
                },
                0,
                &policy,
                limit,
            )
        };
        // Small on the wire, larger than the limit decoded: not the whole page.
        let cut = received(4_096);
        assert!(cut.cut && cut.validator.is_none());
        let whole = received(1 << 20);
        assert!(!whole.cut);
        assert_eq!(
            whole.validator.as_deref(),
            Some(Sha256Digest::of(&page).etag().to_string().as_str())
        );
    }
}
