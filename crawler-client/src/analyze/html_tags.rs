//! The start tags of an HTML page with their attributes, as a browser's tokenizer (WHATWG
//! HTML, "Tokenization") finds them, for link extraction: comments, bogus comments, raw text
//! (`script`, `style`, `iframe`, `xmp`, `noembed`, `noframes`, `noscript`), RCDATA (`title`,
//! `textarea`), `plaintext` and CDATA sections in SVG or MathML are skipped, so a link written
//! inside them is not a link. Hand-written because the profile said so: lol_html, a rewriter
//! with a CSS selector engine, took a quarter of the crawl's CPU for what is a scan for `<`
//! (docs/ARCHITECTURE.md has the measurements; the differential test against lol_html is in
//! `links`).
//!
//! Foreign content (`svg`, `math`) is followed with its integration points (`foreignObject`,
//! MathML's text elements: HTML inside them again) and left on the tags the standard says
//! leave it. Where it is simpler than a browser: no tree is built, so what the tree builder
//! drops (an `<a>` inside `<select>`) is still read; character references are decoded by the
//! caller, on the few values it keeps.

use std::ops::Range;

/// A start tag: its name (lower case) and its attributes' names and raw values.
pub(crate) struct Tag<'a> {
    html: &'a [u8],
    name: &'a [u8],
    attrs: &'a [(Range<usize>, Range<usize>)],
    /// The namespace the tag's element is in.
    pub(crate) namespace: Namespace,
    /// Inside a `<template>`: content that is not part of the document until a script
    /// clones it, so nothing in it is a link or a declaration of the page.
    pub(crate) inert: bool,
}

impl Tag<'_> {
    /// The tag's name, lower case ASCII (empty when longer than any name it is asked about).
    pub(crate) fn name(&self) -> &[u8] {
        self.name
    }

    /// The raw value of the first attribute named `name` (lower case), as the page wrote it.
    pub(crate) fn get(&self, name: &str) -> Option<&[u8]> {
        self.attrs
            .iter()
            .find(|(n, _)| self.html[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.html[v.clone()])
    }
}

/// The namespace of an element: HTML, or the foreign content of SVG or MathML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Namespace {
    Html,
    Svg,
    MathMl,
}

/// Longest tag name kept: longer names are none of those this module or its callers look for.
const NAME_MAX: usize = 16;

/// ASCII whitespace as HTML defines it.
pub(crate) fn space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// An element open that decides how what follows it is read: SVG or MathML (foreign
/// content, where raw text is not) or one of their HTML integration points (HTML again).
#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Svg,
    Math,
    /// `foreignObject`, `desc` or `title` in SVG; `mi`, `mo`, `mn`, `ms`, `mtext` or an HTML
    /// `annotation-xml` in MathML: the index of its name in [`INTEGRATION_POINTS`].
    Integration(usize),
}

/// The HTML integration points and MathML text integration points (the standard's tree
/// construction, "HTML integration point"), by the namespace they are in.
const INTEGRATION_POINTS: [(&[u8], Frame); 9] = [
    (b"foreignobject", Frame::Svg),
    (b"desc", Frame::Svg),
    (b"title", Frame::Svg),
    (b"mi", Frame::Math),
    (b"mo", Frame::Math),
    (b"mn", Frame::Math),
    (b"ms", Frame::Math),
    (b"mtext", Frame::Math),
    (b"annotation-xml", Frame::Math),
];

/// The contexts open: which of them is current decides whether a tag is read as HTML.
#[derive(Default)]
struct Contexts {
    open: Vec<Frame>,
}

/// Deepest nesting of contexts followed: past it a page is read as if the outermost held.
const CONTEXTS_MAX: usize = 256;

impl Contexts {
    fn foreign(&self) -> Option<Frame> {
        self.open
            .last()
            .copied()
            .filter(|f| matches!(f, Frame::Svg | Frame::Math))
    }

