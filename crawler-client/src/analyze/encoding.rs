//! A page's character encoding as the HTML standard's "encoding sniffing algorithm" decides
//! it: the byte-order mark, then the `Content-Type` charset, then the `<meta>` prescan of the
//! first 1,024 bytes, then the fallback; decoding is `encoding_rs`'s, the Encoding Standard's
//! implementation browsers use. The fallback is where browsers differ (a locale's legacy
//! encoding, or a guess): here a page whose bytes are valid UTF-8 is UTF-8, any other is
//! windows-1252, the standard's default for most locales. An encoding that came from the
//! prescan or the fallback is tentative, and a `<meta>` the tokenizer meets later may change
//! it ([`changed_by_meta`]), as a browser would reload the page.

use super::html_tags::space as is_space;
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

/// Where a page's encoding came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A byte-order mark.
    Bom,
    /// The `Content-Type` header's `charset`.
    Header,
    /// A `<meta>` within the first 1,024 bytes.
    Prescan,
    /// A `<meta>` found later in the page.
    Meta,
    /// None said: valid UTF-8, else windows-1252.
    Fallback,
}

impl Source {
    /// Whether a `<meta>` met by the tokenizer may still change the encoding.
    pub(crate) fn tentative(self) -> bool {
        matches!(self, Source::Prescan | Source::Fallback)
    }

    /// How the crawl log and the archive name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Bom => "bom",
            Source::Header => "header",
            Source::Prescan => "meta",
            Source::Meta => "meta-late",
            Source::Fallback => "default",
        }
    }
}

/// A page's encoding and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sniffed {
    /// The encoding.
    pub(crate) encoding: &'static Encoding,
    /// Where it came from.
    pub(crate) source: Source,
    /// Bytes of byte-order mark to skip.
    pub(crate) bom: usize,
}

/// The encoding of `html`, served with `content_type`.
pub(crate) fn sniff(html: &[u8], content_type: Option<&str>) -> Sniffed {
    if let Some((encoding, bom)) = Encoding::for_bom(html) {
        return Sniffed {
            encoding,
            source: Source::Bom,
            bom,
        };
    }
    let sniffed = |encoding, source| Sniffed {
        encoding,
        source,
        bom: 0,
    };
    if let Some(encoding) = content_type.and_then(charset_of_content_type) {
        return sniffed(encoding, Source::Header);
    }
    if let Some(encoding) = prescan(&html[..html.len().min(1024)]) {
        return sniffed(encoding, Source::Prescan);
    }
    let encoding = if std::str::from_utf8(html).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    };
    sniffed(encoding, Source::Fallback)
}

/// What a `<meta>` met by the tokenizer makes of a tentative `current` encoding: the encoding
/// to read the page in again, if it differs (the standard's "change the encoding").
pub(crate) fn changed_by_meta(
    current: &'static Encoding,
    declared: &'static Encoding,
) -> Option<&'static Encoding> {
    if current == UTF_16BE || current == UTF_16LE {
        return None;
    }
    let declared = for_meta(declared);
    (declared != current).then_some(declared)
}

/// A `<meta>`'s encoding as the standard takes it: UTF-16 cannot be declared from inside
/// the page it encodes (it would not be ASCII-compatible), so it means UTF-8.
fn for_meta(e: &'static Encoding) -> &'static Encoding {
    if e == UTF_16BE || e == UTF_16LE {
        UTF_8
    } else if e == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        e
    }
}

/// The `charset` parameter of a `Content-Type` value, if it names an encoding.
pub(crate) fn charset_of_content_type(value: &str) -> Option<&'static Encoding> {
    value.split(';').skip(1).find_map(|param| {
        let (name, v) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        Encoding::for_label(v.as_bytes())
    })
}

