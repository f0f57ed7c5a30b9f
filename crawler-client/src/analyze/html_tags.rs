//! The start tags of an HTML page with their attributes, as a browser's tokenizer (WHATWG
//! HTML, "Tokenization") finds them, for link extraction: comments, bogus comments, raw text
//! (`script`, `style`, `iframe`, `xmp`, `noembed`, `noframes`, `noscript`), RCDATA (`title`,
//! `textarea`), `plaintext` and CDATA sections in SVG or MathML are skipped, so a link written
//! inside them is not a link. Hand-written because the profile said so: lol_html, a rewriter
//! with a CSS selector engine, took a quarter of the crawl's CPU for what is a scan for `<`
//! (docs/ARCHITECTURE.md has the measurements; the differential test against lol_html is in
//! `links`).
//!
//! Foreign content (`svg`, `math`) is followed by `foreign`, which says where the reading
//! needs the tree the scan does not build (a frameset, misnested SVG): the scan then stops
//! with [`Unsure`] and the caller reads the page with a tree builder. Character references
//! are decoded by the caller, on the few values it keeps.

use super::foreign::{Contexts, Namespace, StartTag, Unsure};
use std::ops::Range;

/// A start tag: its name (lower case) and its attributes' names and raw values.
pub(crate) struct Tag<'h, 'r> {
    html: &'h [u8],
    name: &'r [u8],
    attrs: &'r [(Range<usize>, Range<usize>)],
    /// The namespace the tag's element is in.
    pub(crate) namespace: Namespace,
    /// Inside a `<template>`: content that is not part of the document until a script
    /// clones it, so nothing in it is a link or a declaration of the page.
    pub(crate) inert: bool,
}

impl<'h> Tag<'h, '_> {
    /// The tag's name, lower case ASCII (empty when longer than any name it is asked about).
    pub(crate) fn name(&self) -> &[u8] {
        self.name
    }

    /// The raw value of the first attribute named `name` (lower case), as the page wrote it.
    pub(crate) fn get(&self, name: &str) -> Option<&'h [u8]> {
        self.attrs
            .iter()
            .find(|(n, _)| self.html[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.html[v.clone()])
    }
}

/// Longest tag name kept: longer names are none of those this module or its callers look for.
const NAME_MAX: usize = 16;

/// ASCII whitespace as HTML defines it.
pub(crate) fn space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// Calls `on_tag` for every start tag of `html`, in document order. A tag cut off by the end
/// of the input is not one (as in a browser). Stops with [`Unsure`] where the page's reading
/// needs a tree (`foreign` says where) when `strict`: the caller reads it with a tree builder.
/// Not `strict`, it reads on, as if foreign content ended there and frames were in a frameset.
pub(crate) fn start_tags<'h>(
    html: &'h [u8],
    strict: bool,
    mut on_tag: impl FnMut(&Tag<'h, '_>),
) -> Result<(), Unsure> {
    let mut attrs: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut name_buf = [0u8; NAME_MAX];
    // SVG and MathML open, with what is open inside them: inside foreign content, raw text
    // is not.
    let mut contexts = Contexts::default();
    // Depth of `template` elements open.
    let mut template = 0usize;
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &html[i..]) {
        let at = i + lt;
        let Some(&next) = html.get(at + 1) else {
            return Ok(());
        };
        i = match next {
            b'!' => markup_declaration(html, at, contexts.cdata_allowed()),
            b'?' => bogus_comment(html, at + 1),
            b'/' => match html.get(at + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let (name, end) = tag_name(html, at + 2, &mut name_buf);
                    attrs.clear();
                    let Some((after, _)) = attributes(html, end, &mut attrs) else {
                        return Ok(());
                    };
                    let name = &name_buf[..name];
                    let html_rules = match contexts.end_tag(name) {
                        Ok(h) => h,
                        Err(e) if strict => return Err(e),
                        Err(_) => {
                            contexts = Contexts::default();
                            true
                        }
                    };
                    if html_rules && name == b"template" {
                        template = template.saturating_sub(1);
                    }
                    after
                }
                Some(b'>') => at + 3,
                Some(_) => bogus_comment(html, at + 2),
                None => return Ok(()),
            },
            c if c.is_ascii_alphabetic() => {
                let (name, end) = tag_name(html, at + 1, &mut name_buf);
                attrs.clear();
                let Some((after, self_closing)) = attributes(html, end, &mut attrs) else {
                    return Ok(());
                };
                let name = &name_buf[..name];
                // Most pages have no SVG or MathML: their tags take the short way.
                let read = if contexts.is_empty() && !matches!(name, b"svg" | b"math") {
                    if strict && matches!(name, b"frameset" | b"frame") {
                        // Whether a frameset replaces the body, and whether a frame is kept,
                        // depends on what came before: a tree tells.
                        return Err(Unsure);
                    }
                    StartTag {
                        namespace: Namespace::Html,
                        html: true,
                    }
                } else {
                    match contexts.start_tag(html, name, &attrs, self_closing) {
                        Ok(read) => read,
                        Err(e) if strict => return Err(e),
                        Err(_) => {
                            contexts = Contexts::default();
                            StartTag {
                                namespace: Namespace::Html,
                                html: true,
                            }
                        }
                    }
                };
                on_tag(&Tag {
                    html,
                    name,
                    attrs: &attrs,
                    namespace: read.namespace,
                    inert: template > 0,
                });
                if read.html {
                    if name == b"template" {
                        template += 1;
                    }
                    html_content_end(html, after, name)
                } else {
                    after
                }
            }
            _ => at + 1,
        };
    }
    Ok(())
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
        let read = start_tags(html.as_bytes(), true, |t| {
            let name = String::from_utf8_lossy(t.name()).into_owned();
            let href = t
                .get("href")
                .map(|v| String::from_utf8_lossy(v).into_owned());
            out.push(match href {
                Some(h) => format!("{name}={h}"),
                None => name,
            });
        });
        assert_eq!(read, Ok(()), "{html} needs no tree");
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
