//! WARC 1.1 (ISO 28500) output: each record its own gzip member (`.warc.gz`), files rotated by
//! size, a `warcinfo` record first in each file, `response` records for what was fetched,
//! `revisit` records for 304s and unchanged content, and `resource` records for pages rebuilt
//! from a delta (each referring to the record of the delta as received). Digests are `sha1:` in base32, as
//! Heritrix, wget and warcio write and check them, except a page read from a site's snapshot or
//! batch: its `sha256:` (hex, as the site's record wrote it) is the content's validator, which
//! the crawl computes anyway, and warcio checks it as well.
//!
//! Records are built (and compressed) where pages are fetched; the writer only appends bytes
//! and reports where each record landed, so the crawl state can point into the archive.

use chrono::{DateTime, SecondsFormat, Utc};
use data_encoding::BASE32;
use flate2::Compression;
use sha1::{Digest, Sha1};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

/// One gzip member (RFC 1952) of `parts` in order, as `GzEncoder` writes it (no name, no
/// time, OS unknown), deflated at `level` with this thread's reused state, the parts from
/// `stored` on (and the record's end) in stored blocks after a sync flush.
fn gzip_member(parts: &[&[u8]], level: u32, stored: usize) -> Vec<u8> {
    use flate2::{Compress, FlushCompress, Status};
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let (deflated, kept) = parts.split_at(stored.min(parts.len()));
    let kept_len: usize = kept.iter().map(|p| p.len()).sum();
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
fn content_coded(http_head: &str) -> bool {
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

/// Where a record landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    /// The file's name (in the WARC directory).
    pub(crate) file: String,
    /// Offset of the record's gzip member.
    pub(crate) offset: u64,
    /// Length of the member.
    pub(crate) length: u64,
}

/// Appends records to rotating files.
pub(crate) struct WarcWriter {
    dir: PathBuf,
    prefix: String,
    max_size: u64,
    user_agent: String,
    level: u32,
    serial: u32,
    current: Option<(File, String, u64)>,
    /// Records appended to the current file and not written yet; its length counts them.
    unwritten: Vec<u8>,
    /// When the first of them was appended.
    unwritten_since: Option<Instant>,
    /// Files finished since the last sync, with their final length.
    closed: Vec<(String, u64)>,
}

/// Records are written to the file in runs of about this many bytes, not one call each: a
/// write per record was 2% of a crawl's CPU. What the state points to is always written and
/// synced first ([`WarcWriter::sync`]).
const WRITE_RUN: usize = 256 << 10;

/// A run is written at the latest this long after its first record: after `kill -9` the
/// crawl replays what reached the file, and only what was under way then is fetched again.
pub(crate) const WRITE_DELAY: Duration = Duration::from_millis(50);

/// The WARC files of `prefix` in `dir`, in order, with their length on disk.
pub fn files(dir: &Path, prefix: &str) -> io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if serial_of(&name, prefix).is_some() {
            out.push((name, entry.metadata()?.len()));
        }
    }
    out.sort();
    Ok(out)
}

fn serial_of(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?
        .strip_prefix('-')?
        .strip_suffix(".warc.gz")?
        .parse()
        .ok()
}