/// The standard's "algorithm for extracting a character encoding from a meta element", on a
/// `content` attribute's value (`text/html; charset=...`).
pub(crate) fn charset_of_meta_content(content: &[u8]) -> Option<&'static Encoding> {
    let mut i = 0;
    loop {
        let at = find_ascii_ci(&content[i..], b"charset")?;
        i += at + 7;
        while content.get(i).is_some_and(|b| is_space(*b)) {
            i += 1;
        }
        if content.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while content.get(i).is_some_and(|b| is_space(*b)) {
            i += 1;
        }
        let rest = &content[i..];
        return match rest.first() {
            Some(&q @ (b'"' | b'\'')) => {
                let end = rest[1..].iter().position(|b| *b == q)?;
                Encoding::for_label(&rest[1..1 + end])
            }
            Some(_) => {
                let end = rest
                    .iter()
                    .position(|b| is_space(*b) || *b == b';')
                    .unwrap_or(rest.len());
                Encoding::for_label(&rest[..end])
            }
            None => None,
        };
    }
}

fn find_ascii_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// The standard's "prescan a byte stream to determine its encoding", on the bytes given.
fn prescan(b: &[u8]) -> Option<&'static Encoding> {
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"<!--") {
            // The end is the first `-->` after `<!`: `<!-->` is a whole comment.
            match find(&b[i + 2..], b"-->") {
                Some(end) => i += 2 + end + 3,
                None => return None,
            }
            continue;
        }
        if rest.len() >= 6
            && rest[..5].eq_ignore_ascii_case(b"<meta")
            && (is_space(rest[5]) || rest[5] == b'/')
        {
            i += 6;
            let mut names: Vec<Vec<u8>> = Vec::new();
            let (mut got_pragma, mut need_pragma, mut charset) = (false, None, None);
            while let Some((name, value, next)) = attribute(b, i) {
                i = next;
                if names.contains(&name) {
                    continue;
                }
                match name.as_slice() {
                    b"http-equiv" => got_pragma |= value.eq_ignore_ascii_case(b"content-type"),
                    b"content" if charset.is_none() => {
                        if let Some(e) = charset_of_meta_content(&value) {
                            charset = Some(e);
                            need_pragma = Some(true);
                        }
                    }
                    b"charset" => {
                        charset = Encoding::for_label(&value);
                        need_pragma = Some(false);
                    }
                    _ => {}
                }
                names.push(name);
            }
            match (need_pragma, charset) {
                (Some(true), Some(e)) if got_pragma => return Some(for_meta(e)),
                (Some(false), Some(e)) => return Some(for_meta(e)),
                _ => continue,
            }
        }
        let letter_at = |k: usize| rest.get(k).is_some_and(u8::is_ascii_alphabetic);
        if rest[0] == b'<' && (letter_at(1) || (rest.get(1) == Some(&b'/') && letter_at(2))) {
            // A tag: past its name, then its attributes.
            i += rest
                .iter()
                .position(|c| is_space(*c) || *c == b'>')
                .unwrap_or(rest.len());
            while let Some((_, _, next)) = attribute(b, i) {
                i = next;
            }
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            match rest.iter().position(|c| *c == b'>') {
                Some(end) => i += end + 1,
                None => return None,
            }
            continue;
        }
        i += 1;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The prescan's "get an attribute" from `i`: its name (lower case), its value, and where
/// the scan goes on; none at a `>` or the end.
fn attribute(b: &[u8], mut i: usize) -> Option<(Vec<u8>, Vec<u8>, usize)> {
    while i < b.len() && (is_space(b[i]) || b[i] == b'/') {
        i += 1;
    }
    if i >= b.len() || b[i] == b'>' {
        return None;
    }
    let mut name = Vec::new();
    let mut value = Vec::new();
    loop {
        let c = *b.get(i)?;
        match c {
            b'=' if !name.is_empty() => {
                i += 1;
                break;
            }
            c if is_space(c) => {
                while i < b.len() && is_space(b[i]) {
                    i += 1;
                }
                if b.get(i) != Some(&b'=') {
                    return Some((name, value, i));
                }
                i += 1;
                break;
            }
            b'/' | b'>' => return Some((name, value, i)),
            c => {
                name.push(c.to_ascii_lowercase());
                i += 1;
            }
        }
    }
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    match *b.get(i)? {
        q @ (b'"' | b'\'') => {
            i += 1;
            loop {
                let c = *b.get(i)?;
                i += 1;
                if c == q {
                    return Some((name, value, i));
                }
                value.push(c.to_ascii_lowercase());
            }
        }
        b'>' => Some((name, value, i)),
        _ => loop {
            let &c = b.get(i)?;
            if is_space(c) || c == b'>' {
                return Some((name, value, i));
            }
            value.push(c.to_ascii_lowercase());
            i += 1;
        },
    }
}

