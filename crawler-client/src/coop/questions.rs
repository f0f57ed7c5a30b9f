//! A page a site handed over (a snapshot, a batch) that its live page contradicts is either a
//! lie or an edit made after the site handed it over, which its changes feed announces a
//! moment later (the agent publishes within its debounce, and a crawler's check can land in
//! between). A crawl kept fresh lives on and reads that feed, so the contradiction is held as
//! a question until the site's first poll read at least [`SETTLE_MS`] after the fetch: a change
//! or deletion of the page announced before then explains it, and nothing is weighed; a poll
//! that reads the feed to its head without it, or no answer within [`QUESTION_MAX_MS`],
//! refutes what the site handed over as at once before. A crawl that is not kept fresh reads
//! no feed again, and a site without one has nothing to explain by: for them the live page
//! refutes at once.

use super::state::{CoopState, Reach};
use crate::clock::now_ms;
use crate::ids::{Fp, HostId};

/// How long after the fetch the site's feed is given to announce an edit.
pub(crate) const SETTLE_MS: i64 = 5_000;

/// How long a question stays open when the site's feed does not answer.
pub(crate) const QUESTION_MAX_MS: i64 = 120_000;

impl CoopState {
    /// Whether a contradiction of what `host` handed over waits for its feed to explain it.
    pub(crate) fn may_explain(&self, r: &Reach<'_>, host: HostId) -> bool {
        r.schedule.is_some() && self.sites.get(&host).is_some_and(|s| s.changes.is_some())
    }

    /// Holds the contradiction of page `fp` of `host` until the site's feed is read again.
    pub(crate) fn question(&mut self, r: &Reach<'_>, host: HostId, fp: Fp) {
        let at = now_ms();
        let open = self.questioned.entry(host).or_default();
        if open.is_empty() {
            tracing::info!(
                "{}: a page it handed over differs from its live page; its changes feed is read again before this counts against it",
                r.origin(host)
            );
        }
        open.insert(fp, at);
        let site = self.site(host);
        let due = at + SETTLE_MS;
        site.next_poll = Some(site.next_poll.map_or(due, |t| t.min(due)));
    }

    /// The site announced a change or a deletion of `fp`: a contradiction of it is explained.
    pub(crate) fn explained(&mut self, host: HostId, fp: Fp) {
        if let Some(q) = self.questioned.get_mut(&host)
            && q.remove(&fp).is_some()
            && q.is_empty()
        {
            self.questioned.remove(&host);
        }
    }

    /// When the site's feed must be read next for its open questions (ms).
    pub(crate) fn question_due(&self, host: HostId) -> Option<i64> {
        self.questioned
            .get(&host)?
            .values()
            .min()
            .map(|t| t + SETTLE_MS)
    }

    /// The site's feed was read to its head: the questions asked at least [`SETTLE_MS`] ago
    /// that it did not explain refute what the site handed over.
    pub(crate) fn feed_read(&mut self, r: &mut Reach<'_>, host: HostId) {
        let now = now_ms();
        self.settle_questions(r, host, |asked| asked + SETTLE_MS <= now);
    }

    /// Questions open longer than [`QUESTION_MAX_MS`] (the feed does not answer) refute.
    pub(crate) fn questions_overdue(&mut self, r: &mut Reach<'_>) {
        let now = now_ms();
        let hosts: Vec<HostId> = self.questioned.keys().copied().collect();
        for host in hosts {
            self.settle_questions(r, host, |asked| asked + QUESTION_MAX_MS <= now);
        }
    }

    fn settle_questions(&mut self, r: &mut Reach<'_>, host: HostId, due: impl Fn(i64) -> bool) {
        let Some(q) = self.questioned.get_mut(&host) else {
            return;
        };
        let Some(fp) = q.iter().find(|(_, asked)| due(**asked)).map(|(fp, _)| *fp) else {
            return;
        };
        // One unexplained contradiction is enough: the rest go with every other page it
        // handed over, fetched again and weighed one by one.
        self.questioned.remove(&host);
        self.handed_over_refuted(r, host, fp);
    }
}
