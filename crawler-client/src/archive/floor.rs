//! The floor of a crawl's CPU: the pages it archived sent again through the library calls a
//! crawler cannot avoid for each page (decoding the body, its digests, link extraction, the
//! WARC record's compression), on one thread, with nothing else. The same pages fetched again
//! by the crawler's HTTP client are `offline::floor_http` (the archive fetches nothing). A
//! crawl's CPU per page set beside this says what the crawler itself costs
//! (`examples/crawl_bench --docroot`).

use crate::analyze::{self, links};
use crate::archive::{cdxj, warc};
use std::io;
use std::path::Path;
use std::time::Duration;
use url::Url;
use webcoop_protocol::validator::Sha256Digest;

/// What the floor measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    /// Pages sent through the calls (whole 2xx responses).
    pub pages: u64,
    /// Bytes of their bodies as received.
    pub received: u64,
    /// Bytes once decoded.
    pub decoded: u64,
    /// CPU time of the calls (this thread's user and system time).
    pub cpu: Duration,
    /// CPU time of fetching the pages again, when measured
    /// (`with_http` of the `offline::floor_http` module).
    pub http: Duration,
    /// Pages fetched again whose body was not the one archived (a site that changed).
    pub differed: u64,
}

impl Floor {
    /// CPU per page of the calls and the fetch, milliseconds.
    pub fn ms_per_page(&self) -> f64 {
        (self.cpu + self.http).as_secs_f64() * 1e3 / self.pages.max(1) as f64
    }

    /// CPU per page of the fetch alone, milliseconds.
    pub fn http_ms_per_page(&self) -> f64 {
        self.http.as_secs_f64() * 1e3 / self.pages.max(1) as f64
    }
}

/// This thread's CPU time so far.
pub(crate) fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// The work of one page: what [`floor`] times.
fn one_page(url: &Url, http: &warc::HttpMessage, level: u32) -> u64 {
    let coding = analyze::header(&http.headers, "content-encoding");
    let decoded =
        analyze::decode(coding, &http.body, false, usize::MAX).unwrap_or_else(|| http.body.clone());
    // The digests a record and a page row carry: the WARC payload and block digests (SHA-1),
    // the validator (SHA-256) and the duplicate key (xxh3).
    let payload = warc::digest(&http.body);
    let validator = Sha256Digest::of(&decoded);
    let key = xxhash_rust::xxh3::xxh3_64(&decoded);
    let html = analyze::header(&http.headers, "content-type").is_some_and(|t| t.contains("html"));
    let found = if html {
        links::extract(url, &decoded).links.len()
    } else {
        0
    };
    let record = warc::response(
        &warc::Exchange {
            uri: url.as_str(),
            at: chrono::Utc::now(),
            ip: None,
            http_head: &http.head,
            body: &http.body,
            payload_digest: &payload,
            truncated: false,
            usage: None,
            encoding: None,
        },
        level,
    );
    std::hint::black_box((validator, key, found, record.bytes.len()));
    decoded.len() as u64
}

/// Sends every whole 2xx page response archived in the crawl `out` through the per-page
/// library calls, at WARC gzip `level`, timing only the calls.
pub fn floor(out: &Path, level: u32) -> io::Result<Floor> {
    calls(out, level, |_, _| {})
}

/// [`floor`], calling `each` with every page sent through the calls, outside the timing.
pub(crate) fn calls(
    out: &Path,
    level: u32,
    mut each: impl FnMut(&Url, &warc::HttpMessage),
) -> io::Result<Floor> {
    let mut f = Floor::default();
    each_page(out, |url, http| {
        let start = thread_cpu();
        f.decoded += one_page(url, http, level);
        f.cpu += thread_cpu().saturating_sub(start);
        f.pages += 1;
        f.received += http.body.len() as u64;
        each(url, http);
    })?;
    Ok(f)
}

/// Calls `each` with every whole 2xx page response archived in the crawl `out`.
fn each_page(out: &Path, mut each: impl FnMut(&Url, &warc::HttpMessage)) -> io::Result<()> {
    for file in cdxj::warc_files(out)? {
        cdxj::each_record(&file, |rec| {
            if rec.header("WARC-Type") != Some("response") || rec.header("WARC-Truncated").is_some()
            {
                return Ok(());
            }
            let (Some(url), Some(http)) = (
                rec.header("WARC-Target-URI")
                    .and_then(|u| Url::parse(u).ok()),
                warc::parse_http(&rec.block),
            ) else {
                return Ok(());
            };
            if !(200..300).contains(&http.status) || url.path() == "/robots.txt" {
                return Ok(());
            }
            each(&url, &http);
            Ok(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_counts_every_page_archived_and_only_pages() {
        let dir = tempfile::tempdir().unwrap();
        let warc_dir = dir.path().join("warc");
        let mut w = warc::WarcWriter::new(&warc_dir, "webcoop", 1 << 30, "bot", 6).unwrap();
        let page = "<a href=\"/b\">b</a>".repeat(50);
        let gz = webcoop_protocol::compression::gzip(page.as_bytes(), 6);
        for (uri, head, body) in [
            (
                "http://a.test/",
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                page.as_bytes(),
            ),
            (
                "http://a.test/z",
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n",
                &gz[..],
            ),
            (
                "http://a.test/robots.txt",
                "HTTP/1.1 200 OK\r\n\r\n",
                b"User-agent: *",
            ),
            (
                "http://a.test/gone",
                "HTTP/1.1 404 Not Found\r\n\r\n",
                b"no",
            ),
        ] {
            let r = warc::test_response(uri, head, body, 6);
            w.append(&r).unwrap();
        }
        w.sync().unwrap();
        let f = floor(dir.path(), 6).unwrap();
        assert_eq!(f.pages, 2);
        assert_eq!(f.decoded, 2 * page.len() as u64, "the gzip'd page decoded");
        assert_eq!(f.received, (page.len() + gz.len()) as u64);
        assert!(f.ms_per_page() >= 0.0);
    }
}
