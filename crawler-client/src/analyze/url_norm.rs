//! URL normalisation and crawler-trap guards: one spelling per resource, so the seen-set
//! recognises it, and no endless URL spaces.

use crate::ids::Fp;
use std::borrow::Cow;
use url::Url;

/// Query parameters that carry a session and name no resource (case-insensitive).
const SESSION_PARAMS: &[&str] = &[
    "phpsessid",
    "jsessionid",
    "sid",
    "cfid",
    "cftoken",
    "aspsessionid",
    "sessionid",
    "session_id",
];

/// Why a URL is not crawled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not http or https.
    Scheme,
    /// Longer than the limit.
    TooLong,
    /// A path segment repeats (`/a/b/a/b/a/b`, `/x/x/x`): a typical trap.
    RepeatedSegments,
    /// Does not parse.
    Malformed,
    /// Carries a user name or password (`http://user:secret@host/`): the crawler never sends
    /// credentials a page or a site's document wrote, nor writes them into its archive.
    Credentials,
}

/// Normalises `url` in place: lowercase scheme and host, no default port, no dot segments
/// (the `url` crate does those), no fragment, percent-encoding of unreserved characters
/// decoded and of the rest in upper case, session parameters removed, an empty query dropped.
pub fn normalize(url: &mut Url) {
    url.set_fragment(None);
    // ;jsessionid=... path parameters (Java servlets).
    if let Some(pos) = session_parameter(url.path()) {
        let path = url.path()[..pos].to_string();
        url.set_path(&path);
    }
    if let Cow::Owned(path) = normalize_escapes(url.path()) {
        url.set_path(&path);
    }
    if let Some(query) = url.query() {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let name = pair.split('=').next().unwrap_or("").to_ascii_lowercase();
                !pair.is_empty()
                    && !SESSION_PARAMS
                        .iter()
                        .any(|s| name == *s || (s == &"aspsessionid" && name.starts_with(s)))
            })
            .collect();
        if kept.is_empty() {
            url.set_query(None);
        } else {
            let joined = kept.join("&");
            let joined = normalize_escapes(&joined);
            if Some(joined.as_ref()) != url.query() {
                url.set_query(Some(&joined));
            }
        }
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `%41` becomes `A`; `%2f` becomes `%2F`; a `%` that starts no escape becomes `%25`, so that
/// decoding never joins a stray `%` and a decoded digit into a new escape (`%2%64` would be
/// `%2d` after one pass and `-` after the next: one resource, two spellings).
fn normalize_escapes(s: &str) -> Cow<'_, str> {
    if memchr::memchr(b'%', s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1..i + 3) {
            Some(&[h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                let v = hex_value(h) << 4 | hex_value(l);
                if is_unreserved(v) {
                    out.push(v);
                } else {
                    out.extend_from_slice(&[b'%', h.to_ascii_uppercase(), l.to_ascii_uppercase()]);
                }
                i += 3;
            }
            _ => {
                out.extend_from_slice(b"%25");
                i += 1;
            }
        }
    }
    if out == b {
        return Cow::Borrowed(s);
    }
    // Only ASCII was replaced by ASCII: the bytes are still the UTF-8 they came as.
    Cow::Owned(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// Where a `;jsessionid=` path parameter starts in `path`, in any case.
fn session_parameter(path: &str) -> Option<usize> {
    const NAME: &[u8] = b";jsessionid=";
    let b = path.as_bytes();
    memchr::memchr_iter(b';', b).find(|&at| {
        b.get(at..at + NAME.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(NAME))
    })
}

fn hex_value(d: u8) -> u8 {
    match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        _ => d.to_ascii_lowercase().wrapping_sub(b'a').wrapping_add(10),
    }
}

/// Parses `href` against `base` and normalises it; `None` for what is not a crawlable URL.
pub fn resolve(base: &Url, href: &str) -> Option<Url> {
    let href = href.trim();
    if href.is_empty() || href.starts_with('#') {
        return None;
    }
    let mut url = base.join(href).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    normalize(&mut url);
    Some(url)
}

/// Parses a link's `href` against the document's `base` as a browser does (the URL
/// standard's parser: leading and trailing C0 controls and spaces stripped, tabs and newlines
/// removed, the query encoded in `encoding`, the document's), and normalises it; `None` for
/// what is not a crawlable URL. An empty link or a fragment names the base itself.
pub fn resolve_link(
    base: &Url,
    href: &str,
    encoding: &'static encoding_rs::Encoding,
) -> Option<Url> {
    let mut url = parse_in_document(base, href, encoding)?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    normalize(&mut url);
    Some(url)
}

