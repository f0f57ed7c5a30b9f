//! What the frontier needs of the crawl state, and no more: the narrow interface a database
//! implements to hold a crawl's queue (SQLite in one process; a shared engine for a fleet).
//! The frontier borrows it for each call that reads; the engine owns it and writes batches.

use crate::ids::Fp;
use crate::ids::HostId;
use crate::state::{HostRecord, Queued, Store, StoreError};
use std::collections::{HashMap, HashSet};

/// The saved queue, seen-set and hosts, as the frontier reads them.
pub(crate) trait QueueStore {
    /// What a read can fail with.
    type Error;
    /// The saved OPIC cash totals (JSON), if a batch saved them.
    fn cash_totals(&self) -> Result<Option<String>, Self::Error>;
    /// Adds the fingerprint of every URL queued or visited to `into`, each with its cash key:
    /// `fetched` for visited pages, the saved priority for queued ones.
    fn load_seen(&self, into: &mut HashMap<Fp, f64>, fetched: f64) -> Result<(), Self::Error>;
    /// How many URLs each host has queued.
    fn queued_per_host(&self) -> Result<Vec<(HostId, u64)>, Self::Error>;
    /// The highest queue row in use (new rows are numbered after it).
    fn max_queue_seq(&self) -> Result<i64, Self::Error>;
    /// Every host.
    fn hosts(&self) -> Result<Vec<HostRecord>, Self::Error>;
    /// The id of the host with this origin, created if new.
    fn host_id(&self, origin: &str) -> Result<HostId, Self::Error>;
    /// Up to `limit` queued URLs of a host, best first (priority, then arrival), after
    /// `after` (a priority and row read before) when given, skipping the rows in `exclude`.
    fn next_for_host(
        &self,
        host: HostId,
        after: Option<(f64, i64)>,
        limit: usize,
        exclude: &HashSet<i64>,
    ) -> Result<Vec<Queued>, Self::Error>;
}

/// Where the frontier saves its cash totals among the crawl's remembered values.
pub(crate) const CASH_META: &str = "opic_cash";

impl QueueStore for Store {
    type Error = StoreError;
    fn cash_totals(&self) -> Result<Option<String>, StoreError> {
        self.meta(CASH_META)
    }
    fn load_seen(&self, into: &mut HashMap<Fp, f64>, fetched: f64) -> Result<(), StoreError> {
        Store::load_seen(self, into, fetched)
    }
    fn queued_per_host(&self) -> Result<Vec<(HostId, u64)>, StoreError> {
        Store::queued_per_host(self)
    }
    fn max_queue_seq(&self) -> Result<i64, StoreError> {
        Store::max_queue_seq(self)
    }
    fn hosts(&self) -> Result<Vec<HostRecord>, StoreError> {
        Store::hosts(self)
    }
    fn host_id(&self, origin: &str) -> Result<HostId, StoreError> {
        Store::host_id(self, origin)
    }
    fn next_for_host(
        &self,
        host: HostId,
        after: Option<(f64, i64)>,
        limit: usize,
        exclude: &HashSet<i64>,
    ) -> Result<Vec<Queued>, StoreError> {
        Store::next_for_host(self, host, after, limit, exclude)
    }
}

/// A queue held in memory, for tests of the frontier and of what feeds it.
#[cfg(test)]
pub(crate) mod memory {
    use super::QueueStore;
    use crate::ids::{Fp, HostId};
    use crate::state::{HostRecord, NewUrl, Queued};
    use std::cell::RefCell;
    use std::collections::{HashMap, HashSet};
    use std::convert::Infallible;

    /// Hosts and queued rows in maps; `save` plays the part of a batch's commit.
    #[derive(Default)]
    pub(crate) struct MemoryQueue {
        origins: RefCell<Vec<String>>,
        rows: RefCell<Vec<Queued>>,
    }

    impl MemoryQueue {
        /// Saves what the frontier found and removes the rows that were settled.
        pub(crate) fn save(&self, new: Vec<NewUrl>, done: &[i64]) {
            let mut rows = self.rows.borrow_mut();
            rows.retain(|q| !done.contains(&q.seq));
            rows.extend(new.into_iter().map(|u| Queued {
                seq: u.seq,
                host: u.host,
                url: u.url,
                fp: u.fp,
                depth: u.depth,
                hops: u.hops,
                attempts: 0,
                priority: u.priority,
                revisit: u.revisit,
            }));
        }
    }

    impl QueueStore for MemoryQueue {
        type Error = Infallible;
        fn cash_totals(&self) -> Result<Option<String>, Infallible> {
            Ok(None)
        }
        fn load_seen(&self, into: &mut HashMap<Fp, f64>, _: f64) -> Result<(), Infallible> {
            for q in self.rows.borrow().iter().filter(|q| !q.revisit) {
                into.insert(q.fp, q.priority);
            }
            Ok(())
        }
        fn queued_per_host(&self) -> Result<Vec<(HostId, u64)>, Infallible> {
            let mut n: HashMap<HostId, u64> = HashMap::new();
            for q in self.rows.borrow().iter() {
                *n.entry(q.host).or_default() += 1;
            }
            Ok(n.into_iter().collect())
        }
        fn max_queue_seq(&self) -> Result<i64, Infallible> {
            Ok(self.rows.borrow().iter().map(|q| q.seq).max().unwrap_or(0))
        }
        fn hosts(&self) -> Result<Vec<HostRecord>, Infallible> {
            Ok(self
                .origins
                .borrow()
                .iter()
                .enumerate()
                .map(|(i, origin)| HostRecord {
                    id: HostId(i as i64 + 1),
                    origin: origin.clone(),
                    ..Default::default()
                })
                .collect())
        }
        fn host_id(&self, origin: &str) -> Result<HostId, Infallible> {
            let mut origins = self.origins.borrow_mut();
            let i = match origins.iter().position(|o| o == origin) {
                Some(i) => i,
                None => {
                    origins.push(origin.to_string());
                    origins.len() - 1
                }
            };
            Ok(HostId(i as i64 + 1))
        }
        fn next_for_host(
            &self,
            host: HostId,
            after: Option<(f64, i64)>,
            limit: usize,
            exclude: &HashSet<i64>,
        ) -> Result<Vec<Queued>, Infallible> {
            let past = |q: &Queued| {
                after.is_none_or(|(p, s)| q.priority < p || (q.priority == p && q.seq > s))
            };
            let mut rows: Vec<Queued> = self
                .rows
                .borrow()
                .iter()
                .filter(|q| q.host == host && !exclude.contains(&q.seq) && past(q))
                .cloned()
                .collect();
            rows.sort_by(|a, b| b.priority.total_cmp(&a.priority).then(a.seq.cmp(&b.seq)));
            rows.truncate(limit);
            Ok(rows)
        }
    }
}
