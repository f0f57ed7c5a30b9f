//! Building a snapshot of the whole site (see `webcoop_protocol::snapshot`): every published
//! file at one sequence number, in one `.warc.zst` beside the other published documents, with
//! its CDXJ index. A file whose content is no longer the one the inventory holds at that sequence is
//! left out (the crawler fetches what the listing names and the snapshot lacks), so a snapshot
//! never claims a version it does not hold. Written atomically: the index first names a
//! complete file, and the previous snapshot stays until the new one is complete.

mod dictionary;
mod index_lines;
mod plan_files;

pub(crate) use plan_files::PlanFiles;

use crate::content_type;
use crate::publish::atomic::AtomicFile;
use crate::publish::resource_dump::DumpWriter;
use crate::publish::snapshot::directory;
use crate::scan::{ReadError, open_confined};
use chrono::{DateTime, Utc};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::resourcesync::Resource;
use webcoop_protocol::snapshot::{self, Entry, SnapshotInfo};
use webcoop_protocol::validator::Sha256Digest;
use webcoop_protocol::warc::ZstdWarcWriter;
use webcoop_protocol::warc::cdxj::Line;

/// The zstd level of snapshots unless configured.
pub(crate) const DEFAULT_LEVEL: i32 = 12;
/// Largest file put in a snapshot ([`snapshot::MAX_RECORD`], a crawler's default page limit);
/// larger ones are fetched on their own.
pub(crate) const MAX_RECORD: u64 = snapshot::MAX_RECORD;

/// What a snapshot is made of: each file's docroot path and the digest the inventory holds.
pub(crate) struct Plan {
    /// The change-log sequence number the inventory is at.
    pub(crate) sequence: u64,
    /// The files, in path order: path, digest, size, when it last changed.
    pub(crate) files: PlanFiles,
    /// Whether a ResourceSync Resource Dump of the same files is written beside.
    pub(crate) dump: bool,
}

/// A snapshot written.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltSnapshot {
    /// Its sequence number.
    pub(crate) sequence: u64,
    /// The largest content it holds, in bytes.
    pub(crate) max_record: Option<u64>,
    /// Its file.
    pub path: PathBuf,
    /// Resources in it.
    pub records: u64,
    /// Files left out (changed since, gone, too large, not readable).
    pub left_out: u64,
    /// Bytes of the files in it.
    pub content_bytes: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// Where a snapshot's bodies come from.
#[derive(Debug, Clone)]
pub(crate) enum Bodies {
    /// The docroot's files, read again through the confined open.
    Docroot(PathBuf),
    /// The versions the state directory keeps (origin mode: the pages as the web server
    /// served them; pages without a kept version are left out).
    Kept(PathBuf),
}

/// [`Bodies`] opened for one build.
enum Source {
    Docroot(PathBuf),
    Kept(crate::store::Store),
}

impl Source {
    fn open(bodies: &Bodies) -> std::io::Result<Source> {
        Ok(match bodies {
            Bodies::Docroot(d) => Source::Docroot(d.clone()),
            Bodies::Kept(state) => Source::Kept(
                crate::store::Store::open_read_only(state).map_err(std::io::Error::other)?,
            ),
        })
    }
}

/// Reads `rel` for the snapshot: its content if it still has `sha256`.
fn content(source: &Source, rel: &str, sha256: &Sha256Digest, size: u64) -> Option<Vec<u8>> {
    if size > MAX_RECORD {
        return None;
    }
    let docroot = match source {
        Source::Docroot(d) => d,
        Source::Kept(store) => {
            let kept = match store.version(rel, sha256) {
                Ok(k) => k?,
                Err(e) => {
                    tracing::warn!("snapshot: {rel}: {e}; left out");
                    return None;
                }
            };
            return (Sha256Digest::of(&kept) == *sha256).then_some(kept);
        }
    };
    let (file, _) = match open_confined(docroot, rel) {
        Ok(f) => f,
        Err(ReadError::Gone | ReadError::NotPublic(_) | ReadError::Unstable) => return None,
        Err(ReadError::Io(e)) => {
            tracing::warn!("snapshot: {rel}: {e}; left out");
            return None;
        }
    };
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_RECORD + 1).read_to_end(&mut bytes).ok()?;
    (Sha256Digest::of(&bytes) == *sha256).then_some(bytes)
}

