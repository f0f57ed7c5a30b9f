//! Links of an HTML page: `a`, `area`, `link`, `frame` and `iframe`, resolved against the page
//! URL or its `<base href>`, entity-decoded (lol_html hands attribute values over raw), with
//! `<meta name="robots">` and `rel="nofollow"` honoured. Streaming and fast (lol_html).

use lol_html::html_content::Element;
use lol_html::{ElementContentHandlers, HandlerResult, HtmlRewriter, Selector, Settings};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::LazyLock;
use url::Url;

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
}

#[derive(Default)]
struct Raw {
    base: Option<String>,
    hrefs: Vec<String>,
    noindex: bool,
    nofollow: bool,
    canonical: Option<String>,
    hub: Option<String>,
    topic: Option<String>,
}

fn decoded(value: &str) -> String {
    html_escape::decode_html_entities(value).into_owned()
}

fn rel_has(rel: Option<String>, word: &str) -> bool {
    rel.is_some_and(|r| {
        r.split_ascii_whitespace()
            .any(|w| w.eq_ignore_ascii_case(word))
    })
}

/// The selectors, parsed once (parsing them for every page cost as much as a tenth of the
/// extraction).
struct Selectors {
    base: Selector,
    a: Selector,
    frame: Selector,
    link: Selector,
    meta: Selector,
}

static SELECTORS: LazyLock<Option<Selectors>> = LazyLock::new(|| {
    Some(Selectors {
        base: "base[href]".parse().ok()?,
        a: "a[href], area[href]".parse().ok()?,
        frame: "frame[src], iframe[src]".parse().ok()?,
        link: "link[href]".parse().ok()?,
        meta: "meta[name][content]".parse().ok()?,
    })
});

fn on<'s, 'h>(
    selector: &'s Selector,
    handler: impl FnMut(&mut Element<'_, '_>) -> HandlerResult + 'h,
) -> (Cow<'s, Selector>, ElementContentHandlers<'h>) {
    (
        Cow::Borrowed(selector),
        ElementContentHandlers::default().element(handler),
    )
}

/// Extracts the links of `html` fetched from `page`. Whatever a page holds, a failure of the
/// parser costs that page's links, never the crawl: lol_html checks its own consistency with
/// `debug_assert!`, and an input the links fuzz target found trips one of them
/// (`fuzz/regressions/links/`), which in a build with debug assertions is a panic.
pub fn extract(page: &Url, html: &[u8]) -> PageLinks {
    std::panic::catch_unwind(|| extract_links(page, html)).unwrap_or_default()
}

// One function: lol_html's handlers borrow what they collect for the life of the rewriter,
// so they are registered, run and read back in one scope.
fn extract_links(page: &Url, html: &[u8]) -> PageLinks {
    let Some(sel) = SELECTORS.as_ref() else {
        return PageLinks::default();
    };
    let raw = RefCell::new(Raw::default());
    let settings = Settings::new()
        .append_element_content_handler(on(&sel.base, |el| {
            let mut r = raw.borrow_mut();
            if r.base.is_none() {
                r.base = el.get_attribute("href").map(|h| decoded(&h));
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.a, |el| {
            if !rel_has(el.get_attribute("rel"), "nofollow")
                && let Some(h) = el.get_attribute("href")
            {
                raw.borrow_mut().hrefs.push(decoded(&h));
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.frame, |el| {
            if let Some(h) = el.get_attribute("src") {
                raw.borrow_mut().hrefs.push(decoded(&h));
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.link, |el| {
            let rel = el
                .get_attribute("rel")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let href = el
                .get_attribute("href")
                .map(|h| decoded(&h))
                .unwrap_or_default();
            let mut r = raw.borrow_mut();
            let words: Vec<&str> = rel.split_ascii_whitespace().collect();
            if words.contains(&"canonical") {
                r.canonical = Some(href.clone());
            }
            if words.contains(&"hub") {
                r.hub = Some(href.clone());
            }
            if words.contains(&"self") {
                r.topic = Some(href.clone());
            }
            // Stylesheets, icons and the like are resources of the page, not pages: only
            // alternates and navigation are followed.
            if words
                .iter()
                .any(|w| matches!(*w, "alternate" | "next" | "prev" | "canonical"))
            {
                r.hrefs.push(href);
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.meta, |el| {
            let name = el.get_attribute("name").unwrap_or_default();
            if name.eq_ignore_ascii_case("robots") {
                let content = el
                    .get_attribute("content")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let mut r = raw.borrow_mut();
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
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    // A parse failure midway keeps what was found so far.
    let _ = rewriter.write(html).and_then(|_| rewriter.end());
    let raw = raw.into_inner();

    let base = raw
        .base
        .as_deref()
        .and_then(|b| page.join(b).ok())
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
        links: Vec::new(),
    };
    if !raw.nofollow {
        let mut seen = std::collections::HashSet::new();
        for href in raw.hrefs {
            if let Some(url) = crate::analyze::url_norm::resolve(&base, &href)
                && seen.insert(url.as_str().to_string())
            {
                out.links.push(url);
            }
        }
    }
    out
}

/// The `(target, rel)` pairs of a `Link` header value (RFC 8288), targets resolved against
/// `base`; a link with several relation types gives one pair per type.
pub fn link_header(base: &Url, value: &str) -> Vec<(Url, String)> {
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
        for param in split_outside_quotes(params, ';') {
            let Some((name, v)) = param.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("rel") {
                for rel in v.trim().trim_matches('"').split_ascii_whitespace() {
                    out.push((url.clone(), rel.to_ascii_lowercase()));
                }
            }
        }
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

    fn urls(links: &PageLinks) -> Vec<&str> {
        links.links.iter().map(Url::as_str).collect()
    }

    #[test]
    fn every_kind_of_link_resolved_and_decoded() {
        let page = Url::parse("http://e.com/dir/page.html").unwrap();
        let html = br#"<html><head><link rel="stylesheet" href="s.css"><link rel="alternate" href="feed.xml">
            <link rel="canonical" href="/dir/page.html"><link rel="hub" href="https://hub.e.com/"><link rel="self" href="/feed">
            </head><body>
            <a href="a.html">a</a> <a href="/p?x=1&amp;y=2">amp</a> <a href="b.html#frag">frag</a>
            <A HREF=/caps.html>caps</A> <a href='q&eacute;.html'>entity</a>
            <area href="map.html"> <iframe src="frame.html"></iframe> <frame src="f2.html">
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
                "http://e.com/dir/f2.html",
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
}
