//! The crawl directory as a whole: its lock (one crawl writes one state), and the keys of what
//! a crawl records about itself in the `meta` table that more than one folder reads.

use super::{Store, StoreError};
use std::fs::File;
use std::path::{Path, PathBuf};
use url::Url;

/// The key under which a crawl records its cooperation settings (JSON), so `status` and the
/// console judge each site's level and trust by the settings of the crawl that wrote it.
pub const COOP_CONFIG_META: &str = "coop_config";

/// The key of the crawl's seeds, every run's, one URL a line.
const SEEDS_META: &str = "seeds";

/// The key of the state of a `--refresh` pass: `open` while it runs, `done` after.
const REFRESH_PASS_META: &str = "refresh_pass";

/// Why the crawl directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// Another crawl holds it.
    #[error("{0} is in use by another webcoop-crawl process")]
    Locked(PathBuf),
    /// A file of it could not be made or opened.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// Takes the crawl directory's lock, so two crawls never write one state; creates the
/// directory private to this user (it holds the crawler's subscription secrets), and names
/// an existing one others can read.
pub(crate) fn lock(out: &Path) -> Result<File, LockError> {
    let file_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LockError::File { path, source }
    };
    webcoop_daemon::private::create_private_dir(out).map_err(file_error(out))?;
    if let Some(mode) = webcoop_daemon::private::open_to_others(out) {
        tracing::warn!(
            "crawl directory {} can be read by other users (mode {mode:o}): it holds the crawler's hub subscription secrets; chmod 700 it",
            out.display()
        );
    }
    let path = out.join("lock");
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(file_error(&path))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Locked(out.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(file_error(&path)(e)),
    }
}

/// Whether a crawl holds the directory now.
pub fn is_running(out: &Path) -> bool {
    match File::open(out.join("lock")) {
        Ok(f) => matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

impl Store {
    /// The seeds of every run, in the order first given.
    pub(crate) fn seeds(&self) -> Result<Vec<Url>, StoreError> {
        Ok(self
            .meta(SEEDS_META)?
            .unwrap_or_default()
            .lines()
            .filter_map(|l| Url::parse(l).ok())
            .collect())
    }

    /// Adds `more` to the seeds kept (those already there stay where they are); returns all.
    pub(crate) fn add_seeds(&self, more: &[Url]) -> Result<Vec<Url>, StoreError> {
        let mut all = self.seeds()?;
        for u in more {
            if !all.contains(u) {
                all.push(u.clone());
            }
        }
        let list: Vec<&str> = all.iter().map(Url::as_str).collect();
        self.set_meta(SEEDS_META, &list.join("\n"))?;
        Ok(all)
    }

    /// Whether a `--refresh` pass is under way (begun and not finished).
    pub(crate) fn refresh_pass_open(&self) -> Result<bool, StoreError> {
        Ok(self.meta(REFRESH_PASS_META)?.as_deref() == Some("open"))
    }

    /// Records that a `--refresh` pass began (`true`) or finished (`false`).
    pub(crate) fn set_refresh_pass_open(&self, open: bool) -> Result<(), StoreError> {
        self.set_meta(REFRESH_PASS_META, if open { "open" } else { "done" })
    }
}
