//! Web servers' access logs, followed: read from where the last reading stopped, a rotated or
//! truncated log from its start, a bounded amount at a time, each line parsed strictly
//! ([`line`]); junk is counted and skipped.

pub(crate) mod line;

use line::{LogLine, MAX_LINE};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most bytes read from a log at one reading.
const READ_BYTES: u64 = 4 << 20;

/// One access log, followed.
pub(crate) struct AccessLog {
    path: PathBuf,
    offset: u64,
    inode: Option<u64>,
    /// The start of a line whose end is not written yet.
    partial: Vec<u8>,
    /// Lines skipped as junk, in all.
    pub(crate) junk: u64,
}

impl AccessLog {
    /// Follows the log at `path` from its start.
    pub(crate) fn new(path: PathBuf) -> AccessLog {
        AccessLog {
            path,
            offset: 0,
            inode: None,
            partial: Vec::new(),
            junk: 0,
        }
    }

    /// The log's name, for messages.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The lines written since the last reading.
    pub(crate) fn read_new(&mut self) -> std::io::Result<Vec<LogLine>> {
        use std::os::unix::fs::MetadataExt;
        let mut file = std::fs::File::open(&self.path)?;
        let meta = file.metadata()?;
        if self.inode != Some(meta.ino()) || meta.len() < self.offset {
            // Rotated or truncated: the new file from its start.
            self.inode = Some(meta.ino());
            self.offset = 0;
            self.partial.clear();
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        file.take(READ_BYTES).read_to_end(&mut chunk)?;
        self.offset += chunk.len() as u64;
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(&chunk);
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(i) => i + 1,
            None => 0,
        };
        let tail = bytes.split_off(complete);
        if tail.len() <= MAX_LINE {
            self.partial = tail;
        } else {
            self.junk += 1;
        }
        let mut lines = Vec::new();
        for raw in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match std::str::from_utf8(raw).ok().and_then(line::parse) {
                Some(l) => lines.push(l),
                None => self.junk += 1,
            }
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_followed_log_is_read_once_and_from_the_start_after_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let line = |p: &str| {
            format!(
                "127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] \"GET {p} HTTP/1.1\" 200 1 \"-\" \"x\"\n"
            )
        };
        let targets =
            |lines: Vec<LogLine>| -> Vec<String> { lines.into_iter().map(|l| l.target).collect() };
        std::fs::write(&path, format!("{}{}junk\n", line("/a/"), line("/b/"))).unwrap();
        let mut log = AccessLog::new(path.clone());
        assert_eq!(targets(log.read_new().unwrap()), ["/a/", "/b/"]);
        assert_eq!(log.junk, 1);
        // A line written in two halves is read once whole.
        let half = line("/c/");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, &half.as_bytes()[..20]).unwrap();
        assert!(log.read_new().unwrap().is_empty());
        std::io::Write::write_all(&mut f, &half.as_bytes()[20..]).unwrap();
        assert_eq!(targets(log.read_new().unwrap()), ["/c/"]);
        // Rotated: a new file under the name.
        std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
        std::fs::write(&path, line("/d/")).unwrap();
        assert_eq!(targets(log.read_new().unwrap()), ["/d/"]);
    }
}