    fn push(&mut self, f: Frame) {
        if self.open.len() < CONTEXTS_MAX {
            self.open.push(f);
        }
    }

    /// Leaves foreign content for the HTML around it (the nearest integration point, or the
    /// document).
    fn break_out(&mut self) {
        while self.foreign().is_some() {
            self.open.pop();
        }
    }

    /// An end tag: closes the nearest context it names.
    fn close(&mut self, name: &[u8]) {
        let named = |f: &Frame| match f {
            Frame::Svg => name == b"svg",
            Frame::Math => name == b"math",
            Frame::Integration(i) => INTEGRATION_POINTS[*i].0 == name,
        };
        if let Some(at) = self.open.iter().rposition(named) {
            self.open.truncate(at);
        }
    }
}

/// Whether a start tag in `within` opens one of its integration points.
fn integration_point(
    within: Frame,
    name: &[u8],
    html: &[u8],
    attrs: &[(Range<usize>, Range<usize>)],
) -> Option<usize> {
    let i = INTEGRATION_POINTS
        .iter()
        .position(|(n, f)| *n == name && *f == within)?;
    if name != b"annotation-xml" {
        return Some(i);
    }
    // Only an `annotation-xml` whose encoding is HTML holds HTML.
    let html_encoding = attrs.iter().any(|(n, v)| {
        html[n.clone()].eq_ignore_ascii_case(b"encoding")
            && (html[v.clone()].eq_ignore_ascii_case(b"text/html")
                || html[v.clone()].eq_ignore_ascii_case(b"application/xhtml+xml"))
    });
    html_encoding.then_some(i)
}

/// Calls `on_tag` for every start tag of `html`, in document order. A tag cut off by the end
/// of the input is not one (as in a browser).
pub(crate) fn start_tags(html: &[u8], mut on_tag: impl FnMut(&Tag<'_>)) {
    let mut attrs: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut name_buf = [0u8; NAME_MAX];
    // SVG and MathML open, and their integration points: inside foreign content, raw text
    // is not.
    let mut contexts = Contexts::default();
    // Depth of `template` elements open.
    let mut template = 0usize;
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &html[i..]) {
        let at = i + lt;
        let Some(&next) = html.get(at + 1) else {
            return;
        };
        i = match next {
            b'!' => markup_declaration(html, at, contexts.foreign().is_some()),
            b'?' => bogus_comment(html, at + 1),
            b'/' => match html.get(at + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let (name, end) = tag_name(html, at + 2, &mut name_buf);
                    attrs.clear();
                    let Some((after, _)) = attributes(html, end, &mut attrs) else {
                        return;
                    };
                    match &name_buf[..name] {
                        // The standard's breakout for these two end tags.
                        b"p" | b"br" if contexts.foreign().is_some() => contexts.break_out(),
                        b"template" => template = template.saturating_sub(1),
                        name => contexts.close(name),
                    }
                    after
                }
                Some(b'>') => at + 3,
                Some(_) => bogus_comment(html, at + 2),
                None => return,
            },
            c if c.is_ascii_alphabetic() => {
                let (name, end) = tag_name(html, at + 1, &mut name_buf);
                attrs.clear();
                let Some((after, self_closing)) = attributes(html, end, &mut attrs) else {
                    return;
                };
                let name = &name_buf[..name];
                // Most pages have no SVG or MathML: their tags take the short way.
                if contexts.open.is_empty() && !matches!(name, b"svg" | b"math") {
                    on_tag(&Tag {
                        html,
                        name,
                        attrs: &attrs,
                        namespace: Namespace::Html,
                        inert: template > 0,
                    });
                    if name == b"template" {
                        template += 1;
                    }
                    i = html_content_end(html, after, name);
                    continue;
                }
                let within = contexts.foreign();
                let breaks_out = within.is_some()
                    && (leaves_foreign_content(name)
                        || (name == b"font" && font_leaves_foreign_content(html, &attrs)));
                if breaks_out {
                    contexts.break_out();
                }
                let foreign_root = match name {
                    b"svg" => Some(Frame::Svg),
                    b"math" => Some(Frame::Math),
                    _ => None,
                };
                let in_foreign = contexts.foreign();
                let namespace = match foreign_root.or(in_foreign) {
                    Some(Frame::Svg) => Namespace::Svg,
                    Some(Frame::Math) => Namespace::MathMl,
                    _ => Namespace::Html,
                };
                on_tag(&Tag {
                    html,
                    name,
                    attrs: &attrs,
                    namespace,
                    inert: template > 0,
                });
                if name == b"template" && in_foreign.is_none() {
                    template += 1;
                }
                if let Some(root) = foreign_root {
                    if !self_closing {
                        contexts.push(root);
                    }
                    after
                } else if let Some(within) = in_foreign {
                    if !self_closing
                        && let Some(point) = integration_point(within, name, html, &attrs)
                    {
                        contexts.push(Frame::Integration(point));
                    }
                    after
                } else {
                    html_content_end(html, after, name)
                }
            }
            _ => at + 1,
        };
    }
}

