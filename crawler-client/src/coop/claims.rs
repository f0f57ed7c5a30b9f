//! Claims weighed: what a site said of a page is checked at the page's next visit, and its
//! trust moves with the result; a site believed has its pages left to its announcements. The
//! coordinator's side of the claim ledger (`super::ledger`), the links held for a claim of
//! absence (`super::absences`), the pages handed over (`super::handed`) and the questions a
//! contradiction raises (`super::questions`). One rule spans them, and is kept here only
//! ([`CoopState::refuted`]): a site caught in a false claim is no longer believed, the links
//! it held are fetched, and where the claim was a page it handed over, every page it handed
//! over is disowned and fetched again.

use super::ledger::Claim;
use super::questions::{QUESTION_MAX_MS, SETTLE_MS};
use super::shared::{DeltaPlan, Reach};
use super::state::CoopState;
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::fetch::outcome::DeltaUse;
use crate::ids::{Fp, HostId};
use url::Url;

impl CoopState {
    /// Whether the page's next visit asks without validators: a believed site announced a
    /// change (a server's validators are often coarser than the announcement, a
    /// `Last-Modified` to the second, nginx's ETag of mtime and size, and a 304 would then hide
    /// a second edit within the same second and count against an honest site), or the visit
    /// checks a claim (a server that answers 304 to what it serves changed must not turn its
    /// own claim into a confirmation). A site not believed gets conditional visits for its
    /// announcements: its claims must not cost whole bodies.
    pub(crate) fn announced_change(&self, fp: Fp) -> bool {
        self.ledger.get(fp).is_some_and(|(host, c)| match c {
            Claim::Unchanged | Claim::Matches(_) | Claim::Absent => true,
            Claim::Changed => self.believed(host),
        })
    }

    /// The delta to fetch for a revisit of a changed page, if one is planned.
    pub(crate) fn delta_plan(&mut self, fp: Fp) -> Option<DeltaPlan> {
        if !self.config.uses_deltas() {
            return None;
        }
        self.plans.remove(&fp)
    }

    /// After a visit: the site's claim about the page is weighed (against its content's
    /// SHA-256 `validator` for a page it handed over), and a page of a covering site is left
    /// to its announcements. A page fetched live is no longer one the site handed over.
    pub(crate) fn visited(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        (changed, validator, cut): (bool, Option<&str>, bool),
        delta: Option<&DeltaUse>,
        live: bool,
    ) {
        if live {
            self.handed.proven(host, fp);
        }
        if let Some(d) = delta {
            let site = self.site(host);
            match d {
                DeltaUse::Applied(_) | DeltaUse::Pushed => site.stats.deltas += 1,
                DeltaUse::Whole => {}
                DeltaUse::Fallback(_) => site.stats.delta_fallbacks += 1,
            }
        }
        // A page cut at the page limit cannot show what its whole content is: its claim is
        // dropped unweighed. A claim of absence is weighed when the response was recorded
        // (`absence_checked`), never here.
        let claimed = live.then(|| self.ledger.answer(fp)).flatten();
        if let Some((claim_host, claim)) = claimed.filter(|_| !cut) {
            let right = claim.verdict(changed, validator);
            match (right, claim) {
                (false, Claim::Matches(_)) if self.may_explain(r, claim_host) => {
                    self.question(r, claim_host, fp);
                }
                (false, Claim::Matches(_)) => self.refuted(r, claim_host, Some(fp)),
                (right, _) => {
                    let before = self.believed(claim_host);
                    let site = self.site(claim_host);
                    match right {
                        true => site.trust.confirm(),
                        false => site.trust.refute(1.0),
                    }
                    self.belief_moved(r, claim_host, before);
                }
            }
        }
        // A page the site's announcements stand for, or one its feed lists while it lists
        // it, is left to them.
        let listed = self.believed(host) && self.sites.get(host).is_some_and(|s| s.feeds.lists(fp));
        if (self.covers(host) || listed)
            && let Some(s) = r.schedule.as_deref_mut()
        {
            s.cover(fp);
        }
    }

