//! Saving: records appended to the archive as they come, and batches committed to the state
//! once their records are synced, so the state never points past what is on disk.

use super::{CrawlError, Engine, file_error};
use crate::archive::warc::Position;
use crate::fetch::outcome::RecordSlot;
use crate::state::{NET_REFUSED, SAVED_AT};
use std::time::Instant;

impl Engine {
    pub(super) fn append(&mut self, slot: RecordSlot) -> Result<Position, CrawlError> {
        match slot {
            RecordSlot::Stored(p) => Ok(p),
            RecordSlot::New(r) => {
                let pos = self
                    .warc
                    .append(&r)
                    .map_err(|e| file_error(self.warc.dir())(e))?;
                self.metrics.warc_bytes.inc_by(pos.length);
                Ok(pos)
            }
        }
    }

    /// The longest time between saves and the most results in one, as things stand.
    pub(super) fn save_bounds(&self) -> (std::time::Duration, usize) {
        self.settings
            .save_pace
            .bounds(self.frontier.hosts_inside(), self.fetched_total)
    }

    /// Saves the batch: archive first, then the state that points into it.
    pub(super) fn commit(&mut self) -> Result<(), CrawlError> {
        let t = Instant::now();
        let warc = self
            .warc
            .sync()
            .map_err(|e| file_error(self.warc.dir())(e))?;
        let new_urls = self.frontier.drain_pending();
        let coop = self.coop.take_unsaved();
        let batch = self.unsaved.batch_mut();
        batch.warc = warc;
        batch.new_urls = new_urls;
        // A fleet's new URLs go to the shared queue once this batch is saved.
        let offers = if self.fleet.is_some() {
            std::mem::take(&mut batch.new_urls)
        } else {
            Vec::new()
        };
        batch.coop = coop;
        let refusals = self.ctx.client.guard().refusals().count();
        if let Some(refused) = self.run.net_refused_to_save(refusals) {
            batch
                .meta
                .push((NET_REFUSED.to_string(), refused.to_string()));
        }
        let consumed = self.shard_send()?;
        if !self.unsaved.is_empty() {
            let cash = self.frontier.cash_meta();
            let meta = &mut self.unsaved.batch_mut().meta;
            meta.push(cash);
            meta.push((SAVED_AT.to_string(), crate::clock::now_ms().to_string()));
            if let Some(n) = consumed {
                meta.push((super::shards::CONSUMED.to_string(), n.to_string()));
            }
            self.store.commit(self.unsaved.batch())?;
        }
        self.shard_saved()?;
        let settled = self.unsaved.saved();
        self.frontier.saved(&settled);
        self.log.flush()?;
        self.fleet_saved(offers, &settled)?;
        self.last_commit = Instant::now();
        self.metrics
            .commit_seconds
            .observe(t.elapsed().as_secs_f64());
        Ok(())
    }
}