/// How often a build says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Writes the snapshot of `plan` into `out` for the site at `base`, compressed at `level`,
/// its warcinfo stating the site's usage preferences (`content_usage`).
pub(crate) fn build(
    bodies: &Bodies,
    out: &Path,
    base: &Url,
    plan: &Plan,
    (level, content_usage): (i32, Option<&str>),
    now: DateTime<Utc>,
) -> std::io::Result<BuiltSnapshot> {
    let started = Instant::now();
    let dir = directory(out);
    let path = dir.join(snapshot::file_name(plan.sequence));
    let source = Source::open(bodies)?;
    let dict = dictionary::choose(&source, plan, base, level, now);
    let mut file = ZstdWarcWriter::new(AtomicFile::create(&path)?, dict.as_deref(), level)?;
    // The largest file that fits, stated before the records so a crawler knows its limit
    // reads them all.
    let mut max_record = None;
    plan.files.for_each(|_, _, size, _| {
        if size <= MAX_RECORD {
            max_record = max_record.max(Some(size));
        }
        Ok(true)
    })?;
    let date = snapshot::warc_date(now);
    let info = SnapshotInfo {
        site: base.to_string(),
        sequence: plan.sequence,
        content_usage: content_usage.map(str::to_string),
        max_record,
    };
    append_warcinfo(&mut file, &info, &date)?;
    let name = snapshot::file_name(plan.sequence);
    let index_path = dir.join(snapshot::index_name(plan.sequence));
    let mut lines = index_lines::IndexLines::create(&index_path)?;
    let mut progress = Instant::now();
    let (mut records, mut left_out, mut content_bytes) = (0u64, 0u64, 0u64);
    let mut dump = if plan.dump {
        Some(DumpWriter::create(out, plan.sequence)?)
    } else {
        None
    };
    plan.files.for_each(|rel, sha256, size, modified| {
        let Some(body) = content(&source, rel, sha256, size) else {
            left_out += 1;
            return Ok(true);
        };
        if let Some(d) = dump.as_mut() {
            let resource = Resource {
                loc: crate::urls::url_of(base, rel).to_string(),
                lastmod: modified,
                sha256: *sha256,
                length: body.len() as u64,
                media_type: content_type::of_path(rel).to_string(),
            };
            d.add(rel, resource, &body)?;
        }
        let entry = entry_of(base, rel, sha256, body);
        let fields = entry.fields(&record_id(), now);
        let borrowed: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (offset, length) = file.append(&borrowed, &entry.body)?;
        lines.push(&index_line(&entry, &date, (offset, length), &name))?;
        records += 1;
        if progress.elapsed() >= PROGRESS_EVERY {
            progress = Instant::now();
            tracing::info!(
                "snapshot {}: {records} of {} files packed, {:.0} s",
                plan.sequence,
                plan.files.len(),
                started.elapsed().as_secs_f64()
            );
        }
        content_bytes += entry.body.len() as u64;
        Ok(true)
    })?;
    let file_bytes = file.written();
    file.finish()?.commit()?;
    tracing::debug!(
        out_of_order = lines.strays(),
        "index lines merged in at the end"
    );
    lines.finish(&index_path)?;
    if let Some(d) = dump {
        d.finish(base, now)?;
    }
    remove_older(&dir, plan.sequence);
    Ok(BuiltSnapshot {
        sequence: plan.sequence,
        max_record,
        path,
        records,
        left_out,
        content_bytes,
        file_bytes,
        elapsed: started.elapsed(),
    })
}

/// The `warcinfo` record that opens a snapshot.
fn append_warcinfo<W: std::io::Write>(
    file: &mut ZstdWarcWriter<W>,
    info: &SnapshotInfo,
    date: &str,
) -> std::io::Result<()> {
    let id = record_id();
    let name = snapshot::file_name(info.sequence);
    file.append(
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", &id),
            ("WARC-Date", date),
            ("WARC-Filename", &name),
            ("Content-Type", "application/warc-fields"),
        ],
        info.block(concat!("webcoop-agent/", env!("CARGO_PKG_VERSION")))
            .as_bytes(),
    )?;
    Ok(())
}

/// The index's line of a record written at `(offset, length)` of the file `name`.
fn index_line(entry: &Entry, date: &str, (offset, length): (u64, u64), name: &str) -> Line {
    Line::new(
        &entry.url,
        date,
        &[
            ("url", entry.url.clone()),
            ("mime", entry.content_type.clone()),
            ("digest", snapshot::digest_field(&entry.sha256)),
            ("length", length.to_string()),
            ("offset", offset.to_string()),
            ("filename", name.to_string()),
        ],
    )
}

/// Removes the snapshots before the one preceding `newest`: the previous one stays for the
/// crawlers still downloading it (a resumed download must find the same file).
fn remove_older(dir: &Path, newest: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut sequences: Vec<u64> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(snapshot::sequence_of))
        .filter(|s| *s < newest)
        .collect();
    sequences.sort_unstable();
    sequences.dedup();
    sequences.pop();
    for seq in sequences {
        let _ = std::fs::remove_file(dir.join(snapshot::index_name(seq)));
        let _ = std::fs::remove_file(dir.join(snapshot::file_name(seq)));
    }
}

/// The snapshot's record of the file at `rel`.
fn entry_of(base: &Url, rel: &str, sha256: &Sha256Digest, body: Vec<u8>) -> Entry {
    Entry {
        url: crate::urls::url_of(base, rel).to_string(),
        content_type: content_type::of_path(rel).to_string(),
        sha256: *sha256,
        body,
    }
}

/// A fresh `WARC-Record-ID`.
pub(crate) fn record_id() -> String {
    webcoop_protocol::warc::record::record_id(rand::random())
}