/// The URL standard's parser on `href` against `base`, for a document in `encoding`: its
/// query is encoded in the document's output encoding (UTF-8 for UTF-16 documents).
pub(crate) fn parse_in_document(
    base: &Url,
    href: &str,
    encoding: &'static encoding_rs::Encoding,
) -> Option<Url> {
    let encoding = encoding.output_encoding();
    fn encoder(
        encoding: &'static encoding_rs::Encoding,
    ) -> impl for<'s> Fn(&'s str) -> std::borrow::Cow<'s, [u8]> {
        move |s| std::borrow::Cow::Owned(encode_query(encoding, s))
    }
    let encode = encoder(encoding);
    let options = Url::options().base_url(Some(base));
    let options = if encoding == encoding_rs::UTF_8 {
        options
    } else {
        options.encoding_override(Some(&encode))
    };
    options.parse(href).ok()
}

/// A query in a document's encoding, as the URL standard's "percent-encode after encoding"
/// does it: a code point the encoding cannot hold becomes `&#N;` percent-encoded whole
/// (`%26%23N%3B`), where encoding_rs's own replacement would leave `&` and `;` bare and let
/// them read as the query's separators.
fn encode_query(encoding: &'static encoding_rs::Encoding, s: &str) -> Vec<u8> {
    use encoding_rs::EncoderResult;
    let mut encoder = encoding.new_encoder();
    let mut out = Vec::with_capacity(s.len() + 16);
    let mut rest = s;
    let mut buf = [0u8; 1024];
    loop {
        let (result, read, written) =
            encoder.encode_from_utf8_without_replacement(rest, &mut buf, true);
        out.extend_from_slice(&buf[..written]);
        rest = &rest[read..];
        match result {
            EncoderResult::InputEmpty => return out,
            EncoderResult::OutputFull => {}
            EncoderResult::Unmappable(c) => {
                out.extend_from_slice(format!("%26%23{}%3B", u32::from(c)).as_bytes());
            }
        }
    }
}

/// The trap guards, applied to every URL before it is queued.
pub fn check(url: &Url, max_len: usize) -> Result<(), Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Scheme);
    }
    if url.as_str().len() > max_len {
        return Err(Refusal::TooLong);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials);
    }
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|x| !x.is_empty()).collect())
        .unwrap_or_default();
    // The same segment three times (/x/x/x, /a/b/a/b/a/b): generated link loops.
    for (i, seg) in segments.iter().enumerate() {
        if segments[i..].iter().filter(|s| *s == seg).count() >= 3 {
            return Err(Refusal::RepeatedSegments);
        }
    }
    Ok(())
}

/// Whether a URL is dynamic (has a query): the thesis allows such pages fewer levels.
pub fn is_dynamic(url: &Url) -> bool {
    url.query().is_some()
}

/// The 64-bit fingerprint the seen-set keeps.
pub fn fingerprint(url: &Url) -> Fp {
    Fp(xxhash_rust::xxh3::xxh3_64(url.as_str().as_bytes()))
}

