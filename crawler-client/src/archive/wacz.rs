//! A crawl packed as a WACZ 1.1.1 (Webrecorder's packaging, which ReplayWeb.page opens and
//! `wacz validate` checks): the WARC files stored as they are under `archive/`, the sorted
//! CDXJ index under `indexes/`, the pages (HTML captured with status 200 or rebuilt from a
//! delta) in `pages/pages.jsonl`, `datapackage.json` with every file's SHA-256 and size, and
//! `datapackage-digest.json` with the hash of that. Written to a temporary file and renamed,
//! so a crash never leaves half an archive under the final name.

use super::cdxj;
use chrono::{Datelike, Timelike};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::Path;
use zip::write::SimpleFileOptions;

/// The WACZ version written.
pub(crate) const WACZ_VERSION: &str = "1.1.1";

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct Exported {
    /// WARC files packed.
    pub warcs: usize,
    /// Index lines.
    pub captures: usize,
    /// Pages listed.
    pub pages: usize,
    /// Bytes of the WACZ.
    pub bytes: u64,
}

/// A file of the package: its path inside, SHA-256 and size.
struct Resource {
    path: String,
    hash: String,
    bytes: u64,
}

/// Writes through to the zip entry while hashing.
struct Hashing<'a, W: Write> {
    inner: &'a mut W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn zip_err(e: zip::result::ZipError) -> io::Error {
    io::Error::other(e)
}

/// Adds one entry, returning its resource line.
fn add<W: Write + io::Seek>(
    zip: &mut zip::ZipWriter<W>,
    path: &str,
    stored: bool,
    mut content: impl Read,
) -> io::Result<Resource> {
    let method = if stored {
        zip::CompressionMethod::Stored
    } else {
        zip::CompressionMethod::Deflated
    };
    let now = chrono::Utc::now();
    let modified = zip::DateTime::from_date_and_time(
        now.year().clamp(1980, 2107) as u16,
        now.month() as u8,
        now.day() as u8,
        now.hour() as u8,
        now.minute() as u8,
        now.second() as u8,
    )
    .unwrap_or_default();
    let options = SimpleFileOptions::default()
        .compression_method(method)
        .last_modified_time(modified)
        .large_file(true);
    zip.start_file(path, options).map_err(zip_err)?;
    let mut h = Hashing {
        inner: zip,
        hash: Sha256::new(),
        bytes: 0,
    };
    io::copy(&mut content, &mut h)?;
    Ok(Resource {
        path: path.to_string(),
        hash: format!("sha256:{}", hex::encode(h.hash.finalize())),
        bytes: h.bytes,
    })
}

/// The pages list: every HTML page captured with status 200 or rebuilt from a delta, in
/// capture order.
fn pages(lines: &[cdxj::Line]) -> (String, usize) {
    let mut out = String::from(
        "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All Pages\"}\n",
    );
    let mut n = 0;
    let mut by_time: Vec<&cdxj::Line> = lines.iter().collect();
    by_time.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    for l in by_time {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&l.json) else {
            continue;
        };
        // A page rebuilt from a delta is a `resource`: indexed without a status.
        let ok = v["status"] == "200" || v.get("status").is_none();
        if !ok || v["mime"] != "text/html" {
            continue;
        }
        let url = v["url"].as_str().unwrap_or_default();
        let t = &l.timestamp;
        let ts = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &t[0..4],
            &t[4..6],
            &t[6..8],
            &t[8..10],
            &t[10..12],
            &t[12..14]
        );
        let id = format!(
            "{:016x}",
            xxhash_rust::xxh3::xxh3_64(format!("{url} {ts}").as_bytes())
        );
        let page = serde_json::json!({ "id": id, "url": url, "ts": ts });
        out.push_str(&page.to_string());
        out.push('\n');
        n += 1;
    }
    (out, n)
}

/// Packs the crawl in `out` into the WACZ file `to`.
pub fn export(out: &Path, to: &Path, software: &str) -> io::Result<Exported> {
    let warcs = cdxj::warc_files(out)?;
    if warcs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} holds no WARC files", out.join("warc").display()),
        ));
    }
    let lines = cdxj::index(out, true)?;
    let tmp = to.with_extension("wacz.tmp");
    let file = std::fs::File::create(&tmp)?;
    let mut zip = zip::ZipWriter::new(io::BufWriter::new(file));
    let mut resources = Vec::new();
    for path in &warcs {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        resources.push(add(
            &mut zip,
            &format!("archive/{name}"),
            true,
            std::fs::File::open(path)?,
        )?);
    }
    let mut index = String::new();
    for l in &lines {
        index.push_str(&l.to_string());
        index.push('\n');
    }
    resources.push(add(
        &mut zip,
        "indexes/index.cdxj",
        false,
        index.as_bytes(),
    )?);
    let (pages_jsonl, pages) = pages(&lines);
    resources.push(add(
        &mut zip,
        "pages/pages.jsonl",
        false,
        pages_jsonl.as_bytes(),
    )?);
    let created = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let package = serde_json::json!({
        "profile": "data-package",
        "resources": resources.iter().map(|r| serde_json::json!({
            "name": Path::new(&r.path).file_name().and_then(|n| n.to_str()).unwrap_or_default(),
            "path": r.path,
            "hash": r.hash,
            "bytes": r.bytes,
        })).collect::<Vec<_>>(),
        "created": created,
        "wacz_version": WACZ_VERSION,
        "software": software,
        "title": out.file_name().and_then(|n| n.to_str()).unwrap_or("webcoop crawl"),
    });
    let package = serde_json::to_vec_pretty(&package).map_err(io::Error::other)?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": format!("sha256:{}", hex::encode(Sha256::digest(&package))),
    });
    add(&mut zip, "datapackage.json", false, &package[..])?;
    let digest = serde_json::to_vec_pretty(&digest).map_err(io::Error::other)?;
    add(&mut zip, "datapackage-digest.json", false, &digest[..])?;
    let mut inner = zip.finish().map_err(zip_err)?;
    inner.flush()?;
    let file = inner.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    let bytes = file.metadata()?.len();
    std::fs::rename(&tmp, to)?;
    Ok(Exported {
        warcs: warcs.len(),
        captures: lines.len(),
        pages,
        bytes,
    })
}
