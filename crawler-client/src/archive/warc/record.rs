//! WARC records built where pages are fetched: each its own gzip member.

use chrono::{DateTime, SecondsFormat, Utc};
use data_encoding::BASE32;
use flate2::Compression;
use sha1::{Digest, Sha1};

/// `sha1:BASE32` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha1:{}", BASE32.encode(&Sha1::digest(bytes)))
}

fn record_id() -> String {
    let mut random = [0u8; 16];
    rand::fill(&mut random);
    webcoop_protocol::warc::record::record_id(random)
}

fn date(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The gzip level of records unless configured: zlib's default, as Heritrix and wget write.
/// Level 1 costs a fifth less CPU per small page and makes the archive a quarter larger
/// (measured on the Python docs: 9.4 MB against 7.6 MB).
pub const DEFAULT_LEVEL: u32 = 6;

/// One record, gzip-compressed, ready to append.
#[derive(Debug, Clone)]
pub struct Record {
    /// The gzip member.
    pub bytes: Vec<u8>,
    /// Its `WARC-Record-ID`.
    pub(crate) id: String,
}

fn build(headers: &[(&str, String)], block: &[&[u8]], level: u32) -> Record {
    build_stored_from(headers, block, level, usize::MAX)
}

/// As [`build`], the block's parts from `stored` on kept as they are (deflate's stored
/// blocks): bytes already compressed, which deflating again only costs time.
fn build_stored_from(
    headers: &[(&str, String)],
    block: &[&[u8]],
    level: u32,
    stored: usize,
) -> Record {
    let len: usize = block.iter().map(|b| b.len()).sum();
    let id = headers
        .iter()
        .find(|(n, _)| *n == "WARC-Record-ID")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let fields: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let head = webcoop_protocol::warc::record::head(&fields, len as u64);
    let mut parts: Vec<&[u8]> = Vec::with_capacity(block.len() + 2);
    parts.push(head.as_bytes());
    parts.extend_from_slice(block);
    parts.push(webcoop_protocol::warc::record::END);
    Record {
        bytes: gzip_member(&parts, level, stored.saturating_add(1)),
        id,
    }
}

thread_local! {
    /// A deflate state per thread and level, reset between records: a new one per record
    /// allocated and cleared a quarter of a megabyte each time (malloc and memset were 6% of
    /// a crawl's profile).
    static DEFLATE: std::cell::RefCell<Vec<(u32, flate2::Compress)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// What is deflated of a record below this many bytes (a request, the heads of a body kept
/// as it came) is deflated at level 1 at most: building level 6's Huffman tables for a few
/// hundred bytes cost 6% of a crawl's CPU on the Rust documentation, for a few bytes saved.
const SMALL_RECORD: usize = 2048;

/// One gzip member (RFC 1952) of `parts` in order, as `GzEncoder` writes it (no name, no
/// time, OS unknown), deflated at `level` with this thread's reused state, the parts from
/// `stored` on (and the record's end) in stored blocks after a sync flush.
fn gzip_member(parts: &[&[u8]], level: u32, stored: usize) -> Vec<u8> {
    use flate2::{Compress, FlushCompress, Status};
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let (deflated, kept) = parts.split_at(stored.min(parts.len()));
    let kept_len: usize = kept.iter().map(|p| p.len()).sum();
    let level = if total - kept_len < SMALL_RECORD {
        level.min(1)
    } else {
        level
    };
    let mut out = Vec::with_capacity((total - kept_len) / 3 + kept_len + 64);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    let mut crc = crc32fast::Hasher::new();
    DEFLATE.with(|cell| {
        let mut states = cell.borrow_mut();
        let at = match states.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                states.push((level, Compress::new(Compression::new(level), false)));
                states.len() - 1
            }
        };
        let z = &mut states[at].1;
        z.reset();
        let last = deflated.len().saturating_sub(1);
        for (i, part) in deflated.iter().enumerate() {
            crc.update(part);
            let flush = match (i == last, kept.is_empty()) {
                (false, _) => FlushCompress::None,
                (true, true) => FlushCompress::Finish,
                // The deflated part ends on a byte boundary, not final: stored blocks follow.
                (true, false) => FlushCompress::Sync,
            };
            let mut input: &[u8] = part;
            loop {
                if out.capacity() - out.len() < 1024 {
                    out.reserve(out.capacity().max(4096));
                }
                let before = z.total_in();
                let status = z.compress_vec(input, &mut out, flush);
                input = &input[(z.total_in() - before) as usize..];
                match status {
                    Ok(Status::StreamEnd) => break,
                    Ok(_) if input.is_empty() && flush == FlushCompress::None => break,
                    // A sync flush is done once its input is in and output room was left.
                    Ok(_)
                        if input.is_empty()
                            && flush == FlushCompress::Sync
                            && out.capacity() > out.len() =>
                    {
                        break;
                    }
                    Ok(_) => {}
                    // Deflating into memory does not fail; an empty member is refused on read.
                    Err(_) => return,
                }
            }
        }
    });
    if !kept.is_empty() {
        for part in kept {
            crc.update(part);
        }
        stored_blocks(kept, &mut out);
    }
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out
}