    /// `host` was caught in a false claim: it is not believed until enough claims prove right
    /// again, every link it held is fetched, and where the claim was page `handed_over` of a
    /// hand-over, every other page it handed over goes too (disowned, fetched again).
    pub(crate) fn refuted(&mut self, r: &mut Reach<'_>, host: HostId, handed_over: Option<Fp>) {
        let before = self.believed(host);
        let site = self.site(host);
        site.trust.disprove();
        site.stats.refuted += 1;
        // The schedule hears first that the site is polled now: taking its pages back from
        // the announcements sets their times again, which would undo the disowned pages'
        // "due now".
        self.belief_moved(r, host, before);
        // Queued whatever the seen-set says: each was marked seen when it was held.
        for (fp, h) in self.absences.release(host) {
            r.frontier.push_revisit(host, h.url, fp, h.depth);
        }
        if let Some(fp) = handed_over {
            self.disown(r, host, fp);
        }
    }

    /// Says so, and tells the schedule, when whether `host` is believed changed from `before`:
    /// a site no longer believed has every page taken back from its announcements (its feed's
    /// too); one believed again has them back where it covers the site, and a feed's at its
    /// next reading.
    fn belief_moved(&mut self, r: &mut Reach<'_>, host: HostId, before: bool) {
        let after = self.believed(host);
        if before == after {
            return;
        }
        let origin = r.origin(host);
        let score = self.sites.get(host).map_or(0.0, |s| s.trust.score());
        if after {
            tracing::info!("{origin}: claims proved right again (trust {score:.2}); believed");
        } else {
            tracing::warn!(
                "{origin}: claims proved wrong (trust {score:.2}); polling its pages instead"
            );
        }
        if let Some(s) = r.schedule.as_deref_mut()
            && (!after || self.sites.covers(host, &self.config))
        {
            s.set_host_covered(host, after);
        }
    }

    /// A page the site handed over proved not to be its live page: every page it handed over
    /// and that was not fetched live since stops counting as the crawl's copy, and is fetched
    /// again, whole, each a claim to check.
    fn disown(&mut self, r: &mut Reach<'_>, host: HostId, refuted: Fp) {
        let pages = self.handed.disown(host);
        if pages.is_empty() {
            return;
        }
        tracing::warn!(
            "{}: a page it handed over is not its live page; its {} other pages handed over are fetched again before they count as copies",
            r.origin(host),
            pages.len()
        );
        let at = now_ms();
        for (fp, (url, digest)) in pages {
            if fp == refuted {
                continue;
            }
            r.out.disowned.push(crate::state::PageRecord {
                url: url.clone(),
                fp,
                host,
                error: Some("handed over by the site in bulk, and the site's live pages refuted it: fetched again".into()),
                fetched_at: at,
                disowned: true,
                ..Default::default()
            });
            // Each page fetched again is one more claim weighed: what the site handed over
            // for it, against what it serves.
            if let Some(d) = digest {
                self.ledger.expect(fp, host, Claim::Matches(d));
            }
            if let Ok(u) = Url::parse(&url) {
                self.due_now(r, host, &Link::with_fp(&u, fp));
            }
        }
    }

    /// A random page of a site is fetched to check its "nothing changed".
    pub(crate) fn check_one(&mut self, r: &mut Reach<'_>, host: HostId) {
        let Some(schedule) = r.schedule.as_deref() else {
            return;
        };
        let pages = schedule.pages_of(host);
        if pages.is_empty() {
            return;
        }
        let pick = pages[self.sampler.index(pages.len())];
        let Some(url) = schedule.page(pick).map(|p| p.url.clone()) else {
            return;
        };
        self.ledger.expect(pick, host, Claim::Unchanged);
        self.site(host).stats.checks += 1;
        let Ok(u) = Url::parse(&url) else {
            return;
        };
        let link = Link::with_fp(&u, pick);
        self.due_now(r, host, &link);
    }

    /// Whether a link to `url` on `host`, found now, is held: the host's snapshot is being
    /// read, its listing states completeness and does not name the URL, and the site is
    /// believed.
    pub(crate) fn claims_absent(&self, host: HostId, url: &str) -> bool {
        self.believed(host) && self.absences.room(host) && self.snapshots.claims_absent(host, url)
    }

    /// Holds a link [`CoopState::claims_absent`] admitted.
    pub(crate) fn hold(&mut self, host: HostId, link: &Link, depth: u32) {
        self.absences.hold(host, link, depth);
        self.site(host).stats.held += 1;
    }

