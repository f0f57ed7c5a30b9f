//! The crawl loop as one shard of a fleet split by owner (`--shard I/N`): a single process's
//! crawl of the hosts it owns, whose links to other shards' hosts go to their owners with
//! the batch that found them, and whose inbox brings it the links the others found.
//!
//! Order of a batch, for `kill -9` at any moment: records synced, the lines owed to other
//! shards sent, the state committed (with the number of inbox elements it has taken in),
//! then those elements trimmed. A crash before the commit fetches the batch's pages again,
//! and their links are sent again (their owners have them, and drop them as seen); a crash
//! before the trim is made good at the restart, which trims what the state says it saved.

use super::{CrawlError, Engine};
use crate::analyze::Link;
use crate::frontier::fleet::shards::{Entry, Shards};
use crate::ids::Fp;
use std::time::Instant;

/// The key of the saved state that holds the inbox elements taken in, ever.
pub(super) const CONSUMED: &str = "shard_consumed";

/// This process's part of a fleet split by owner, as the loop keeps it.
pub(super) struct Shard {
    pub(super) shards: Shards,
    /// Links to other shards' URLs the pages read since the last batch paid cash to, with
    /// the shard of each: their cash is sent with the batch.
    paid: Vec<(Fp, u32)>,
    /// Lines of the inbox refused, ever.
    refused: u64,
    /// Whether the wait for the other shards was said since this shard last had work.
    waiting_said: bool,
}

impl Shard {
    /// Wraps a joined shard.
    pub(super) fn new(shards: Shards) -> Shard {
        Shard {
            shards,
            paid: Vec::new(),
            refused: 0,
            waiting_said: false,
        }
    }
}

impl Engine {
    /// Sends `link` to its owner if this shard does not own it (once: it is marked seen
    /// here); returns whether it was another shard's.
    pub(super) fn shard_forward(&mut self, link: &Link, depth: u32, hops: u32) -> bool {
        let Some(shard) = self.shard.as_mut() else {
            return false;
        };
        if shard.shards.owns(link.origin()) {
            return false;
        }
        if self.frontier.mark_seen(link.fp) {
            let entry = Entry::Url {
                url: link.url.clone(),
                depth,
                hops,
            };
            shard.shards.owe(link.origin(), &entry);
        }
        true
    }

    /// Notes that the page being read pays cash to `link`, when another shard owns it.
    pub(super) fn shard_paid(&mut self, link: &Link) {
        if let Some(shard) = self.shard.as_mut()
            && !shard.shards.owns(link.origin())
        {
            let to = shard.shards.owner_of(link.origin());
            shard.paid.push((link.fp, to));
        }
    }

    /// Before a batch is committed: the cash paid to other shards' URLs, and every line owed
    /// them, sent; returns the inbox elements taken in, ever, for the batch to record.
    pub(super) fn shard_send(&mut self) -> Result<Option<u64>, CrawlError> {
        let Some(shard) = self.shard.as_mut() else {
            return Ok(None);
        };
        for (fp, to) in std::mem::take(&mut shard.paid) {
            let cash = self.frontier.take_cash(fp);
            if cash > 0.0 {
                shard.shards.owe_to(to, &Entry::Cash { fp, cash });
            }
        }
        shard.shards.send()?;
        Ok(Some(shard.shards.consumed()))
    }

    /// After a batch is committed: the inbox elements it took in are dropped from Redis.
    pub(super) fn shard_saved(&mut self) -> Result<(), CrawlError> {
        if let Some(shard) = self.shard.as_mut() {
            shard.shards.trim()?;
        }
        Ok(())
    }

    /// Reads the inbox when due and takes in what it says; returns how many entries came.
    pub(super) fn shard_poll(&mut self) -> Result<usize, CrawlError> {
        let due = self
            .shard
            .as_ref()
            .is_some_and(|s| Instant::now() >= s.shards.read_due());
        match due {
            true => self.shard_read(),
            false => Ok(0),
        }
    }

    /// Reads the inbox now and takes in what it says; returns how many entries came.
    fn shard_read(&mut self) -> Result<usize, CrawlError> {
        let Some(shard) = self.shard.as_mut() else {
            return Ok(0);
        };
        shard.shards.beat()?;
        let read = shard.shards.read()?;
        if read.refused > 0 {
            shard.refused += read.refused as u64;
            tracing::warn!(
                "shard inbox: {} lines refused ({} in all), the first: {:?}",
                read.refused,
                shard.refused,
                read.first_refused.unwrap_or_default()
            );
        }
        let n = read.entries.len();
        for entry in read.entries {
            self.take_in(entry);
        }
        Ok(n)
    }

    /// One entry of the inbox, checked as a link found here would be: a URL this shard does
    /// not own, or the crawl's scope refuses, is refused.
    fn take_in(&mut self, entry: Entry) {
        match entry {
            Entry::Url { url, depth, hops } => {
                let parsed = match url::Url::parse(&url) {
                    Ok(u) => u,
                    Err(e) => return self.shard_refuse(&url, &e.to_string()),
                };
                let link = Link::to(&parsed);
                let owned = self
                    .shard
                    .as_ref()
                    .is_some_and(|s| s.shards.owns(link.origin()));
                if !owned {
                    return self.shard_refuse(&url, "its host belongs to another shard");
                }
                if let Err(why) = self.ctx.policy.admit(&parsed, depth) {
                    return self.shard_refuse(&url, &format!("{why:?}"));
                }
                self.push(&link, depth, hops);
            }
            Entry::Cash { fp, cash } => self.frontier.give_cash(fp, cash),
        }
    }

    fn shard_refuse(&mut self, url: &str, why: &str) {
        if let Some(shard) = self.shard.as_mut() {
            shard.refused += 1;
        }
        tracing::warn!("shard inbox: {url:?} refused: {why}");
    }

    /// With nothing left here: whether the whole fleet is done. The inbox is read first
    /// (what came is work), then the lines owed are sent and this shard says it is idle.
    /// Asked at each turn of an idle loop, which wakes for the inbox's next look (250 ms).
    pub(super) fn shard_over(&mut self) -> Result<bool, CrawlError> {
        if self.shard_read()? > 0 {
            if let Some(shard) = self.shard.as_mut() {
                shard.waiting_said = false;
            }
            return Ok(false);
        }
        // Saved, sent and trimmed first: an inbox with elements not trimmed is not idle.
        self.commit()?;
        let Some(shard) = self.shard.as_mut() else {
            return Ok(true);
        };
        let over = shard.shards.idle()?;
        if !over && !std::mem::replace(&mut shard.waiting_said, true) {
            tracing::info!("nothing left in this shard: waiting for the others to finish");
        }
        Ok(over)
    }

    /// Leaves the fleet (the index is free for a restart at once).
    pub(super) fn shard_leave(&mut self) {
        if let Some(shard) = self.shard.as_mut() {
            shard.shards.leave();
        }
    }
}