/// `parts` as deflate stored blocks (RFC 1951, 3.2.4) of at most 65,535 bytes, the last one
/// final: each a header byte, its length and the length's complement, then the bytes.
fn stored_blocks(parts: &[&[u8]], out: &mut Vec<u8>) {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    out.reserve(total + 5 * (total / u16::MAX as usize + 1));
    let (mut written, mut part, mut offset) = (0, 0, 0);
    loop {
        let len = (total - written).min(u16::MAX as usize);
        let last = written + len == total;
        let n = len as u16;
        out.push(u8::from(last));
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        let mut need = len;
        while need > 0 {
            let p = parts[part];
            let take = (p.len() - offset).min(need);
            out.extend_from_slice(&p[offset..offset + take]);
            (offset, need) = (offset + take, need - take);
            if offset == p.len() {
                (part, offset) = (part + 1, 0);
            }
        }
        written += len;
        if last {
            return;
        }
    }
}

/// An HTTP exchange as a `response` record holds it.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    /// The URL fetched.
    pub uri: &'a str,
    /// When.
    pub at: DateTime<Utc>,
    /// The server's address.
    pub ip: Option<std::net::IpAddr>,
    /// Status line and headers as received (without `Transfer-Encoding`).
    pub http_head: &'a str,
    /// The body as received.
    pub body: &'a [u8],
    /// `sha1:` digest of the body.
    pub payload_digest: &'a str,
    /// Whether the body was cut at the size limit.
    pub truncated: bool,
    /// The usage preferences that applied (aipref form), if the site stated any.
    pub usage: Option<&'a str>,
    /// The encoding an HTML page was read in and where it was learnt (`windows-1252;
    /// from=header`).
    pub encoding: Option<&'a str>,
}

/// The WARC field naming the encoding the crawler read an HTML page in, and where it learnt
/// it (`bom`, `header`, `meta`, `meta-late`, `default`), as `WARC-Webcoop-Encoding:
/// windows-1252; from=header`.
pub(crate) const ENCODING_FIELD: &str = "WARC-Webcoop-Encoding";

/// The WARC field naming the usage preferences a capture was made under (aipref form:
/// `search=y, train-ai=n`), from robots.txt, the `Content-Usage` header and the site's agent.
pub(crate) const USAGE_FIELD: &str = "WARC-Webcoop-Content-Usage";

/// A `response` record: the HTTP head and body as received.
pub fn response(x: &Exchange<'_>, level: u32) -> Record {
    let Exchange {
        uri,
        at,
        ip,
        http_head,
        body,
        payload_digest,
        truncated,
        usage,
        encoding,
    } = *x;
    let block_digest = {
        let mut h = Sha1::new();
        h.update(http_head.as_bytes());
        h.update(body);
        format!("sha1:{}", BASE32.encode(&h.finalize()))
    };
    let mut headers = vec![
        ("WARC-Type", "response".to_string()),
        ("WARC-Record-ID", record_id()),
        ("WARC-Date", date(at)),
        ("WARC-Target-URI", uri.to_string()),
        (
            "Content-Type",
            "application/http;msgtype=response".to_string(),
        ),
        ("WARC-Payload-Digest", payload_digest.to_string()),
        ("WARC-Block-Digest", block_digest),
    ];
    if let Some(ip) = ip {
        headers.push(("WARC-IP-Address", ip.to_string()));
    }
    if truncated {
        headers.push(("WARC-Truncated", "length".to_string()));
    }
    if let Some(usage) = usage {
        headers.push((USAGE_FIELD, usage.to_string()));
    }
    if let Some(encoding) = encoding {
        headers.push((ENCODING_FIELD, encoding.to_string()));
    }
    if content_coded(http_head) {
        // The heads at the level asked, the coded body as it came.
        build_stored_from(&headers, &[http_head.as_bytes(), body], level, 1)
    } else {
        build(&headers, &[http_head.as_bytes(), body], level)
    }
}

/// Whether an HTTP head says its body has a content coding (gzip, br, zstd ...).
pub(super) fn content_coded(http_head: &str) -> bool {
    http_head.split("\r\n").skip(1).any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("content-encoding")
                && !value.trim().is_empty()
                && !value.trim().eq_ignore_ascii_case("identity")
        })
    })
}

/// Why a `revisit` record was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RevisitProfile {
    /// The server answered 304 Not Modified.
    ServerNotModified,
    /// The content is byte-identical to the earlier capture.
    IdenticalPayloadDigest,
}

