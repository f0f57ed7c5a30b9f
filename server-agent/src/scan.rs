//! Walking the docroot and reading files: which public files exist, and what their content is.

use crate::activity::Exclusions;
use crate::privacy::PublicFilter;
use std::cell::RefCell;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use webcoop_protocol::delta::MAX_VERSION_BYTES;
use webcoop_protocol::validator::{Sha256Digest, Sha256Stream};

/// Size, modification and status change times: what the quick "unchanged" check compares.
/// The status change time moves with permissions, owner and links, which decide whether the
/// web server can serve the file at all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    /// Bytes.
    pub(crate) size: u64,
    /// Nanoseconds since the epoch.
    pub(crate) mtime_ns: i64,
    /// Nanoseconds since the epoch.
    pub(crate) ctime_ns: i64,
    /// Hard links to the file (not compared: a change of links moves the status change time).
    pub(crate) links: u64,
}

impl PartialEq for Stat {
    fn eq(&self, other: &Stat) -> bool {
        (self.size, self.mtime_ns, self.ctime_ns) == (other.size, other.mtime_ns, other.ctime_ns)
    }
}

impl Eq for Stat {}

impl Stat {
    /// From file metadata.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stat {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Stat {
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            links: meta.nlink(),
        }
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Public files, with their stat, in no particular order.
    pub(crate) files: Vec<(String, Stat)>,
    /// Files and directories left out by the privacy rules.
    pub(crate) excluded: usize,
    /// Things that could not be read, in words for the log.
    pub(crate) problems: Vec<String>,
}

/// The docroot-relative, `/`-separated form of `path`, if it is valid UTF-8 and inside `root`.
pub(crate) fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let s = rel.to_str()?;
    Some(s.to_string())
}

/// Whether a symlink's target lies inside the docroot.
fn stays_inside(root: &Path, path: &Path) -> bool {
    path.canonicalize()
        .is_ok_and(|target| target.starts_with(root))
}

/// One thing a walk found.
#[derive(Debug)]
pub(crate) enum Found {
    /// A public file.
    File(String, Stat),
    /// Something that could not be read, in words for the log.
    Problem(String),
}

/// Walks `root/sub` lazily, following symlinks only where they stay inside the docroot and
/// never entering directories the privacy rules refuse. Owns what it needs, so the caller can
/// act on each file (and change its own state) as the walk goes.
pub(crate) struct Walker {
    inner: Box<dyn Iterator<Item = walkdir::Result<walkdir::DirEntry>>>,
    root: PathBuf,
    filter: Arc<PublicFilter>,
    excluded: Rc<RefCell<Exclusions>>,
}

impl Walker {
    /// A walk of `root/sub` (`sub` = `""` for everything).
    pub(crate) fn new(root: &Path, sub: &str, filter: Arc<PublicFilter>) -> Walker {
        let start: PathBuf = if sub.is_empty() {
            root.to_path_buf()
        } else {
            root.join(sub)
        };
        let excluded = Rc::new(RefCell::new(Exclusions::default()));
        let (root_c, filter_c, excluded_c, whole) = (
            root.to_path_buf(),
            filter.clone(),
            excluded.clone(),
            sub.is_empty(),
        );
        let inner = walkdir::WalkDir::new(start)
            .follow_links(true)
            .into_iter()
            .filter_entry(move |entry| {
                if entry.depth() == 0 && whole {
                    return true;
                }
                let refusal = match relative(&root_c, entry.path()) {
                    None => Some((
                        entry.path().display().to_string(),
                        "not a UTF-8 name inside the docroot".to_string(),
                    )),
                    Some(rel)
                        if entry.path_is_symlink() && !stays_inside(&root_c, entry.path()) =>
                    {
                        Some((rel, "symlink out of the docroot".to_string()))
                    }
                    Some(rel) if entry.file_type().is_dir() => match filter_c.check_dir(&rel) {
                        Err(why) => Some((format!("{rel}/"), why.to_string())),
                        Ok(()) => None,
                    },
                    Some(_) => None,
                };
                if let Some((rel, why)) = &refusal {
                    excluded_c.borrow_mut().add(rel, why);
                }
                refusal.is_none()
            });
        Walker {
            inner: Box::new(inner),
            root: root.to_path_buf(),
            filter,
            excluded,
        }
    }

