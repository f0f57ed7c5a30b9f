//! The two numbers the crawl is keyed by, told apart by type: a host's id in the crawl state
//! and a URL's fingerprint. Both are stored as SQLite integers (a fingerprint's 64 bits as a
//! signed integer, as it always was).

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// A newtype over an integer key, with what keys need (hashing, order, a transparent serde
/// form).
macro_rules! key {
    ($(#[$doc:meta])* $name:ident($int:ty)) => {
        $(#[$doc])*
        #[derive(
            Debug,
            Clone,
            Copy,
            Default,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $int);
    };
}

key! {
    /// A host's row id in the crawl state (`hosts.id`).
    HostId(i64)
}

key! {
    /// A URL's 64-bit fingerprint (xxh3 of its normalised form): the key of the seen-set,
    /// the queue's rows, the pages and the schedule.
    Fp(u64)
}

impl std::fmt::Display for HostId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Fp {
    /// The fingerprint's first 32 bits: a range of the pages' fingerprint index.
    pub(crate) fn prefix(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

impl std::fmt::Display for Fp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl ToSql for HostId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

impl FromSql for HostId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        i64::column_result(value).map(HostId)
    }
}

impl ToSql for Fp {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0 as i64))
    }
}

impl FromSql for Fp {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        i64::column_result(value).map(|v| Fp(v as u64))
    }
}
