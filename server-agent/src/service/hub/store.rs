//! Subscriptions on disk (`STATE/hub.sqlite`), so they survive a restart: callback, secret,
//! lease, the cursor (last sequence number delivered) and the content coding the callback
//! accepts for deliveries.

use super::document::Format;
use crate::store::{from_ms, to_ms};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use std::path::{Path, PathBuf};
use url::Url;
use webcoop_protocol::websub::BodyCoding;

/// One verified subscription.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subscription {
    /// Where deliveries go.
    pub(crate) callback: Url,
    /// The HMAC key of `X-Hub-Signature`.
    pub(crate) secret: Option<String>,
    /// When the lease ends.
    pub(crate) lease_expires: DateTime<Utc>,
    /// The last sequence number delivered.
    pub(crate) cursor: u64,
    /// Since when deliveries have been failing.
    pub(crate) failing_since: Option<DateTime<Utc>>,
    /// How deliveries are compressed (RFC 7694), if the callback asked.
    pub(crate) coding: Option<BodyCoding>,
    /// What deliveries are sent as (CBOR if the callback asked; ResourceSync for its topic).
    pub(crate) format: Format,
}

/// The subscriptions database.
pub(crate) struct SubscriptionStore {
    conn: Connection,
    path: PathBuf,
}

/// A failure of the subscriptions database.
#[derive(Debug, thiserror::Error)]
#[error("subscriptions database {path}: {source}")]
pub struct HubStoreError {
    path: PathBuf,
    source: rusqlite::Error,
}

impl SubscriptionStore {
    /// Opens (or creates) `dir/hub.sqlite`.
    pub(crate) fn open(dir: &Path) -> Result<Self, HubStoreError> {
        let path = dir.join("hub.sqlite");
        let e = |source| HubStoreError {
            path: path.clone(),
            source,
        };
        // It holds every subscriber's secret: with it anyone could sign deliveries.
        if let Err(err) = webcoop_daemon::private::private_database(&path) {
            tracing::warn!(
                "{}: cannot make it private to this user: {err}",
                path.display()
            );
        }
        let conn = Connection::open(&path).map_err(e)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS subscriptions (
                 callback TEXT PRIMARY KEY,
                 secret TEXT,
                 lease_expires INTEGER NOT NULL,
                 cursor INTEGER NOT NULL,
                 failing_since INTEGER
             ) WITHOUT ROWID;",
        )
        .map_err(e)?;
        // Databases written before deliveries were compressed lack the column.
        let has_coding = conn
            .prepare("SELECT 1 FROM pragma_table_info('subscriptions') WHERE name = 'coding'")
            .and_then(|mut s| s.exists([]))
            .map_err(e)?;
        if !has_coding {
            conn.execute_batch("ALTER TABLE subscriptions ADD COLUMN coding TEXT")
                .map_err(e)?;
        }
        // Nor, before CBOR deliveries, the format.
        let has_format = conn
            .prepare("SELECT 1 FROM pragma_table_info('subscriptions') WHERE name = 'format'")
            .and_then(|mut s| s.exists([]))
            .map_err(e)?;
        if !has_format {
            conn.execute_batch("ALTER TABLE subscriptions ADD COLUMN format TEXT")
                .map_err(e)?;
        }
        Ok(SubscriptionStore { conn, path })
    }

    fn err(&self, source: rusqlite::Error) -> HubStoreError {
        HubStoreError {
            path: self.path.clone(),
            source,
        }
    }

    /// Every subscription.
    pub(crate) fn load(&self) -> Result<Vec<Subscription>, HubStoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT callback, secret, lease_expires, cursor, failing_since, coding, format FROM subscriptions",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (callback, secret, lease, cursor, failing, coding, format) =
                row.map_err(|e| self.err(e))?;
            if let Ok(callback) = Url::parse(&callback) {
                out.push(Subscription {
                    callback,
                    secret,
                    lease_expires: from_ms(lease),
                    cursor: cursor.max(0) as u64,
                    failing_since: failing.map(from_ms),
                    coding: coding.as_deref().and_then(BodyCoding::parse),
                    format: Format::from_stored(format.as_deref()),
                });
            }
        }
        Ok(out)
    }

    /// Saves subscriptions (new, renewed, or with a new cursor) and removes others, in one
    /// transaction.
    pub(crate) fn save(
        &mut self,
        upserts: &[Subscription],
        removals: &[Url],
    ) -> Result<(), HubStoreError> {
        let path = self.path.clone();
        let e = |source| HubStoreError {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO subscriptions (callback, secret, lease_expires, cursor, failing_since, coding, format) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (callback) DO UPDATE SET secret = excluded.secret, lease_expires = excluded.lease_expires,
                       cursor = excluded.cursor, failing_since = excluded.failing_since, coding = excluded.coding,
                       format = excluded.format",
                )
                .map_err(e)?;
            for s in upserts {
                put.execute(params![
                    s.callback.as_str(),
                    s.secret,
                    to_ms(s.lease_expires),
                    s.cursor as i64,
                    s.failing_since.map(to_ms),
                    s.coding.map(BodyCoding::token),
                    s.format.stored()
                ])
                .map_err(e)?;
            }
            let mut delete = tx
                .prepare_cached("DELETE FROM subscriptions WHERE callback = ?1")
                .map_err(e)?;
            for c in removals {
                delete.execute([c.as_str()]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn subscriptions_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let sub = Subscription {
            callback: Url::parse("https://c.example/cb?x=1").unwrap(),
            secret: Some("s".into()),
            lease_expires: Utc.timestamp_opt(2_000_000_000, 0).unwrap(),
            cursor: 42,
            failing_since: None,
            coding: Some(BodyCoding::Zstd),
            format: Format::Cbor,
        };
        let mut store = SubscriptionStore::open(dir.path()).unwrap();
        store.save(std::slice::from_ref(&sub), &[]).unwrap();
        drop(store);
        let mut store = SubscriptionStore::open(dir.path()).unwrap();
        assert_eq!(store.load().unwrap(), std::slice::from_ref(&sub));
        store
            .save(&[], std::slice::from_ref(&sub.callback))
            .unwrap();
        assert!(store.load().unwrap().is_empty());
    }

    #[test]
    fn a_database_from_before_compressed_deliveries_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let old = Connection::open(dir.path().join("hub.sqlite")).unwrap();
        old.execute_batch(
            "CREATE TABLE subscriptions (callback TEXT PRIMARY KEY, secret TEXT,
               lease_expires INTEGER NOT NULL, cursor INTEGER NOT NULL, failing_since INTEGER
             ) WITHOUT ROWID;
             INSERT INTO subscriptions VALUES ('https://c.example/cb', NULL, 2000000000000, 7, NULL);",
        )
        .unwrap();
        drop(old);
        let store = SubscriptionStore::open(dir.path()).unwrap();
        let subs = store.load().unwrap();
        assert_eq!(subs.len(), 1);
        assert_eq!(
            (subs[0].cursor, subs[0].coding, subs[0].format),
            (7, None, Format::Atom)
        );
    }
}
