//! `GET delta/{path}`: the current version of a resource encoded against the version the client
//! holds.
//!
//! The client names what it holds with `If-None-Match` (our entity tag) and/or RFC 9842's
//! `Available-Dictionary` (its SHA-256), and says what it takes: `Accept-Encoding: dcz` for a
//! dcz delta (200, `Content-Encoding: dcz`), `A-IM: unified` for a unified diff (RFC 3229:
//! 226 IM Used, `IM`, `Delta-Base`). It gets 304 when current, and the whole body (compressed
//! as it accepts) when its version is unknown or a delta would not be smaller.
//!
//! Only paths in the agent's inventory are ever answered: the request path is decoded once,
//! refused if it holds `..`, `.`, empty segments or encoded separators, and then looked up;
//! anything else (traversal, excluded files, symlinks out, which the inventory never holds)
//! is a 404. Files over [`MAX_SERVED_BYTES`] are not served here (clients fetch them from the
//! site); encodings are bounded as [`super::encodings`] says; a version dropped with
//! `webcoop-agent forget` is never used as a base again, even if an encoding from it is cached.

use super::encodings::{EncodeError, Encoded, Key, Kind};
use super::negotiate::accepts;
use super::{ServiceState, plain};
use crate::content_type;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use bytes::Bytes;
use percent_encoding::percent_decode_str;
use std::sync::Arc;
use webcoop_protocol::compression::{gzip, zstd_compress};
use webcoop_protocol::delta::{self, DEFAULT_LEVEL, DeltaEncoding, DeltaPlan};
use webcoop_protocol::validator::{IfNoneMatch, Sha256Digest};

/// Largest file the endpoint answers for: bodies and versions are held in memory while encoded.
pub(crate) const MAX_SERVED_BYTES: u64 = 16 << 20;

/// Path prefix of the endpoint.
pub(crate) const PREFIX: &str = "/.well-known/webcoop/delta/";

/// The docroot path a request names, if it is a plain one.
pub(crate) fn confine(raw: &str) -> Option<String> {
    let lower = raw.to_ascii_lowercase();
    if raw.is_empty()
        || raw.contains('\\')
        || ["%2f", "%5c", "%00"].iter().any(|bad| lower.contains(bad))
    {
        return None;
    }
    let decoded = percent_decode_str(raw).decode_utf8().ok()?;
    // A directory's URL (a generated site's page) ends with one `/`.
    let segments = decoded.strip_suffix('/').unwrap_or(&decoded);
    if decoded.contains('\0')
        || segments
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return None;
    }
    Some(decoded.into_owned())
}

const VARY: &str = "Accept-Encoding, Available-Dictionary, A-IM";

fn base_of(headers: &HeaderMap, current: &Sha256Digest) -> Option<Sha256Digest> {
    if let Some(d) = headers
        .get("available-dictionary")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| Sha256Digest::from_structured_field(v).ok())
    {
        return Some(d);
    }
    let inm = headers.get(header::IF_NONE_MATCH)?.to_str().ok()?;
    match IfNoneMatch::parse(inm).ok()? {
        IfNoneMatch::Any => None,
        IfNoneMatch::Tags(tags) => tags
            .iter()
            .filter_map(Sha256Digest::from_etag)
            .find(|d| d != current),
    }
}

fn response(
    status: StatusCode,
    etag: &Sha256Digest,
    content_type: &str,
) -> axum::http::response::Builder {
    Response::builder()
        .status(status)
        .header(header::ETAG, etag.etag().to_string())
        .header(header::VARY, VARY)
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::CONTENT_TYPE, content_type)
}

/// The endpoint.
pub(crate) async fn delta(
    State(s): State<Arc<ServiceState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let Some(rel) = uri.path().strip_prefix(PREFIX).and_then(confine) else {
        return plain(StatusCode::NOT_FOUND, "not a published resource\n");
    };
    let lookup = rel.clone();
    let asked = headers.clone();
    // The file and the base the client names, if the store still keeps it (a version never
    // kept, or dropped by `forget`, gets the whole body): one trip to the state.
    let found = s
        .reader
        .with(move |st| {
            let Some(file) = st.file(&lookup)? else {
                return Ok(None);
            };
            let base = match base_of(&asked, &file.0) {
                Some(b) if b != file.0 && st.has_version(&lookup, &b)? => Some(b),
                _ => None,
            };
            Ok(Some((file, base)))
        })
        .await;
    let (file, base) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "not a published resource\n"),
        Err(e) => return plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n")),
    };
    let current = file.0;
    if file.1 > MAX_SERVED_BYTES {
        return plain(
            StatusCode::NOT_FOUND,
            &format!(
                "larger than the {} MiB this endpoint serves; fetch it from the site\n",
                MAX_SERVED_BYTES >> 20
            ),
        );
    }
    let ctype = content_type::of_path(&rel);
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| IfNoneMatch::parse(v).ok())
        .is_some_and(|inm| inm.matches(&current.etag()));
    if not_modified {
        return response(StatusCode::NOT_MODIFIED, &current, ctype)
            .body(Body::empty())
            .unwrap_or_default();
    }
    let path: Arc<str> = Arc::from(rel.as_str());
    let text = content_type::is_text(ctype);

    if let Some(base) = base {
        let wants_unified = text && accepts(&headers, "a-im", "unified");
        let wants_dcz = accepts(&headers, "accept-encoding", "dcz");
        for (wanted, kind) in [(wants_dcz, Kind::Dcz), (wants_unified, Kind::Unified)] {
            if !wanted {
                continue;
            }
            let key = Key {
                path: path.clone(),
                base: Some(base),
                target: current,
                kind,
            };
            let reader = s.reader.clone();
            let p = path.clone();
            let encoded = s
                .encodings
                .get_or_encode(key, move || {
                    encode_delta(&reader, &p, (base, current), kind)
                })
                .await;
            if let Err(EncodeError::Busy) = encoded {
                return busy();
            }
            if let Ok(encoded) = encoded
                && let Encoded::Body(body) = encoded.as_ref()
            {
                let builder = delta_headers(response(StatusCode::OK, &current, ctype), kind, &base);
                return builder.body(Body::from(body.clone())).unwrap_or_default();
            }
        }
    }
    full_body(&s, &rel, path, current, ctype, &headers).await
}

