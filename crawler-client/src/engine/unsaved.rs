//! The results since the last saved batch, and what saving it settles. A finished queue row
//! is three facts that must travel together (its page record, the row marked done, and the
//! row released from its host's taken set once saved), so they are added by one method; a
//! row retried is back in its host's buffer and is never settled.

use crate::ids::{Fp, HostId};
use crate::state::{Batch, GiveUp, HostUpdate, KnownPage, PageRecord};
use std::collections::HashMap;

/// What the next save writes, and what it settles.
#[derive(Default)]
pub(super) struct Unsaved {
    batch: Batch,
    /// Queue rows finished: released from their hosts' taken sets once saved.
    settled: Vec<(HostId, i64)>,
    /// Content digests first met in this batch, with their page (not yet in the state).
    digests: HashMap<u64, Fp>,
    /// Where each page's latest record stands in the batch.
    latest: HashMap<Fp, usize>,
}

impl Unsaved {
    /// Queue row `seq` is finished with this record of its page.
    pub(super) fn finished(&mut self, seq: i64, record: PageRecord) {
        self.settled.push((record.host, seq));
        self.batch.done.push(seq);
        self.page(record);
    }

    /// Queue row `seq` of `host` ends without a record (its host was given up).
    pub(super) fn settled(&mut self, host: HostId, seq: i64) {
        self.settled.push((host, seq));
    }

    /// Queue row `seq` goes back to its host's buffer after `attempts` attempts.
    pub(super) fn retry(&mut self, seq: i64, attempts: u32) {
        self.batch.retry.push((seq, attempts));
    }

    /// A page record that finishes no queue row (a deletion a site announced).
    pub(super) fn page(&mut self, record: PageRecord) {
        self.latest.insert(record.fp, self.batch.pages.len());
        self.batch.pages.push(Box::new(record));
    }

    /// What the latest record of page `fp` in this batch says is held, when it is a capture
    /// with its content's validator; anything else (a failure, a deletion, a copy disowned, a
    /// duplicate) is read as saved.
    pub(super) fn known(&self, fp: Fp) -> Option<KnownPage> {
        let at = *self.latest.get(&fp)?;
        let r = self
            .batch
            .pages
            .get(at)
            .filter(|r| r.fp == fp && r.validator.is_some() && !r.gone && !r.disowned)?;
        Some(KnownPage {
            etag: r.etag.clone(),
            last_modified: r.last_modified.clone(),
            digest: r.digest,
            fetched_at: r.fetched_at,
            importance: r.importance.unwrap_or_default(),
            changes_seen: r.changes_seen.as_ref().map(|(h, _)| h.clone()),
            validator: r.validator.clone(),
            content: r.content.clone(),
        })
    }

    /// A host's politeness state as it now stands.
    pub(super) fn host(&mut self, update: HostUpdate) {
        self.batch.hosts.push(update);
    }

    /// A host given up.
    pub(super) fn give_up(&mut self, g: GiveUp) {
        self.batch.give_up.push(g);
    }

    /// `digest` was first met at page `fp` in this batch (a later page of this batch with the
    /// same digest and other content takes its place).
    pub(super) fn first_met(&mut self, digest: u64, fp: Fp) {
        self.digests.insert(digest, fp);
    }

    /// The page this batch first met `digest` at, if its latest record holds that digest and
    /// content whose validator is `validator`.
    pub(super) fn page_with_digest(&self, digest: u64, validator: &str) -> Option<&str> {
        let fp = *self.digests.get(&digest)?;
        let r = self.batch.pages.get(*self.latest.get(&fp)?)?;
        (r.fp == fp && r.digest == Some(digest) && r.validator.as_deref() == Some(validator))
            .then_some(r.url.as_str())
    }

    /// Results waiting (pages, retries, hosts...).
    pub(super) fn results(&self) -> usize {
        self.batch.results()
    }

    /// Nothing to write.
    pub(super) fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Queue rows finished and not yet saved.
    pub(super) fn any_settled(&self) -> bool {
        !self.settled.is_empty()
    }

    /// The batch, for the save to complete (archive positions, new URLs, metadata).
    pub(super) fn batch_mut(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// The rows the save settles, taken, and the batch and its digests emptied for the next.
    pub(super) fn saved(&mut self) -> Vec<(HostId, i64)> {
        self.batch = Batch::default();
        self.digests.clear();
        self.latest.clear();
        std::mem::take(&mut self.settled)
    }

    /// The batch as it stands.
    pub(super) fn batch(&self) -> &Batch {
        &self.batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(fp: u64, validator: &str) -> PageRecord {
        PageRecord {
            url: format!("http://e/{fp}"),
            fp: Fp(fp),
            host: HostId(1),
            status: Some(200),
            validator: Some(validator.into()),
            ..PageRecord::default()
        }
    }

    #[test]
    fn a_page_recorded_since_the_last_save_is_known_by_its_latest_capture_until_saved() {
        let mut u = Unsaved::default();
        assert!(u.known(Fp(7)).is_none());
        u.page(capture(7, "\"handed\""));
        u.finished(1, capture(7, "\"live\""));
        let k = u.known(Fp(7)).map(|k| k.validator);
        assert_eq!(k, Some(Some("\"live\"".to_string())), "the latest capture");
        // A record that holds no copy is read from the store instead.
        u.page(PageRecord {
            disowned: true,
            ..capture(7, "\"handed\"")
        });
        assert!(u.known(Fp(7)).is_none());
        u.page(PageRecord {
            validator: None,
            status: None,
            ..capture(8, "")
        });
        assert!(u.known(Fp(8)).is_none());
        // Saved: the store knows it now.
        u.finished(2, capture(9, "\"nine\""));
        assert!(u.known(Fp(9)).is_some());
        u.saved();
        assert!(u.known(Fp(9)).is_none());
    }
}
