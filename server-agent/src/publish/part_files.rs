//! The files of one document's parts ([`super::parting`]): a part is rendered again only when
//! its content changed since it was last rendered, and written only when the bytes differ from
//! the file in place, so a restart over an unchanged site writes none and keeps every part's
//! date.

use super::atomic::write_atomic;
use super::parting::Parting;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// What is known of a part's file.
#[derive(Debug, Clone, Copy)]
struct Written {
    /// The partition's stamp when it was last rendered.
    stamp: u64,
    version: u64,
    date: DateTime<Utc>,
}

/// A part as an index names it.
#[derive(Debug, Clone)]
pub(crate) struct PartRecord {
    /// The file's name, in the document's directory.
    pub(crate) name: String,
    /// XXH3 of the file's bytes.
    pub(crate) version: u64,
    /// When its content last changed.
    pub(crate) date: DateTime<Utc>,
    /// Entries in it.
    pub(crate) count: usize,
}

/// What a publication of the parts did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PartsReport {
    /// Parts rendered (their content may have changed).
    pub(crate) rendered: usize,
    /// Parts written (their bytes changed).
    pub(crate) written: usize,
    /// Bytes written.
    pub(crate) bytes: u64,
}

/// The part files of one document.
#[derive(Debug)]
pub(crate) struct PartFiles {
    dir: PathBuf,
    prefix: &'static str,
    suffix: &'static str,
    written: HashMap<u64, Written>,
    /// The dates the index in place gave each part by name (read at start), for the parts a
    /// restart finds unchanged.
    recalled: HashMap<String, DateTime<Utc>>,
    swept: bool,
    /// Whether the directory is the agent's own (else a file is removed only once its head
    /// shows it is ours).
    owned: bool,
}

impl PartFiles {
    /// Parts named `{prefix}{id in hex}{suffix}` in `dir`; `owned` when nothing but the agent
    /// writes there.
    pub(crate) fn new(
        dir: PathBuf,
        (prefix, suffix): (&'static str, &'static str),
        owned: bool,
    ) -> PartFiles {
        PartFiles {
            dir,
            prefix,
            suffix,
            written: HashMap::new(),
            recalled: HashMap::new(),
            swept: false,
            owned,
        }
    }

    /// The file name of part `id`.
    pub(crate) fn name(&self, id: u64) -> String {
        format!("{}{id:016x}{}", self.prefix, self.suffix)
    }

    /// The dates the index in place gives the parts, by file name.
    pub(crate) fn recall(&mut self, dates: HashMap<String, DateTime<Utc>>) {
        self.recalled = dates;
    }

    /// Forgets what was rendered: every part is rendered again (and written where it differs).
    pub(crate) fn reset(&mut self) {
        self.written.clear();
    }

    /// Renders the parts whose content changed with `render(first, end, file name, out)` and writes
    /// those whose bytes changed; removes the files of parts that are gone. Returns every
    /// part in order, as the index names them.
    pub(crate) fn publish(
        &mut self,
        parting: &Parting,
        now: DateTime<Utc>,
        mut render: impl FnMut(&str, Option<&str>, &str, &mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<(Vec<PartRecord>, PartsReport)> {
        let mut report = PartsReport::default();
        let mut records = Vec::with_capacity(parting.len());
        let mut buf = Vec::new();
        for (first, end, info) in parting.parts() {
            let name = self.name(info.id);
            let known = self.written.get(&info.id).copied();
            let w = match known {
                Some(w) if w.stamp >= info.changed => w,
                _ => {
                    buf.clear();
                    render(first, end, &name, &mut buf)?;
                    report.rendered += 1;
                    let version = xxhash_rust::xxh3::xxh3_64(&buf);
                    let path = self.dir.join(&name);
                    let date = match known {
                        Some(w) if w.version == version => w.date,
                        None if same_bytes(&path, &buf) => {
                            self.recalled.get(&name).copied().unwrap_or(now)
                        }
                        _ => {
                            write_atomic(&path, &buf)?;
                            report.written += 1;
                            report.bytes += buf.len() as u64;
                            now
                        }
                    };
                    Written {
                        stamp: parting.stamp(),
                        version,
                        date,
                    }
                }
            };
            self.written.insert(info.id, w);
            records.push(PartRecord {
                name,
                version: w.version,
                date: w.date,
                count: info.count,
            });
        }
        Ok((records, report))
    }

    /// Removes the files of parts no longer in the partition; the first time, any part file a
    /// previous run left. Called once the index no longer names them.
    pub(crate) fn remove_gone(&mut self, parting: &Parting) {
        let ids = parting.ids();
        let gone: Vec<u64> = self
            .written
            .keys()
            .filter(|id| !ids.contains(id))
            .copied()
            .collect();
        for id in gone {
            self.written.remove(&id);
            let _ = std::fs::remove_file(self.dir.join(self.name(id)));
        }
        if !std::mem::replace(&mut self.swept, true) {
            let keep: std::collections::HashSet<String> =
                ids.iter().map(|id| self.name(*id)).collect();
            self.remove_files_except(&keep);
        }
    }

    /// Removes every part file (the document fits in one file again).
    pub(crate) fn remove_all(&mut self) {
        self.written.clear();
        self.remove_files_except(&Default::default());
    }

    /// Removes this document's part files (names the agent gives them, old numbered ones
    /// included) other than `keep`.
    fn remove_files_except(&self, keep: &std::collections::HashSet<String>) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(middle) = name
                .strip_prefix(self.prefix)
                .and_then(|r| r.strip_suffix(self.suffix))
            else {
                continue;
            };
            let ours = (middle.len() == 16 && middle.bytes().all(|b| b.is_ascii_hexdigit()))
                || (!middle.is_empty() && middle.bytes().all(|b| b.is_ascii_digit()));
            if ours
                && !keep.contains(&name)
                && (self.owned || super::written_by_us(&entry.path()).ok().flatten() == Some(true))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

fn same_bytes(path: &Path, bytes: &[u8]) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64)
        && std::fs::read(path).is_ok_and(|b| b == bytes)
}