/// A delta from `base` to `current` of `path`, as `kind` asks (dcz or a unified diff): none
/// when either version is no longer kept, or when it would not be smaller than the file.
fn encode_delta(
    reader: &super::reader::Reader,
    path: &str,
    (base, current): (Sha256Digest, Sha256Digest),
    kind: Kind,
) -> Result<Encoded, String> {
    let versions = reader
        .blocking(|st| Ok((st.version(path, &base)?, st.version(path, &current)?)))
        .map_err(|e| e.to_string())?;
    let (Some(old), Some(new)) = versions else {
        return Ok(Encoded::Unavailable);
    };
    let encoding = if kind == Kind::Dcz {
        DeltaEncoding::Dcz
    } else {
        DeltaEncoding::Unified
    };
    match delta::plan(encoding, &old, &new, DEFAULT_LEVEL) {
        Ok(DeltaPlan::Delta(d)) => Ok(Encoded::Body(Bytes::from(d.body))),
        Ok(DeltaPlan::NotWorthIt { .. }) => Ok(Encoded::NotWorthIt),
        Err(e) => Err(e.to_string()),
    }
}

/// The headers of a delta's answer: dcz's coding and dictionary, or RFC 3229's 226 with
/// `IM` and `Delta-Base` (never stored by a cache that does not know it).
fn delta_headers(
    builder: axum::http::response::Builder,
    kind: Kind,
    base: &Sha256Digest,
) -> axum::http::response::Builder {
    if kind == Kind::Dcz {
        return builder
            .header(header::CONTENT_ENCODING, "dcz")
            .header("available-dictionary", base.to_structured_field());
    }
    let mut b = builder
        .status(StatusCode::from_u16(226).unwrap_or(StatusCode::OK))
        .header("im", "unified")
        .header("delta-base", base.etag().to_string());
    if let Some(h) = b.headers_mut() {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store, im"),
        );
    }
    b
}

fn busy() -> Response {
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy encoding other requests; try again shortly\n",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// The whole current version, compressed as the client accepts (zstd, else gzip, else none).
/// Cached like the deltas, so fifty requests for one large file hold one copy of it.
async fn full_body(
    s: &Arc<ServiceState>,
    rel: &str,
    path: Arc<str>,
    current: Sha256Digest,
    ctype: &str,
    headers: &HeaderMap,
) -> Response {
    let kind = if accepts(headers, "accept-encoding", "zstd") {
        Kind::Zstd
    } else if accepts(headers, "accept-encoding", "gzip") {
        Kind::Gzip
    } else {
        Kind::Identity
    };
    let reader = s.reader.clone();
    let root = s.reader.docroot().to_path_buf();
    let rel = rel.to_string();
    let load = move || super::bodies::published(&reader, &root, &rel, &current, MAX_SERVED_BYTES);
    let key = Key {
        path,
        base: None,
        target: current,
        kind,
    };
    let encoded = s
        .encodings
        .get_or_encode(key, move || {
            Ok(match load()? {
                Some(bytes) if kind == Kind::Zstd => {
                    Encoded::Body(Bytes::from(zstd_compress(&bytes, DEFAULT_LEVEL)))
                }
                Some(bytes) if kind == Kind::Gzip => Encoded::Body(Bytes::from(gzip(&bytes, 6))),
                Some(bytes) => Encoded::Body(Bytes::from(bytes)),
                None => Encoded::Unavailable,
            })
        })
        .await;
    match encoded.as_deref() {
        Ok(Encoded::Body(body)) => {
            let builder = response(StatusCode::OK, &current, ctype);
            let builder = match kind {
                Kind::Zstd => builder.header(header::CONTENT_ENCODING, "zstd"),
                Kind::Gzip => builder.header(header::CONTENT_ENCODING, "gzip"),
                _ => builder,
            };
            builder.body(Body::from(body.clone())).unwrap_or_default()
        }
        Ok(_) => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the resource is changing; try again shortly\n",
        ),
        Err(EncodeError::Busy) => busy(),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_are_confined() {
        assert_eq!(confine("docs/a.html").as_deref(), Some("docs/a.html"));
        assert_eq!(
            confine("with%20space.html").as_deref(),
            Some("with space.html")
        );
        assert_eq!(confine("%C3%BC.html").as_deref(), Some("ü.html"));
        assert_eq!(
            confine("2026/hello-world/").as_deref(),
            Some("2026/hello-world/")
        );
        for bad in [
            "a//",
            "../",
            "/",
            "",
            "../etc/passwd",
            "docs/../../etc/passwd",
            "%2e%2e/etc/passwd",
            "..%2fetc%2fpasswd",
            "docs%2F..%2F..%2Fetc",
            "a//b",
            "./a",
            "a/.",
            "a\\..\\b",
            "%5c..%5cb",
            "a%00.html",
            "%ff%fe",
        ] {
            assert_eq!(confine(bad), None, "{bad}");
        }
        // Encoded twice: decoded once, it names a file called `%2e%2e`, which the inventory
        // would have to hold.
        assert_eq!(confine("%252e%252e/x").as_deref(), Some("%2e%2e/x"));
    }
}
