//! The links of a page as a browser's tree holds them, by code webcoop did not write: html5ever
//! (the HTML standard's tokenizer and tree construction, Servo's) builds the document, the `url`
//! crate resolves by the URL standard, `encoding_rs` decodes. The `links_reference` fuzz target
//! holds the crawler's scan (`analyze::html_tags`, which builds no tree) to this reading on
//! random input; tests/reference/links_check.py does the same with html5lib and ada in CI.
//!
//! What counts as a link is the crawler's documented set (docs/CRAWLER.md "What is followed"),
//! read off the tree: HTML `a`/`area` `href` and SVG `a` `href` or `xlink:href` (not with
//! `rel=nofollow`), `link` `href` with rel alternate, next, prev or canonical, `frame` and
//! `iframe` `src`; the first `meta` refresh with a URL; the first `base href`; nothing inside a
//! template's contents; nothing at all under `<meta name=robots content=nofollow|none>`.

use encoding_rs::Encoding;
use html5ever::tendril::TendrilSink;
use html5ever::{ParseOpts, ns, parse_document};
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use std::collections::BTreeSet;
use url::Url;

/// A page as the reference reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The links, absolute, each once (as a set: the tree builder moves elements, e.g. out of
    /// a table, and the crawler's order within a page means nothing to its frontier).
    pub(crate) links: BTreeSet<String>,
    /// Where the first meta refresh sends the reader, if not to the page itself.
    pub(crate) refresh: Option<String>,
}

#[derive(Default)]
struct Found {
    base: Option<String>,
    hrefs: Vec<String>,
    refresh: Option<String>,
    nofollow: bool,
}

/// `bytes` served from `page` as `text/html; charset=<charset>`: the encoding is the
/// byte-order mark's, else the header's (the header makes it certain: no `<meta>` changes it).
pub(crate) fn read(page: &Url, bytes: &[u8], charset: &'static Encoding) -> Reading {
    let (encoding, bom) = Encoding::for_bom(bytes).unwrap_or((charset, 0));
    let (text, _) = encoding.decode_without_bom_handling(&bytes[bom..]);
    let opts = ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            // The crawler reads `<noscript>` as a browser with scripts on does: as text.
            scripting_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let dom = parse_document(RcDom::default(), opts).one(&*text);
    let mut found = Found::default();
    walk(&dom.document, &mut found);
    let base = found
        .base
        .as_deref()
        .and_then(|b| parse(page, b, encoding))
        .unwrap_or_else(|| page.clone());
    let links = if found.nofollow {
        BTreeSet::new()
    } else {
        found
            .hrefs
            .iter()
            .filter_map(|h| parse(&base, h, encoding))
            .filter_map(kept)
            .collect()
    };
    let here = kept(page.clone());
    let refresh = found
        .refresh
        .as_deref()
        .and_then(|r| parse(&base, r, encoding))
        .and_then(kept)
        .filter(|r| Some(r) != here.as_ref());
    Reading { links, refresh }
}

/// A URL as the crawler keeps one (its policy, not its reading): http or https with a host,
/// normalised.
fn kept(mut url: Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    webcoop_crawler::parsers::url_norm::normalize(&mut url);
    Some(url.to_string())
}

