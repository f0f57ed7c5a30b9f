//! The claims waiting to be checked: what a site said of a page, expected to be answered by
//! the page's next visit, and the verdict that visit gives. The rules it owns: a page has at
//! most one claim waiting (a later claim replaces it), a claim is answered once (taken when
//! weighed), and what counts as right for each kind of claim.

use crate::ids::{Fp, HostId};
use std::collections::HashMap;
use webcoop_protocol::validator::Sha256Digest;

/// What a site claimed about a page, to be checked at its next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The page changed.
    Changed,
    /// Nothing changed.
    Unchanged,
    /// The page's content is this (a page handed over in a snapshot or a batch): checked by
    /// a whole fetch, never a conditional one, whose content must have this SHA-256.
    Matches(Sha256Digest),
    /// Nothing is there (a link a complete listing does not name, see `super::absences`):
    /// checked by a fetch that must find no page of the site's own.
    Absent,
}

impl Claim {
    /// Whether a visit that found the page `changed` (or not), its content's entity tag
    /// `validator`, proves the claim right. A claim of absence is weighed on the response's
    /// status instead ([`Claim::absence_verdict`]), never here.
    pub(crate) fn verdict(self, changed: bool, validator: Option<&str>) -> bool {
        match self {
            Claim::Matches(d) => validator == Some(d.etag().to_string().as_str()),
            Claim::Changed => changed,
            Claim::Unchanged => !changed,
            Claim::Absent => true,
        }
    }

    /// A claim that nothing is there, answered `status` (and whether its content is a page
    /// the crawl holds): proved (`Some(true)`), refuted (`Some(false)`), or not answered
    /// either way (a redirect, an error, a refusal).
    pub(crate) fn absence_verdict(status: u16, duplicate: bool) -> Option<bool> {
        match status {
            404 | 410 => Some(true),
            200..=299 => Some(duplicate),
            _ => None,
        }
    }
}

/// The claims waiting for their pages' visits.
#[derive(Default)]
pub(crate) struct ClaimLedger {
    waiting: HashMap<Fp, (HostId, Claim)>,
}

impl ClaimLedger {
    /// `host` claims `claim` of page `fp`: expected at its next visit.
    pub(crate) fn expect(&mut self, fp: Fp, host: HostId, claim: Claim) {
        self.waiting.insert(fp, (host, claim));
    }

    /// The claim waiting on page `fp`, left waiting.
    pub(crate) fn get(&self, fp: Fp) -> Option<(HostId, Claim)> {
        self.waiting.get(&fp).copied()
    }

    /// The claim on page `fp`, taken to be weighed now.
    pub(crate) fn answer(&mut self, fp: Fp) -> Option<(HostId, Claim)> {
        self.waiting.remove(&fp)
    }

    /// Whether page `fp`'s response answers a claim that nothing is there.
    pub(crate) fn checks_absence(&self, fp: Fp) -> bool {
        matches!(self.waiting.get(&fp), Some((_, Claim::Absent)))
    }

    /// Claims waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_claim_is_right_only_for_what_it_said() {
        let d = Sha256Digest::of(b"page");
        let tag = d.etag().to_string();
        assert!(Claim::Matches(d).verdict(true, Some(&tag)));
        assert!(!Claim::Matches(d).verdict(false, Some("\"sha256-other\"")));
        assert!(!Claim::Matches(d).verdict(false, None));
        assert!(Claim::Changed.verdict(true, None) && !Claim::Changed.verdict(false, None));
        assert!(Claim::Unchanged.verdict(false, None) && !Claim::Unchanged.verdict(true, None));
        assert_eq!(Claim::absence_verdict(404, false), Some(true));
        assert_eq!(Claim::absence_verdict(410, false), Some(true));
        assert_eq!(Claim::absence_verdict(200, true), Some(true));
        assert_eq!(Claim::absence_verdict(200, false), Some(false));
        assert_eq!(Claim::absence_verdict(301, false), None);
        assert_eq!(Claim::absence_verdict(503, false), None);
    }

    #[test]
    fn a_claim_is_answered_once_and_a_later_one_replaces_it() {
        let mut l = ClaimLedger::default();
        l.expect(Fp(1), HostId(1), Claim::Changed);
        l.expect(Fp(1), HostId(1), Claim::Absent);
        assert_eq!(l.len(), 1);
        assert!(l.checks_absence(Fp(1)));
        assert_eq!(l.get(Fp(1)), Some((HostId(1), Claim::Absent)));
        assert_eq!(l.answer(Fp(1)), Some((HostId(1), Claim::Absent)));
        assert_eq!(l.answer(Fp(1)), None);
        assert!(!l.checks_absence(Fp(1)));
    }
}
