//! What the test web's answers are made of: responses, redirects and generated pages. Pure
//! functions of their arguments, apart from the server's state.

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode, header};
use std::fmt::Write as _;

/// A response of `status` with `body` as `content_type`.
pub(super) fn text(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Body>,
) -> Response<Body> {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// A redirect to `to`, with a link to it for clients that do not follow.
pub(super) fn redirect(status: StatusCode, to: &str) -> Response<Body> {
    let mut r = text(status, "text/html", format!("<a href=\"{to}\">moved</a>"));
    if let Ok(v) = to.parse() {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// A request header as text, when it is.
pub(super) fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Words up to `bytes` long, in a paragraph.
fn filler(out: &mut String, bytes: usize) {
    out.push_str("<p>");
    const WORDS: &[&str] = &[
        "crawler",
        "politeness",
        "frontier",
        "archive",
        "robots",
        "delta",
        "freshness",
        "page",
    ];
    let mut i = 0;
    let start = out.len();
    while out.len() - start < bytes {
        out.push_str(WORDS[i % WORDS.len()]);
        out.push(' ');
        i += 7;
    }
    out.push_str("</p>\n");
}

/// A page titled `title` linking to `links`, padded with `filler_bytes` of words.
pub(super) fn page(title: &str, links: &[String], filler_bytes: usize, extra_head: &str) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title>{extra_head}</head><body>\n<h1>{title}</h1>\n"
    );
    for l in links {
        let _ = writeln!(s, "<a href=\"{l}\">{l}</a>");
    }
    filler(&mut s, filler_bytes);
    s.push_str("</body></html>\n");
    s
}