    /// Files and directories left out so far.
    pub(crate) fn excluded(&self) -> usize {
        self.excluded.borrow().total
    }

    /// What was left out so far, and why.
    pub(crate) fn exclusions(&self) -> Exclusions {
        self.excluded.borrow().clone()
    }
}

impl Iterator for Walker {
    type Item = Found;

    fn next(&mut self) -> Option<Found> {
        loop {
            let entry = match self.inner.next()? {
                Ok(e) => e,
                Err(e) => return Some(Found::Problem(e.to_string())),
            };
            if !entry.file_type().is_file() {
                continue;
            }
            let Some(rel) = relative(&self.root, entry.path()) else {
                return Some(Found::Problem(format!(
                    "{}: file name is not UTF-8, not published",
                    entry.path().display()
                )));
            };
            if let Err(why) = self.filter.check_file(&rel) {
                self.excluded.borrow_mut().add(&rel, &why.to_string());
                continue;
            }
            return Some(match entry.metadata() {
                Ok(meta) => Found::File(rel, Stat::of(&meta)),
                Err(e) => Found::Problem(format!("{rel}: {e}")),
            });
        }
    }
}

/// Walks `root/sub` into memory (for tests and small walks).
pub(crate) fn walk(root: &Path, sub: &str, filter: Arc<PublicFilter>) -> Walk {
    let mut walker = Walker::new(root, sub, filter);
    let mut out = Walk::default();
    for found in walker.by_ref() {
        match found {
            Found::File(rel, stat) => out.files.push((rel, stat)),
            Found::Problem(p) => out.problems.push(p),
        }
    }
    out.excluded = walker.excluded();
    out
}

/// A file's content as read.
#[derive(Debug)]
pub(crate) struct Content {
    /// The stat after reading.
    pub(crate) stat: Stat,
    /// The bytes, when small enough to version (at most 64 MiB).
    pub(crate) bytes: Option<Vec<u8>>,
    /// SHA-256.
    pub(crate) sha256: Sha256Digest,
    /// XXH3-64.
    pub(crate) fast: u64,
}

/// Why a file could not be read as a stable version.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// It is gone.
    Gone,
    /// What the path names now is not a regular file inside the docroot (a symlink swapped in,
    /// a FIFO, a device, a socket): never read, never published.
    NotPublic(String),
    /// It changed while being read (still being written): try again later.
    Unstable,
    /// Another error.
    Io(std::io::Error),
}

/// Opens `root/rel` for reading only if it is a regular file inside `root` (canonical). The
/// path is first opened with `O_PATH`, which reads nothing and has no side effect even on a
/// FIFO or a device; that descriptor is checked (a regular file, resolving inside the
/// docroot), and only then is the very same inode opened for reading through it. A symlink
/// swapped in between a check and the read cannot redirect it, and a FIFO, device or socket
/// planted under a public name is never opened for I/O.
pub(crate) fn open_confined(
    root: &Path,
    rel: &str,
) -> Result<(std::fs::File, std::fs::Metadata), ReadError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(root.join(rel))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::Gone,
            _ => ReadError::Io(e),
        })?;
    let meta = handle.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotPublic(format!(
            "{rel}: not a regular file, not read"
        )));
    }
    let fd_path = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let real = std::fs::read_link(&fd_path).map_err(ReadError::Io)?;
    if !real.starts_with(root) {
        return Err(ReadError::NotPublic(format!(
            "{rel}: resolves to {} outside the docroot, not read",
            real.display()
        )));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&fd_path)
        .map_err(ReadError::Io)?;
    Ok((file, meta))
}