/// Where the content of an HTML element `name` whose start tag ends at `after` goes on being
/// markup: past its text for raw text and RCDATA elements, nowhere after `plaintext`.
fn html_content_end(html: &[u8], after: usize, name: &[u8]) -> usize {
    match name {
        b"script" => script_end(html, after),
        b"style" | b"iframe" | b"xmp" | b"noembed" | b"noframes" | b"noscript" | b"textarea"
        | b"title" => raw_text_end(html, after, name),
        b"plaintext" => html.len(),
        _ => after,
    }
}

/// The tags after which a browser leaves SVG or MathML (the HTML standard's "any other start
/// tag" rule in foreign content, as lol_html applies it).
fn leaves_foreign_content(name: &[u8]) -> bool {
    matches!(
        name,
        b"b" | b"big"
            | b"blockquote"
            | b"body"
            | b"br"
            | b"center"
            | b"code"
            | b"dd"
            | b"div"
            | b"dl"
            | b"dt"
            | b"em"
            | b"embed"
            | b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"head"
            | b"hr"
            | b"i"
            | b"img"
            | b"li"
            | b"listing"
            | b"menu"
            | b"meta"
            | b"nobr"
            | b"ol"
            | b"p"
            | b"pre"
            | b"ruby"
            | b"s"
            | b"small"
            | b"span"
            | b"strong"
            | b"strike"
            | b"sub"
            | b"sup"
            | b"table"
            | b"tt"
            | b"u"
            | b"ul"
            | b"var"
    )
}

/// A `font` start tag with `color`, `face` or `size` leaves foreign content; a plain one
/// does not.
fn font_leaves_foreign_content(html: &[u8], attrs: &[(Range<usize>, Range<usize>)]) -> bool {
    attrs.iter().any(|(n, _)| {
        let n = &html[n.clone()];
        [&b"color"[..], b"face", b"size"]
            .iter()
            .any(|a| n.eq_ignore_ascii_case(a))
    })
}

