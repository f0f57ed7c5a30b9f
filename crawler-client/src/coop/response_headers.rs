//! The head of a page the crawler did not GET as such (rebuilt from a delta, read from a
//! snapshot): the head it came with, without its content coding, with the length and
//! validator of the content as it is now.

use webcoop_protocol::validator::Sha256Digest;

/// The head of a page rebuilt from a delta: the head its delta came with, without its
/// content coding, and the validator and length of the content rebuilt. Replay builds the
/// same from the archived delta.
pub(crate) fn page_headers(from: &[(String, String)], body: &[u8]) -> Vec<(String, String)> {
    let mut headers = content_headers(from, body.len());
    headers.push(("ETag".into(), Sha256Digest::of(body).etag().to_string()));
    headers
}

/// As [`page_headers`] without the `ETag`, for a caller whose analysis hashes the content
/// anyway (the analysis's validator is the same tag).
pub(crate) fn content_headers(from: &[(String, String)], len: usize) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = from
        .iter()
        .filter(|(n, _)| {
            ![
                "content-encoding",
                "content-length",
                "available-dictionary",
                "vary",
                "etag",
            ]
            .iter()
            .any(|h| n.eq_ignore_ascii_case(h))
        })
        .cloned()
        .collect();
    headers.push(("Content-Length".into(), len.to_string()));
    headers
}
