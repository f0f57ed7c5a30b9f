//! Public URLs of docroot paths.

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use url::Url;

/// Characters a path segment must not carry literally (RFC 3986 §3.3, and what URL parsers
/// re-encode), so the URL we write is exactly the URL any parser reads back.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Appends the URL of docroot path `rel` (`/`-separated, no leading `/`) under `base`
/// (which ends with `/`).
pub(crate) fn push_url(out: &mut String, base: &Url, rel: &str) {
    out.push_str(base.as_str());
    push_encoded_path(out, rel);
}

/// Appends `rel` with each segment percent-encoded.
pub(crate) fn push_encoded_path(out: &mut String, rel: &str) {
    for (i, segment) in rel.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.extend(utf8_percent_encode(segment, SEGMENT));
    }
}

/// The URL of docroot path `rel`.
pub(crate) fn url_of(base: &Url, rel: &str) -> Url {
    let mut s = String::new();
    push_url(&mut s, base, rel);
    // The base is a valid URL and the path is fully encoded, so this only fails on a bug.
    Url::parse(&s).unwrap_or_else(|_| base.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_urls_are_what_parsers_read_back() {
        let base = Url::parse("https://e.org/site/").unwrap();
        for rel in [
            "index.html",
            "a b/c#d?.html",
            "ünï/日本.html",
            "100%.html",
            "x[1]{2}|^`.txt",
            "q'\"<>.html",
            "a\\b",
        ] {
            let mut s = String::new();
            push_url(&mut s, &base, rel);
            let parsed = Url::parse(&s).unwrap();
            assert_eq!(parsed.as_str(), s, "{rel}");
            assert!(
                parsed.fragment().is_none() && parsed.query().is_none(),
                "{rel}"
            );
            let decoded = percent_encoding::percent_decode_str(parsed.path())
                .decode_utf8()
                .unwrap();
            assert_eq!(decoded, format!("/site/{rel}"));
        }
    }
}