/// A `revisit` record: the HTTP head only, pointing at the earlier capture.
pub(crate) fn revisit(
    uri: &str,
    at: DateTime<Utc>,
    http_head: &str,
    profile: RevisitProfile,
    payload_digest: Option<&str>,
    refers_to: (&str, Option<DateTime<Utc>>),
    level: u32,
) -> Record {
    let profile_uri = match profile {
        RevisitProfile::ServerNotModified => {
            "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
        }
        RevisitProfile::IdenticalPayloadDigest => {
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        }
    };
    let mut headers = vec![
        ("WARC-Type", "revisit".to_string()),
        ("WARC-Record-ID", record_id()),
        ("WARC-Date", date(at)),
        ("WARC-Target-URI", uri.to_string()),
        ("WARC-Profile", profile_uri.to_string()),
        (
            "Content-Type",
            "application/http;msgtype=response".to_string(),
        ),
        ("WARC-Refers-To-Target-URI", refers_to.0.to_string()),
        ("WARC-Block-Digest", digest(http_head.as_bytes())),
    ];
    if let Some(d) = payload_digest {
        headers.push(("WARC-Payload-Digest", d.to_string()));
    }
    if let Some(t) = refers_to.1 {
        headers.push(("WARC-Refers-To-Date", date(t)));
    }
    build(&headers, &[http_head.as_bytes()], level)
}

/// The field naming how a `resource` record's content was made: rebuilt from a delta, or read
/// from a snapshot of the whole site.
pub(crate) const DELTA_FIELD: &str = "WARC-Webcoop-Delta";

/// Content that was not received as it stands: a page rebuilt from a delta, or a delta that
/// came inside an announcement rather than as a response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resource<'a> {
    /// The URL the content is of.
    pub(crate) uri: &'a str,
    /// When it was made.
    pub(crate) at: DateTime<Utc>,
    /// Its media type.
    pub(crate) content_type: &'a str,
    /// The content.
    pub(crate) body: &'a [u8],
    /// The record it was made from: its `WARC-Record-ID` and target URI.
    pub(crate) refers_to: Option<(&'a str, &'a str)>,
    /// How it was made (the value of [`DELTA_FIELD`]).
    pub(crate) how: &'a str,
    /// The usage preferences it was taken under (aipref form), if any were stated.
    pub(crate) usage: Option<&'a str>,
}

/// A `resource` record: content made or received outside an HTTP exchange, saying how, so
/// replay tools show it and an archivist can tell it was never sent whole.
pub(crate) fn resource(r: &Resource<'_>, level: u32) -> Record {
    resource_digested(r, digest(r.body), level)
}

/// As [`resource`], with the payload's digest already computed (by [`digest`]).
pub(crate) fn resource_digested(r: &Resource<'_>, payload: String, level: u32) -> Record {
    let mut headers = vec![
        ("WARC-Type", "resource".to_string()),
        ("WARC-Record-ID", record_id()),
        ("WARC-Date", date(r.at)),
        ("WARC-Target-URI", r.uri.to_string()),
        ("Content-Type", r.content_type.to_string()),
        ("WARC-Payload-Digest", payload.clone()),
        ("WARC-Block-Digest", payload),
    ];
    if let Some((id, uri)) = r.refers_to {
        headers.push(("WARC-Refers-To", id.to_string()));
        headers.push(("WARC-Refers-To-Target-URI", uri.to_string()));
    }
    headers.push((DELTA_FIELD, r.how.to_string()));
    if let Some(usage) = r.usage {
        headers.push((USAGE_FIELD, usage.to_string()));
    }
    build(&headers, &[r.body], level)
}

/// The `warcinfo` record that opens a file.
pub(crate) fn warcinfo(filename: &str, at: DateTime<Utc>, user_agent: &str, level: u32) -> Record {
    let info = format!(
        "software: webcoop-crawl/{}\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\nhttp-header-user-agent: {user_agent}\r\nrobots: obey\r\n",
        env!("CARGO_PKG_VERSION")
    );
    build(
        &[
            ("WARC-Type", "warcinfo".to_string()),
            ("WARC-Record-ID", record_id()),
            ("WARC-Date", date(at)),
            ("WARC-Filename", filename.to_string()),
            ("Content-Type", "application/warc-fields".to_string()),
        ],
        &[info.as_bytes()],
        level,
    )
}

/// A `response` record of `body` at `uri`, received now, for tests.
#[cfg(test)]
pub(crate) fn test_response(uri: &str, head: &str, body: &[u8], level: u32) -> Record {
    let x = Exchange {
        uri,
        at: Utc::now(),
        ip: None,
        http_head: head,
        body,
        payload_digest: &digest(body),
        truncated: false,
        usage: None,
        encoding: None,
    };
    response(&x, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflated(member: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(member)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn what_is_deflated_of_a_small_record_goes_at_level_one_and_a_large_one_at_its_level() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: nginx\r\n\r\n".repeat(4);
        let small: Vec<&[u8]> = vec![&head];
        assert_eq!(gzip_member(&small, 6, 1), gzip_member(&small, 1, 1));
        assert_eq!(inflated(&gzip_member(&small, 6, 1)), head);
        // The twin: past the bound the level asked is the one used.
        let page = b"<p>the same paragraph, many times over, in a page</p>\n".repeat(200);
        let large: Vec<&[u8]> = vec![&page];
        let (six, one) = (gzip_member(&large, 6, 1), gzip_member(&large, 1, 1));
        assert_ne!(six, one);
        assert_eq!(inflated(&six), page);
        // Level 0 (stored) stays 0.
        assert_eq!(gzip_member(&small, 0, 1), gzip_member(&small, 0, 1));
        assert_ne!(gzip_member(&small, 0, 1), gzip_member(&small, 1, 1));
    }
}
