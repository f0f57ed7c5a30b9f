//! Writing published documents so readers only ever see a complete old or a complete new one:
//! write a temporary file in the same directory, then rename it over the document.
//!
//! A `kill -9` before the rename leaves the previous document in place and a stray temporary
//! file, which the next start removes. No fsync: the documents are derived from the state and
//! republished at every start, so only atomicity matters, not durability.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of temporary files (a dotfile: never served as content by the privacy rules).
pub(crate) const TEMP_PREFIX: &str = ".webcoop-tmp.";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A document being written; becomes visible on [`AtomicFile::commit`], vanishes if dropped.
pub(crate) struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `dest`, creating its directory if needed.
    pub(crate) fn create(dest: &Path) -> io::Result<AtomicFile> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        // Published documents are for everyone, whatever the umask (the unit's is 0077).
        webcoop_daemon::private::create_public_dir(dir)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            "{TEMP_PREFIX}{name}.{}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::create(&tmp)?;
        webcoop_daemon::private::make_public(&file)?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            writer: Some(BufWriter::with_capacity(256 << 10, file)),
        })
    }

    /// Flushes and renames over the destination; on failure (a full disk) the temporary file
    /// is removed and the previous document stays.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        let Some(writer) = self.writer.take() else {
            return Err(io::Error::other("document already committed"));
        };
        let done = writer
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|_| std::fs::rename(&self.tmp, &self.dest));
        if done.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        done
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.writer {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("document already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

// A ZIP package writes its central directory after seeking back over its entries' headers.
impl std::io::Seek for AtomicFile {
    fn seek(&mut self, pos: std::io::SeekFrom) -> io::Result<u64> {
        match &mut self.writer {
            Some(w) => w.seek(pos),
            None => Err(io::Error::other("document already committed")),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.writer = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl AtomicFile {
    /// Appends `len` bytes of `src` from `offset`, copied by the kernel (`copy_file_range`)
    /// where the filesystem allows, through a buffer otherwise.
    pub(crate) fn copy_range(&mut self, src: &File, offset: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileExt;
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| io::Error::other("document already committed"))?;
        writer.flush()?;
        let dst = writer.get_mut();
        let (mut off, end) = (offset as libc::loff_t, (offset + len) as libc::loff_t);
        while off < end {
            let want = (end - off).min(1 << 30) as usize;
            // SAFETY: both descriptors are open files owned by the caller and by us; the
            // kernel copies at most `want` bytes from `off` and advances it.
            let n = unsafe {
                libc::copy_file_range(
                    src.as_raw_fd(),
                    &mut off,
                    dst.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    0,
                )
            };
            if n > 0 {
                continue;
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the previous document is shorter than recorded",
                ));
            }
            let err = io::Error::last_os_error();
            if !matches!(
                err.raw_os_error(),
                Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP)
            ) {
                return Err(err);
            }
            // No kernel copy between these files: copy the rest through a buffer.
            let mut buf = vec![0u8; 256 << 10];
            while off < end {
                let take = ((end - off) as usize).min(buf.len());
                src.read_exact_at(&mut buf[..take], off as u64)?;
                dst.write_all(&buf[..take])?;
                off += take as libc::loff_t;
            }
        }
        Ok(())
    }
}

impl AtomicFile {
    /// What was written so far, to read back (a scratch file that is never committed).
    pub(crate) fn read_back(&mut self) -> io::Result<File> {
        if let Some(w) = self.writer.as_mut() {
            w.flush()?;
        }
        File::open(&self.tmp)
    }
}

/// Writes `bytes` to `dest` atomically.
pub(crate) fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Removes temporary files a killed run left in `dir`; returns how many.
pub(crate) fn clean_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(TEMP_PREFIX))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_see_old_or_new_never_half() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("doc.xml");
        write_atomic(&dest, b"old").unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"half of the new").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        drop(f); // abandoned: the old document stays, the temporary file goes
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write_atomic(&dest, b"new").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    }

    #[test]
    fn stale_temporary_files_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("{TEMP_PREFIX}robots.rdf.1.0")), "x").unwrap();
        std::fs::write(dir.path().join("keep.html"), "x").unwrap();
        assert_eq!(clean_stale(dir.path()), 1);
        assert!(dir.path().join("keep.html").exists());
    }
}
