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
//!
//! This is the owner of the open questions: when each was asked, that an announcement of the
//! page explains it, when the site's feed is due for them, and that one left unexplained
//! settles every question of its site at once. The coordinator weighs it (`super::claims`).

use crate::ids::{Fp, HostId};
use std::collections::HashMap;

/// How long after the fetch the site's feed is given to announce an edit.
pub(crate) const SETTLE_MS: i64 = 5_000;

/// How long a question stays open when the site's feed does not answer.
pub(crate) const QUESTION_MAX_MS: i64 = 120_000;

/// The contradictions held open, by site: page -> when asked (ms).
#[derive(Default)]
pub(crate) struct Questions {
    open: HashMap<HostId, HashMap<Fp, i64>>,
}

impl Questions {
    /// Holds the contradiction of page `fp` of `host`, found at `at` (ms); whether it is the
    /// site's first one open.
    pub(crate) fn ask(&mut self, host: HostId, fp: Fp, at: i64) -> bool {
        let open = self.open.entry(host).or_default();
        let first = open.is_empty();
        open.insert(fp, at);
        first
    }

    /// The site announced a change or a deletion of `fp`: a contradiction of it is explained.
    pub(crate) fn explain(&mut self, host: HostId, fp: Fp) {
        if let Some(q) = self.open.get_mut(&host)
            && q.remove(&fp).is_some()
            && q.is_empty()
        {
            self.open.remove(&host);
        }
    }

    /// When the site's feed must be read next for its open questions (ms).
    pub(crate) fn due(&self, host: HostId) -> Option<i64> {
        self.open.get(&host)?.values().min().map(|t| t + SETTLE_MS)
    }

    /// A question of `host` asked at a time `due` says is past, if there is one: then every
    /// question of the site is closed (one unexplained contradiction is enough, and the rest
    /// go with every other page the site handed over), and that page is returned.
    pub(crate) fn unexplained(&mut self, host: HostId, due: impl Fn(i64) -> bool) -> Option<Fp> {
        let fp = self
            .open
            .get(&host)?
            .iter()
            .find(|(_, asked)| due(**asked))
            .map(|(fp, _)| *fp)?;
        self.open.remove(&host);
        Some(fp)
    }

    /// The sites with questions open.
    pub(crate) fn hosts(&self) -> Vec<HostId> {
        self.open.keys().copied().collect()
    }

    /// Questions open, over every site.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.open.values().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_explained_by_its_page_or_settles_its_whole_site() {
        let mut q = Questions::default();
        let (a, b) = (HostId(1), HostId(2));
        assert!(q.ask(a, Fp(1), 1_000));
        assert!(!q.ask(a, Fp(2), 3_000));
        q.ask(b, Fp(9), 2_000);
        assert_eq!(q.due(a), Some(1_000 + SETTLE_MS));
        q.explain(a, Fp(1));
        assert_eq!(q.due(a), Some(3_000 + SETTLE_MS));
        assert_eq!(q.unexplained(a, |asked| asked + SETTLE_MS <= 7_000), None);
        assert_eq!(
            q.unexplained(a, |asked| asked + SETTLE_MS <= 8_000),
            Some(Fp(2))
        );
        assert_eq!((q.due(a), q.len()), (None, 1));
        q.explain(b, Fp(9));
        assert_eq!((q.len(), q.hosts().len()), (0, 0));
    }
}
