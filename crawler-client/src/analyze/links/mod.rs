//! Links of an HTML page as a browser reads them: `a` and `area` (and SVG's `a`, by `href`
//! or `xlink:href`), `link` to alternates and navigation, `frame` and `iframe`, and a `<meta>`
//! refresh; in the page's encoding (`encoding`), character references decoded by the HTML
//! standard's rules (`char_refs`), resolved by the URL standard against the page's URL or its
//! `<base href>`, with `<meta name="robots">` and `rel="nofollow"` honoured; nothing inside a
//! `<template>`. The tags come from `html_tags`, a tokenizer's scan.

use super::char_refs::decode_attribute;
use super::encoding::{self, Sniffed};
use super::foreign::Namespace;
use super::html_tags::{Tag, start_tags};
use encoding_rs::Encoding;
use std::borrow::Cow;
use url::Url;

#[cfg(test)]
mod lol_reference;
mod refresh;
mod tree;

/// What a page says about itself and where it leads.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PageLinks {
    /// Links to follow, absolute and normalised, in document order (duplicates removed).
    pub links: Vec<Url>,
    /// `<meta name="robots" content="noindex">`.
    pub(crate) noindex: bool,
    /// `<meta name="robots" content="nofollow">` (then `links` is empty).
    pub(crate) nofollow: bool,
    /// `<link rel="canonical">`.
    pub(crate) canonical: Option<Url>,
    /// `<link rel="hub">` (WebSub discovery).
    pub(crate) hub: Option<Url>,
    /// `<link rel="self">`: the topic to subscribe to at the hub.
    pub(crate) topic: Option<Url>,
    /// `<link rel="alternate">` of a feed's media type (RSS, Atom, JSON Feed), also among
    /// `links`.
    pub(crate) feeds: Vec<Url>,
    /// Where a `<meta http-equiv="refresh">` sends the reader, when not to the page itself.
    pub(crate) refresh: Option<Url>,
    /// The encoding the page was read in, and where it was learnt.
    pub(crate) encoding: Option<(&'static Encoding, encoding::Source)>,
}

impl PageLinks {
    /// Where the page's `<meta http-equiv="refresh">` sends the reader.
    pub fn refresh(&self) -> Option<&Url> {
        self.refresh.as_ref()
    }

    /// The name of the encoding the page was read in (the Encoding Standard's).
    pub fn encoding_name(&self) -> Option<&'static str> {
        self.encoding.map(|(e, _)| e.name())
    }
}

/// What the scan found, links' texts borrowed from the page where they need no decoding.
#[derive(Default)]
struct Raw<'h> {
    base: Option<String>,
    hrefs: Vec<Cow<'h, str>>,
    noindex: bool,
    nofollow: bool,
    canonical: Option<String>,
    hub: Option<String>,
    topic: Option<String>,
    feeds: Vec<String>,
    refresh: Option<String>,
    /// The encoding the first `<meta>` declaring one names.
    declared: Option<&'static Encoding>,
    declared_seen: bool,
}

/// An element as link extraction reads it: a start tag of the scan, or an element of a
/// tree builder's document; its attributes' values live as long as `'h`.
pub(super) trait Element<'h> {
    /// The element's local name, lower case.
    fn name(&self) -> &[u8];
    /// The namespace it is in.
    fn namespace(&self) -> Namespace;
    /// Inside a template's contents.
    fn inert(&self) -> bool;
    /// The first attribute named `name` (`xlink:href` for XLink's), character references
    /// decoded.
    fn attr(&self, name: &str) -> Option<Cow<'h, str>>;
}

impl<'h> Element<'h> for Tag<'h, '_> {
    fn name(&self) -> &[u8] {
        Tag::name(self)
    }

    fn namespace(&self) -> Namespace {
        self.namespace
    }

    fn inert(&self) -> bool {
        self.inert
    }

    fn attr(&self, name: &str) -> Option<Cow<'h, str>> {
        let value = self.get(name)?;
        // Valid UTF-8 is checked by the standard library's fast path; only what fails it is
        // read again for its replacement characters.
        Some(match std::str::from_utf8(value) {
            Ok(v) => decode_attribute(v),
            Err(_) => Cow::Owned(decode_attribute(&String::from_utf8_lossy(value)).into_owned()),
        })
    }
}