    /// The snapshot ended: `checks` of the links held are fetched as checks of its claim, the
    /// rest stay held; with no check allowed, a site no longer believed, or a snapshot not used
    /// (`released`), every one is fetched.
    pub(super) fn settle_absences(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        checks: usize,
        released: bool,
    ) {
        // What cannot be checked is not held.
        if released || !self.believed(host) || checks == 0 {
            for (fp, h) in self.absences.release(host) {
                r.frontier.push_revisit(host, h.url, fp, h.depth);
            }
            return;
        }
        let held = self.absences.count(host);
        let sampler = &self.sampler;
        let picked = self
            .absences
            .pick_checks(host, checks, |step| sampler.index(step));
        if !picked.is_empty() {
            tracing::info!(
                "{}: {held} links its complete listing does not name are held; {} fetched to check",
                r.origin(host),
                picked.len()
            );
        }
        for (fp, h) in picked {
            self.ledger.expect(fp, host, Claim::Absent);
            self.site(host).stats.checks += 1;
            r.frontier.push_revisit(host, h.url, fp, h.depth);
        }
    }

    /// Whether a response to `fp` answers a claim that nothing is there.
    pub(crate) fn checks_absence(&self, fp: Fp) -> bool {
        self.ledger.checks_absence(fp)
    }

    /// A final response to `fp` was recorded (`status`, and whether its content is a page
    /// the crawl holds): the site's claim that nothing was there, if it made one, weighed.
    pub(crate) fn absence_checked(
        &mut self,
        r: &mut Reach<'_>,
        fp: Fp,
        status: u16,
        duplicate: bool,
    ) {
        if !self.ledger.checks_absence(fp) {
            return;
        }
        let Some((host, _)) = self.ledger.answer(fp) else {
            return;
        };
        match Claim::absence_verdict(status, duplicate) {
            Some(true) => self.site(host).trust.confirm(),
            Some(false) => {
                tracing::warn!(
                    "{}: a link its complete listing does not name is a page of its own; every link it held is fetched",
                    r.origin(host)
                );
                self.refuted(r, host, None);
            }
            // A redirect, an error, a refusal: no answer to the claim either way.
            None => {}
        }
    }

    /// Whether a contradiction of what `host` handed over waits for its feed to explain it.
    pub(crate) fn may_explain(&self, r: &Reach<'_>, host: HostId) -> bool {
        r.schedule.is_some() && self.sites.get(host).is_some_and(|s| s.changes.is_some())
    }

    /// Holds the contradiction of page `fp` of `host` until the site's feed is read again.
    pub(crate) fn question(&mut self, r: &Reach<'_>, host: HostId, fp: Fp) {
        let at = now_ms();
        if self.questions.ask(host, fp, at) {
            tracing::info!(
                "{}: a page it handed over differs from its live page; its changes feed is read again before this counts against it",
                r.origin(host)
            );
        }
        let site = self.site(host);
        let due = at + SETTLE_MS;
        site.next_poll = Some(site.next_poll.map_or(due, |t| t.min(due)));
    }

    /// The site announced a change or a deletion of `fp`: a contradiction of it is explained.
    pub(crate) fn explained(&mut self, host: HostId, fp: Fp) {
        self.questions.explain(host, fp);
    }

    /// When the site's feed must be read next for its open questions (ms).
    pub(crate) fn question_due(&self, host: HostId) -> Option<i64> {
        self.questions.due(host)
    }

    /// The site's feed was read to its head: the questions asked at least [`SETTLE_MS`] ago
    /// that it did not explain refute what the site handed over.
    pub(crate) fn feed_read(&mut self, r: &mut Reach<'_>, host: HostId) {
        let now = now_ms();
        if let Some(fp) = self
            .questions
            .unexplained(host, |asked| asked + SETTLE_MS <= now)
        {
            self.refuted(r, host, Some(fp));
        }
    }

    /// Questions open longer than [`QUESTION_MAX_MS`] (the feed does not answer) refute.
    pub(crate) fn questions_overdue(&mut self, r: &mut Reach<'_>) {
        let now = now_ms();
        for host in self.questions.hosts() {
            if let Some(fp) = self
                .questions
                .unexplained(host, |asked| asked + QUESTION_MAX_MS <= now)
            {
                self.refuted(r, host, Some(fp));
            }
        }
    }
}
