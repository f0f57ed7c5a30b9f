//! Checkpoints of the write-ahead log, off the crawl loop's thread.

use super::schema::WAL_BOUND;
use super::{Store, StoreError};
use rusqlite::Connection;

/// Copies the write-ahead log into the database from a thread of its own, so the crawl loop
/// never waits for a checkpoint's writes and fsync; stops when dropped.
pub(crate) struct Checkpointer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Store {
    /// Hands checkpoints to a thread of its own (see [`Checkpointer`]); until it is dropped,
    /// this connection does none itself.
    pub(crate) fn checkpoint_in_background(&self) -> Result<Checkpointer, StoreError> {
        let e = |source| super::store_error(&self.path, source);
        let other = Connection::open(&self.path).map_err(e)?;
        other
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .map_err(e)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let path = self.path.clone();
        let thread = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || {
                let wal = path.with_extension("sqlite-wal");
                while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::park_timeout(std::time::Duration::from_millis(500));
                    // PASSIVE never waits, but under a steady stream of commits it never
                    // finishes either, and the log grows without end; past the bound, RESTART
                    // holds the writer briefly so the log starts over.
                    let big = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_BOUND);
                    let mode = if big { "RESTART" } else { "PASSIVE" };
                    if let Err(err) =
                        other.execute_batch(&format!("PRAGMA wal_checkpoint({mode});"))
                    {
                        tracing::warn!("checkpoint of {}: {err}", path.display());
                    }
                }
                let _ = other.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
            })
            .map_err(|err| {
                super::store_error(
                    &self.path,
                    rusqlite::Error::ToSqlConversionFailure(Box::new(err)),
                )
            })?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}
