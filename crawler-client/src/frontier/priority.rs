//! The order of a host's URLs: OPIC cash (the seeds endowed, a page's cash paid to its links)
//! plus what a site's stated popularity adds, kept current where URLs wait in memory.

use super::queue_store::CASH_META;
use super::{Frontier, better};
use crate::ids::{Fp, HostId};
use std::cmp::Ordering;

impl Frontier {
    /// The seeds of a crawl that has read nothing yet share the system's cash.
    pub(crate) fn endow_seeds(&mut self, fps: &[Fp]) {
        if self.cash.clock() == 0.0 && self.cash.total() < 1e-9 {
            self.cash.endow(fps, 1.0);
            for fp in fps {
                self.reprioritise(*fp);
            }
        }
    }

    /// A page was read with these links: its cash goes to them (see `CashBook::read`), and
    /// queued ones move up in their host's order. Returns the cash the page had.
    pub(crate) fn read_cash(&mut self, fp: Fp, children: &[Fp]) -> f64 {
        let cash = self.cash.read(fp, children);
        for c in children {
            self.reprioritise(*c);
        }
        cash
    }

    /// Takes all the cash of `fp`, which another shard owns, to send it there.
    pub(crate) fn take_cash(&mut self, fp: Fp) -> f64 {
        self.cash.take(fp)
    }

    /// Pays `fp` the cash a page of another shard gave it, and moves it up its host's order.
    pub(crate) fn give_cash(&mut self, fp: Fp, cash: f64) {
        if self.cash.give(fp, cash) {
            self.reprioritise(fp);
        }
    }

    /// Raises page `fp` of `host` in its host's order by `boost` (a site's stated popularity),
    /// on top of its cash: at once where it waits in memory, at the next refill where it was
    /// saved.
    pub(crate) fn boost(&mut self, host: HostId, fp: Fp, boost: f64) {
        if boost > 0.0 && boost.is_finite() {
            self.boosts.insert(fp, boost);
        } else {
            self.boosts.remove(&fp);
        }
        if self.pending_at.contains_key(&fp) {
            self.reprioritise(fp);
            return;
        }
        let Some(key) = self.cash.key(fp) else {
            return;
        };
        self.rerank_buffered(host, fp, key + self.boost_of(fp));
    }

    /// What a site's stated popularity adds to page `fp`'s key.
    pub(crate) fn boost_of(&self, fp: Fp) -> f64 {
        self.boosts.get(&fp).copied().unwrap_or(0.0)
    }

    /// Saves the cash totals with the next batch; the virtual page's cash is shared out first.
    pub(crate) fn cash_meta(&mut self) -> (String, String) {
        self.cash.spread_virtual();
        (
            CASH_META.to_string(),
            serde_json::to_string(&self.cash.totals()).unwrap_or_default(),
        )
    }

    /// Brings a queued URL's priority up to its current key where it is still in memory (its
    /// unsaved row, its host's buffer). Rows already saved keep the key they were saved with;
    /// refills re-rank what they read by the current keys.
    pub(super) fn reprioritise(&mut self, fp: Fp) {
        let Some(key) = self.cash.key(fp) else {
            return;
        };
        let key = key + self.boost_of(fp);
        if let Some(i) = self.pending_at.get(&fp)
            && let Some(u) = self.pending.get_mut(*i)
            && !u.revisit
        {
            u.priority = key;
            let host = u.host;
            self.rerank_buffered(host, fp, key);
        }
    }

    /// Moves `fp`, if it waits in `host`'s buffer as a first fetch, to its place for `key`.
    pub(super) fn rerank_buffered(&mut self, host: HostId, fp: Fp, key: f64) {
        if let Some(h) = self.hosts.get_mut(&host)
            && let Some(pos) = h.buffer.iter().position(|q| q.fp == fp && !q.revisit)
            && let Some(mut row) = h.buffer.remove(pos)
        {
            row.priority = key;
            let at = h
                .buffer
                .partition_point(|q| better(q, &row) != Ordering::Greater);
            h.buffer.insert(at, row);
        }
    }
}