/// The key politeness and robots.txt are kept by: scheme, host and port.
pub fn origin_key(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_query_the_documents_encoding_cannot_hold_is_percent_encoded_after_encoding() {
        let base = Url::parse("http://e.test/dir/page.html").unwrap();
        let win = encoding_rs::WINDOWS_1252;
        let at = |href: &str| resolve_link(&base, href, win).unwrap().to_string();
        // U+0101 is not in windows-1252: `&#257;`, percent-encoded whole, as browsers do.
        assert_eq!(
            at("?q=\u{101}"),
            "http://e.test/dir/page.html?q=%26%23257%3B"
        );
        // What it holds is its byte; the path is UTF-8 whatever the document.
        assert_eq!(at("a\u{e9}?q=\u{e9}"), "http://e.test/dir/a%C3%A9?q=%E9");
        assert_eq!(
            at("?a=\u{e9}\u{101}\u{1F600}&b=1"),
            "http://e.test/dir/page.html?a=%E9%26%23257%3B%26%23128512%3B&b=1"
        );
        // Shift_JIS holds U+3042 in two bytes; an emoji it cannot.
        let sjis = encoding_rs::SHIFT_JIS;
        let url = resolve_link(&base, "?q=\u{3042}\u{1F600}", sjis).unwrap();
        assert_eq!(url.query(), Some("q=%82%A0%26%23128512%3B"));
    }

    use super::*;

    fn n(s: &str) -> String {
        let mut u = Url::parse(s).unwrap();
        normalize(&mut u);
        u.to_string()
    }

    #[test]
    fn escapes_normalise_in_one_pass() {
        // Found by the urls fuzz target: a stray % and a decoded digit made a new escape.
        for (raw, once) in [
            ("http://a.test/%2%64%", "http://a.test/%252d%25"),
            ("http://a.test/%41%2f%7e%zz%", "http://a.test/A%2F~%25zz%25"),
            ("http://a.test/?q=%+1", "http://a.test/?q=%25+1"),
        ] {
            let mut u = Url::parse(raw).unwrap();
            normalize(&mut u);
            assert_eq!(u.as_str(), once, "{raw}");
            let mut again = u.clone();
            normalize(&mut again);
            assert_eq!(again, u, "{raw}: a second pass changes nothing");
        }
    }

    #[test]
    fn one_spelling_per_resource() {
        assert_eq!(
            n("HTTP://Example.COM:80/a/./b/../c#frag"),
            "http://example.com/a/c"
        );
        assert_eq!(n("https://example.com:443/"), "https://example.com/");
        assert_eq!(
            n("http://example.com/%7euser/%41%2fb"),
            "http://example.com/~user/A%2Fb"
        );
        assert_eq!(
            n("http://e.com/p?PHPSESSID=abc&id=3&sid=9"),
            "http://e.com/p?id=3"
        );
        assert_eq!(n("http://e.com/p?phpsessid=abc"), "http://e.com/p");
        assert_eq!(
            n("http://e.com/shop;jsessionid=A1B2?item=4"),
            "http://e.com/shop?item=4"
        );
        assert_eq!(
            n("http://e.com/a;b/shop;JSessionID=A1B2"),
            "http://e.com/a;b/shop"
        );
        // The twin: another path parameter, or the name cut short, stays.
        assert_eq!(
            n("http://e.com/shop;jsession=A1;jsessionid"),
            "http://e.com/shop;jsession=A1;jsessionid"
        );
        // Escapes already in their normal form leave the path as it was.
        assert_eq!(n("http://e.com/a%2Fb%20c"), "http://e.com/a%2Fb%20c");
        assert_eq!(
            n("http://e.com/p?CFID=1&CFTOKEN=2&ASPSESSIONIDQQ=3"),
            "http://e.com/p"
        );
        assert_eq!(n("http://e.com/p?"), "http://e.com/p");
        // A stray % is escaped, so that a second pass cannot read it as an escape.
        assert_eq!(n("http://e.com/a%"), "http://e.com/a%25");
    }

    #[test]
    fn resolve_keeps_only_crawlable_urls() {
        let base = Url::parse("http://e.com/dir/page.html").unwrap();
        assert_eq!(
            resolve(&base, "../x.html").unwrap().as_str(),
            "http://e.com/x.html"
        );
        assert_eq!(
            resolve(&base, " other.html#top ").unwrap().as_str(),
            "http://e.com/dir/other.html"
        );
        assert_eq!(
            resolve(&base, "//cdn.e.com/a").unwrap().as_str(),
            "http://cdn.e.com/a"
        );
        for bad in [
            "#top",
            "",
            "mailto:a@e.com",
            "javascript:void(0)",
            "ftp://e.com/f",
            "data:text/html,hi",
        ] {
            assert!(resolve(&base, bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn traps_are_refused() {
        let ok = Url::parse("http://e.com/a/b/c/d.html").unwrap();
        assert_eq!(check(&ok, 2048), Ok(()));
        assert_eq!(
            check(&Url::parse("http://e.com/a/b/a/b/a/b").unwrap(), 2048),
            Err(Refusal::RepeatedSegments)
        );
        assert_eq!(
            check(&Url::parse("http://e.com/x/x/x/page").unwrap(), 2048),
            Err(Refusal::RepeatedSegments)
        );
        assert_eq!(
            check(
                &Url::parse(&format!("http://e.com/{}", "a".repeat(3000))).unwrap(),
                2048
            ),
            Err(Refusal::TooLong)
        );
        for creds in [
            "http://alice:hunter2@e.com/",
            "http://alice@e.com/",
            "http://:pw@e.com/",
        ] {
            assert_eq!(
                check(&Url::parse(creds).unwrap(), 2048),
                Err(Refusal::Credentials),
                "{creds}"
            );
        }
        assert!(is_dynamic(&Url::parse("http://e.com/cal?y=2026").unwrap()));
        assert_eq!(
            origin_key(&Url::parse("HTTP://E.com:80/x").unwrap()),
            "http://e.com"
        );
    }
}