/// A tag's name from `from` (its first letter), lower-cased into `buf`: its length there (0
/// when too long to be kept) and where it ends.
fn tag_name(html: &[u8], from: usize, buf: &mut [u8; NAME_MAX]) -> (usize, usize) {
    let end = html[from..]
        .iter()
        .position(|&b| space(b) || b == b'/' || b == b'>')
        .map_or(html.len(), |p| from + p);
    let name = &html[from..end];
    if name.len() > NAME_MAX {
        return (0, end);
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    (name.len(), end)
}

/// The attributes of a tag from `from` to its `>`: where the tag ends and whether it closed
/// itself (`/>`); none when the input ends first.
fn attributes(
    html: &[u8],
    from: usize,
    attrs: &mut Vec<(Range<usize>, Range<usize>)>,
) -> Option<(usize, bool)> {
    let len = html.len();
    let mut i = from;
    loop {
        let mut slash = false;
        while i < len && (space(html[i]) || html[i] == b'/') {
            slash = html[i] == b'/';
            i += 1;
        }
        if i >= len {
            return None;
        }
        if html[i] == b'>' {
            return Some((i + 1, slash));
        }
        // The first character of a name may be anything but a space, `/` or `>` (even `=`).
        let name_start = i;
        i += 1;
        while i < len && !space(html[i]) && !matches!(html[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let name = name_start..i;
        while i < len && space(html[i]) {
            i += 1;
        }
        let mut value = i..i;
        if i < len && html[i] == b'=' {
            i += 1;
            while i < len && space(html[i]) {
                i += 1;
            }
            match html.get(i) {
                None => return None,
                Some(&q @ (b'"' | b'\'')) => {
                    let end = i + 1 + memchr::memchr(q, &html[i + 1..])?;
                    value = i + 1..end;
                    i = end + 1;
                }
                Some(b'>') => {}
                Some(_) => {
                    let start = i;
                    while i < len && !space(html[i]) && html[i] != b'>' {
                        i += 1;
                    }
                    value = start..i;
                }
            }
        }
        attrs.push((name, value));
    }
}

/// After `<!` at `at`: a comment, a CDATA section (in SVG or MathML) or a bogus comment;
/// returns where it ends.
fn markup_declaration(html: &[u8], at: usize, foreign: bool) -> usize {
    let rest = &html[at + 2..];
    if rest.starts_with(b"--") {
        let body = at + 4;
        // `<!-->` and `<!--->` are whole comments.
        match &html[body.min(html.len())..] {
            [b'>', ..] => return body + 1,
            [b'-', b'>', ..] => return body + 2,
            _ => {}
        }
        let mut i = body;
        while let Some(p) = memchr::memmem::find(&html[i..], b"--") {
            let dash = i + p;
            match &html[dash + 2..] {
                [b'>', ..] => return dash + 3,
                [b'!', b'>', ..] => return dash + 4,
                _ => i = dash + 1,
            }
        }
        return html.len();
    }
    if foreign && rest.starts_with(b"[CDATA[") {
        return memchr::memmem::find(&html[at + 9..], b"]]>")
            .map_or(html.len(), |p| at + 9 + p + 3);
    }
    bogus_comment(html, at + 2)
}

/// A bogus comment from `from` ends at the next `>`.
fn bogus_comment(html: &[u8], from: usize) -> usize {
    memchr::memchr(b'>', &html[from.min(html.len())..]).map_or(html.len(), |p| from + p + 1)
}

/// Whether an end tag of `name` starts at `at` (`</name` then a space, `/` or `>`).
fn end_tag_at(html: &[u8], at: usize, name: &[u8]) -> bool {
    let rest = &html[at..];
    rest.len() > 2 + name.len()
        && rest.starts_with(b"</")
        && rest[2..2 + name.len()].eq_ignore_ascii_case(name)
        && matches!(
            rest[2 + name.len()],
            b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'
        )
}

/// Where the raw text or RCDATA of a `name` element from `from` ends: at its end tag's `<`.
fn raw_text_end(html: &[u8], from: usize, name: &[u8]) -> usize {
    let mut i = from;
    while let Some(p) = memchr::memchr(b'<', &html[i..]) {
        if end_tag_at(html, i + p, name) {
            return i + p;
        }
        i += p + 1;
    }
    html.len()
}

/// Where a script's text from `from` ends, at its end tag's `<`, with the escapes of the
/// standard's script data states: inside `<!--`, a `<script>` opened must be closed (or the
/// comment end) before a `</script>` ends the element.
fn script_end(html: &[u8], from: usize) -> usize {
    #[derive(PartialEq)]
    enum State {
        Data,
        Escaped,
        DoubleEscaped,
    }
    let mut state = State::Data;
    let mut i = from;
    while i < html.len() {
        let Some(p) = memchr::memchr2(b'<', b'-', &html[i..]) else {
            return html.len();
        };
        let at = i + p;
        let rest = &html[at..];
        if rest.starts_with(b"-->") {
            if state != State::Data {
                state = State::Data;
            }
            i = at + 3;
            continue;
        }
        if rest[0] == b'<' {
            match state {
                State::Data if rest.starts_with(b"<!--") => {
                    state = State::Escaped;
                    i = at + 4;
                    continue;
                }
                State::Data | State::Escaped if end_tag_at(html, at, b"script") => return at,
                State::Escaped if opening_script_at(html, at) => state = State::DoubleEscaped,
                State::DoubleEscaped if end_tag_at(html, at, b"script") => {
                    state = State::Escaped;
                }
                _ => {}
            }
        }
        i = at + 1;
    }
    html.len()
}

/// Whether `<script` then a space, `/` or `>` starts at `at`.
fn opening_script_at(html: &[u8], at: usize) -> bool {
    let rest = &html[at..];
    rest.len() > 7
        && rest[1..7].eq_ignore_ascii_case(b"script")
        && matches!(
            rest[7],
            b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        start_tags(html.as_bytes(), |t| {
            let name = String::from_utf8_lossy(t.name()).into_owned();
            let href = t
                .get("href")
                .map(|v| String::from_utf8_lossy(v).into_owned());
            out.push(match href {
                Some(h) => format!("{name}={h}"),
                None => name,
            });
        });
        out
    }

    #[test]
    fn tags_and_their_attributes_as_a_browser_reads_them() {
        assert_eq!(
            tags(r#"<A HREF=/x.html>a</a><a title="t > u" href='y'><a href = "z" href="dup">"#),
            ["a=/x.html", "a=y", "a=z"]
        );
        assert_eq!(tags("<a\nhref=\"m\"\n>"), ["a=m"]);
        assert_eq!(tags("<br/><img src=x /><a href=u/>"), ["br", "img", "a=u/"]);
        assert_eq!(tags("a < b <3 <a href=ok>"), ["a=ok"]);
        assert_eq!(
            tags("<a =href=v href=w>"),
            ["a=w"],
            "a name may start with ="
        );
        assert_eq!(
            tags("<a href=ok><a href=\"cut"),
            ["a=ok"],
            "a tag the input cuts is none"
        );
        assert_eq!(tags("<a href>"), ["a="]);
    }

    #[test]
    fn what_is_not_markup_is_skipped() {
        let skipped = [
            "<!-- <a href=c1> -->",
            "<!--> <a href=ok1>",
            "<!---> <a href=ok2>",
            "<!-- x --!> <a href=ok3>",
            "<!DOCTYPE html><?php <a href=p> ?>",
            "<script>var a = '<a href=s1>'; if (a</b) {}</script>",
            "<script><!-- document.write('<script>x</script><a href=s2>') --></script>",
            "<STYLE>a[href='<a href=s3>']{}</style >",
            "<title><a href=t1></title><textarea><a href=t2></TEXTAREA>",
            "<noscript><a href=n1></noscript><iframe><a href=i1></iframe>",
            "<svg><style><a href=ok4></style><![CDATA[<a href=cd>]]></svg>",
            "</a href=e1><a href=ok5>",
        ];
        let found: Vec<String> = skipped.iter().flat_map(|h| tags(h)).collect();
        let links: Vec<&String> = found.iter().filter(|t| t.contains('=')).collect();
        assert_eq!(
            links,
            ["a=ok1", "a=ok2", "a=ok3", "a=ok4", "a=ok5"],
            "{found:?}"
        );
        assert_eq!(tags("<plaintext><a href=p>"), ["plaintext"]);
        assert_eq!(
            tags("<svg><p><style><a href=x></style>"),
            ["svg", "p", "style"]
        );
        assert!(tags("<script>never closed <a href=x>").len() == 1);
    }
}
