//! Public URLs of docroot paths, and back: which URLs are pages of the site, as site paths
//! (relative to the base URL, decoded, the home page `""`): the base URL's origin and path, no
//! query, no credentials, no path parameters. Whatever names a URL to the agent (a sitemap, a
//! log, a ping, a seed) is held to this.

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

/// What separates a site path from its query in origin mode (`page/` + `QUERY_MARK` +
/// `id=2`): the one character no file name, and so no docroot path, can hold.
pub(crate) const QUERY_MARK: char = '\0';

/// Appends `rel` with each segment percent-encoded, and its query (origin mode), as it came.
pub(crate) fn push_encoded_path(out: &mut String, rel: &str) {
    let (rel, query) = match rel.split_once(QUERY_MARK) {
        Some((path, query)) => (path, Some(query)),
        None => (rel, None),
    };
    for (i, segment) in rel.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.extend(utf8_percent_encode(segment, SEGMENT));
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
}

/// A site path as a request path says it (`page/?id=2`), for rules and messages.
pub(crate) fn request_form(rel: &str) -> std::borrow::Cow<'_, str> {
    if rel.contains(QUERY_MARK) {
        std::borrow::Cow::Owned(rel.replace(QUERY_MARK, "?"))
    } else {
        std::borrow::Cow::Borrowed(rel)
    }
}

/// Longest query taken.
const MAX_QUERY_BYTES: usize = 512;

/// The URL of docroot path `rel`.
pub(crate) fn url_of(base: &Url, rel: &str) -> Url {
    let mut s = String::new();
    push_url(&mut s, base, rel);
    // The base is a valid URL and the path is fully encoded, so this only fails on a bug.
    Url::parse(&s).unwrap_or_else(|_| base.clone())
}

/// Longest site path taken.
pub(crate) const MAX_PATH_BYTES: usize = 2048;

/// The site path of `url`, or why it is not a page of the site at `base`; a query is taken
/// only when every parameter of it is one of `queries` (`--allow-query`).
pub(crate) fn site_path(base: &Url, url: &Url, queries: &[String]) -> Result<String, &'static str> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err("not an http(s) URL");
    }
    if url.origin() != base.origin() {
        return Err("names another site");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("carries credentials");
    }
    if let Some(q) = url.query() {
        if queries.is_empty() {
            return Err("has a query (not published unless --allow-query names its parameters)");
        }
        if q.is_empty() || q.len() > MAX_QUERY_BYTES {
            return Err("has an empty or too long query");
        }
        if form_urlencoded::parse(q.as_bytes()).any(|(k, _)| !queries.iter().any(|a| *a == k)) {
            return Err("has a query parameter --allow-query does not name");
        }
    }
    let Some(rest) = url.path().strip_prefix(base.path()) else {
        return Err("lies outside the base URL's path");
    };
    if rest.len() > MAX_PATH_BYTES {
        return Err("is too long");
    }
    if rest.contains(';') {
        return Err("has path parameters (where session identifiers live)");
    }
    let decoded = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .map_err(|_| "is not UTF-8 once decoded")?;
    if decoded
        .split('/')
        .any(|seg| seg == "." || seg == ".." || seg.contains('\0'))
        || decoded.chars().any(char::is_control)
    {
        return Err("has a dot segment or a control character once decoded");
    }
    Ok(match url.query() {
        Some(q) => format!("{decoded}{QUERY_MARK}{q}"),
        None => decoded.into_owned(),
    })
}

/// The site path of a request target from an access log (`/a/b`, origin-form), if it is a page.
pub(crate) fn logged_path(
    base: &Url,
    target: &str,
    queries: &[String],
) -> Result<String, &'static str> {
    if !target.starts_with('/') || target.starts_with("//") {
        return Err("not an origin-form request target");
    }
    let url = base.join(target).map_err(|_| "does not parse")?;
    site_path(base, &url, queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_of_the_site_and_what_is_not() {
        let base = Url::parse("http://blog.test/").unwrap();
        let p = |u: &str| site_path(&base, &Url::parse(u).unwrap(), &[]);
        assert_eq!(p("http://blog.test/"), Ok(String::new()));
        assert_eq!(
            p("http://blog.test/hello-world/"),
            Ok("hello-world/".into())
        );
        assert_eq!(p("http://blog.test/caf%C3%A9/#x"), Ok("café/".into()));
        assert_eq!(p("http://other.test/a/"), Err("names another site"));
        assert_eq!(p("https://blog.test/a/"), Err("names another site"));
        assert_eq!(p("http://blog.test:8080/a/"), Err("names another site"));
        assert!(p("http://blog.test/?p=1").is_err());
        assert!(p("http://blog.test/a;jsessionid=ABC").is_err());
        assert!(p("http://u:pw@blog.test/a").is_err());
        assert!(p("http://blog.test/a%00b").is_err());
        // Dot segments are resolved by the URL parser, within the site.
        assert_eq!(p("http://blog.test/a/%2e%2e/etc/"), Ok("etc/".into()));
        // An encoded slash that makes a dot segment once decoded is refused.
        assert!(p("http://blog.test/%2e%2e%2fx").is_err());
        assert!(p("http://blog.test/%FF").is_err());
        assert!(p("ftp://blog.test/a").is_err());
        let sub = Url::parse("http://blog.test/blog/").unwrap();
        assert_eq!(
            site_path(&sub, &Url::parse("http://blog.test/other/").unwrap(), &[]),
            Err("lies outside the base URL's path")
        );
        assert_eq!(logged_path(&base, "/a/b/", &[]), Ok("a/b/".into()));
        assert!(logged_path(&base, "//evil.test/x", &[]).is_err());
        assert!(logged_path(&base, "http://evil.test/x", &[]).is_err());
        assert!(logged_path(&base, "/x?PHPSESSID=1", &[]).is_err());
        // Queries whose every parameter is allowed are pages, and come back as URLs whole.
        let allowed = ["page".to_string(), "id".to_string()];
        let q = |u: &str| site_path(&base, &Url::parse(u).unwrap(), &allowed);
        assert_eq!(
            q("http://blog.test/list/?page=2"),
            Ok("list/\0page=2".into())
        );
        assert_eq!(
            q("http://blog.test/?id=1&page=3"),
            Ok("\0id=1&page=3".into())
        );
        assert!(q("http://blog.test/list/?page=2&PHPSESSID=1").is_err());
        assert!(q("http://blog.test/list/?").is_err());
        assert!(logged_path(&base, "/x?PHPSESSID=1", &allowed).is_err());
        assert_eq!(
            logged_path(&base, "/list/?page=2", &allowed),
            Ok("list/\0page=2".into())
        );
        for rel in ["list/\0page=2", "a b/\0id=%20x", "\0id=1&page=3"] {
            let url = url_of(&base, rel);
            assert_eq!(q(url.as_str()).as_deref(), Ok(rel), "{url}");
        }
        assert_eq!(request_form("list/\0page=2"), "list/?page=2");
    }

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