/// The URL standard's parser for a document in `encoding` (its query in the output encoding).
fn parse(base: &Url, href: &str, encoding: &'static Encoding) -> Option<Url> {
    // "Percent-encode after encoding": code point by code point through one encoder; one it
    // cannot encode is `%26%23` + its decimal value + `%3B`.
    fn encoder(out: &'static Encoding) -> impl for<'s> Fn(&'s str) -> std::borrow::Cow<'s, [u8]> {
        move |s| {
            let mut enc = out.new_encoder();
            let mut bytes = Vec::new();
            let mut buf = [0u8; 32];
            let mut chars = s.chars().peekable();
            while let Some(c) = chars.next() {
                let one = c.to_string();
                let last = chars.peek().is_none();
                let (result, _, written) =
                    enc.encode_from_utf8_without_replacement(&one, &mut buf, last);
                bytes.extend_from_slice(&buf[..written]);
                if let encoding_rs::EncoderResult::Unmappable(u) = result {
                    bytes.extend_from_slice(format!("%26%23{}%3B", u as u32).as_bytes());
                }
            }
            std::borrow::Cow::Owned(bytes)
        }
    }
    let encode = encoder(encoding.output_encoding());
    Url::options()
        .base_url(Some(base))
        .encoding_override(Some(&encode))
        .parse(href)
        .ok()
}

/// Every element under `node` in tree order; a template's contents are not its children.
fn walk(node: &Handle, found: &mut Found) {
    for child in node.children.borrow().iter() {
        if let NodeData::Element { name, attrs, .. } = &child.data {
            let attrs = attrs.borrow();
            let get = |ns: html5ever::Namespace, local: &str| {
                attrs
                    .iter()
                    .find(|a| a.name.ns == ns && &*a.name.local == local)
                    .map(|a| a.value.to_string())
            };
            let rel = get(ns!(), "rel").unwrap_or_default().to_ascii_lowercase();
            let rels: Vec<&str> = rel
                .split(['\t', '\n', '\x0c', '\r', ' '])
                .filter(|w| !w.is_empty())
                .collect();
            let local = &*name.local;
            if name.ns == ns!(html) {
                match local {
                    "base" if found.base.is_none() => found.base = get(ns!(), "href"),
                    "a" | "area" if !rels.contains(&"nofollow") => {
                        found.hrefs.extend(get(ns!(), "href"));
                    }
                    "frame" | "iframe" => found.hrefs.extend(get(ns!(), "src")),
                    "link"
                        if rels
                            .iter()
                            .any(|w| matches!(*w, "alternate" | "next" | "prev" | "canonical")) =>
                    {
                        found.hrefs.extend(get(ns!(), "href"));
                    }
                    "meta" => meta(&get, found),
                    _ => {}
                }
            } else if name.ns == ns!(svg) && local == "a" && !rels.contains(&"nofollow") {
                found
                    .hrefs
                    .extend(get(ns!(), "href").or_else(|| get(ns!(xlink), "href")));
            }
        }
        walk(child, found);
    }
}

fn meta(get: &dyn Fn(html5ever::Namespace, &str) -> Option<String>, found: &mut Found) {
    let content = get(ns!(), "content");
    if get(ns!(), "name").is_some_and(|n| n.eq_ignore_ascii_case("robots")) {
        let words = content.as_deref().unwrap_or_default().to_ascii_lowercase();
        found.nofollow |= words
            .split(',')
            .any(|w| matches!(w.trim(), "nofollow" | "none"));
    }
    if found.refresh.is_none()
        && get(ns!(), "http-equiv").is_some_and(|e| e.eq_ignore_ascii_case("refresh"))
        && let Some(c) = content
    {
        found.refresh = refresh_target(&c);
    }
}

/// The HTML standard's "shared declarative refresh steps": the URL a refresh's content names.
fn refresh_target(content: &str) -> Option<String> {
    const SPACE: &[char] = &['\t', '\n', '\x0c', '\r', ' '];
    let s = content.trim_start_matches(SPACE);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 && !s.starts_with('.') {
        return None;
    }
    let s = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let first = s.chars().next()?;
    if !(first == ';' || first == ',' || SPACE.contains(&first)) {
        return None;
    }
    let s = s.trim_start_matches(SPACE);
    let s = s.strip_prefix([';', ',']).unwrap_or(s);
    let s = s.trim_start_matches(SPACE);
    if s.is_empty() {
        return None;
    }
    let after_url = s
        .get(..3)
        .filter(|p| p.eq_ignore_ascii_case("url"))
        .map(|_| s[3..].trim_start_matches(SPACE))
        .and_then(|rest| rest.strip_prefix('='))
        .map(|rest| rest.trim_start_matches(SPACE));
    let s = match after_url {
        Some(rest) => rest,
        // `u`... without `url =` is the URL itself, quotes and all.
        None if s.starts_with(['u', 'U']) => return Some(s.to_string()),
        None => s,
    };
    Some(unquote(s).to_string())
}

fn unquote(s: &str) -> &str {
    match s.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let rest = &s[1..];
            rest.find(q).map_or(rest, |end| &rest[..end])
        }
        _ => s,
    }
}