impl WarcWriter {
    /// A writer into `dir`, files named `PREFIX-SERIAL.warc.gz`, rotated past `max_size`;
    /// numbering continues after the files already there.
    pub(crate) fn new(
        dir: &Path,
        prefix: &str,
        max_size: u64,
        user_agent: &str,
        level: u32,
    ) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let serial = files(dir, prefix)?
            .iter()
            .filter_map(|(n, _)| serial_of(n, prefix))
            .max()
            .unwrap_or(0);
        Ok(WarcWriter {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            max_size,
            user_agent: user_agent.to_string(),
            level,
            serial,
            current: None,
            unwritten: Vec::new(),
            unwritten_since: None,
            closed: Vec::new(),
        })
    }

    /// Continues appending to `file`, cut to `length`: whatever lay past it was replayed by
    /// the caller or is dropped here.
    pub(crate) fn resume(&mut self, file: &str, length: u64) -> io::Result<()> {
        self.unwritten.clear();
        self.unwritten_since = None;
        let path = self.dir.join(file);
        let mut f = OpenOptions::new().write(true).open(&path)?;
        f.set_len(length)?;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(length))?;
        f.sync_data()?;
        self.current = Some((f, file.to_string(), length));
        Ok(())
    }

    fn open_next(&mut self) -> io::Result<()> {
        self.write_out()?;
        if let Some((f, name, len)) = self.current.take() {
            f.sync_data()?;
            self.closed.push((name, len));
        }
        self.serial += 1;
        let name = format!("{}-{:05}.warc.gz", self.prefix, self.serial);
        let mut f = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(self.dir.join(&name))?;
        let info = warcinfo(&name, crate::clock::now(), &self.user_agent, self.level);
        f.write_all(&info.bytes)?;
        // The new name must survive a power loss as well as the bytes synced into it later: the
        // state records offsets in this file once its batch is saved.
        std::fs::File::open(&self.dir)?.sync_all()?;
        self.current = Some((f, name, info.bytes.len() as u64));
        Ok(())
    }

    /// Appends a record, opening a new file when the current one is full.
    pub(crate) fn append(&mut self, record: &Record) -> io::Result<Position> {
        let full = self
            .current
            .as_ref()
            .is_none_or(|(_, _, len)| *len >= self.max_size);
        if full {
            self.open_next()?;
        }
        if self.unwritten.len() + record.bytes.len() > WRITE_RUN {
            self.write_out()?;
        }
        let (_, name, len) = self
            .current
            .as_mut()
            .ok_or_else(|| io::Error::other("no WARC file open"))?;
        let pos = Position {
            file: name.clone(),
            offset: *len,
            length: record.bytes.len() as u64,
        };
        *len += record.bytes.len() as u64;
        if record.bytes.len() >= WRITE_RUN {
            // A large record is written as it is, not copied.
            self.write_run(&record.bytes)?;
        } else {
            self.unwritten.extend_from_slice(&record.bytes);
            let since = *self.unwritten_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= WRITE_DELAY {
                self.write_out()?;
            }
        }
        Ok(pos)
    }

    /// When the records appended and not written yet must be written ([`WRITE_DELAY`]).
    pub(crate) fn write_due(&self) -> Option<Instant> {
        self.unwritten_since.map(|t| t + WRITE_DELAY)
    }

    /// Writes the records appended if they have waited [`WRITE_DELAY`].
    pub(crate) fn write_if_due(&mut self) -> io::Result<()> {
        match self.write_due() {
            Some(t) if Instant::now() >= t => self.write_out(),
            _ => Ok(()),
        }
    }

    /// Writes the records appended since the last write to the file.
    fn write_out(&mut self) -> io::Result<()> {
        self.write_run(&[])
    }

    /// Writes the records appended since the last write, then `last` (counted in the file's
    /// length already), to the file.
    fn write_run(&mut self, last: &[u8]) -> io::Result<()> {
        if self.unwritten.is_empty() && last.is_empty() {
            return Ok(());
        }
        let Some((f, _, len)) = self.current.as_mut() else {
            self.unwritten.clear();
            self.unwritten_since = None;
            return Ok(());
        };
        let result = f
            .write_all(&self.unwritten)
            .and_then(|()| f.write_all(last));
        if result.is_err() {
            // A partial write (a full disk) must not stay: the next record would follow a
            // torn one. The records of this run are lost with it; no saved state points to
            // them, as the state is saved only after a sync.
            let written = *len - (self.unwritten.len() + last.len()) as u64;
            let _ = f.set_len(written);
            // A file resumed is not in append mode: its cursor goes back too.
            let _ = std::io::Seek::seek(f, std::io::SeekFrom::Start(written));
            *len = written;
        }
        // Cleared, not replaced: the next run reuses the capacity.
        self.unwritten.clear();
        self.unwritten_since = None;
        result
    }

    /// Makes everything written durable; returns each file written since the last sync with
    /// its length (what the state commits).
    pub(crate) fn sync(&mut self) -> io::Result<Vec<(String, u64)>> {
        self.write_out()?;
        let mut out = std::mem::take(&mut self.closed);
        if let Some((f, name, len)) = &mut self.current {
            f.sync_data()?;
            out.push((name.clone(), *len));
        }
        Ok(out)
    }

    /// The directory written to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

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

    fn resp(uri: &str, head: &str, body: &[u8]) -> Record {
        test_response(uri, head, body, DEFAULT_LEVEL)
    }

    #[test]
    fn records_are_written_in_runs_and_all_are_on_disk_after_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(dir.path(), "run", 1 << 30, "bot/1", 6).unwrap();
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n";
        // Enough small records for several runs, and one larger than a run between them;
        // built first, so that appending them all takes less than WRITE_DELAY.
        let mut records = Vec::new();
        for i in 0..300 {
            let mut body = vec![0u8; if i == 150 { WRITE_RUN + 5000 } else { 3000 }];
            rand::fill(&mut body[..]);
            let r = resp(&format!("http://e.com/{i}"), head, &body);
            records.push((body, r));
        }
        let mut positions: Vec<Position> = Vec::new();
        for (_, r) in &records {
            let p = w.append(r).unwrap();
            if let Some(prev) = positions.last() {
                assert_eq!(
                    p.offset,
                    prev.offset + prev.length,
                    "records follow each other"
                );
            }
            positions.push(p);
        }
        let path = dir.path().join(&positions[0].file);
        let on_disk = || std::fs::metadata(&path).unwrap().len();
        let end = positions.last().map(|p| p.offset + p.length).unwrap();
        assert!(on_disk() < end, "the last run is not written yet");
        assert!(
            on_disk() > positions[150].offset,
            "full runs are written as they fill"
        );
        assert!(w.write_due().is_some());
        std::thread::sleep(WRITE_DELAY);
        w.write_if_due().unwrap();
        assert_eq!(
            on_disk(),
            end,
            "written once it has waited, before any sync"
        );
        assert_eq!(w.write_due(), None);
        let synced = w.sync().unwrap();
        assert_eq!(synced, vec![(positions[0].file.clone(), end)]);
        for (i, p) in positions.iter().enumerate() {
            if i % 37 != 0 && i != 150 {
                continue;
            }
            let rec = read_record_at(&path, p.offset).unwrap().unwrap();
            assert_eq!(rec.length, p.length);
            assert_eq!(parse_http(&rec.block).unwrap().body, records[i].0);
        }
    }

    #[test]
    fn records_round_trip_and_files_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(dir.path(), "test", 1000, "bot/1", 6).unwrap();
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        let r1 = resp("http://e.com/a", head, b"<p>a</p>");
        let p1 = w.append(&r1).unwrap();
        let r2 = revisit(
            "http://e.com/a",
            Utc::now(),
            "HTTP/1.1 304 Not Modified\r\n\r\n",
            RevisitProfile::ServerNotModified,
            None,
            ("http://e.com/a", None),
            6,
        );
        let p2 = w.append(&r2).unwrap();
        assert_eq!(p1.file, "test-00001.warc.gz");
        assert!(p1.offset > 0, "after the warcinfo record");
        let mut big = vec![0u8; 2000];
        rand::fill(&mut big[..]);
        w.append(&resp("http://e.com/b", head, &big)).unwrap();
        let p4 = w.append(&resp("http://e.com/c", head, b"c")).unwrap();
        assert_eq!(p4.file, "test-00002.warc.gz", "rotated past the size limit");
        let synced = w.sync().unwrap();
        assert_eq!(synced.len(), 2, "both files were written to");
        let (name, len) = synced[1].clone();
        assert_eq!(name, "test-00002.warc.gz");
        assert_eq!(
            std::fs::metadata(dir.path().join(&synced[0].0))
                .unwrap()
                .len(),
            synced[0].1
        );
        assert_eq!(files(dir.path(), "test").unwrap().len(), 2);
        assert_eq!(
            WarcWriter::new(dir.path(), "test", 1000, "bot/1", 6)
                .unwrap()
                .serial,
            2
        );
        let records = read_records(&dir.path().join(&p1.file), 0).unwrap();
        let types: Vec<&str> = records
            .iter()
            .map(|r| r.header("warc-type").unwrap())
            .collect();
        assert_eq!(types, ["warcinfo", "response", "revisit", "response"]);
        assert_eq!(
            (records[1].offset, records[1].length),
            (p1.offset, p1.length)
        );
        assert_eq!(records[2].offset, p2.offset);
        let http = parse_http(&records[1].block).unwrap();
        assert_eq!((http.status, http.body.as_slice()), (200, &b"<p>a</p>"[..]));
        assert_eq!(
            http.headers,
            [("Content-Type".to_string(), "text/html".to_string())]
        );
        assert_eq!(http.head, head);
        assert_eq!(
            read_records(&dir.path().join(&p1.file), p2.offset)
                .unwrap()
                .len(),
            2
        );
        assert_eq!(std::fs::metadata(dir.path().join(name)).unwrap().len(), len);
    }

    #[test]
    fn a_page_rebuilt_is_content_and_the_delta_it_came_from_is_not() {
        let at = Utc::now();
        let delta = resource(
            &Resource {
                uri: "http://e.com/.well-known/webcoop/delta/a",
                at,
                content_type: "application/octet-stream",
                body: b"\x5e\x2a\x4d\x18",
                refers_to: None,
                how: "dcz pushed inline; base=\"x\"",
                usage: None,
            },
            6,
        );
        let page = resource(
            &Resource {
                uri: "http://e.com/a",
                at,
                content_type: "text/html",
                body: b"<p>new</p>",
                refers_to: Some((&delta.id, "http://e.com/.well-known/webcoop/delta/a")),
                how: "dcz pushed inline; base=\"x\"",
                usage: Some("train-ai=n"),
            },
            6,
        );
        let [d, p] = [&delta, &page].map(|r| member_at(&r.bytes, 0).unwrap());
        assert_eq!(content_of(&d, 1 << 20), None);
        assert_eq!(content_of(&p, 1 << 20).as_deref(), Some(&b"<p>new</p>"[..]));
        assert_eq!(content_of(&p, 5), None, "past the limit");
        assert_eq!(p.header("WARC-Refers-To"), Some(delta.id.as_str()));
        assert_eq!(
            p.header(USAGE_FIELD),
            Some("train-ai=n"),
            "the usage field on a rebuilt page"
        );
        assert_eq!(d.header(USAGE_FIELD), None);
        assert_eq!(
            p.header("WARC-Block-Digest"),
            Some(digest(b"<p>new</p>").as_str())
        );
    }

    #[test]
    fn a_coded_body_is_kept_in_stored_blocks_that_any_gzip_reader_reads() {
        use std::io::Read;
        let head = "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n\r\n";
        for len in [0usize, 1, 65_534, 65_535, 65_536, 200_001] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7919 % 251) as u8).collect();
            let r = resp("http://e.com/a", head, &body);
            // Stored: the record is the body and its heads, not less.
            assert!(r.bytes.len() > len, "{len}: {}", r.bytes.len());
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(&r.bytes[..])
                .read_to_end(&mut plain)
                .unwrap();
            let rec = member_at(&r.bytes, 0).unwrap();
            assert_eq!(parse_http(&rec.block).unwrap().body, &body[..], "{len}");
            assert!(plain.ends_with(webcoop_protocol::warc::record::END));
        }
    }

    #[test]
    fn a_body_already_compressed_is_not_compressed_hard_again() {
        let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        let coded = "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n\r\n";
        assert!(!content_coded(plain));
        assert!(content_coded(coded));
        assert!(!content_coded(
            "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n\r\n"
        ));
        // Text compresses at the level asked; the same bytes under a coding are stored, and
        // both read back whole.
        let body = "<p>the same sentence again</p>".repeat(2000);
        let (a, b) = (
            resp("http://e.com/a", plain, body.as_bytes()),
            resp("http://e.com/a", coded, body.as_bytes()),
        );
        assert!(
            a.bytes.len() < b.bytes.len(),
            "{} {}",
            a.bytes.len(),
            b.bytes.len()
        );
        for r in [a, b] {
            let rec = member_at(&r.bytes, 0).unwrap();
            assert_eq!(parse_http(&rec.block).unwrap().body, body.as_bytes());
        }
    }

    #[test]
    fn a_torn_record_ends_the_list_and_resume_cuts_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(dir.path(), "t", 1 << 30, "bot", 6).unwrap();
        let p = w
            .append(&resp("http://e.com/a", "HTTP/1.1 200 OK\r\n\r\n", b"a"))
            .unwrap();
        let whole = w.sync().unwrap()[0].1;
        let torn = resp("http://e.com/b", "HTTP/1.1 200 OK\r\n\r\n", b"b");
        let path = dir.path().join(&p.file);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&torn.bytes[..torn.bytes.len() / 2]).unwrap();
        drop(f);
        assert_eq!(read_records(&path, p.offset).unwrap().len(), 1);
        let mut w2 = WarcWriter::new(dir.path(), "t", 1 << 30, "bot", 6).unwrap();
        w2.resume(&p.file, whole).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
    }
}
