//! Saving: records appended to the archive as they come, and batches committed to the state
//! once their records are synced, so the state never points past what is on disk.

use super::{CrawlError, Engine, file_error};
use crate::archive::warc::Position;
use crate::fetch::outcome::RecordSlot;
use crate::state::Batch;
use crate::state::NET_REFUSED;
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

    /// Saves the batch: archive first, then the state that points into it.
    pub(super) fn commit(&mut self) -> Result<(), CrawlError> {
        let t = Instant::now();
        let unsaved = &mut self.unsaved;
        unsaved.batch.warc = self
            .warc
            .sync()
            .map_err(|e| file_error(self.warc.dir())(e))?;
        unsaved.batch.new_urls = self.frontier.drain_pending();
        // A fleet's new URLs go to the shared queue once this batch is saved.
        let offers = if self.fleet.is_some() {
            std::mem::take(&mut unsaved.batch.new_urls)
        } else {
            Vec::new()
        };
        unsaved.batch.coop = self.coop.to_save();
        let refused = self.run.net_refused_before + self.ctx.client.guard().refusals().count();
        if refused != self.run.net_refused_saved {
            unsaved
                .batch
                .meta
                .push((NET_REFUSED.to_string(), refused.to_string()));
            self.run.net_refused_saved = refused;
        }
        if !unsaved.batch.is_empty() {
            let cash = self.frontier.cash_meta();
            unsaved.batch.meta.push(cash);
            self.store.commit(&unsaved.batch)?;
        }
        self.frontier.saved(&unsaved.settled);
        self.log.flush()?;
        let settled = std::mem::take(&mut unsaved.settled);
        self.fleet_saved(offers, &settled)?;
        let unsaved = &mut self.unsaved;
        // Cleared, not replaced: the next batch reuses what this one grew to.
        unsaved.batch = Batch::default();
        unsaved.settled.clear();
        unsaved.digests.clear();
        self.last_commit = Instant::now();
        self.metrics
            .commit_seconds
            .observe(t.elapsed().as_secs_f64());
        Ok(())
    }
}
