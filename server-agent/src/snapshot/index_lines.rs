//! The snapshot's CDXJ index, written as its lines come rather than held: the files arrive in
//! path order, which is the index's order for nearly every line, so each line in order goes
//! straight to a sorted run on disk and only the few out of order (a path whose SURT key sorts
//! otherwise) are kept, sorted and merged in at the end. A million files held 400 MB of lines.

use crate::publish::atomic::AtomicFile;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use webcoop_protocol::warc::cdxj::Line;

/// The index being written.
pub(crate) struct IndexLines {
    run: AtomicFile,
    last: Option<String>,
    strays: Vec<String>,
}

impl IndexLines {
    /// An index to be written at `dest` by [`IndexLines::finish`].
    pub(crate) fn create(dest: &Path) -> io::Result<IndexLines> {
        let scratch = dest.with_extension("run");
        Ok(IndexLines {
            run: AtomicFile::create(&scratch)?,
            last: None,
            strays: Vec::new(),
        })
    }

    /// Adds one line.
    pub(crate) fn push(&mut self, line: &Line) -> io::Result<()> {
        let text = line.to_string();
        if self.last.as_ref().is_some_and(|last| text < *last) {
            self.strays.push(text);
            return Ok(());
        }
        writeln!(self.run, "{text}")?;
        self.last = Some(text);
        Ok(())
    }

    /// How many lines came out of order (kept in memory).
    pub(crate) fn strays(&self) -> usize {
        self.strays.len()
    }

    /// Writes the whole index, sorted, at `dest`; the run is removed.
    pub(crate) fn finish(mut self, dest: &Path) -> io::Result<()> {
        self.strays.sort();
        let run = BufReader::with_capacity(256 << 10, self.run.read_back()?);
        let mut out = AtomicFile::create(dest)?;
        let mut strays = self.strays.into_iter().peekable();
        for line in run.lines() {
            let line = line?;
            while let Some(s) = strays.next_if(|s| *s < line) {
                writeln!(out, "{s}")?;
            }
            writeln!(out, "{line}")?;
        }
        for s in strays {
            writeln!(out, "{s}")?;
        }
        out.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(url: &str) -> Line {
        Line::new(url, "2026-12-06T21:00:00Z", &[("url", url.to_string())])
    }

    #[test]
    fn lines_in_any_order_come_out_as_a_sort_would_write_them() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("index.cdxj");
        let urls: Vec<String> = (0..500)
            .map(|i| {
                // Mostly in order, with capitals and reversed runs out of it.
                let i = if i % 37 == 0 { 499 - i } else { i };
                let case = if i % 11 == 0 { "P" } else { "p" };
                format!("https://e.org/{case}{i:04}.html")
            })
            .collect();
        let mut index = IndexLines::create(&dest).unwrap();
        let mut expected: Vec<Line> = urls.iter().map(|u| line(u)).collect();
        for l in &expected {
            index.push(l).unwrap();
        }
        assert!(index.strays() > 0, "the twin: some lines came out of order");
        index.finish(&dest).unwrap();
        expected.sort();
        let want: String = expected.iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), want);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "the run is gone: {left:?}");
    }
}
