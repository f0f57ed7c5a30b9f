//! State only the binary's own user may read. The agent's state holds every subscriber's
//! secret (with it, anyone could forge signed deliveries) and kept copies of files only root
//! could read; the crawler's holds its subscription secrets. Directories are made 0700 and
//! files 0600 whatever the umask, and a state directory others can read is named at start.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Makes every file and directory this process creates from now on private to its user
/// (what systemd's `UMask=0077` does for the service); what must be public is opened up
/// explicitly.
pub fn private_umask() {
    // SAFETY: umask only sets the process's file creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Creates `dir` and the parents it lacks with mode 0700 (an existing directory is left as
/// it is: [`open_to_others`] says whether others can read it).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The permission bits of `dir` when users other than its owner may read or enter it.
pub fn open_to_others(dir: &Path) -> Option<u32> {
    let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// The files SQLite keeps beside a database.
fn companions(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| {
            let mut p = db.as_os_str().to_owned();
            p.push(s);
            PathBuf::from(p)
        })
        .collect()
}

/// Makes a SQLite database private before it is opened: created empty with mode 0600 when
/// absent (SQLite gives its journals the database's mode), tightened to 0600 with its
/// journals when an older version left it readable.
pub fn private_database(db: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(db)?;
    for p in std::iter::once(db.to_path_buf()).chain(companions(db)) {
        match std::fs::metadata(&p) {
            Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Gives a file meant for everyone (a published document) mode 0644, whatever the umask.
pub fn make_public(file: &std::fs::File) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

/// Creates `dir` and the parents it lacks with mode 0755 whatever the umask (directories of
/// published documents, which the web server must enter).
pub fn create_public_dir(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut d = dir;
    // A relative path ends in the empty path, the working directory, which exists.
    while !d.as_os_str().is_empty() && !d.exists() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    for m in missing.iter().rev() {
        match std::fs::create_dir(m) {
            Ok(()) => std::fs::set_permissions(m, std::fs::Permissions::from_mode(0o755))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn state_is_private_and_documents_public_whatever_the_umask() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let state = tmp.path().join("a/state");
        create_private_dir(&state).unwrap();
        assert_eq!(mode(&state), 0o700);
        assert_eq!(open_to_others(&state), None);
        assert_eq!(open_to_others(tmp.path()), Some(0o755));
        // An older state left open: the database and its journals are tightened.
        let db = state.join("x.sqlite");
        for p in std::iter::once(db.clone()).chain(companions(&db)) {
            std::fs::write(&p, b"").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        private_database(&db).unwrap();
        for p in std::iter::once(db.clone()).chain(companions(&db)) {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
        let fresh = state.join("new.sqlite");
        private_database(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o600);
        // Published: 0755 directories and 0644 files under a strict umask.
        let old = unsafe { libc::umask(0o077) };
        let docs = tmp.path().join("www/.well-known/webcoop");
        create_public_dir(&docs).unwrap();
        let f = std::fs::File::create(docs.join("changes.atom")).unwrap();
        make_public(&f).unwrap();
        unsafe { libc::umask(old) };
        assert_eq!(mode(&docs), 0o755);
        assert_eq!(mode(&tmp.path().join("www/.well-known")), 0o755);
        assert_eq!(mode(&docs.join("changes.atom")), 0o644);
    }
}
