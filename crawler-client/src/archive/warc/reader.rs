//! Records read back from the archive: for replay after a crash, the copies held, and the
//! HTTP message a response record holds.

use super::record::*;
use std::fs::File;
use std::io;
use std::path::Path;

/// One record read back from a file.
#[derive(Debug, Clone)]
pub struct StoredRecord {
    /// Offset of its gzip member.
    pub(crate) offset: u64,
    /// Length of the member.
    pub(crate) length: u64,
    /// WARC header fields in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The block.
    pub block: Vec<u8>,
}

impl StoredRecord {
    /// The first header field named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::analyze::header(&self.headers, name)
    }
}

/// Reads the records of a `.warc.gz` from `offset` to the end. A torn last member (a crash
/// during a write) ends the list: the end of the last whole record is where writing resumes.
pub fn read_records(path: &Path, offset: u64) -> io::Result<Vec<StoredRecord>> {
    use std::io::{Read, Seek};
    let mut file = File::open(path)?;
    file.seek(io::SeekFrom::Start(offset))?;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(records_in(&data, offset))
}

/// The whole records of `data`, a stretch of a `.warc.gz` that starts at `offset`, up to the
/// first torn or invalid member.
pub fn records_in(data: &[u8], offset: u64) -> Vec<StoredRecord> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some(rec) = member_at(&data[pos..], offset + pos as u64) else {
            break;
        };
        pos += rec.length as usize;
        out.push(rec);
    }
    out
}

/// Largest record read back: a body at the largest limit, its head and the request's.
const MAX_RECORD: u64 = 256 << 20;

/// The one record whose gzip member starts at `offset`.
pub(crate) fn read_record_at(path: &Path, offset: u64) -> io::Result<Option<StoredRecord>> {
    use std::io::{BufReader, Read, Seek};
    let mut file = File::open(path)?;
    file.seek(io::SeekFrom::Start(offset))?;
    // A member is read through a bounded window: records hold at most a body limit's worth.
    let mut data = Vec::new();
    BufReader::new(file)
        .take(256 << 20)
        .read_to_end(&mut data)?;
    Ok(member_at(&data, offset))
}

/// The decoded content of the page archived at `offset` (its content coding removed), if
/// the record there holds a whole page (see [`content_of`]).
pub(crate) fn content_at(path: &Path, offset: u64, limit: usize) -> io::Result<Option<Vec<u8>>> {
    Ok(held_at(path, offset, limit)?.map(|(body, _)| body))
}

/// The page archived at `offset` as [`content_at`] gives it, with its media type as it was
/// sent (the `Content-Type` of its response, or of the record of a page rebuilt).
pub(crate) fn held_at(
    path: &Path,
    offset: u64,
    limit: usize,
) -> io::Result<Option<(Vec<u8>, Option<String>)>> {
    let Some(rec) = read_record_at(path, offset)? else {
        return Ok(None);
    };
    let content_type = match rec.header("WARC-Type") {
        Some("response") => parse_http(&rec.block)
            .and_then(|h| crate::analyze::header(&h.headers, "content-type").map(str::to_string)),
        _ => rec.header("Content-Type").map(str::to_string),
    };
    Ok(content_of(&rec, limit).map(|body| (body, content_type)))
}

/// The decoded content of a record, if it is a whole, untruncated 2xx response or a page
/// rebuilt from a delta.
pub fn content_of(rec: &StoredRecord, limit: usize) -> Option<Vec<u8>> {
    if rec.header("WARC-Truncated").is_some() {
        return None;
    }
    match rec.header("WARC-Type") {
        // A page rebuilt from a delta refers to the delta; the delta itself does not.
        Some("resource")
            if rec.header(DELTA_FIELD).is_some() && rec.header("WARC-Refers-To").is_some() =>
        {
            return (rec.block.len() <= limit).then(|| rec.block.clone());
        }
        Some("response") => {}
        _ => return None,
    }
    let http = parse_http(&rec.block)?;
    if !(200..300).contains(&http.status) {
        return None;
    }
    let coding = http
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
        .map(|(_, v)| v.as_str());
    crate::analyze::decode(coding, &http.body, false, limit)
}

/// Parses the gzip member at the start of `data` (found at `offset` in its file) into a
/// record, if whole.
pub(crate) fn member_at(data: &[u8], offset: u64) -> Option<StoredRecord> {
    use std::io::{BufRead, Read};
    let mut decoder = flate2::bufread::GzDecoder::new(data);
    let mut plain = Vec::new();
    (&mut decoder)
        .take(MAX_RECORD + 1)
        .read_to_end(&mut plain)
        .ok()?;
    if plain.len() as u64 > MAX_RECORD {
        return None;
    }
    let consumed = data.len() - decoder.into_inner().len();
    let split = plain.windows(4).position(|w| w == b"\r\n\r\n")?;
    if consumed == 0 || !plain.ends_with(b"\r\n\r\n") {
        return None;
    }
    let mut headers = Vec::new();
    for line in (&plain[..split]).lines().skip(1).map_while(Result::ok) {
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let block_start = split + 4;
    let block_end = (plain.len() - 4).max(block_start);
    Some(StoredRecord {
        offset,
        length: consumed as u64,
        headers,
        block: plain[block_start..block_end].to_vec(),
    })
}

/// An HTTP response as stored in a record's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpMessage {
    /// `HTTP/1.1` and the like.
    pub(crate) version: &'static str,
    /// Status code.
    pub(crate) status: u16,
    /// Reason phrase.
    pub(crate) reason: String,
    /// Header fields in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The head as stored, with its final blank line.
    pub(crate) head: String,
    /// What follows the head.
    pub(crate) body: Vec<u8>,
}

/// Parses a `response` or `revisit` block into status, headers and body.
pub fn parse_http(block: &[u8]) -> Option<HttpMessage> {
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut response = httparse::Response::new(&mut fields);
    let httparse::Status::Complete(head_len) = response.parse(block).ok()? else {
        return None;
    };
    let version = match response.version? {
        0 => "HTTP/1.0",
        _ => "HTTP/1.1",
    };
    Some(HttpMessage {
        version,
        status: response.code?,
        reason: response.reason.unwrap_or("").to_string(),
        headers: response
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
        head: String::from_utf8_lossy(&block[..head_len]).into_owned(),
        body: block[head_len..].to_vec(),
    })
}
