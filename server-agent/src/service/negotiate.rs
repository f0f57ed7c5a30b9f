//! Reading what a client accepts: `Accept-Encoding` and RFC 3229 `A-IM` token lists.

use axum::http::HeaderMap;

/// Whether `token` is in the comma-separated list of header `name`, not refused with `q=0`.
pub(crate) fn accepts(headers: &HeaderMap, name: &str, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let name_matches = parts
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case(token));
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            name_matches && !refused
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn tokens_with_and_without_weights() {
        let mut h = HeaderMap::new();
        h.insert(
            "accept-encoding",
            HeaderValue::from_static("gzip, br;q=0.5, DCZ, zstd;q=0"),
        );
        assert!(accepts(&h, "accept-encoding", "gzip"));
        assert!(accepts(&h, "accept-encoding", "br"));
        assert!(accepts(&h, "accept-encoding", "dcz"));
        assert!(!accepts(&h, "accept-encoding", "zstd"), "q=0 refuses");
        assert!(!accepts(&h, "accept-encoding", "deflate"));
        assert!(!accepts(&h, "a-im", "unified"));
    }
}
