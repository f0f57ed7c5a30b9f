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
    /// Whether the bytes up to the next newline belong to a line too long to keep (dropped,
    /// so that the end of an overlong line is never read as a line of its own).
    skipping: bool,
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
            skipping: false,
            junk: 0,
        }
    }

    /// The log's name, for messages.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Where the next reading starts: (inode, offset), to be kept across restarts.
    pub(crate) fn position(&self) -> (Option<u64>, u64) {
        (
            self.inode,
            self.offset.saturating_sub(self.partial.len() as u64),
        )
    }

    /// Continues from a position kept before (the same file, if its inode is still the log's;
    /// else the log was rotated and is read from its start).
    pub(crate) fn resume(&mut self, inode: Option<u64>, offset: u64) {
        self.start_over(inode);
        self.offset = offset;
    }

    /// The lines written since the last reading. A log rotated away (renamed to `NAME.1`, as
    /// logrotate and newsyslog do) is read to its end first, then the new file from its start.
    pub(crate) fn read_new(&mut self) -> std::io::Result<Vec<LogLine>> {
        use std::os::unix::fs::MetadataExt;
        let file = std::fs::File::open(&self.path)?;
        let meta = file.metadata()?;
        if self.inode != Some(meta.ino()) {
            if let Some(old) = self.inode
                && let Some((rotated, len)) = self.rotated(old)
                && len > self.offset
            {
                return self.read_from(rotated);
            }
            self.start_over(Some(meta.ino()));
        } else if meta.len() < self.offset {
            // Truncated: from its start.
            self.start_over(Some(meta.ino()));
        }
        self.read_from(file)
    }

    fn start_over(&mut self, inode: Option<u64>) {
        self.inode = inode;
        self.offset = 0;
        self.partial.clear();
        self.skipping = false;
    }

    /// The log rotated away, if `NAME.1` is still the file read so far.
    fn rotated(&self, inode: u64) -> Option<(std::fs::File, u64)> {
        use std::os::unix::fs::MetadataExt;
        let mut name = self.path.clone().into_os_string();
        name.push(".1");
        let file = std::fs::File::open(name).ok()?;
        let meta = file.metadata().ok()?;
        (meta.ino() == inode).then_some((file, meta.len()))
    }

    /// The complete lines of `file` from the offset on, a bounded amount at a time.
    fn read_from(&mut self, mut file: std::fs::File) -> std::io::Result<Vec<LogLine>> {
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        file.take(READ_BYTES).read_to_end(&mut chunk)?;
        self.offset += chunk.len() as u64;
        if self.skipping {
            match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    chunk.drain(..=i);
                    self.skipping = false;
                }
                None => return Ok(Vec::new()),
            }
        }
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
            self.skipping = true;
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
        let kept = log.position();
        std::io::Write::write_all(&mut f, &half.as_bytes()[20..]).unwrap();
        assert_eq!(targets(log.read_new().unwrap()), ["/c/"]);
        // A reader resumed at a kept position reads the half line again, whole.
        let mut again = AccessLog::new(path.clone());
        again.resume(kept.0, kept.1);
        assert_eq!(targets(again.read_new().unwrap()), ["/c/"]);
        // Rotated: the old file gets its last line before the server reopens its log, then
        // a new file under the name. Both are read, the old one's rest first.
        std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
        std::io::Write::write_all(&mut f, line("/late/").as_bytes()).unwrap();
        std::fs::write(&path, line("/d/")).unwrap();
        assert_eq!(targets(log.read_new().unwrap()), ["/late/"]);
        assert_eq!(targets(log.read_new().unwrap()), ["/d/"]);
        assert!(log.read_new().unwrap().is_empty());
        // Truncated in place (copytruncate), seen as shorter than what was read: from its start.
        std::fs::write(&path, line("/e")).unwrap();
        assert_eq!(targets(log.read_new().unwrap()), ["/e"]);
    }

    #[test]
    fn the_end_of_an_overlong_line_is_not_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let line = |p: &str| {
            format!(
                "127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] \"GET {p} HTTP/1.1\" 200 1 \"-\" \"x\"\n"
            )
        };
        // A 10 MB line whose last bytes, from a reading's boundary on, look like a line.
        let first = line("/a/");
        let filler = 2 * READ_BYTES as usize - first.len();
        let mut text = first.clone();
        text.push_str(&"x".repeat(filler));
        text.push_str(&line("/forged/"));
        text.push_str(&line("/b/"));
        std::fs::write(&path, &text).unwrap();
        let mut log = AccessLog::new(path);
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.extend(targets_of(log.read_new().unwrap()));
        }
        assert_eq!(seen, ["/a/", "/b/"]);
        assert!(log.junk >= 1);
    }

    fn targets_of(lines: Vec<LogLine>) -> Vec<String> {
        lines.into_iter().map(|l| l.target).collect()
    }
}
