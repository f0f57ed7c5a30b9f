//! The archive's files: records appended in runs, rotated by size, `warcinfo` first.

use super::record::*;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a record landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    /// The file's name (in the WARC directory), shared by every record of the file.
    pub(crate) file: Arc<str>,
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
    pub(super) serial: u32,
    current: Option<(File, Arc<str>, u64)>,
    /// Records appended to the current file and not written yet; its length counts them.
    unwritten: Vec<u8>,
    /// Files finished since the last sync, with their final length.
    closed: Vec<(String, u64)>,
}

/// Records are written to the file in runs of at most this many bytes, not one call each: a
/// write per record was 2% of a crawl's CPU. The caller writes what it appended once it has
/// handled all that arrived together ([`WarcWriter::write_appended`]), so that after
/// `kill -9` only what was under way is fetched again; what the state points to is always
/// written and synced first ([`WarcWriter::sync`]).
pub(super) const WRITE_RUN: usize = 256 << 10;

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
            closed: Vec::new(),
        })
    }

    /// Continues appending to `file`, cut to `length`: whatever lay past it was replayed by
    /// the caller or is dropped here.
    pub(crate) fn resume(&mut self, file: &str, length: u64) -> io::Result<()> {
        self.unwritten.clear();
        let path = self.dir.join(file);
        let mut f = OpenOptions::new().write(true).open(&path)?;
        f.set_len(length)?;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(length))?;
        f.sync_data()?;
        self.current = Some((f, Arc::from(file), length));
        Ok(())
    }

    fn open_next(&mut self) -> io::Result<()> {
        self.write_appended()?;
        if let Some((f, name, len)) = self.current.take() {
            f.sync_data()?;
            self.closed.push((name.to_string(), len));
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
        self.current = Some((f, Arc::from(name), info.bytes.len() as u64));
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
            self.write_appended()?;
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
        }
        Ok(pos)
    }

    /// Whether records appended are not written yet.
    #[cfg(test)]
    pub(crate) fn has_unwritten(&self) -> bool {
        !self.unwritten.is_empty()
    }

    /// Writes the records appended since the last write to the file (one call; not synced).
    pub(crate) fn write_appended(&mut self) -> io::Result<()> {
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
        result
    }

    /// Makes everything written durable; returns each file written since the last sync with
    /// its length (what the state commits).
    pub(crate) fn sync(&mut self) -> io::Result<Vec<(String, u64)>> {
        self.write_appended()?;
        let mut out = std::mem::take(&mut self.closed);
        if let Some((f, name, len)) = &mut self.current {
            f.sync_data()?;
            out.push((name.to_string(), *len));
        }
        Ok(out)
    }

    /// The directory written to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}