/// Reads `root/rel` (see [`open_confined`]) and digests it; fails with
/// [`ReadError::Unstable`] when its size or modification time changed during the read, so a
/// file still being written is not published.
pub(crate) fn read(root: &Path, rel: &str) -> Result<Content, ReadError> {
    let (mut file, meta) = open_confined(root, rel)?;
    let before = Stat::of(&meta);
    let (bytes, sha256, fast) = if before.size <= MAX_VERSION_BYTES as u64 {
        let mut bytes = Vec::with_capacity(before.size as usize);
        file.read_to_end(&mut bytes).map_err(ReadError::Io)?;
        let sha = Sha256Digest::of(&bytes);
        let fast = xxhash_rust::xxh3::xxh3_64(&bytes);
        (Some(bytes), sha, fast)
    } else {
        let mut sha = Sha256Stream::default();
        let mut fast = xxhash_rust::xxh3::Xxh3Default::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(ReadError::Io)?;
            if n == 0 {
                break;
            }
            sha.update(&buf[..n]);
            fast.update(&buf[..n]);
        }
        (None, sha.finish(), fast.digest())
    };
    // The path must still name the file read: a rename or a swap during the read is a change.
    let named = std::fs::metadata(root.join(rel)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Gone,
        _ => ReadError::Io(e),
    })?;
    if (named.dev(), named.ino()) != (meta.dev(), meta.ino()) {
        return Err(ReadError::Unstable);
    }
    let after = Stat::of(&named);
    let read_len = bytes.as_ref().map_or(after.size, |b| b.len() as u64);
    if after != before || read_len != after.size {
        return Err(ReadError::Unstable);
    }
    Ok(Content {
        stat: after,
        bytes,
        sha256,
        fast,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_skips_private_things_and_symlinks_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs/.git")).unwrap();
        std::fs::write(root.join("index.html"), "hi").unwrap();
        std::fs::write(root.join("docs/a.html"), "a").unwrap();
        std::fs::write(root.join("docs/.git/HEAD"), "ref").unwrap();
        std::fs::write(root.join(".htpasswd"), "user:hash").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        std::os::unix::fs::symlink(root.join("docs/a.html"), root.join("alias.html")).unwrap();
        let filter = Arc::new(PublicFilter::new(&[], &[], None, Some("")).unwrap());
        let w = walk(&root, "", filter.clone());
        let mut files: Vec<&str> = w.files.iter().map(|(p, _)| p.as_str()).collect();
        files.sort();
        assert_eq!(files, ["alias.html", "docs/a.html", "index.html"]);
        assert!(w.excluded >= 3, "{}", w.excluded);
        let sub = walk(&root, "docs", filter);
        assert_eq!(
            sub.files
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>(),
            ["docs/a.html"]
        );
    }

    #[test]
    fn read_digests_and_reports_missing_files() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, "content").unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let c = read(&root, "f").unwrap();
        assert_eq!(c.sha256, Sha256Digest::of(b"content"));
        assert_eq!(c.bytes.as_deref(), Some(&b"content"[..]));
        assert!(matches!(read(&root, "nope"), Err(ReadError::Gone)));
    }

    #[test]
    fn only_regular_files_inside_the_docroot_are_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "password").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("shared")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("s.html")).unwrap();
        for rel in ["shared/secret", "s.html"] {
            assert!(
                matches!(read(&root, rel), Err(ReadError::NotPublic(ref m)) if m.contains("outside")),
                "{rel}"
            );
        }
        let fifo = std::ffi::CString::new(root.join("pipe.html").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        // Opening a FIFO for reading would block until a writer came; it must not.
        assert!(matches!(
            read(&root, "pipe.html"),
            Err(ReadError::NotPublic(ref m)) if m.contains("regular")
        ));
    }
}
