//! A host's buffer refilled from the queue store and the rows not saved yet, re-ranked by the
//! current keys: the best URL a host has is what the frontier compares hosts by.

use super::queue_store::QueueStore;
use super::{BUFFER, FLEET_TAKE, Frontier, Host, REFILL_WINDOW, RobotsState, better};
use crate::ids::HostId;

impl Frontier {
    /// The cash key of a host's best URL (refilling its buffer if needed); robots.txt to fetch
    /// counts as the best of all.
    pub(super) fn best_key<S: QueueStore>(
        &mut self,
        store: &S,
        id: HostId,
    ) -> Result<f64, S::Error> {
        let robots_known = self
            .hosts
            .get(&id)
            .is_some_and(|h| matches!(h.robots, RobotsState::Known(..)));
        if !robots_known || self.hosts.get(&id).is_some_and(Host::coop_waiting) {
            return Ok(f64::INFINITY);
        }
        if self.hosts.get(&id).is_some_and(|h| h.buffer.is_empty()) {
            self.refill(store, id)?;
        }
        Ok(self
            .hosts
            .get(&id)
            .and_then(|h| h.buffer.front())
            .map_or(f64::NEG_INFINITY, |q| q.priority))
    }

    pub(super) fn refill<S: QueueStore>(&mut self, store: &S, id: HostId) -> Result<(), S::Error> {
        let Some(h) = self.hosts.get_mut(&id) else {
            return Ok(());
        };
        // Saved rows are ordered by the key they were saved with; a wider read re-ranked by the
        // current keys lets URLs that gained cash since move up. What is read and not kept
        // waits in `ahead`, so the next refill reads only what it lacks, after the cursor.
        // A fleet's rows are taken as they are read: only as many as are kept.
        let mut rows = if self.shared {
            store.next_for_host(id, None, FLEET_TAKE, &h.taken)?
        } else {
            let want = (BUFFER * REFILL_WINDOW).saturating_sub(h.ahead.len());
            let read = store.next_for_host(id, h.read_to, want, &h.taken)?;
            if let Some(last) = read.last() {
                h.read_to = Some((last.priority, last.seq));
            }
            let mut rows = std::mem::take(&mut h.ahead);
            rows.extend(read);
            rows
        };
        for q in &mut rows {
            if !q.revisit
                && let Some(k) = self.cash.key(q.fp)
            {
                q.priority = k + self.boosts.get(&q.fp).copied().unwrap_or(0.0);
            }
        }
        rows.sort_by(better);
        let Some(h) = self.hosts.get_mut(&id) else {
            return Ok(());
        };
        if rows.len() > BUFFER && !self.shared {
            h.ahead = rows.split_off(BUFFER);
        }
        if rows.len() < BUFFER && !h.unsaved.is_empty() {
            for q in &mut h.unsaved {
                if !q.revisit
                    && let Some(k) = self.cash.key(q.fp)
                {
                    q.priority = k + self.boosts.get(&q.fp).copied().unwrap_or(0.0);
                }
            }
            h.unsaved.sort_by(better);
            let take = (BUFFER - rows.len()).min(h.unsaved.len());
            rows.extend(h.unsaved.drain(..take));
            rows.sort_by(better);
        }
        if rows.is_empty() {
            // The count drifted (a row given up by another path): nothing is left.
            h.queued = 0;
        } else {
            h.queued = h.queued.saturating_sub(rows.len() as u64);
        }
        h.buffer.extend(rows);
        Ok(())
    }
}
