//! The crawler's current copy of every page: the content of its newest `response` record,
//! read back from the archive. What `webcoop-crawl copies` prints, and what tests and the
//! bench compare with the true site.

use crate::archive::warc;
use crate::state::{Store, StoreError};
use std::path::Path;
use webcoop_protocol::validator::Sha256Digest;

/// What the crawler holds of one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyState {
    /// A copy, with the SHA-256 entity tag of its content.
    Copy {
        /// The validator of the content.
        validator: String,
        /// When it was last confirmed current (ms).
        checked_at: i64,
    },
    /// The page is gone: deleted by the site (announced or answered 404/410).
    Gone,
    /// No copy: never fetched successfully (the reason or status).
    Missing(String),
}

/// One URL and what is held of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCopy {
    /// The URL.
    pub url: String,
    /// What is held.
    pub held: CopyState,
}

/// Every URL of the crawl with what is held of it, in URL order.
pub fn list(dir: &Path) -> Result<Vec<PageCopy>, StoreError> {
    let store = Store::open_read_only(dir)?;
    let rows = store.copies()?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let held = match (r.status, r.validator) {
                (Some(200..=299 | 304), Some(v)) => CopyState::Copy {
                    validator: v,
                    checked_at: r.fetched_at,
                },
                (Some(404 | 410), _) => CopyState::Gone,
                (None, _) if r.gone => CopyState::Gone,
                (Some(s), _) => CopyState::Missing(format!("status {s}")),
                (None, _) => CopyState::Missing(r.error.unwrap_or_else(|| "not fetched".into())),
            };
            PageCopy { url: r.url, held }
        })
        .collect())
}

/// Why the copy held of a page cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The crawl state cannot be read.
    #[error(transparent)]
    State(#[from] crate::state::StoreError),
    /// The WARC file cannot be read.
    #[error("{}: {source}", path.display())]
    Archive {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The record is not the content the state says is held.
    #[error("{url}: the record in {file} at {offset} does not match its validator")]
    Mismatch {
        /// The page.
        url: String,
        /// The WARC file.
        file: String,
        /// The record's offset.
        offset: u64,
    },
    /// No whole response where the state points.
    #[error("{url}: no whole response in {file} at {offset}")]
    Torn {
        /// The page.
        url: String,
        /// The WARC file.
        file: String,
        /// The record's offset.
        offset: u64,
    },
}

/// The content of the copy held of `url`, read back from the archive and checked against
/// its validator.
pub fn content(dir: &Path, url: &str) -> Result<Option<Vec<u8>>, CopyError> {
    let store = Store::open_read_only(dir)?;
    let Some((file, offset, validator)) = store.content_of(url)? else {
        return Ok(None);
    };
    let path = dir.join("warc").join(&file);
    let body = warc::content_at(&path, offset, usize::MAX)
        .map_err(|source| CopyError::Archive { path, source })?;
    let url = url.to_string();
    match body {
        Some(b) if Sha256Digest::of(&b).etag().to_string() == validator => Ok(Some(b)),
        Some(_) => Err(CopyError::Mismatch { url, file, offset }),
        None => Err(CopyError::Torn { url, file, offset }),
    }
}