/// `html` decoded in `sniffed`'s encoding (its byte-order mark left out): borrowed when it is
/// UTF-8 already.
pub(crate) fn decode(html: &[u8], sniffed: Sniffed) -> std::borrow::Cow<'_, str> {
    sniffed
        .encoding
        .decode_without_bom_handling(&html[sniffed.bom..])
        .0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bom_beats_the_header_which_beats_the_meta_which_beats_the_fallback() {
        let meta = b"<html><head><meta charset=\"iso-8859-2\"></head>";
        assert_eq!(sniff(meta, None).encoding.name(), "ISO-8859-2");
        assert_eq!(sniff(meta, None).source, Source::Prescan);
        let header = sniff(meta, Some("text/html; charset=windows-1251"));
        assert_eq!(
            (header.encoding.name(), header.source),
            ("windows-1251", Source::Header)
        );
        let mut bom = vec![0xFF, 0xFE];
        bom.extend_from_slice(meta);
        let s = sniff(&bom, Some("text/html; charset=windows-1251"));
        assert_eq!((s.encoding, s.source, s.bom), (UTF_16LE, Source::Bom, 2));
        assert_eq!(sniff(b"caf\xc3\xa9", None).encoding, UTF_8);
        assert_eq!(sniff(b"caf\xe9", None).encoding, WINDOWS_1252);
        // A label the Encoding Standard maps: latin1 is windows-1252.
        let latin1 = sniff(b"x", Some("text/html;charset=\"latin1\""));
        assert_eq!(latin1.encoding, WINDOWS_1252);
    }

    #[test]
    fn the_prescan_reads_as_the_standard_does() {
        let e = |html: &[u8]| prescan(html).map(|e| e.name());
        assert_eq!(
            e(b"<meta http-equiv=Content-Type content='text/html; charset=koi8-r'>"),
            Some("KOI8-R")
        );
        // A content charset without the pragma says nothing.
        assert_eq!(e(b"<meta content='text/html; charset=koi8-r'>"), None);
        // Inside a comment, or an attribute of another tag, it is not a meta.
        assert_eq!(e(b"<!-- <meta charset=koi8-r> --><p>"), None);
        assert_eq!(e(b"<!--><meta charset=koi8-r>"), Some("KOI8-R"));
        assert_eq!(e(b"<p title='<meta charset=koi8-r>'>"), None);
        // UTF-16 declared from inside means UTF-8; x-user-defined means windows-1252.
        assert_eq!(e(b"<meta charset=utf-16le>"), Some("UTF-8"));
        assert_eq!(e(b"<meta charset=x-user-defined>"), Some("windows-1252"));
        assert_eq!(e(b"<META CHARSET = \"Shift_JIS\">"), Some("Shift_JIS"));
        assert_eq!(
            e(b"<meta charset=nonsense><meta charset=utf-8>"),
            Some("UTF-8")
        );
        // Only the first 1,024 bytes are prescanned.
        let mut late = vec![b' '; 1024];
        late.extend_from_slice(b"<meta charset=koi8-r>");
        assert_eq!(sniff(&late, None).source, Source::Fallback);
    }

    #[test]
    fn a_later_meta_changes_a_tentative_encoding_but_not_utf_16() {
        assert_eq!(
            changed_by_meta(WINDOWS_1252, UTF_8).map(|e| e.name()),
            Some("UTF-8")
        );
        assert_eq!(changed_by_meta(UTF_8, UTF_8), None);
        assert_eq!(changed_by_meta(UTF_8, UTF_16LE), None);
        assert_eq!(changed_by_meta(UTF_16LE, WINDOWS_1252), None);
    }
}
