//! The service's read access to the agent's state: its own read-only SQLite connection, used
//! on blocking threads so no request ever waits on the watch loop or holds up the runtime.

use crate::store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why a request could not be answered from the state.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blocking task did not finish.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Shared read access to the agent's state and docroot.
#[derive(Clone)]
pub(crate) struct Reader {
    store: Arc<Mutex<Store>>,
    docroot: Arc<PathBuf>,
}

impl Reader {
    /// Opens the agent's database in `state` read-only.
    pub(crate) fn open(state: &Path, docroot: &Path) -> Result<Reader, StoreError> {
        Ok(Reader {
            store: Arc::new(Mutex::new(Store::open_read_only(state)?)),
            docroot: Arc::new(docroot.to_path_buf()),
        })
    }

    /// The docroot.
    pub(crate) fn docroot(&self) -> &Path {
        &self.docroot
    }

    /// Runs `f` against the state on the current (blocking) thread.
    pub(crate) fn blocking<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let guard = self.store.lock().unwrap_or_else(|e| e.into_inner());
        f(&guard)
    }

    /// Runs `f` against the state on a blocking thread.
    pub(crate) async fn with<T, F>(&self, f: F) -> Result<T, ReadError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            let guard = store.lock().unwrap_or_else(|e| e.into_inner());
            f(&guard)
        })
        .await
        .map_err(|e| ReadError::Internal(e.to_string()))?
        .map_err(ReadError::Store)
    }
}