fn rel_has(rel: Option<&str>, word: &str) -> bool {
    rel.is_some_and(|r| {
        r.split(['\t', '\n', '\x0c', '\r', ' '])
            .any(|w| w.eq_ignore_ascii_case(word))
    })
}

/// What one element adds to the page's links.
fn take<'h>(tag: &impl Element<'h>, r: &mut Raw<'h>) {
    if tag.inert() {
        return;
    }
    // SVG's `a` is a link; any other element of SVG or MathML is not the HTML one its name
    // says (MathML's `a`, SVG's `link` or `title`).
    let namespace = tag.namespace();
    if namespace == Namespace::MathMl || (namespace == Namespace::Svg && tag.name() != b"a") {
        return;
    }
    match tag.name() {
        b"base" => {
            if r.base.is_none()
                && let Some(h) = tag.attr("href")
            {
                r.base = Some(h.into_owned());
            }
        }
        b"a" | b"area" => {
            // SVG 1.1 wrote `xlink:href`; SVG 2's `href` wins where both are.
            let href = tag.attr("href").or_else(|| {
                (namespace == Namespace::Svg)
                    .then(|| tag.attr("xlink:href"))
                    .flatten()
            });
            if let Some(h) = href
                && !rel_has(tag.attr("rel").as_deref(), "nofollow")
            {
                r.hrefs.push(h);
            }
        }
        b"frame" | b"iframe" => {
            if let Some(h) = tag.attr("src") {
                r.hrefs.push(h);
            }
        }
        b"link" => {
            let Some(href) = tag.attr("href") else {
                return;
            };
            let rel = tag.attr("rel").unwrap_or_default().to_ascii_lowercase();
            let words: Vec<&str> = rel
                .split(['\t', '\n', '\x0c', '\r', ' '])
                .filter(|w| !w.is_empty())
                .collect();
            if words.contains(&"canonical") {
                r.canonical = Some(href.to_string());
            }
            if words.contains(&"hub") {
                r.hub = Some(href.to_string());
            }
            if words.contains(&"self") {
                r.topic = Some(href.to_string());
            }
            // Stylesheets, icons and the like are resources of the page, not pages: only
            // alternates and navigation are followed.
            if words.contains(&"alternate")
                && tag
                    .attr("type")
                    .is_some_and(|t| webcoop_protocol::web_feed::is_feed_media_type(&t))
            {
                r.feeds.push(href.to_string());
            }
            if words
                .iter()
                .any(|w| matches!(*w, "alternate" | "next" | "prev" | "canonical"))
            {
                r.hrefs.push(href);
            }
        }
        b"meta" => {
            meta_pragmas(tag, r);
            let (Some(name), Some(content)) = (tag.attr("name"), tag.attr("content")) else {
                return;
            };
            if !name.eq_ignore_ascii_case("robots") {
                return;
            }
            let content = content.to_ascii_lowercase();
            for directive in content.split(',').map(str::trim) {
                match directive {
                    "noindex" => r.noindex = true,
                    "nofollow" => r.nofollow = true,
                    "none" => {
                        r.noindex = true;
                        r.nofollow = true;
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// What a `<meta>` declares of the page: its encoding (`charset`, or `http-equiv` with a
/// `content` charset) and a refresh.
fn meta_pragmas<'h>(tag: &impl Element<'h>, r: &mut Raw<'h>) {
    let equiv = tag.attr("http-equiv");
    if !r.declared_seen {
        let declared = match (tag.attr("charset"), equiv.as_deref()) {
            (Some(c), _) => Some(Encoding::for_label(c.trim().as_bytes())),
            (None, Some(e)) if e.eq_ignore_ascii_case("content-type") => tag
                .attr("content")
                .map(|c| encoding::charset_of_meta_content(c.as_bytes())),
            _ => None,
        };
        if let Some(e) = declared.flatten() {
            r.declared = Some(e);
            r.declared_seen = true;
        }
    }
    if r.refresh.is_none()
        && equiv.is_some_and(|e| e.eq_ignore_ascii_case("refresh"))
        && let Some(content) = tag.attr("content")
        && let Some(url) = refresh::target(&content)
    {
        r.refresh = Some(url.to_string());
    }
}

/// Extracts the links of `html` fetched from `page` (UTF-8 unless the page says otherwise).
/// Broken markup gives what it can.
pub fn extract(page: &Url, html: &[u8]) -> PageLinks {
    extract_served(page, html, None)
}

/// Extracts the links of `html` fetched from `page` with the `Content-Type` header
/// `content_type`, in the encoding the HTML standard's sniffing decides.
pub fn extract_served(page: &Url, html: &[u8], content_type: Option<&str>) -> PageLinks {
    let sniffed = encoding::sniff(html, content_type);
    let text = in_encoding(html, sniffed);
    let raw = scan(&text);
    // A tentative encoding a later `<meta>` contradicts: read again in the declared one.
    if sniffed.source.tentative()
        && let Some(e) = raw
            .declared
            .and_then(|d| encoding::changed_by_meta(sniffed.encoding, d))
    {
        let declared = Sniffed {
            encoding: e,
            source: encoding::Source::Meta,
            bom: 0,
        };
        let text = in_encoding(html, declared);
        return finish(page, scan(&text), declared);
    }
    finish(page, raw, sniffed)
}

/// `html` as UTF-8, read in `sniffed`'s encoding (itself when it is UTF-8 without a BOM).
fn in_encoding(html: &[u8], sniffed: Sniffed) -> Cow<'_, [u8]> {
    if sniffed.encoding == encoding_rs::UTF_8 && sniffed.bom == 0 {
        return Cow::Borrowed(html);
    }
    match encoding::decode(html, sniffed) {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

/// The tags of `text` (UTF-8); by a tree builder where the scan cannot tell how a browser
/// reads them.
fn scan(text: &[u8]) -> Raw<'_> {
    let mut raw = Raw::default();
    if start_tags(text, true, |tag| take(tag, &mut raw)).is_err() {
        raw = Raw::default();
        if tree::affordable(text) {
            tree::elements(&String::from_utf8_lossy(text), |e| take(e, &mut raw));
        } else {
            // The tree builder's time grows with the square of the nesting: a page with more
            // tags than it can afford is read by the scan alone, past what it cannot tell.
            let _ = start_tags(text, false, |tag| take(tag, &mut raw));
        }
    }
    raw
}

/// The links found, resolved against the page's base, each once.
fn finish(page: &Url, raw: Raw<'_>, sniffed: Sniffed) -> PageLinks {
    let encoding = sniffed.encoding;
    let base = raw
        .base
        .as_deref()
        .and_then(|b| resolve_base(page, b, encoding))
        .unwrap_or_else(|| page.clone());
    let mut out = PageLinks {
        noindex: raw.noindex,
        nofollow: raw.nofollow,
        canonical: raw
            .canonical
            .as_deref()
            .and_then(|c| crate::analyze::url_norm::resolve(&base, c)),
        hub: raw.hub.as_deref().and_then(|h| base.join(h).ok()),
        topic: raw.topic.as_deref().and_then(|h| base.join(h).ok()),
        refresh: raw
            .refresh
            .as_deref()
            .and_then(|r| resolve_link(&base, r, encoding))
            .filter(|r| {
                let mut here = page.clone();
                crate::analyze::url_norm::normalize(&mut here);
                *r != here
            }),
        encoding: Some((encoding, sniffed.source)),
        feeds: raw
            .feeds
            .iter()
            .filter_map(|f| resolve_link(&base, f, encoding))
            .collect(),
        links: Vec::new(),
    };
    if !raw.nofollow {
        // A link's text is resolved once however often the page repeats it, and links to
        // fragments of the base (`#...`, the base itself once the fragment is dropped) once
        // for all: on the Rust documentation, 54 links a page hold 23 URLs.
        let mut texts = std::collections::HashSet::with_capacity(raw.hrefs.len());
        let resolved: Vec<Url> = raw
            .hrefs
            .iter()
            .map(|href| {
                let leading = href.trim_start_matches(|c: char| c <= ' ');
                if leading.starts_with('#') {
                    "#"
                } else {
                    href.as_ref()
                }
            })
            .filter(|text| texts.insert(*text))
            .filter_map(|text| resolve_link(&base, text, encoding))
            .collect();
        drop(texts);
        // The first of each URL, told apart by the text the URLs already hold: a set sized
        // once and no copy of each link (rehashing a growing set showed in the Rust
        // documentation's profile; the change is within the runs' spread).
        let mut seen = std::collections::HashSet::with_capacity(resolved.len());
        let first: Vec<bool> = resolved.iter().map(|u| seen.insert(u.as_str())).collect();
        drop(seen);
        out.links = resolved
            .into_iter()
            .zip(first)
            .filter_map(|(url, first)| first.then_some(url))
            .collect();
    }
    out
}

fn resolve_link(base: &Url, href: &str, encoding: &'static Encoding) -> Option<Url> {
    crate::analyze::url_norm::resolve_link(base, href, encoding)
}

/// The document's base URL from `<base href>`: parsed against the page's URL in the page's
/// encoding, kept whole (its fragment does not matter to what it resolves).
fn resolve_base(page: &Url, href: &str, encoding: &'static Encoding) -> Option<Url> {
    crate::analyze::url_norm::parse_in_document(page, href, encoding)
}

/// The `(target, rel)` pairs of a `Link` header value (RFC 8288), targets resolved against
/// `base`; a link with several relation types gives one pair per type.
pub fn link_header(base: &Url, value: &str) -> Vec<(Url, String)> {
    link_header_typed(base, value)
        .into_iter()
        .flat_map(|(url, rels, _)| rels.into_iter().map(move |rel| (url.clone(), rel)))
        .collect()
}

/// The feeds a `Link` header names: `rel="alternate"` with a feed's `type`.
pub(crate) fn feed_links(base: &Url, value: &str) -> Vec<Url> {
    link_header_typed(base, value)
        .into_iter()
        .filter(|(_, rels, kind)| {
            rels.iter().any(|r| r == "alternate")
                && kind
                    .as_deref()
                    .is_some_and(webcoop_protocol::web_feed::is_feed_media_type)
        })
        .map(|(url, _, _)| url)
        .collect()
}

/// Each link of a `Link` header value: its target, relation types (lowercase) and `type`.
fn link_header_typed(base: &Url, value: &str) -> Vec<(Url, Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    for link in split_outside_quotes(value, ',') {
        let link = link.trim();
        let Some(rest) = link.strip_prefix('<') else {
            continue;
        };
        let Some((target, params)) = rest.split_once('>') else {
            continue;
        };
        let Ok(url) = base.join(target.trim()) else {
            continue;
        };
        let (mut rels, mut kind) = (Vec::new(), None);
        for param in split_outside_quotes(params, ';') {
            let Some((name, v)) = param.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            if name.trim().eq_ignore_ascii_case("rel") {
                rels.extend(v.split_ascii_whitespace().map(str::to_ascii_lowercase));
            } else if name.trim().eq_ignore_ascii_case("type") {
                kind = Some(v.to_string());
            }
        }
        out.push((url, rels, kind));
    }
    out
}

fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut in_angle) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '<' if !quoted => in_angle = true,
            '>' if !quoted => in_angle = false,
            c if c == sep && !quoted && !in_angle => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_header_names_feeds_only_as_alternates_of_a_feed_type() {
        let base = Url::parse("https://blog.example/post/1").unwrap();
        let v = r#"</feed/>; rel="alternate"; type="application/rss+xml"; title="a, b", </comments/feed/>; type="application/atom+xml"; rel="alternate nofollow", </wp-json/>; rel="https://api.w.org/", </post/1.pdf>; rel="alternate"; type="application/pdf", </x.xml>; rel=alternate"#;
        let feeds: Vec<String> = feed_links(&base, v).iter().map(Url::to_string).collect();
        assert_eq!(
            feeds,
            [
                "https://blog.example/feed/",
                "https://blog.example/comments/feed/"
            ]
        );
        assert!(feed_links(&base, "garbage; rel=alternate; type=application/rss+xml").is_empty());
        assert!(
            feed_links(
                &base,
                "<http://[::1/>; rel=alternate; type=application/rss+xml"
            )
            .is_empty()
        );
        // The pairs the hub discovery reads are as before.
        assert_eq!(
            link_header(&base, r#"<https://hub.example/>; rel="hub self""#).len(),
            2
        );
    }

    fn urls(links: &PageLinks) -> Vec<&str> {
        links.links.iter().map(Url::as_str).collect()
    }

    #[test]
    fn a_refresh_names_a_crawlable_url_or_nothing() {
        let page = Url::parse("http://e.com/d/p.html").unwrap();
        let refresh = |content: &str| {
            let html = format!("<meta http-equiv=refresh content=\"{content}\"><a href=x>x</a>");
            extract(&page, html.as_bytes())
                .refresh()
                .map(Url::to_string)
        };
        // Scripts, data and the page itself lead nowhere; another site's page is named, and
        // the crawl's scope decides (as for a redirect).
        assert_eq!(refresh("0;url=javascript:alert(1)"), None);
        assert_eq!(refresh("0;url=data:text/html,x"), None);
        assert_eq!(refresh("0;url=p.html#top"), None);
        assert_eq!(refresh("0"), None);
        assert_eq!(
            refresh("0;url=http://other.test/"),
            Some("http://other.test/".into())
        );
        assert_eq!(
            refresh("0; url='q.html'"),
            Some("http://e.com/d/q.html".into())
        );
        // Under nofollow the links go, the refresh (a redirect) stays.
        let html = b"<meta name=robots content=nofollow><meta http-equiv=refresh content='0;url=q.html'><a href=x>x</a>";
        let found = extract(&page, html);
        assert!(found.links.is_empty());
        assert_eq!(
            found.refresh().map(Url::as_str),
            Some("http://e.com/d/q.html")
        );
    }

    #[test]
    fn links_repeated_or_to_fragments_are_the_links_each_resolved_alone() {
        let page = Url::parse("http://e.com/dir/page.html").unwrap();
        let hrefs = [
            "#top",
            "b.html",
            " \n#x",
            "./b.html",
            "#",
            "b.html#y",
            "%23z",
            "a.html",
            "b.html",
            "?#q",
            "#top",
            "http://o.com/#f",
            "\t#",
            "c.html",
            "a.html#top",
        ];
        let html: String = hrefs
            .iter()
            .map(|h| format!("<a href=\"{}\">x</a>", h.replace('\n', "&#10;")))
            .collect();
        let found = urls(&extract(&page, html.as_bytes()))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
        // Each link resolved on its own, the first of each URL kept.
        let mut alone: Vec<String> = Vec::new();
        for h in hrefs {
            let u = resolve_link(&page, h, encoding_rs::UTF_8)
                .unwrap()
                .to_string();
            if !alone.contains(&u) {
                alone.push(u);
            }
        }
        assert_eq!(found, alone);
        assert_eq!(
            found,
            [
                "http://e.com/dir/page.html",
                "http://e.com/dir/b.html",
                "http://e.com/dir/%23z",
                "http://e.com/dir/a.html",
                "http://o.com/",
                "http://e.com/dir/c.html",
            ]
        );
    }

    #[test]
    fn every_kind_of_link_resolved_and_decoded() {
        let page = Url::parse("http://e.com/dir/page.html").unwrap();
        let html = br#"<html><head><link rel="stylesheet" href="s.css"><link rel="alternate" href="feed.xml">
            <link rel="canonical" href="/dir/page.html"><link rel="hub" href="https://hub.e.com/"><link rel="self" href="/feed">
            </head><body>
            <a href="a.html">a</a> <a href="/p?x=1&amp;y=2">amp</a> <a href="b.html#frag">frag</a>
            <A HREF=/caps.html>caps</A> <a href='q&eacute;.html'>entity</a>
            <area href="map.html"> <iframe src="frame.html"></iframe>
            <a href="mailto:x@e.com">mail</a> <a href="a.html">again</a>
            <a rel="nofollow ugc" href="spam.html">spam</a>
            <script>var s = '<a href="not-a-link.html">';</script>
            <textarea><a href="inside-textarea.html"></textarea>
            </body></html>"#;
        let links = extract(&page, html);
        assert_eq!(
            urls(&links),
            [
                "http://e.com/dir/feed.xml",
                "http://e.com/dir/page.html",
                "http://e.com/dir/a.html",
                "http://e.com/p?x=1&y=2",
                "http://e.com/dir/b.html",
                "http://e.com/caps.html",
                "http://e.com/dir/q%C3%A9.html",
                "http://e.com/dir/map.html",
                "http://e.com/dir/frame.html",
            ]
        );
        assert_eq!(
            links.canonical.unwrap().as_str(),
            "http://e.com/dir/page.html"
        );
        assert_eq!(links.hub.unwrap().as_str(), "https://hub.e.com/");
        assert_eq!(links.topic.unwrap().as_str(), "http://e.com/feed");
        assert!(!links.noindex && !links.nofollow);
    }

    #[test]
    fn base_href_and_meta_robots() {
        let page = Url::parse("http://e.com/a/b.html").unwrap();
        let links = extract(
            &page,
            br#"<base href="http://other.e.com/root/"><a href="x.html">x</a>"#,
        );
        assert_eq!(urls(&links), ["http://other.e.com/root/x.html"]);
        let links = extract(
            &page,
            br#"<meta name="ROBOTS" content="noindex, nofollow"><a href="x.html">x</a>"#,
        );
        assert!(links.noindex && links.nofollow && links.links.is_empty());
        let links = extract(
            &page,
            br#"<meta name="robots" content="none"><a href="x.html">x</a>"#,
        );
        assert!(links.noindex && links.nofollow);
        // Broken markup still gives what it can.
        let links = extract(&page, b"<a href=\"ok.html\">ok</a><a href=\"unterminated");
        assert_eq!(urls(&links), ["http://e.com/a/ok.html"]);
    }

    /// SVG and MathML as the tree builder nests them (each case one the `links_reference`
    /// fuzz target found the scan reading differently from html5ever), and the pages the scan
    /// hands to a tree builder read as a browser reads them.
    #[test]
    fn foreign_content_as_the_tree_builder_nests_it() {
        let page = Url::parse("http://e.com/d/p.html").unwrap();
        let read = |html: &str| {
            let found = extract(&page, html.as_bytes());
            found
                .links
                .iter()
                .map(|u| u.path().trim_start_matches("/d/").to_string())
                .collect::<Vec<_>>()
        };
        // Inside MathML an `svg` is MathML's, and so is its `a`; inside SVG a `math` is SVG's.
        assert_eq!(read("<math><svg><a href=m>"), Vec::<String>::new());
        assert_eq!(read("<svg><math><a href=s>"), ["s"]);
        // An end tag closes the SVG elements open down to the one it names.
        assert_eq!(
            read("<svg><g><a xlink:href=x></g><a xlink:href=y></svg><a href=z>"),
            ["x", "y", "z"]
        );
        // A template's end tag inside SVG is SVG's, and leaves the HTML template open.
        assert_eq!(
            read("<template><svg><template></template><a href=t></svg></template><a href=o>"),
            ["o"]
        );
        // Handed to the tree builder: an end tag naming an element open outside the SVG
        // closes the SVG, so the `title` after it is HTML's and holds text only.
        assert_eq!(read("<a href=1><svg></a><title><a href=2>"), ["1"]);
        // ... and an integration point's end tag with HTML open inside it is ignored.
        assert_eq!(
            read("<svg><desc><b></desc><a xlink:href=in><a href=html>"),
            ["html"]
        );
        // A misnested page deeper than the tree builder can afford (its time grows with the
        // square of the nesting: 40,000 open elements took 4.4 s) is read by the scan alone,
        // past what it cannot tell as if the foreign content ended there (here as a browser
        // reads it: the title is HTML's, its text no link), at the scan's cost.
        let deep = format!(
            "<a href=1><svg></a><title><a href=2></title>{}<a href=end>",
            "<div>".repeat(200_000)
        );
        assert_eq!(read(&deep), ["1", "end"]);
    }

    /// The scan against lol_html, the parser it replaced, on markup chosen to tell them apart.
    #[test]
    fn the_scan_finds_what_lol_html_found_in_awkward_markup() {
        let page = Url::parse("http://e.com/d/p.html").unwrap();
        let cases: &[&[u8]] = &[
            br#"<a href="a&amp;b&#x26;c&lt;.html">x</a><a href=u&nbsp;v>y</a>"#,
            br#"<!-- <a href=c> --><a href=ok><!--><a href=ok2><!---><a href=ok3>"#,
            br#"<script>"<a href=s>"</script ><a href=after></script>"#,
            br#"<script><!-- <script></script> <a href=s2> --></script><a href=t>"#,
            br#"<style>/* <a href=x> */</style><title><a href=y></title><a href=z>"#,
            br#"<textarea><a href=x></textarea><noscript><a href=y></noscript><a href=w>"#,
            br#"<svg><a href="/svg-link"/><style><a href=in-svg-style></style></svg><a href=v>"#,
            br#"<svg><![CDATA[<a href=cdata>]]></svg><math><mi><a href=m></mi></math>"#,
            br#"<a href='q' rel="NoFollow"><a HREF = "sp aced"  ><A hReF=caps>"#,
            br#"<base href="/root/"><base href="/second/"><a href=r>"#,
            br#"<meta name=robots content="NOINDEX"><link rel="next prev" href=n>"#,
            br#"<link rel=canonical href="/c"><link rel=hub href=//hub.e.com/><link rel=self href=/f>"#,
            br#"<iframe src=f1></iframe><area href=ar>"#,
            b"<a href=\"\xc3\xa9.html\">",
            br#"<a href="x.html"<a href="y.html">"#,
            br#"<a/href=slash><a href=a/><a href=b =c>"#,
            br#"</a href=end><a href=ok></><a href=ok2></3><a href=ok3>"#,
            br#"<!DOCTYPE html><?xml?><a href=d>"#,
            br#"<a href="cut"#,
            br#"<plaintext><a href=p>"#,
        ];
        for html in cases {
            assert_eq!(
                extract(&page, html),
                lol_reference::lol_links(&page, html),
                "{}",
                String::from_utf8_lossy(html)
            );
        }
        // Where they part: a page that is not UTF-8 and says nothing of its encoding is read
        // in the standard's default, windows-1252 (lol_html read this pair as UTF-8).
        let links = extract(&page, b"<a href=\"\xff\xfe.html\">");
        assert_eq!(urls(&links), ["http://e.com/d/%C3%BF%C3%BE.html"]);
        // A `frame` outside a frameset is dropped by the tree builder (lol_html kept it); a
        // frameset's frames are read.
        let links = extract(&page, b"<body><p>text<frame src=f2><a href=a>");
        assert_eq!(urls(&links), ["http://e.com/d/a"]);
        let links = extract(&page, b"<frameset><frame src=f1><frame src=f2></frameset>");
        assert_eq!(urls(&links), ["http://e.com/d/f1", "http://e.com/d/f2"]);
    }

    /// The scan against lol_html on real documentation sites Debian packages: every page of
    /// the Python docs (which the tests need anyway), and every 64th of Rust's where installed
    /// (all 32,101 agreed when the scan replaced lol_html).
    #[test]
    fn the_scan_finds_what_lol_html_found_on_real_sites() {
        let roots = [
            "/usr/share/doc/python3.11/html",
            "/usr/share/doc/rust-doc/html",
        ];
        if !std::path::Path::new(roots[0]).is_dir() {
            assert!(
                !webcoop_testkit::tools_required(),
                "{} (python3.11-doc) is required",
                roots[0]
            );
            return;
        }
        let (mut pages, mut differ, mut tree_read) = (0, Vec::new(), Vec::new());
        let mut seen_rust = 0usize..;
        let mut stack: Vec<std::path::PathBuf> = roots.iter().map(Into::into).collect();
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "html")
                    && (path.starts_with(roots[0]) || seen_rust.next().is_some_and(|n| n % 64 == 0))
                {
                    let Ok(html) = std::fs::read(&path) else {
                        continue;
                    };
                    let page = Url::from_file_path(&path).unwrap();
                    pages += 1;
                    // lol_html's extraction read no refresh.
                    let ours = PageLinks {
                        refresh: None,
                        ..extract(&page, &html)
                    };
                    if ours != lol_reference::lol_links(&page, &html) {
                        differ.push(path.clone());
                    }
                    // Real pages are read by the scan alone: the tree builder is for the odd
                    // misnested one.
                    if start_tags(&html, true, |_| {}).is_err() {
                        tree_read.push(path);
                    }
                }
            }
        }
        assert!(pages > 500, "{pages} pages");
        assert!(
            differ.is_empty(),
            "{} of {pages} pages differ: {differ:?}",
            differ.len()
        );
        assert!(
            tree_read.is_empty(),
            "read by the tree builder: {tree_read:?}"
        );
    }
}
